//! The host's before-hook: decides which tool calls need the user's approval, asks through the
//! agent (so the TUI and RPC clients see the question as an event), and remembers "always
//! allow" answers in the user's home.
//!
//! - `on-request` (default): commands run in the sandbox unasked; asking is for a command the
//!   model wants to run outside it (`escalate`), a write outside the writable roots, and — when
//!   nothing on this machine can confine commands (Windows, a kernel without any layer) —
//!   every command that is neither known read-only nor allowed by a rule the user remembered.
//!   Read-only is judged on bash's syntax: commands run by PowerShell (Windows without Git
//!   Bash) are never taken for read-only.
//! - `untrusted`: also every command that is neither known read-only nor allowed by a rule the
//!   user remembered for this project.
//! - `never`: nothing is asked; what would need an answer is refused.
//!
//! Headless modes (`-p`, JSON) have nobody to ask: what would need an answer is refused with a
//! message that says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{ApprovalDecision, Approvals, Hooks, Question};
use async_trait::async_trait;
use llm::ToolCall;
use serde::Deserialize;
use serde_json::Value;

/// When the agent asks before acting (`-a`, config `approval`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    Untrusted,
    #[default]
    OnRequest,
    Never,
}

impl ApprovalMode {
    pub const NAMES: [&str; 3] = ["untrusted", "on-request", "never"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name.trim() {
            "untrusted" => Ok(Self::Untrusted),
            "on-request" => Ok(Self::OnRequest),
            "never" => Ok(Self::Never),
            other => Err(format!(
                "unknown approval mode `{other}`; the modes are {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

const NOBODY: &str = "nobody can approve in this mode (no terminal to ask on): stay inside the \
                      sandbox and the workspace, or stop and say what you need";
const NEVER: &str = "the user runs with approvals off (-a never): this is refused; stay inside \
                     the sandbox and the workspace";

/// The before-hook of the agent.
pub struct Guard {
    pub mode: ApprovalMode,
    /// False in `-p` and JSON mode.
    pub can_ask: bool,
    /// What commands may write and whether they are confined; `None`: danger-full-access.
    pub sandbox: Option<Arc<sandbox::Sandbox>>,
    /// True when the sandbox is on but this machine cannot confine anything.
    pub unconfinable: bool,
    pub rules: sandbox::ApprovalStore,
    /// The project the rules belong to.
    pub project: PathBuf,
    /// Where relative paths of write and edit calls start.
    pub cwd: PathBuf,
    /// The agent's working mode: plan mode changes nothing, auto-edit asks nothing of edits
    /// in the workspace.
    pub working: agent_core::ModeSwitch,
    /// The MCP servers' tools, to tell the read-only ones (set once they exist).
    pub extra_tools: std::sync::OnceLock<agent_core::ExtraTools>,
}

const PLAN: &str = "plan mode changes nothing: investigate with reads and read-only commands, \
                    then present the plan with submit_plan";

impl Guard {
    /// Asks (or refuses when nobody can answer); `Ok` to go on.
    async fn ask(&self, approvals: &Approvals<'_>, question: Question) -> Result<(), String> {
        if self.mode == ApprovalMode::Never {
            return Err(format!("{}: {NEVER}", question.reason));
        }
        if !self.can_ask {
            return Err(format!("{}: {NOBODY}", question.reason));
        }
        let rule = question.rule.clone();
        match approvals.ask(question).await {
            ApprovalDecision::Approve => Ok(()),
            ApprovalDecision::ApproveAlways => {
                if let Some(prefix) = rule
                    && let Err(err) = self.rules.add(&self.project, &prefix)
                {
                    // The call runs anyway: the user said yes.
                    eprintln!("coding-agent: the rule could not be saved: {err}");
                }
                Ok(())
            }
            ApprovalDecision::Deny { reason } => Err(match reason {
                Some(reason) => format!("denied by the user: {reason}"),
                None => "denied by the user".to_string(),
            }),
        }
    }

    async fn check_bash(&self, args: &Value, approvals: &Approvals<'_>) -> Result<(), String> {
        let command = args["command"].as_str().unwrap_or_default();
        let justification = args["justification"]
            .as_str()
            .map(str::to_string)
            .filter(|j| !j.trim().is_empty());
        if args["escalate"].as_bool() == Some(true) && self.sandbox.is_some() {
            return self
                .ask(
                    approvals,
                    Question {
                        subject: command.to_string(),
                        reason: "runs outside the sandbox".into(),
                        justification,
                        ..Question::default()
                    },
                )
                .await;
        }
        if self.mode != ApprovalMode::Untrusted && !self.unconfinable {
            return Ok(());
        }
        let rules = self.rules.rules(&self.project).map_err(|e| e.to_string())?;
        let why = match rules.decide(command) {
            sandbox::Decision::ReadOnly if bash_syntax() => return Ok(()),
            sandbox::Decision::Allowed => return Ok(()),
            sandbox::Decision::ReadOnly => {
                "PowerShell commands are not checked for being read-only".to_string()
            }
            sandbox::Decision::Ask(why) => why.to_string(),
        };
        let reason = if self.unconfinable {
            format!("nothing on this machine confines commands (see coding-agent doctor): {why}")
        } else {
            why
        };
        let question = Question {
            subject: command.to_string(),
            reason,
            justification,
            rule: sandbox::suggest_prefix(command),
            ..Question::default()
        };
        self.ask(approvals, question).await
    }

    /// A read of what commands may not read (the agent's keys and sessions, `deny_read`) is
    /// the user's call, as a command's would be if the sandbox let it.
    async fn check_read(
        &self,
        call: &ToolCall,
        descends: bool,
        approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        let Some(path) = tools::call_path(&call.name, &call.arguments, &self.cwd) else {
            return Ok(());
        };
        let Some(hidden) = sandbox.policy().read_hidden(&path, descends) else {
            return Ok(());
        };
        let question = Question {
            subject: path.display().to_string(),
            reason: format!(
                "reads {}, which is hidden from commands (the agent's own keys and sessions, \
                 or [sandbox] deny_read)",
                hidden.display()
            ),
            ..Question::default()
        };
        self.ask(approvals, question).await
    }

    async fn check_write(&self, call: &ToolCall, approvals: &Approvals<'_>) -> Result<(), String> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        // No path: the tool refuses the call itself.
        let Some(path) = tools::call_path(&call.name, &call.arguments, &self.cwd) else {
            return Ok(());
        };
        if sandbox.policy().write_allowed(&path) {
            return Ok(());
        }
        // Auto-edit: a write the workspace-write policy allows goes unasked, also under a
        // read-only sandbox. Its check resolves the path (`..`, symbolic links) and keeps the
        // protected paths (.git, the agent's config) asked about.
        if self.working.get() == agent_core::Mode::AutoEdit {
            let policy = sandbox.policy();
            let workspace = sandbox::Policy::new(
                sandbox::SandboxMode::WorkspaceWrite,
                &policy.workspace,
                &[],
                Some(false),
            )
            .hiding(policy.agent_home(), policy.deny_read());
            if workspace.write_allowed(&path) && policy.in_workspace(&path) {
                return Ok(());
            }
        }
        // The path as the model named it (`../notes.txt`), and which rule it breaks.
        let named = call.arguments[tools::PATH_ARGUMENT]
            .as_str()
            .unwrap_or_default()
            .trim();
        let policy = sandbox.policy();
        let inside = policy.mode == sandbox::SandboxMode::WorkspaceWrite
            && policy
                .writable_roots()
                .iter()
                .any(|root| path.starts_with(root));
        let reason = if inside {
            format!("writes into a protected path: {named}")
        } else if policy.mode == sandbox::SandboxMode::ReadOnly {
            format!("writes a file, and the sandbox is read-only: {named}")
        } else {
            format!("writes outside the workspace: {named}")
        };
        let question = Question {
            subject: path.display().to_string(),
            reason,
            diff: Some(proposed_change(call, &path)),
            ..Question::default()
        };
        self.ask(approvals, question).await?;
        // Allowed: creating a protected path this way is not a command planting it.
        sandbox.approve_created(&path);
        Ok(())
    }
}

#[async_trait]
impl Hooks for Guard {
    async fn before_tool_call(
        &self,
        call: &ToolCall,
        approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        // What the tool declares it does decides what is checked (tools::REGISTRY).
        let planning = self.working.get() == agent_core::Mode::Plan;
        match tools::effect(&call.name) {
            Some(tools::Effect::RunsCommands) if planning => {
                self.check_plan_bash(&call.arguments, approvals).await
            }
            Some(tools::Effect::RunsCommands) => self.check_bash(&call.arguments, approvals).await,
            // Not offered in plan mode; a call made anyway is refused.
            Some(tools::Effect::Writes) if planning => Err(format!("not run: {PLAN}")),
            Some(tools::Effect::Writes) => self.check_write(call, approvals).await,
            // The subagent's own calls come through here one by one.
            Some(tools::Effect::Informs | tools::Effect::Delegates) => Ok(()),
            Some(tools::Effect::Reads { descends }) => {
                self.check_read(call, descends, approvals).await
            }
            Some(tools::Effect::Fetches) => self.check_fetch(&call.arguments, approvals).await,
            None if planning && !self.read_only_tool(&call.name) => {
                self.check_plan_other(call, approvals).await
            }
            None => self.check_other(call, approvals).await,
        }
    }
}

impl Guard {
    /// A command in plan mode: the bash tool runs it in the read-only sandbox (or, where
    /// nothing can confine it, only when it is known to be read-only), never outside it.
    async fn check_plan_bash(&self, args: &Value, approvals: &Approvals<'_>) -> Result<(), String> {
        if args["escalate"].as_bool() == Some(true) {
            return Err(format!(
                "not run: in {PLAN}; nothing runs outside the sandbox"
            ));
        }
        self.check_bash(args, approvals).await
    }

    /// An MCP tool its server does not mark read-only, in plan mode: the user decides (its
    /// server was started before the mode, in the configured sandbox).
    async fn check_plan_other(
        &self,
        call: &ToolCall,
        approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        let question = Question {
            subject: format!("{} {}", call.name, call.arguments),
            reason: "plan mode, and this tool's server does not mark it read-only: it may \
                     change something"
                .into(),
            ..Question::default()
        };
        self.ask(approvals, question).await
    }

    /// Whether an extra tool (an MCP server's) says it only reads (`readOnlyHint`).
    fn read_only_tool(&self, name: &str) -> bool {
        self.extra_tools.get().is_some_and(|extra| {
            extra
                .current()
                .iter()
                .any(|t| t.name() == name && t.concurrency() == agent_core::Concurrency::Shared)
        })
    }
}

impl Guard {
    /// The fetch tool reaches the web from the agent itself, outside the command sandbox: a
    /// host the user has not allowed here is asked about (every fetch, under `untrusted`);
    /// "always allow" remembers the host, which also lets it be a private address.
    async fn check_fetch(&self, args: &Value, approvals: &Approvals<'_>) -> Result<(), String> {
        let url = args["url"].as_str().unwrap_or_default().trim();
        // Not a URL: the tool itself says so, and fetches nothing.
        let Some(host) = tools::host_of(url) else {
            return Ok(());
        };
        let rules = self.rules.rules(&self.project).map_err(|e| e.to_string())?;
        // A host at a private or loopback address (this machine's services, the network's,
        // a cloud's metadata) is asked about as such, with a rule of its own: allowing a
        // public host must not let it later resolve to them.
        let private = private_address(&host).await;
        let (allowed, rule) = match &private {
            Some(_) => (
                rules.allows_private_host(&host),
                sandbox::web_rule_private(&host),
            ),
            None => (rules.allows_host(&host), sandbox::web_rule(&host)),
        };
        if allowed && self.mode != ApprovalMode::Untrusted {
            return Ok(());
        }
        let reason = match (&private, allowed) {
            (Some(ip), _) => format!(
                "reads {host}, a private or loopback address ({ip}): a service of this \
                 machine or its network"
            ),
            (None, true) => format!("reads {host} on the web (approval mode untrusted)"),
            (None, false) => format!("reads {host} on the web, a host not allowed here yet"),
        };
        let question = Question {
            subject: url.to_string(),
            reason,
            rule: Some(rule),
            ..Question::default()
        };
        self.ask(approvals, question).await
    }

    /// A tool no table of ours describes: an MCP server's.
    async fn check_other(&self, call: &ToolCall, approvals: &Approvals<'_>) -> Result<(), String> {
        match call.name.as_str() {
            // A server's process is confined like commands are: where nothing confines it,
            // its tools are asked about as commands are.
            name if name.starts_with("mcp__")
                && (self.mode == ApprovalMode::Untrusted || self.unconfinable) =>
            {
                let reason = if self.unconfinable {
                    "an MCP server's tool, and nothing on this machine confines its server \
                     (see coding-agent doctor)"
                } else {
                    "an MCP server's tool (approval mode untrusted)"
                };
                let question = Question {
                    subject: format!("{name} {}", call.arguments),
                    reason: reason.into(),
                    ..Question::default()
                };
                self.ask(approvals, question).await
            }
            _ => Ok(()),
        }
    }
}

/// The first private or loopback address `host` is (an IP) or resolves to, if any (a name
/// that does not resolve has none: the fetch fails on its own).
async fn private_address(host: &str) -> Option<std::net::IpAddr> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<std::net::IpAddr>() {
        return tools::is_private(ip).then_some(ip);
    }
    let found = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::lookup_host((host, 0)),
    )
    .await
    .ok()?
    .ok()?;
    found.map(|a| a.ip()).find(|ip| tools::is_private(*ip))
}

/// Whether commands are written in bash's syntax, the one the read-only check reads
/// (everywhere but Windows without Git Bash, where PowerShell runs them).
fn bash_syntax() -> bool {
    platform::shell::Shell::detect().kind != platform::shell::ShellKind::PowerShell
}

/// What a write or edit would change, as a diff for the question.
fn proposed_change(call: &ToolCall, path: &Path) -> String {
    let shown = path.display().to_string();
    match call.name.as_str() {
        "write" => {
            let old = std::fs::read_to_string(path).unwrap_or_default();
            let new = call.arguments["content"].as_str().unwrap_or_default();
            tools::unified_diff(&old, new, &shown)
        }
        _ => {
            let mut out = String::new();
            for edit in call.arguments["edits"].as_array().into_iter().flatten() {
                let old = edit["old_text"].as_str().unwrap_or_default();
                let new = edit["new_text"].as_str().unwrap_or_default();
                out.push_str(&tools::unified_diff(old, new, &shown));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(home: &Path, mode: ApprovalMode, can_ask: bool, unconfinable: bool) -> Guard {
        Guard {
            mode,
            can_ask,
            sandbox: None,
            unconfinable,
            rules: sandbox::ApprovalStore::new(home),
            project: home.to_path_buf(),
            cwd: home.to_path_buf(),
            working: agent_core::ModeSwitch::default(),
            extra_tools: std::sync::OnceLock::new(),
        }
    }

    async fn check(guard: &Guard, command: &str) -> Result<(), String> {
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": command }),
            invalid_arguments: None,
        };
        guard
            .before_tool_call(&call, &Approvals::nobody(&call))
            .await
    }

    /// What is checked follows what each tool declares in the registry, with the path the
    /// tool itself would open: every writing tool is asked about a write outside the
    /// workspace, every reading tool about a hidden path (issue 45) — a tool added to the
    /// table is covered without touching the guard.
    #[tokio::test]
    async fn every_tool_is_checked_by_what_it_declares() {
        let ws = tempfile::tempdir().unwrap();
        let agent_home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(agent_home.path().join("sessions")).unwrap();
        std::fs::write(agent_home.path().join("auth.toml"), "").unwrap();
        let policy =
            sandbox::Policy::new(sandbox::SandboxMode::WorkspaceWrite, ws.path(), &[], None)
                .hiding(Some(agent_home.path()), &[]);
        let mut headless = guard(agent_home.path(), ApprovalMode::OnRequest, false, false);
        headless.cwd = ws.path().to_path_buf();
        headless.sandbox = Some(Arc::new(sandbox::Sandbox::new(
            policy,
            sandbox::Capabilities::none(),
        )));
        let call = |name: &str, path: &str| ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: serde_json::json!({ "path": path, "content": "x", "edits": [] }),
            invalid_arguments: None,
        };
        let decide = |call: ToolCall| {
            let headless = &headless;
            async move {
                headless
                    .before_tool_call(&call, &Approvals::nobody(&call))
                    .await
            }
        };
        let outside = "/var/tmp/coding-agent-guard-test/x.txt";
        let secret = agent_home.path().join("auth.toml").display().to_string();
        let (mut writers, mut readers) = (0, 0);
        for entry in tools::REGISTRY.iter() {
            match entry.effect {
                tools::Effect::Writes => {
                    writers += 1;
                    let err = decide(call(entry.name, outside)).await.unwrap_err();
                    // The reason names the path as the model gave it.
                    assert!(
                        err.contains(&format!("writes outside the workspace: {outside}")),
                        "{}: {err}",
                        entry.name
                    );
                    assert_eq!(decide(call(entry.name, "inside.txt")).await, Ok(()));
                }
                tools::Effect::Reads { .. } => {
                    readers += 1;
                    let err = decide(call(entry.name, &secret)).await.unwrap_err();
                    assert!(
                        err.contains("hidden from commands"),
                        "{}: {err}",
                        entry.name
                    );
                    assert_eq!(decide(call(entry.name, "src")).await, Ok(()));
                }
                tools::Effect::RunsCommands | tools::Effect::Informs | tools::Effect::Delegates => {
                }
                tools::Effect::Fetches => {
                    // A host nobody allowed: asked, so refused where nobody can answer.
                    let fetch = ToolCall {
                        arguments: serde_json::json!({ "url": "https://docs.rs/serde" }),
                        ..call(entry.name, "")
                    };
                    let err = decide(fetch).await.unwrap_err();
                    assert!(
                        err.contains("reads docs.rs on the web, a host not allowed here yet"),
                        "{err}"
                    );
                }
            }
        }
        assert_eq!((writers, readers), (2, 4));
        // grep and find descend: searching the agent's home finds its sessions.
        let home = agent_home.path().display().to_string();
        assert!(decide(call("grep", &home)).await.is_err());
        assert_eq!(
            decide(call("ls", &home)).await,
            Ok(()),
            "ls lists names only"
        );
        // A protected path inside the workspace is named as such.
        let err = decide(call("write", ".coding-agent/config.toml"))
            .await
            .unwrap_err();
        assert!(
            err.contains("writes into a protected path: .coding-agent/config.toml"),
            "{err}"
        );
    }

    /// Auto-edit lets a write the workspace-write policy allows go unasked, also under a
    /// read-only sandbox — and nothing else: not a path that climbs out with `..` or through
    /// a symbolic link, not a protected path reached by a detour.
    #[cfg(unix)]
    #[tokio::test]
    async fn auto_edit_writes_only_inside_the_workspace_unasked() {
        let ws = tempfile::tempdir().unwrap();
        let away = tempfile::tempdir_in("/var/tmp").unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws_path.join("src")).unwrap();
        std::fs::create_dir_all(ws_path.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(away.path(), ws_path.join("link")).unwrap();
        let policy = sandbox::Policy::new(sandbox::SandboxMode::ReadOnly, &ws_path, &[], None);
        let mut guard = guard(&ws_path, ApprovalMode::OnRequest, false, false);
        guard.sandbox = Some(Arc::new(sandbox::Sandbox::new(
            policy,
            sandbox::Capabilities::none(),
        )));
        guard.working = agent_core::ModeSwitch::new(agent_core::Mode::AutoEdit);
        let write = |path: &str| ToolCall {
            id: "c1".into(),
            name: "write".into(),
            arguments: serde_json::json!({ "path": path, "content": "x" }),
            invalid_arguments: None,
        };
        let decide = |call: ToolCall| {
            let guard = &guard;
            async move {
                guard
                    .before_tool_call(&call, &Approvals::nobody(&call))
                    .await
            }
        };
        assert_eq!(decide(write("src/a.rs")).await, Ok(()));
        // Up and out to the other directory, and into the temp dir beside the workspace.
        let outside = format!(
            "../../..{}/x",
            away.path().canonicalize().unwrap().display()
        );
        let temp = format!("../{}", "beside.txt");
        for escape in [
            outside.as_str(),
            temp.as_str(),
            "src/../.git/hooks/post-checkout",
            ".git/config",
        ] {
            assert!(
                decide(write(escape)).await.is_err(),
                "{escape} went unasked"
            );
        }
        assert!(
            decide(write("link/x")).await.is_err(),
            "a link out went unasked"
        );
        // Default mode under the read-only sandbox asks even inside.
        guard.working = agent_core::ModeSwitch::new(agent_core::Mode::Default);
        let call = write("src/a.rs");
        assert!(
            guard
                .before_tool_call(&call, &Approvals::nobody(&call))
                .await
                .is_err()
        );
    }

    /// A machine with nothing to confine commands (Windows; a kernel without any layer):
    /// known read-only commands and remembered rules run unasked, anything else is asked
    /// about, saying why, and `-a never` refuses it.
    #[tokio::test]
    async fn without_confinement_only_what_is_known_safe_runs_unasked() {
        let home = tempfile::tempdir().unwrap();
        let headless = guard(home.path(), ApprovalMode::OnRequest, false, true);
        if bash_syntax() {
            assert_eq!(check(&headless, "ls -la && git status").await, Ok(()));
        }
        let err = check(&headless, "touch x").await.unwrap_err();
        assert!(
            err.starts_with("nothing on this machine confines commands (see coding-agent doctor)"),
            "{err}"
        );
        assert!(err.contains("nobody can approve"), "{err}");
        // A remembered rule covers its commands.
        headless
            .rules
            .add(home.path(), &["cargo".to_string(), "test".to_string()])
            .unwrap();
        assert_eq!(check(&headless, "cargo test -p x").await, Ok(()));
        let never = guard(home.path(), ApprovalMode::Never, true, true);
        let err = check(&never, "rm -rf build").await.unwrap_err();
        assert!(err.contains("-a never"), "{err}");
        // With confinement, on-request asks nothing of a command in the sandbox.
        let confined = guard(home.path(), ApprovalMode::OnRequest, false, false);
        assert_eq!(check(&confined, "touch x").await, Ok(()));
    }
}
