//! `bash`: run a shell command as a tree of processes of its own (`platform::process`),
//! stream its output, and make sure nothing it started outlives an abort or a timeout. The
//! shell is bash (Git Bash on Windows), else the system's (`platform::shell`). With a
//! sandbox, each command (and everything it starts) is confined before it runs; the model may
//! ask to run one outside it (`escalate`), which the host approves first.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{Concurrency, Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use platform::process::ProcessTree;
use platform::shell::{Shell, ShellKind};

use crate::args::{bool_arg, required_str, usize_arg};
use crate::spill::{DEFAULT_SPILL_CAP, SpillDir, SpillFile};
use crate::truncate::{MAX_BYTES, MAX_LINES, tail};

/// Time between partial-output updates.
const UPDATE_EVERY: Duration = Duration::from_millis(100);
/// How long output is still read after the command exits; a background job that keeps the
/// pipe open (`server &`) must not hold the call.
const DRAIN: Duration = Duration::from_millis(250);
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(1_000);

/// How `bash` runs commands; the defaults suit a host that configures nothing.
#[derive(Clone, Debug)]
pub struct BashOptions {
    /// Environment variables commands do not inherit: a model that runs `env` would send
    /// provider keys to the provider and the transcript. Default: [`key_env_vars`] of the
    /// built-in registry.
    pub hidden_env: Vec<String>,
    /// Where output too long to show is saved.
    pub spill_dir: SpillDir,
    /// Largest saved output in bytes; beyond it the start is dropped.
    pub spill_cap: u64,
    /// The kernel confinement of each command (prepared anew per command: protected paths
    /// may appear). `None` runs commands unconfined (`danger-full-access`).
    ///
    /// A call with `"escalate": true` runs unconfined whatever this says. The tool does not
    /// ask anyone: the host's before-hook must ask the user to approve such a call (showing
    /// its `justification`) and block it when refused, or escalation is free for the model.
    pub sandbox: Option<Arc<sandbox::Sandbox>>,
    /// While it holds (plan mode), commands run in its read-only sandbox instead, and an
    /// escalated call is confined all the same.
    pub restriction: Option<sandbox::Restriction>,
}

impl Default for BashOptions {
    fn default() -> Self {
        Self {
            hidden_env: key_env_vars(&llm::Registry::builtin(), &[]),
            spill_dir: SpillDir::default(),
            spill_cap: DEFAULT_SPILL_CAP,
            sandbox: None,
            restriction: None,
        }
    }
}

