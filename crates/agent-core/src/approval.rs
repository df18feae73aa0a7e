//! Asking the user before a tool call runs.
//!
//! The loop does not decide what needs approval — a host's before-hook does (its sandbox, its
//! rules). What the loop provides is the asking: an [`Approvals`] handle that turns a question
//! into an `approval_requested` event, waits for the answer that any front end (the TUI's
//! keys, an RPC client's `approve` command) gives through [`Agent::decide`](crate::Agent), and
//! announces it as `approval_decided`. An abort answers every open question with a denial.

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::io::{Internal, LoopIo};

/// What the user is asked to allow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Unique for the agent's lifetime; the answer names it.
    pub id: u64,
    pub tool_call_id: String,
    pub tool_name: String,
    /// What would run or change, as the user should see it: the command, or the path.
    pub subject: String,
    /// Why it needs an approval ("runs outside the sandbox", "writes outside the workspace").
    pub reason: String,
    /// The model's one-line justification, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    /// The change a write or edit would make, as a unified diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The command prefix an "always allow" answer would remember, when one is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Vec<String>>,
    /// The subagent whose call this is, when it is not this agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<crate::SubagentRef>,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run it, this once.
    Approve,
    /// Run it, and remember the offered rule for this project.
    ApproveAlways,
    /// Do not run it; the model is told so, with the reason when there is one.
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    pub fn approved(&self) -> bool {
        !matches!(self, Self::Deny { .. })
    }
}

/// A question to ask, before it gets its id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Question {
    pub subject: String,
    pub reason: String,
    pub justification: Option<String>,
    pub diff: Option<String>,
    pub rule: Option<Vec<String>>,
}

/// Lets a before-hook ask the user; see the module docs.
pub struct Approvals<'a> {
    pub(crate) io: Option<&'a LoopIo>,
    pub(crate) call: &'a llm::ToolCall,
}

impl Approvals<'_> {
    /// A handle that cannot ask: every question is denied (hooks called outside a run, tests).
    pub fn nobody(call: &llm::ToolCall) -> Approvals<'_> {
        Approvals { io: None, call }
    }

    /// Asks the user about the call and waits for the answer; an abort (or nobody to ask)
    /// answers with a denial.
    pub async fn ask(&self, question: Question) -> ApprovalDecision {
        let denied = |reason: &str| ApprovalDecision::Deny {
            reason: Some(reason.to_string()),
        };
        let Some(io) = self.io else {
            return denied("nobody can answer here");
        };
        let (reply, answer) = oneshot::channel();
        let request = ApprovalRequest {
            id: 0,
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            subject: question.subject,
            reason: question.reason,
            justification: question.justification,
            diff: question.diff,
            rule: question.rule,
            subagent: None,
        };
        if io.tx.send(Internal::Ask(Box::new(request), reply)).is_err() {
            return denied("the agent stopped");
        }
        tokio::select! {
            decision = answer => decision.unwrap_or_else(|_| denied("the question was withdrawn")),
            _ = io.cancel.cancelled() => denied("the run was aborted"),
        }
    }
}
