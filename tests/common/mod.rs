//! What the end-to-end tests of the binary share: a private home and work directory per
//! test, the binary's command line with no provider key inherited, a mock server.
#![allow(dead_code)]

pub mod pty;
pub mod rpc;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use mock_llm::{MockServer, Reply, Script};
use serde_json::Value;

pub const KEYS: [&str; 6] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
];

pub struct Env {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

/// Whether this machine can confine commands at all (the default policy's summary is not
/// "none"). Where nothing can (a container without Landlock, with the network on), the agent
/// asks before every command that is not known read-only, so the tests whose subject is not
/// the sandbox run the agent with `danger-full-access` ([`SANDBOX_FOR_TESTS`]); the tests of
/// the sandbox remove it and check that degraded behaviour.
pub fn something_confines() -> bool {
    static CONFINES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CONFINES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let policy =
            sandbox::Policy::new(sandbox::SandboxMode::WorkspaceWrite, dir.path(), &[], None);
        sandbox::probe().summary(&policy).level != sandbox::Level::None
    })
}

/// Whether commands' writes outside the workspace are refused on this machine (Landlock on
/// Linux, Seatbelt on macOS).
pub fn writes_are_confined() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let policy = sandbox::Policy::new(sandbox::SandboxMode::WorkspaceWrite, dir.path(), &[], None);
    let layers = sandbox::probe().summary(&policy).layers;
    layers.contains(&"landlock") || layers.contains(&"seatbelt")
}

/// The variable that sets the sandbox mode, and its value for tests that are not about the
/// sandbox on a machine where nothing confines commands.
pub const SANDBOX_FOR_TESTS: (&str, &str) = ("CODING_AGENT_SANDBOX", "danger-full-access");

impl Env {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    pub fn command(&self, server: Option<&MockServer>, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_coding-agent"));
        if let Some(server) = server {
            command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        }
        command
            .args(args)
            .current_dir(self.work.path())
            .env("CODING_AGENT_HOME", self.home.path())
            // No test looks for real local servers (a developer's Ollama must not answer).
            .env("CODING_AGENT_LOCAL_PROBES", "")
            .env_remove("OLLAMA_HOST")
            .env_remove(SANDBOX_FOR_TESTS.0);
        if !something_confines() {
            command.env(SANDBOX_FOR_TESTS.0, SANDBOX_FOR_TESTS.1);
        }
        for key in KEYS
            .iter()
            .chain(&["CODING_AGENT_MODEL", "CODING_AGENT_BASE_URL"])
        {
            command.env_remove(key);
        }
        command
    }

    /// [`Env::command`] with the sandbox the user's settings give, whatever this machine
    /// can confine: for the tests of the sandbox itself.
    pub fn confined_command(&self, server: Option<&MockServer>, args: &[&str]) -> Command {
        let mut command = self.command(server, args);
        command.env_remove(SANDBOX_FOR_TESTS.0);
        command
    }

    /// Runs off the async runtime so the in-process server keeps serving.
    pub async fn run(&self, server: Option<&MockServer>, args: &[&str], stdin: &str) -> Output {
        self.run_command(self.command(server, args), stdin).await
    }

    /// [`Env::run`] with the sandbox whatever this machine can confine.
    pub async fn run_confined(
        &self,
        server: Option<&MockServer>,
        args: &[&str],
        stdin: &str,
    ) -> Output {
        self.run_command(self.confined_command(server, args), stdin)
            .await
    }

    /// Runs `command` off the async runtime with `stdin` as its input.
    pub async fn run_command(&self, mut command: Command, stdin: &str) -> Output {
        let stdin = stdin.to_string();
        tokio::task::spawn_blocking(move || {
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }

    pub fn sessions(&self) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let root = self.home.path().join("sessions");
        for dir in std::fs::read_dir(root).into_iter().flatten().flatten() {
            out.extend(
                std::fs::read_dir(dir.path())
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    // Beside each file: its directory of spilled outputs and images.
                    .filter(|p| p.extension().is_some_and(|e| e == "jsonl")),
            );
        }
        out
    }
}

pub async fn serve(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script { replies }).await.unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The events of `--mode json` output, a JSON value per line.
pub fn json_events(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn roles(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

/// The binary, copied where an unprivileged user can run it: tests that must not run as root
/// (CI runs as root) run it as `nobody` with `setpriv`, and the build directory may not be
/// open to other users.
#[cfg(unix)]
pub fn binary_for_nobody() -> std::path::PathBuf {
    static COPY: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    let (_, path) = COPY.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("coding-agent");
        copy_executable(env!("CARGO_BIN_EXE_coding-agent").as_ref(), &path);
        (dir, path)
    });
    path.clone()
}

/// The pid a command of the agent wrote to `pid_file` (`echo $$ > pid`): the leader of its
/// process group. Fails if the agent exits first.
pub async fn command_pid(child: &mut std::process::Child, pid_file: &std::path::Path) -> i32 {
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the agent exited before the command started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The MCP test server (crates/mcp-test-server), built once per test binary (a no-op when
/// it is up to date): the tests start it as the agent would, as a child on stdio.
pub fn mcp_test_server() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        // target/<profile>/coding-agent → target/<profile>
        let profile_dir = std::path::Path::new(env!("CARGO_BIN_EXE_coding-agent"))
            .parent()
            .unwrap()
            .to_path_buf();
        let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "--quiet", "-p", "mcp-test-server"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build
            .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
            .status()
            .unwrap();
        assert!(status.success(), "building mcp-test-server failed");
        profile_dir.join("mcp-test-server")
    })
    .clone()
}

/// A `[mcp_servers.NAME]` entry that runs the test server with `args`, plus `extra` lines.
pub fn mcp_server_entry(name: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{}]\n{extra}\n",
        mcp_test_server().display().to_string(),
        args.join(", ")
    )
}

/// Copies the executable `from` to `to` (mode 0755) with `install`, in its own process: a file
/// this process had open for writing would be inherited by any child another test thread
/// forks meanwhile, and running the copy then fails with "Text file busy".
pub fn copy_executable(from: &std::path::Path, to: &std::path::Path) {
    let status = std::process::Command::new("install")
        .args(["-m", "0755"])
        .arg(from)
        .arg(to)
        .status()
        .expect("install runs (coreutils)");
    assert!(
        status.success(),
        "install {} {}",
        from.display(),
        to.display()
    );
}

/// The names of the tools a chat-completions request body offers.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}