/// The environment variables holding provider API keys: each provider's of `registry`
/// ([`llm::api_key_env`]), the `extra` names (a config's `api_key_env`), and every variable of
/// this process whose name ends in `_API_KEY`. Sorted, without duplicates.
pub fn key_env_vars(registry: &llm::Registry, extra: &[String]) -> Vec<String> {
    let mut names: Vec<String> = registry
        .provider_names()
        .iter()
        .map(|p| llm::api_key_env(p))
        .chain(extra.iter().cloned())
        .chain(
            std::env::vars_os()
                .filter_map(|(name, _)| name.into_string().ok())
                .filter(|name| name.ends_with("_API_KEY")),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

pub struct BashTool {
    cwd: PathBuf,
    options: BashOptions,
    shell: &'static Shell,
    description: String,
}

impl BashTool {
    /// With the default options (provider keys hidden, spills in a private temp dir).
    pub fn new(cwd: PathBuf) -> Self {
        Self::with_options(cwd, BashOptions::default())
    }

    pub fn with_options(cwd: PathBuf, options: BashOptions) -> Self {
        let shell = Shell::detect();
        Self {
            cwd,
            options,
            shell,
            description: description(shell),
        }
    }
}

/// The tool's description, naming the shell that runs the commands.
pub fn description(shell: &Shell) -> String {
    let shell_line = match shell.kind {
        ShellKind::Bash | ShellKind::Posix => format!(
            "Run a {} command in the working directory (stdin is empty; no TTY).",
            shell.name()
        ),
        ShellKind::PowerShell => "Run a PowerShell command in the working directory (this is \
             Windows without Git Bash: write PowerShell, not bash; stdin is empty; no \
             console)."
            .to_string(),
    };
    format!(
        "{shell_line} Returns stdout and stderr together; beyond 2000 lines or 50 KB only the \
         end is shown and the full output is saved to a file whose path is given. A non-zero \
         exit code is an error. `timeout` is in seconds (none by default); on timeout or \
         abort the command and everything it started is killed. Commands may run in a \
         sandbox that limits where they write and whether they reach the network; when one \
         fails because of it, the result says what is allowed. Only then, and only if the \
         task needs it, set `escalate` to true with a one-line `justification`: the user is \
         asked to approve running that command outside the sandbox."
    )
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn view(&self) -> ToolView {
        ToolView::Shell
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line"},
                "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed"},
                "escalate": {"type": "boolean", "description": "Run outside the sandbox; the user is asked to approve it first. Only after a sandbox refusal"},
                "justification": {"type": "string", "description": "With escalate: one line telling the user why the command needs to run outside the sandbox"}
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
        // The host's before-hook approved the escalation (or blocked the call).
        let restricted = self.options.restriction.as_ref().and_then(|r| r.active());
        if let Some(read_only) = restricted
            && read_only.summary().level == sandbox::Level::None
            && !(self.shell.kind != ShellKind::PowerShell && sandbox::is_known_read_only(command))
        {
            // Read-only is promised (plan mode, a read-only subagent) and nothing here can
            // hold a command to it: only what is known to change nothing runs.
            return Err(ToolError(
                "Not run: commands must change nothing here (plan mode, or a read-only \
                 subagent), and nothing on this machine can confine them read-only (see \
                 coding-agent doctor), so only commands known to be read-only run."
                    .into(),
            ));
        }
        let escalated = bool_arg(&args, "escalate") && restricted.is_none();
        let sandbox = match restricted {
            Some(read_only) => Some(read_only.as_ref()),
            None if escalated => None,
            None => self.options.sandbox.as_deref(),
        };
        // What an approved unconfined command creates in protected paths is the user's
        // doing; what was planted before it stays refused at the next confined command.
        let watched = self.options.sandbox.as_deref().filter(|_| escalated);
        let planted_before = watched.map(|s| s.planted()).unwrap_or_default();
        let output = run(
            &self.cwd,
            &self.options,
            self.shell,
            sandbox,
            command,
            timeout,
            &ctx,
        )
        .await
        .map_err(ToolError);
        if let Some(sandbox) = watched {
            for planted in sandbox.planted() {
                if !planted_before.contains(&planted) {
                    sandbox.approve_created(&planted.path);
                }
            }
        }
        output
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
    options: &BashOptions,
    shell: &Shell,
    sandbox: Option<&sandbox::Sandbox>,
    command: &str,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    let started = Instant::now();
    let args = shell.args(command);
    let (std_command, confinement) = match sandbox {
        Some(sandbox) => {
            let prepared = sandbox.prepare().map_err(|e| {
                format!("The sandbox could not be prepared ({e}); the command did not run.")
            })?;
            let confinement = Confined {
                layers: prepared.layers().join("+"),
                left_out: prepared.left_out().to_vec(),
                sandbox,
            };
            (
                prepared.command(&shell.program, &args, cwd),
                Some(confinement),
            )
        }
        None => {
            let mut plain = std::process::Command::new(&shell.program);
            plain.args(&args).current_dir(cwd);
            (plain, None)
        }
    };
    let mut shell_command = Command::from(std_command);
    shell_command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Pagers would wait for a terminal that is not there.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat");
    for name in &options.hidden_env {
        shell_command.env_remove(name);
    }
    platform::process::isolate(shell_command.as_std_mut());
    let shell = shell.program.display();
    let mut child = shell_command.spawn().map_err(|e| match &confinement {
        // A step of the confinement failed in the child: the command never ran.
        Some(c) => format!(
            "Cannot start {shell} in the sandbox ({}): {e}. The command did not run.",
            c.layers
        ),
        None => format!("Cannot start {shell}: {e}."),
    })?;
    let tree = match ProcessTree::adopt(&child) {
        Ok(tree) => tree,
        Err(e) => {
            // It runs, but could not be put in a tree of its own: stop it rather than lose
            // hold of what it starts.
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(format!("Cannot start {shell} as a process tree: {e}."));
        }
    };
    let output = Arc::new(Mutex::new(Output::new(options)));
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
        tree.release();
    } else {
        tree.stop(&mut child, KILL_GRACE).await;
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
    let out = std::mem::replace(&mut *lock(&output), Output::new(options));
    Ok(result(out, end, started.elapsed(), confinement.as_ref()))
}

/// How a command was confined, for its result.
struct Confined<'a> {
    /// The layers applied, `landlock+seccomp`; empty when the kernel offered none.
    layers: String,
    left_out: Vec<String>,
    sandbox: &'a sandbox::Sandbox,
}

fn result(
    out: Output,
    end: End,
    elapsed: Duration,
    confinement: Option<&Confined<'_>>,
) -> ToolOutput {
    let shown = out.tail_text();
    let cut = out.total as usize > shown.len();
    let mut text;
    if cut {
        let saved = match (&out.spill, &out.spill_error) {
            (Some(spill), _) if spill.dropped > 0 => format!(
                " The output's last {} were saved to {} (the first {} were dropped to keep \
                 the file under its cap).",
                human_bytes(out.total - spill.dropped),
                spill.path.display(),
                human_bytes(spill.dropped)
            ),
            (Some(spill), _) => format!(" Full output: {}", spill.path.display()),
            (None, Some(err)) => format!(" The full output could not be saved: {err}."),
            (None, None) => String::new(),
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
    // A refusal by the sandbox looks like any permission error: say what it allows.
    let sandbox_note = match (confinement, &end) {
        (Some(c), End::Exited(status)) if !status.success() => c.sandbox.explain_failure(&text),
        _ => None,
    };
    if text.trim().is_empty() {
        text = "(no output)".to_string();
    }
    // Lines for the model that the UI says its own way (an exit footer, a short refusal
    // line): listed in the details so it can leave them out.
    let mut for_model = Vec::new();
    if let Some(note) = note {
        let line = format!("[{note}]");
        text = format!("{}\n{line}", text.trim_end_matches('\n'));
        // Killed, timed out, aborted: no footer says those, so they stay.
        if code.is_some() {
            for_model.push(line);
        }
    }
    let sandbox_refused = sandbox_note.is_some();
    if let Some(sandbox_note) = sandbox_note {
        text = format!("{text}\n{sandbox_note}");
        for_model.push(sandbox_note);
    }
    // What the sandbox cannot protect before it exists (Linux binds only what exists) and a
    // command created: the repository's `.coding-agent/`, missing git hooks, a `commondir`
    // that sends git elsewhere. Refused, by removing it, and said to the model and, through
    // the details, to the user. Checked after every command (a background job may have made
    // it since the last one).
    let mut refused = Vec::new();
    if let Some(c) = confinement {
        for planted in c.sandbox.planted() {
            let path = planted.path.display();
            let removed = remove_planted(&planted.path);
            text = format!(
                "{text}\n[Refused: a command created {path}: {}, which commands may not \
                 write. {}]",
                planted.what,
                if removed {
                    "It was removed."
                } else {
                    "It could not be removed: check it before running git or trusting the \
                     repository."
                }
            );
            refused.push(json!({"path": path.to_string(), "what": planted.what}));
        }
    }
    ToolOutput {
        details: Some(json!({
            "exit_code": code,
            "duration_ms": elapsed.as_millis() as u64,
            "truncated": cut,
            "full_output": out.spill.as_ref().map(|s| s.path.display().to_string()),
            "full_output_dropped_bytes": out.spill.as_ref().map_or(0, |s| s.dropped),
            // `null`: not confined (no sandbox, or escalated).
            "sandbox": confinement.map(|c| json!({
                "layers": c.layers,
                "left_out": c.left_out,
            })),
            // Protected paths a command created, removed (see above).
            "refused_planted": refused,
            // The failure looked like the sandbox's refusal; the model was told how to ask.
            "sandbox_refused": sandbox_refused,
            "for_model": for_model,
        })),
        is_error,
        ..ToolOutput::text(text)
    }
}

/// Removes a file (or directory) a command planted; whether it is gone.
fn remove_planted(path: &std::path::Path) -> bool {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => return true,
    };
    removed.is_ok() || std::fs::symlink_metadata(path).is_err()
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

/// Everything the command printed: the end in memory, the whole (up to a cap) in a file once
/// it is large.
struct Output {
    tail: Vec<u8>,
    total: u64,
    lines: u64,
    spill: Option<SpillFile>,
    /// Why the output could not be saved, once that happened.
    spill_error: Option<String>,
    spill_dir: SpillDir,
    spill_cap: u64,
}

impl Output {
    fn new(options: &BashOptions) -> Self {
        Self {
            tail: Vec::new(),
            total: 0,
            lines: 0,
            spill: None,
            spill_error: None,
            spill_dir: options.spill_dir.clone(),
            spill_cap: options.spill_cap,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.spill.is_none()
            && self.spill_error.is_none()
            && (self.total as usize > MAX_BYTES || self.lines as usize > MAX_LINES)
        {
            // Everything before `bytes` is still in `tail`: it is trimmed only past
            // 4 × MAX_BYTES, and the file is made long before that.
            match SpillFile::create(&self.spill_dir, self.spill_cap, &self.tail) {
                Ok(spill) => self.spill = Some(spill),
                Err(err) => self.spill_error = Some(err),
            }
        }
        if let Some(spill) = self.spill.as_mut()
            && let Err(err) = spill.write(bytes)
        {
            // A full disk loses the saved copy, not the command's result.
            self.spill_error = Some(err.to_string());
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

fn human_bytes(bytes: u64) -> String {
    crate::read::human_size(bytes)
}
