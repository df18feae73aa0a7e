//! A command's whole tree of processes, so that stopping a command stops everything it
//! started: on Unix a process group of its own, on Windows a job object. While a tree runs it
//! is also taken down when the agent dies, however it dies: on Unix a small watchdog process
//! kills the groups still registered when the agent's end of a pipe closes (nothing inside a
//! process can act after a SIGKILL); on Windows the job is made to kill its processes when
//! its last handle closes, which the system does for a dead agent.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let mut command = tokio::process::Command::new("cargo");
//! platform::process::isolate(command.as_std_mut());
//! let mut child = command.spawn()?;
//! let tree = platform::process::ProcessTree::adopt(&child)?;
//! // … on abort:
//! tree.stop(&mut child, std::time::Duration::from_secs(1)).await;
//! # Ok(()) }
//! ```

use std::io;
use std::path::Path;
use std::time::Duration;

use crate::sys;

/// Makes `command` start a tree of its own when it is spawned: a new process group (Unix),
/// or suspended in a new process group until [`ProcessTree::adopt`] has put it in a job and
/// resumes it (Windows: a process that ran before it was in the job could start children
/// outside it). Spawn it and adopt it at once.
pub fn isolate(command: &mut std::process::Command) {
    sys::isolate(command);
}

/// The tree of processes a spawned command leads. Dropped while armed, it kills whatever of
/// the tree still runs, so nothing outlives a call that was itself dropped mid-run;
/// [`ProcessTree::release`] leaves the rest running (a server the command started on
/// purpose with `&`).
#[derive(Debug)]
pub struct ProcessTree {
    tree: sys::Tree,
    armed: bool,
}

impl ProcessTree {
    /// Takes charge of the tree `child` leads; `child` was spawned from a command given to
    /// [`isolate`]. Windows: if the job cannot be made (a job of the agent's own that
    /// forbids it), the child is still resumed and the error returned: it runs, but only it
    /// can be stopped. The tree is registered with the watchdog (Unix) while it is armed.
    pub fn adopt(child: &tokio::process::Child) -> io::Result<ProcessTree> {
        let pid = child.id().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "the command has already been reaped",
            )
        })?;
        ProcessTree::adopt_pid(pid)
    }

    /// [`ProcessTree::adopt`] for a child known by its pid only (one another library
    /// spawned from a command given to [`isolate`], and has not reaped).
    pub fn adopt_pid(pid: u32) -> io::Result<ProcessTree> {
        let tree = sys::Tree::adopt(pid)?;
        Ok(ProcessTree { tree, armed: true })
    }

    /// The tree's id: the process group's (the leader's pid) on Unix, the leader's pid on
    /// Windows.
    pub fn id(&self) -> u32 {
        self.tree.id()
    }

    /// Whether any process of the tree still runs (a zombie does not count: an orphan killed
    /// stays one until init reaps it, which some inits do late or never).
    pub fn alive(&self) -> bool {
        self.tree.alive()
    }

    /// Asks every process of the tree to end: SIGTERM to the group on Unix. Windows has no
    /// such request for processes without a console window of their own: the tree is ended
    /// at once, as [`ProcessTree::kill`] does.
    pub fn terminate(&self) {
        self.tree.terminate();
    }

    /// Ends every process of the tree at once (SIGKILL; `TerminateJobObject`).
    pub fn kill(&self) {
        self.tree.kill();
    }

    /// Asks the tree to end, waits up to `grace` for the leader and the rest to go, then
    /// kills whatever is left; reaps the leader.
    pub async fn stop(&self, leader: &mut tokio::process::Child, grace: Duration) {
        self.terminate();
        let deadline = tokio::time::Instant::now() + grace;
        let _ = tokio::time::timeout_at(deadline, leader.wait()).await;
        while self.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.alive() {
            self.kill();
        }
        let _ = leader.wait().await;
    }

    /// Leaves what still runs of the tree running, no longer the agent's to stop (and no
    /// longer killed when the agent dies).
    pub fn release(mut self) {
        self.armed = false;
        self.tree.release();
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        if self.armed && self.tree.alive() {
            self.tree.kill();
        }
    }
}

