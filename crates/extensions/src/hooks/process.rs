//! Running one hook command: the event as JSON on stdin, in its own process group and in the
//! same sandbox as the model's commands; exit code, stdout and stderr back. A hook that
//! outlives its timeout (or the user's abort) is killed with everything it started.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use platform::process::ProcessTree;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::config::Hook;

/// Most bytes kept of a hook's stdout or stderr; a chatty hook must not fill the memory.
const MAX_OUTPUT: usize = 256 * 1024;
/// How long output is still read after the hook exits (a background job may hold the pipe).
const DRAIN: Duration = Duration::from_millis(250);

/// How hook commands are run; the same for every hook of an agent.
#[derive(Clone, Default)]
pub struct Runner {
    pub cwd: PathBuf,
    /// The confinement of the model's commands; `None`: unconfined.
    pub sandbox: Option<Arc<sandbox::Sandbox>>,
    /// While it holds (plan mode), hooks run in its read-only sandbox instead.
    pub restriction: Option<sandbox::Restriction>,
    /// Environment variables hooks do not inherit (the provider keys, as for bash).
    pub hidden_env: Vec<String>,
}

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal,
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The run was aborted; it was killed.
    Aborted,
    /// It could not be started.
    NotStarted(String),
}

#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

impl Runner {
    /// Runs `hook` with `input` on stdin until it exits, times out or `cancel` fires.
    pub async fn run(&self, hook: &Hook, input: &Value, cancel: &CancellationToken) -> Ran {
        let started = Instant::now();
        let mut ran = self.run_inner(hook, input, cancel).await;
        ran.duration = started.elapsed();
        ran
    }

    async fn run_inner(&self, hook: &Hook, input: &Value, cancel: &CancellationToken) -> Ran {
        let not_started = |why: String| Ran {
            exit: Exit::NotStarted(why),
            stdout: String::new(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let shell = platform::shell::Shell::detect();
        let args = shell.args(&hook.command);
        let restricted = self.restriction.as_ref().and_then(|r| r.active());
        if restricted.is_some_and(|s| s.summary().level == sandbox::Level::None) {
            // Plan mode promises nothing changes; a hook nothing can confine could.
            return not_started(
                "plan mode, and nothing on this machine can confine it read-only".into(),
            );
        }
        let std_command = match restricted.or(self.sandbox.as_ref()) {
            Some(sandbox) => match sandbox.prepare() {
                Ok(prepared) => prepared.command(&shell.program, &args, &self.cwd),
                Err(e) => return not_started(format!("the sandbox could not be prepared: {e}")),
            },
            None => {
                let mut plain = std::process::Command::new(&shell.program);
                plain.args(&args).current_dir(&self.cwd);
                plain
            }
        };
        let mut command = Command::from(std_command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("CODING_AGENT_HOOK_EVENT", hook.event.name())
            .env("CODING_AGENT_PROJECT_DIR", &self.cwd)
            .kill_on_drop(true);
        for name in &self.hidden_env {
            command.env_remove(name);
        }
        platform::process::isolate(command.as_std_mut());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return not_started(format!("cannot start {}: {e}", shell.name())),
        };
        // If this future is dropped (the run was aborted while the hook ran), the tree goes.
        let tree = match ProcessTree::adopt(&child) {
            Ok(tree) => tree,
            Err(e) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return not_started(format!("cannot start {}: {e}", shell.name()));
            }
        };
        let stdin_text = input.to_string();
        let writer = child.stdin.take().map(|mut stdin| {
            tokio::spawn(async move {
                // A hook that does not read its input closes the pipe: that is fine.
                let _ = stdin.write_all(stdin_text.as_bytes()).await;
                let _ = stdin.shutdown().await;
            })
        });
        let stdout = child
            .stdout
            .take()
            .map(|out| tokio::spawn(read_capped(out)));
        let stderr = child
            .stderr
            .take()
            .map(|err| tokio::spawn(read_capped(err)));

        let exit = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => status.code().map_or(Exit::Signal, Exit::Code),
                Err(e) => Exit::NotStarted(format!("waiting for it failed: {e}")),
            },
            _ = tokio::time::sleep(hook.timeout) => Exit::TimedOut,
            _ = cancel.cancelled() => Exit::Aborted,
        };
        if matches!(exit, Exit::TimedOut | Exit::Aborted) {
            tree.kill();
            let _ = child.wait().await;
        }
        // Exited on its own: what it started in the background on purpose may go on.
        tree.release();
        if let Some(writer) = writer {
            writer.abort();
        }
        let drain_until = tokio::time::Instant::now() + DRAIN;
        let stdout = collect(stdout, drain_until).await;
        let stderr = collect(stderr, drain_until).await;
        Ran {
            exit,
            stdout,
            stderr,
            duration: Duration::ZERO,
        }
    }
}

