//! `bash`: run a shell command in its own process group, stream its output, and make sure
//! nothing it started outlives an abort or a timeout.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{Concurrency, Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::args::{required_str, usize_arg};
use crate::truncate::{MAX_BYTES, MAX_LINES, tail};

/// Time between partial-output updates.
const UPDATE_EVERY: Duration = Duration::from_millis(100);
/// How long output is still read after the command exits; a background job that keeps the
/// pipe open (`server &`) must not hold the call.
const DRAIN: Duration = Duration::from_millis(250);
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(1_000);

pub struct BashTool {
    cwd: PathBuf,
}

impl BashTool {
    pub fn new(cwd: PathBuf) -> Self {
        Self { cwd }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Run a bash command in the working directory (stdin is empty; no TTY). Returns stdout \
         and stderr together; beyond 2000 lines or 50 KB only the end is shown and the full \
         output is saved to a file whose path is given. A non-zero exit code is an error. \
         `timeout` is in seconds (none by default); on timeout or abort the command and \
         everything it started is killed."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line"},
                "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed"}
            },
            "required": ["command"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let command = required_str(&args, "command")?;
        let timeout = usize_arg(&args, "timeout").map(|s| Duration::from_secs(s as u64));
        run(&self.cwd, command, timeout, &ctx)
            .await
            .map_err(ToolError)
    }
}

/// Why the command stopped.
enum End {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Aborted,
}

async fn run(
    cwd: &std::path::Path,
    command: &str,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    let started = Instant::now();
    let shell = if std::path::Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let mut child = Command::new(shell)
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Pagers would wait for a terminal that is not there.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .process_group(0)
        .spawn()
        .map_err(|e| format!("Cannot start {shell}: {e}."))?;
    let mut group = ProcessGroup {
        pgid: child.id().map(|id| id as i32),
        armed: true,
    };
    let output = Arc::new(Mutex::new(Output::default()));
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, output.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, output.clone())));
    }

    // A timeout too large to add is no timeout.
    let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
    let mut ticker = tokio::time::interval(UPDATE_EVERY);
    let mut reported = 0u64;
    let end = loop {
        tokio::select! {
            status = child.wait() => match status {
                Ok(status) => break End::Exited(status),
                Err(e) => return Err(format!("Waiting for the command failed: {e}.")),
            },
            _ = ctx.cancel.cancelled() => break End::Aborted,
            _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                break End::TimedOut(timeout.unwrap_or_default());
            }
            _ = ticker.tick() => {
                let out = lock(&output);
                if out.total > reported {
                    reported = out.total;
                    ctx.update(ToolOutput::text(out.tail_text()));
                }
            }
        }
    };
    if matches!(end, End::Exited(_)) {
        // A background job the command started on purpose (`server &`) keeps running.
        group.armed = false;
    } else {
        group.terminate(&mut child).await;
    }
    // Whatever the command left running keeps its pipes open: read what is there, then stop.
    let drain_until = tokio::time::Instant::now() + DRAIN;
    for reader in &mut readers {
        if tokio::time::timeout_at(drain_until, &mut *reader)
            .await
            .is_err()
        {
            reader.abort();
        }
    }
    let out = std::mem::take(&mut *lock(&output));
    Ok(result(out, end, started.elapsed()))
}

