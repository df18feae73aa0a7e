//! The RPC protocol's messages as types: one command per JSON line in, one response per
//! command out (agent events go out as they are). docs/rpc.md shows each with an example.

use std::path::PathBuf;

use agent_core::{AgentMessage, QueueKind};
use agent_core::{OnConflict, RestoreOutcome};
use llm::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of input: a command, with an optional `id` echoed in its response.
#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub id: Value,
    #[serde(flatten)]
    pub command: Command,
}

/// An image sent with a message: base64 bytes and their type (PNG, JPEG, GIF or WebP; the
/// bytes decide, and one too large for the model's API is scaled down).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcImage {
    pub data: String,
    pub mime_type: String,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// Starts a run; while one is going, `streaming_behavior` says whether the message steers
    /// it or waits as a follow-up (without it, a busy agent refuses).
    Prompt {
        message: String,
        #[serde(default)]
        images: Vec<RpcImage>,
        #[serde(default)]
        streaming_behavior: Option<StreamingBehavior>,
        /// Stops this run once this long has passed (`"90s"`, `"10m"`), as an abort does;
        /// replaces `--deadline` for it.
        #[serde(default, with = "deadline")]
        deadline: Option<std::time::Duration>,
    },
    Steer {
        message: String,
        #[serde(default)]
        images: Vec<RpcImage>,
    },
    FollowUp {
        message: String,
        #[serde(default)]
        images: Vec<RpcImage>,
    },
    Abort,
    GetState,
    SetModel {
        /// `provider/id`, as `--list-models` shows it.
        model: String,
    },
    SetThinking {
        level: ThinkingLevel,
    },
    /// Steers the running subagent `subagent` (its id, from a `subagent` event).
    SubagentSteer {
        subagent: String,
        message: String,
    },
    /// Stops the running subagent `subagent` alone; its `task` call ends with what it had.
    SubagentAbort {
        subagent: String,
    },
    /// The working mode: `default`, `auto-edit` or `plan`.
    SetMode {
        mode: agent_core::Mode,
    },
    GetMessages,
    Compact {
        #[serde(default)]
        instructions: Option<String>,
    },
    NewSession,
    /// Answers an `approval_requested` event.
    Approve {
        request_id: u64,
        decision: Answer,
        /// Told to the model with a denial.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Takes back the files of the agent's last step.
    Undo {
        #[serde(default = "ask")]
        on_conflict: OnConflict,
    },
    /// Re-applies what `undo` took back.
    Redo {
        #[serde(default = "ask")]
        on_conflict: OnConflict,
    },
    /// The checkpoints of the current branch.
    Checkpoints,
    /// Goes back to entry `entry_id` (from `get_tree`): to just before it when it is a user
    /// message, else to it.
    Rewind {
        entry_id: String,
        #[serde(default)]
        restore: RewindWhat,
        #[serde(default = "ask")]
        on_conflict: OnConflict,
    },
    /// The session's tree, every branch.
    GetTree,
    /// Stops and starts the MCP server `name` (its states arrive as `mcp_status` events).
    McpRestart {
        name: String,
    },
    /// Names the newest message.
    Label {
        name: String,
    },
    /// Goes on in a copy of the current branch, in a new session file.
    Fork,
}

/// A duration as people write it (`"90s"`, `"1h 30m"`).
mod deadline {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        let Some(text) = Option::<String>::deserialize(deserializer)? else {
            return Ok(None);
        };
        humantime::parse_duration(&text)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("deadline `{text}`: {e}")))
    }
}

fn ask() -> OnConflict {
    OnConflict::Ask
}

/// What `rewind` restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindWhat {
    #[default]
    Both,
    Code,
    Conversation,
}

impl RewindWhat {
    pub fn scope(self) -> tui::RewindScope {
        match self {
            Self::Both => tui::RewindScope::Both,
            Self::Code => tui::RewindScope::Code,
            Self::Conversation => tui::RewindScope::Conversation,
        }
    }
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Approve,
    ApproveAlways,
    Deny,
}

