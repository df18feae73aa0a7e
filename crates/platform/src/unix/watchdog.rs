//! A watchdog that outlives the agent: when the agent dies, by any means (SIGKILL included),
//! it kills every command process group still registered and removes the directories it was
//! given (the bash tool's private spill directory).
//!
//! `PR_SET_PDEATHSIG` on a command's group leader would not reach the processes it forked
//! (`bash -c 'sleep 60; echo'` runs `sleep` in a child), and nothing inside a process can act
//! after a SIGKILL. So one small `/bin/sh` child per agent process reads a pipe from the
//! agent: `+PGID` registers a group, `-PGID` forgets it, `dPATH` names a directory to remove.
//! The agent holds the only write end (opened close-on-exec, so no command inherits it); when
//! the agent dies the kernel closes it, the watchdog reads end-of-file, and it acts.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The watchdog's program. It ignores the terminal's signals (it lives in its own process
/// group too): only the end of its input ends it.
const SCRIPT: &str = r#"
trap '' HUP INT QUIT TERM PIPE TSTP TTIN TTOU
set --
groups=' '
while IFS= read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*)
      gone=${line#-}
      kept=' '
      for g in $groups; do [ "$g" = "$gone" ] || kept="$kept$g "; done
      groups=$kept
      ;;
    d*) set -- "$@" "${line#d}" ;;
  esac
done
for g in $groups; do
  case $g in *[!0-9]*) ;; *) kill -s KILL -- "-$g" 2>/dev/null ;; esac
done
for dir in "$@"; do rm -rf -- "$dir"; done
"#;

/// The running watchdog and everything registered with it (replayed if it must be restarted).
struct State {
    running: Option<(Child, ChildStdin)>,
    groups: BTreeSet<u32>,
    dirs: Vec<PathBuf>,
}

static STATE: Mutex<State> = Mutex::new(State {
    running: None,
    groups: BTreeSet::new(),
    dirs: Vec::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    /// Sends one line (a single write, so lines never interleave), starting the watchdog
    /// when it is not running or has died; the whole registry is replayed to a new one.
    fn send(&mut self, line: &str) {
        if let Some((_, stdin)) = &mut self.running
            && stdin.write_all(line.as_bytes()).is_ok()
        {
            return;
        }
        if let Some((mut child, stdin)) = self.running.take() {
            drop(stdin);
            let _ = child.try_wait();
        }
        let Ok(mut child) = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
        else {
            // No watchdog: commands are still killed on abort, timeout and normal exit.
            return;
        };
        let Some(mut stdin) = child.stdin.take() else {
            return;
        };
        let mut replay: String = self.groups.iter().map(|g| format!("+{g}\n")).collect();
        for dir in &self.dirs {
            replay += &format!("d{}\n", dir.display());
        }
        if stdin.write_all(replay.as_bytes()).is_ok() {
            self.running = Some((child, stdin));
        }
    }
}

/// A process group the watchdog kills if the agent dies; forgotten when dropped (once the
/// command ended), so a later group reusing the id is never touched.
#[derive(Debug)]
pub(crate) struct Registration(u32);

/// Registers process group `pgid`.
pub(crate) fn register(pgid: u32) -> Registration {
    let mut state = state();
    state.groups.insert(pgid);
    state.send(&format!("+{pgid}\n"));
    Registration(pgid)
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut state = state();
        state.groups.remove(&self.0);
        state.send(&format!("-{}\n", self.0));
    }
}

/// Has the watchdog remove `dir` (recursively) when the agent process ends. A path holding a
/// line break cannot be sent and is left in place.
pub(crate) fn remove_at_exit(dir: &Path) {
    // A lossy rendering could name another path: only exact text is sent.
    let Some(text) = dir.to_str() else { return };
    if text.contains('\n') || text.contains('\r') || !dir.is_absolute() {
        return;
    }
    let mut state = state();
    state.dirs.push(dir.to_path_buf());
    state.send(&format!("d{text}\n"));
}