fn result(out: Output, end: End, elapsed: Duration) -> ToolOutput {
    let shown = out.tail_text();
    let cut = out.total as usize > shown.len();
    let mut text;
    if cut {
        let saved = match &out.spill {
            Some(spill) => format!(" Full output: {}", spill.path.display()),
            None => String::new(),
        };
        text = format!(
            "[Output truncated: showing the last {} lines of {}.{saved}]\n{shown}",
            shown.lines().count(),
            out.lines
        );
    } else {
        text = shown;
    }
    let (is_error, note, code) = match end {
        End::Exited(status) => match status.code() {
            Some(0) => (false, None, Some(0)),
            Some(code) => (true, Some(format!("Exit code {code}.")), Some(code)),
            None => (
                true,
                Some("The command was killed by a signal.".to_string()),
                None,
            ),
        },
        End::TimedOut(after) => (
            true,
            Some(format!(
                "Timed out after {}s; the command and its children were killed.",
                after.as_secs()
            )),
            None,
        ),
        End::Aborted => (
            true,
            Some("Aborted; the command and its children were killed.".to_string()),
            None,
        ),
    };
    if text.trim().is_empty() {
        text = "(no output)".to_string();
    }
    if let Some(note) = note {
        text = format!("{}\n[{note}]", text.trim_end_matches('\n'));
    }
    ToolOutput {
        details: Some(json!({
            "exit_code": code,
            "duration_ms": elapsed.as_millis() as u64,
            "truncated": cut,
            "full_output": out.spill.as_ref().map(|s| s.path.display().to_string()),
        })),
        is_error,
        ..ToolOutput::text(text)
    }
}

/// Reads a pipe to its end into the shared output.
async fn pump(mut pipe: impl tokio::io::AsyncRead + Unpin, output: Arc<Mutex<Output>>) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        lock(&output).push(&buf[..n]);
    }
}

fn lock(output: &Mutex<Output>) -> std::sync::MutexGuard<'_, Output> {
    output.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything the command printed: the end in memory, the whole in a file once it is large.
#[derive(Default)]
struct Output {
    tail: Vec<u8>,
    total: u64,
    lines: u64,
    spill: Option<Spill>,
}

struct Spill {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.spill.is_none()
            && (self.total as usize > MAX_BYTES || self.lines as usize > MAX_LINES)
        {
            self.spill = Some(Spill::create(&self.tail));
        }
        if let Some(file) = self.spill.as_mut().and_then(|s| s.file.as_mut())
            && file.write_all(bytes).is_err()
        {
            // A full disk loses the saved copy, not the command's result.
            self.spill = None;
        }
        self.tail.extend_from_slice(bytes);
        // Keep a little more than is shown, so the cut lands on a line start.
        if self.tail.len() > 4 * MAX_BYTES {
            self.tail.drain(..self.tail.len() - 2 * MAX_BYTES);
        }
    }

    fn tail_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.tail);
        tail(&text, MAX_LINES, MAX_BYTES).0.to_string()
    }
}

impl Spill {
    fn create(so_far: &[u8]) -> Self {
        use std::io::Write;
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("coding-agent-bash-{}-{n}.log", std::process::id()));
        let file = std::fs::File::create(&path)
            .ok()
            .and_then(|mut f| f.write_all(so_far).ok().map(|_| f));
        Self { path, file }
    }
}

/// Whether any process of group `pgid` is still running. Zombies do not count: an orphan
/// that was killed stays a zombie until PID 1 reaps it, which some inits do late or never.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No /proc (not Linux): ask the kernel, zombies included.
        // SAFETY: signal 0 only checks that the group exists.
        return unsafe { libc::killpg(pgid, 0) == 0 };
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(pgid) && state != "Z" && state != "X"
    })
}

/// The command's process group. Killed on drop while armed: if the call itself is dropped
/// mid-run, nothing it started survives.
struct ProcessGroup {
    pgid: Option<i32>,
    armed: bool,
}

impl ProcessGroup {
    fn signal(&self, signal: i32) -> bool {
        match self.pgid {
            // SAFETY: killpg only sends a signal; the id is our child's group.
            Some(pgid) => unsafe { libc::killpg(pgid, signal) == 0 },
            None => false,
        }
    }

    fn alive(&self) -> bool {
        self.pgid.is_some_and(group_alive)
    }

    /// SIGTERM to the whole group, SIGKILL to whatever is left after the grace period.
    async fn terminate(&self, child: &mut tokio::process::Child) {
        self.signal(libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + KILL_GRACE;
        let _ = tokio::time::timeout_at(deadline, child.wait()).await;
        while self.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.alive() {
            self.signal(libc::SIGKILL);
        }
        let _ = child.wait().await;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed && self.alive() {
            self.signal(libc::SIGKILL);
        }
    }
}