/// Whether a process of group `pgid` is still running, zombies aside (Unix; tests and the
/// tools' own checks).
#[cfg(unix)]
pub fn group_alive(pgid: u32) -> bool {
    sys::group_alive(pgid)
}

/// Whether process `pid` exists (it may be another user's).
pub fn pid_alive(pid: u32) -> bool {
    sys::pid_alive(pid)
}

/// Has `dir` removed (recursively) when the agent process ends, however it ends (Unix: by
/// the watchdog). On Windows nothing removes it after a crash; the system's temporary-file
/// cleanup does, in time. A path holding a line break is left in place.
pub fn remove_at_exit(dir: &Path) {
    sys::remove_at_exit(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> tokio::process::Command {
        #[cfg(unix)]
        let mut command = {
            let mut c = tokio::process::Command::new("/bin/sh");
            c.arg("-c").arg(script);
            c
        };
        #[cfg(windows)]
        let mut command = {
            let mut c = tokio::process::Command::new("cmd");
            c.arg("/C").arg(script);
            c
        };
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        isolate(command.as_std_mut());
        command
    }

    /// The tree's grandchildren go with it: a command whose child outlives the shell that
    /// started it is still stopped whole.
    #[cfg(unix)]
    #[tokio::test]
    async fn stopping_a_tree_ends_the_grandchildren_too() {
        use tokio::io::AsyncReadExt;
        let mut child = shell("sleep 60 & echo $!; wait").spawn().unwrap();
        let tree = ProcessTree::adopt(&child).unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while out.read(&mut byte).await.unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let grandchild: u32 = String::from_utf8(line).unwrap().trim().parse().unwrap();
        assert!(pid_alive(grandchild));
        assert!(tree.alive());
        tree.stop(&mut child, Duration::from_secs(5)).await;
        assert!(!tree.alive());
        assert!(!group_alive(tree.id()));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_dropped_tree_is_killed_and_a_released_one_is_left_running() {
        let child = shell("sleep 60").spawn().unwrap();
        let tree = ProcessTree::adopt(&child).unwrap();
        let id = tree.id();
        drop(tree);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while group_alive(id) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!group_alive(id), "a dropped tree is killed");

        let child = shell("sleep 60").spawn().unwrap();
        let tree = ProcessTree::adopt(&child).unwrap();
        let id = tree.id();
        tree.release();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(group_alive(id), "a released tree runs on");
        // SAFETY: killpg only sends a signal, to the group this test started.
        unsafe { libc::killpg(id as i32, libc::SIGKILL) };
    }

    /// Compiled for Windows in CI (`scripts/cross-check.sh`), run on a Windows machine: a
    /// command's children are in its job, and killing the job ends them.
    #[cfg(windows)]
    #[tokio::test]
    async fn killing_the_job_ends_the_whole_tree() {
        let mut child = shell("ping -n 60 127.0.0.1 > NUL").spawn().unwrap();
        let tree = ProcessTree::adopt(&child).unwrap();
        // cmd's own child, ping, is in the job too.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while tree.tree.active_processes() < 2 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(tree.tree.active_processes() >= 2);
        tree.stop(&mut child, Duration::from_secs(1)).await;
        assert!(!tree.alive());
        assert_eq!(tree.tree.active_processes(), 0);
    }

    #[test]
    fn this_process_is_alive_and_an_unused_pid_is_not() {
        assert!(pid_alive(std::process::id()));
        // Above Linux's largest pid (2^22), odd (Windows' are multiples of 4).
        assert!(!pid_alive(4_194_305));
        // Not a negative pid in disguise (kill(-2) would ask about process group 2).
        assert!(!pid_alive(u32::MAX - 1));
    }
}
