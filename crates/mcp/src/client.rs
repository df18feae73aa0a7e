//! Connecting to one server: a child process on stdio (in the sandbox commands run in, with
//! the provider keys hidden, its stderr kept for error messages) or a streamable-HTTP URL.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use platform::process::ProcessTree;
use rmcp::RoleClient;
use rmcp::service::{RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::{ServerConfig, Transport};
use crate::line_cap::LineCap;

pub(crate) type Service = RunningService<RoleClient, ()>;

/// A stdio server's whole tree of processes, killed when dropped: a restart, a failed start,
/// the agent's exit. rmcp kills only the child it started, and only from a task that a
/// runtime shutting down never runs; servers started by `npx` or `uv` are a tree of processes.
pub(crate) type GroupGuard = Option<ProcessTree>;

/// A connected server, and the guard of its processes (none over HTTP).
pub(crate) struct Connected {
    pub service: Service,
    pub _group: GroupGuard,
    /// A stdio server's process, killed when dropped (none over HTTP).
    pub _child: Option<tokio::process::Child>,
}

/// What a stdio server started with, besides its config.
pub struct Launch {
    /// Where the agent runs: a server's default working directory.
    pub cwd: std::path::PathBuf,
    /// The sandbox of bash; `None`: commands run unconfined.
    pub sandbox: Option<Arc<sandbox::Sandbox>>,
    /// Environment variables a server must not see (the provider keys).
    pub hidden_env: Vec<String>,
}

/// The last lines a server wrote on stderr: what it said before it died.
#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// The task reading it, which ends when the server closes its stderr (exits).
    reader: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl StderrTail {
    const LINES: usize = 20;

    /// Waits (a little) until the server's stderr is closed, so a dying server's last words
    /// are in the tail before anyone reads it.
    pub async fn settle(&self) {
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), reader).await;
        }
    }

    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == Self::LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last few lines, joined; empty when it said nothing.
    pub fn last(&self, n: usize) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let skip = lines.len().saturating_sub(n);
        lines
            .iter()
            .skip(skip)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// Starts the server and completes the protocol's handshake.
pub(crate) async fn connect(
    config: &ServerConfig,
    launch: &Launch,
    stderr: &StderrTail,
) -> Result<Connected, String> {
    match config.transport()? {
        Transport::Stdio { command, args } => stdio(config, launch, &command, &args, stderr).await,
        Transport::Http { url } => Ok(Connected {
            service: http(config, &url).await?,
            _group: None,
            _child: None,
        }),
    }
}

async fn stdio(
    config: &ServerConfig,
    launch: &Launch,
    program: &str,
    args: &[String],
    stderr: &StderrTail,
) -> Result<Connected, String> {
    let cwd = match &config.cwd {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => launch.cwd.join(dir),
        None => launch.cwd.clone(),
    };
    let mut command = std::process::Command::new(resolve_program(program, &cwd));
    command.args(args).current_dir(&cwd);
    for key in launch
        .hidden_env
        .iter()
        .filter(|k| !config.env_vars.contains(k))
    {
        command.env_remove(key);
    }
    command.envs(&config.env);
    if config.sandboxed()
        && let Some(sandbox) = &launch.sandbox
    {
        let prepared = sandbox
            .prepare()
            .map_err(|e| format!("the sandbox could not be prepared: {e}"))?;
        let mut confined = prepared.command(command.get_program(), command.get_args(), &cwd);
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => confined.env(key, value),
                None => confined.env_remove(key),
            };
        }
        command = confined;
    }
    // A tree of its own: a terminal's Ctrl+C is for the agent, not for its servers, and the
    // whole tree goes when the server does.
    platform::process::isolate(&mut command);
    let mut command = tokio::process::Command::from(command);
    command
        .kill_on_drop(true)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Spawned here rather than by rmcp's child-process transport, so its output can pass
    // through `LineCap`: an answer too large for rmcp fails its call at once, with the size.
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let group = match child.id().map(ProcessTree::adopt_pid) {
        Some(Ok(tree)) => Some(tree),
        Some(Err(e)) => return Err(format!("cannot start `{program}`: {e}")),
        None => None,
    };
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(format!("cannot start `{program}`: no pipes to it"));
    };
    if let Some(err) = child.stderr.take() {
        let tail = stderr.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if !line.trim().is_empty() {
                    tail.push(line);
                }
            }
        });
        *stderr.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(reader);
    }
    let transport = (LineCap::new(stdout), stdin);
    let served = ().serve(transport).await;
    if served.is_err() {
        stderr.settle().await;
    }
    let service = served.map_err(|e| {
        let said = stderr.last(3);
        if said.is_empty() {
            format!("the handshake failed: {e}")
        } else {
            format!("the handshake failed: {e} (stderr: {said})")
        }
    })?;
    Ok(Connected {
        service,
        _group: group,
        _child: Some(child),
    })
}

/// A relative program path (`./server.py`) is relative to the server's directory.
fn resolve_program(program: &str, cwd: &Path) -> std::path::PathBuf {
    if program.contains('/') && !Path::new(program).is_absolute() {
        cwd.join(program)
    } else {
        program.into()
    }
}

async fn http(config: &ServerConfig, url: &str) -> Result<Service, String> {
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(var) = &config.bearer_token_env {
        let token = std::env::var(var)
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("`bearer_token_env`: {var} is not set"))?;
        transport = transport.auth_header(token);
    }
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        headers.insert(name, value);
    }
    for (name, var) in &config.env_http_headers {
        let Some(value) = std::env::var(var).ok().filter(|v| !v.is_empty()) else {
            return Err(format!("header `{name}`: {var} is not set"));
        };
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        headers.insert(name, value);
    }
    if !headers.is_empty() {
        transport = transport.custom_headers(headers);
    }
    let transport = StreamableHttpClientTransport::from_config(transport);
    ().serve(transport)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))
}