async fn read_capped<R: AsyncRead + Unpin>(mut reader: R) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    kept
}

async fn collect(
    reader: Option<tokio::task::JoinHandle<Vec<u8>>>,
    until: tokio::time::Instant,
) -> String {
    let Some(mut reader) = reader else {
        return String::new();
    };
    match tokio::time::timeout_at(until, &mut reader).await {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => {
            reader.abort();
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::{HookConfig, HookEvent};
    use crate::skills::Origin;

    fn hook(command: &str, timeout_secs: u64) -> Hook {
        let config = HookConfig {
            event: HookEvent::PreToolUse,
            matcher: None,
            command: command.to_string(),
            timeout_secs: Some(timeout_secs),
        };
        Hook::compile(&config, Origin::User).unwrap()
    }

    fn runner(dir: &std::path::Path) -> Runner {
        Runner {
            cwd: dir.to_path_buf(),
            ..Runner::default()
        }
    }

    /// Gone, or a zombie nobody reaped yet (no init in a container).
    fn dead(pid: &str) -> bool {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim().starts_with('Z'))
    }

    /// Whether the process is gone within 10 s: SIGKILL is sent to the group at once, but the
    /// kernel finishes a process's exit on its own time (seen to lag on a loaded machine).
    async fn dies(pid: &str) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !dead(pid) {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    async fn pid_in(path: &std::path::Path) -> String {
        loop {
            if let Ok(pid) = std::fs::read_to_string(path)
                && !pid.trim().is_empty()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn input_goes_in_and_exit_code_and_output_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let ran = runner(dir.path())
            .run(
                &hook("read line; echo \"got $line\"; echo warn >&2; exit 3", 5),
                &serde_json::json!({"a": 1}),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(ran.exit, Exit::Code(3));
        assert_eq!(ran.stdout, "got {\"a\":1}\n");
        assert_eq!(ran.stderr, "warn\n");
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let ran = runner(dir.path())
            .run(&hook(&command, 1), &Value::Null, &CancellationToken::new())
            .await;
        assert_eq!(ran.exit, Exit::TimedOut);
        assert!(ran.duration >= Duration::from_secs(1));
        assert!(dies(&std::fs::read_to_string(&pid_file).unwrap()).await);
    }

    #[tokio::test]
    async fn an_abort_or_a_dropped_run_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let cancel = CancellationToken::new();
        let run = {
            let (runner, hook, cancel) = (runner(dir.path()), hook(&command, 60), cancel.clone());
            tokio::spawn(async move { runner.run(&hook, &Value::Null, &cancel).await })
        };
        let pid = pid_in(&pid_file).await;
        cancel.cancel();
        assert_eq!(run.await.unwrap().exit, Exit::Aborted);
        assert!(dies(&pid).await);

        std::fs::remove_file(&pid_file).unwrap();
        let run = {
            let (runner, hook) = (runner(dir.path()), hook(&command, 60));
            tokio::spawn(async move {
                runner
                    .run(&hook, &Value::Null, &CancellationToken::new())
                    .await
            })
        };
        let pid = pid_in(&pid_file).await;
        run.abort();
        let _ = run.await;
        assert!(dies(&pid).await, "the hook's child outlived a dropped run");
    }
}