impl Command {
    /// The name of the command, as in its `type`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Prompt { .. } => "prompt",
            Self::Steer { .. } => "steer",
            Self::FollowUp { .. } => "follow_up",
            Self::Abort => "abort",
            Self::GetState => "get_state",
            Self::SetModel { .. } => "set_model",
            Self::SetThinking { .. } => "set_thinking",
            Self::SetMode { .. } => "set_mode",
            Self::SubagentSteer { .. } => "subagent_steer",
            Self::SubagentAbort { .. } => "subagent_abort",
            Self::GetMessages => "get_messages",
            Self::Compact { .. } => "compact",
            Self::NewSession => "new_session",
            Self::Approve { .. } => "approve",
            Self::Undo { .. } => "undo",
            Self::Redo { .. } => "redo",
            Self::Checkpoints => "checkpoints",
            Self::Rewind { .. } => "rewind",
            Self::GetTree => "get_tree",
            Self::Label { .. } => "label",
            Self::Fork => "fork",
            Self::McpRestart { .. } => "mcp_restart",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// The answer to one command.
#[derive(Debug, Serialize)]
pub struct Response {
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    pub id: Value,
    pub command: String,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseTag {
    Response,
}

impl Response {
    pub fn new(id: Value, command: &str, result: Result<Option<Data>, String>) -> Self {
        let (success, data, error) = match result {
            Ok(data) => (true, data, None),
            Err(error) => (false, None, Some(error)),
        };
        Self {
            kind: ResponseTag::Response,
            id,
            command: command.to_string(),
            success,
            data,
            error,
        }
    }
}

/// What a successful command returns.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Data {
    /// `prompt` (when it queued), `steer`, `follow_up`: the queued message's id and queue.
    Queued {
        queued: QueuedRef,
    },
    State(Box<State>),
    Messages {
        messages: Vec<AgentMessage>,
    },
    Session {
        session: Option<SessionRef>,
    },
    /// `undo`, `redo`.
    Restore {
        restore: RestoreOutcome,
    },
    Checkpoints {
        checkpoints: Vec<CheckpointView>,
    },
    Rewind {
        rewind: RewindView,
    },
    Tree {
        tree: TreeView,
    },
}

/// One checkpoint of `checkpoints`.
#[derive(Debug, Serialize)]
pub struct CheckpointView {
    #[serde(flatten)]
    pub record: agent_core::CheckpointRecord,
    /// How many messages the history held when it was taken.
    pub at: usize,
    pub undone: bool,
}

/// What `rewind` did.
#[derive(Debug, Serialize)]
pub struct RewindView {
    /// The restore of the files, when asked for (`conflicts`: nothing at all was done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<RestoreOutcome>,
    pub conversation: bool,
    /// The user message gone back to before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `get_tree`.
#[derive(Debug, Serialize)]
pub struct TreeView {
    pub nodes: Vec<TreeNodeView>,
    /// The node the session is at.
    pub current: Option<String>,
    pub branches: usize,
}

#[derive(Debug, Serialize)]
pub struct TreeNodeView {
    pub id: String,
    pub parent: Option<String>,
    /// `user`, `assistant` or `compaction`.
    pub kind: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub checkpoints: usize,
    /// The subagents its `task` calls ran, each with its own session file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentView>,
}

#[derive(Debug, Serialize)]
pub struct SubagentView {
    pub id: String,
    pub session: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct QueuedRef {
    pub id: u64,
    pub kind: QueueKind,
}

/// `get_state`.
#[derive(Debug, Serialize)]
pub struct State {
    /// `provider/id`.
    pub model: String,
    pub thinking: ThinkingLevel,
    pub mode: agent_core::Mode,
    pub busy: bool,
    /// How many messages the history holds.
    pub messages: usize,
    /// Queued messages, steering first, in delivery order.
    pub queue: Vec<QueueEntry>,
    /// Questions waiting for an `approve` (a subagent's say which).
    pub approvals: Vec<agent_core::ApprovalRequest>,
    /// The ids of the subagents running now.
    pub subagents: Vec<String>,
    pub session: Option<SessionRef>,
}

#[derive(Debug, Serialize)]
pub struct QueueEntry {
    pub id: u64,
    pub kind: QueueKind,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct SessionRef {
    pub id: String,
    pub path: PathBuf,
}
