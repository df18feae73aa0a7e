//! The host's before-hook: decides which tool calls need the user's approval, asks through the
//! agent (so the TUI and RPC clients see the question as an event), and remembers "always
//! allow" answers in the user's home.
//!
//! - `on-request` (default): commands run in the sandbox unasked; asking is for a command the
//!   model wants to run outside it (`escalate`), a write outside the writable roots, and — when
//!   nothing on this machine can confine commands — every command.
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
}

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
        if self.unconfinable {
            return self
                .ask(
                    approvals,
                    Question {
                        subject: command.to_string(),
                        reason: "nothing on this machine can confine it (see coding-agent doctor)"
                            .into(),
                        justification,
                        ..Question::default()
                    },
                )
                .await;
        }
        if self.mode != ApprovalMode::Untrusted {
            return Ok(());
        }
        let rules = self.rules.rules(&self.project).map_err(|e| e.to_string())?;
        match rules.decide(command) {
            sandbox::Decision::ReadOnly | sandbox::Decision::Allowed => Ok(()),
            sandbox::Decision::Ask(why) => {
                let question = Question {
                    subject: command.to_string(),
                    reason: why.to_string(),
                    justification,
                    rule: sandbox::suggest_prefix(command),
                    ..Question::default()
                };
                self.ask(approvals, question).await
            }
        }
    }

    async fn check_write(&self, call: &ToolCall, approvals: &Approvals<'_>) -> Result<(), String> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        let path = resolve(
            &self.cwd,
            call.arguments["path"].as_str().unwrap_or_default(),
        );
        if sandbox.policy().write_allowed(&path) {
            return Ok(());
        }
        let question = Question {
            subject: path.display().to_string(),
            reason: "writes outside the workspace (or into a protected path)".into(),
            diff: Some(proposed_change(call, &path)),
            ..Question::default()
        };
        self.ask(approvals, question).await
    }
}

#[async_trait]
impl Hooks for Guard {
    async fn before_tool_call(
        &self,
        call: &ToolCall,
        approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        match call.name.as_str() {
            "bash" => self.check_bash(&call.arguments, approvals).await,
            "write" | "edit" => self.check_write(call, approvals).await,
            name if name.starts_with("mcp__") && self.mode == ApprovalMode::Untrusted => {
                let question = Question {
                    subject: format!("{name} {}", call.arguments),
                    reason: "an MCP server's tool (approval mode untrusted)".into(),
                    ..Question::default()
                };
                self.ask(approvals, question).await
            }
            _ => Ok(()),
        }
    }
}

/// `path` from a tool call, as the tools resolve it.
fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let path = path.trim();
    let expanded = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
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
