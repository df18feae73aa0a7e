//! Lifecycle events: the only thing the agent sends out.
//!
//! Every change of the agent's state is one of these — a message, a tool run, a model or
//! thinking switch, a history reset, a queued message's life — so any reader (the TUI, the JSON
//! and RPC modes, the session recorder, the tests) can rebuild the whole state from the events
//! alone.

use llm::{AssistantMessage, Model, StopReason, StreamEvent, ThinkingLevel, ToolResultMessage};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    AgentMessage, ApprovalDecision, ApprovalRequest, CheckpointRecord, CompactionSummary,
    QueueKind, QueuedMessage, RestoreRecord, ToolOutput,
};

/// One lifecycle event. Every `*_start` is followed by its `*_end`, whatever fails, and a run
/// always ends with exactly one `AgentEnd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    AgentStart,
    /// `turn` counts the agent's turns from 1, across runs.
    TurnStart {
        turn: u64,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// A streaming delta of the assistant message opened by the last `MessageStart`.
    MessageUpdate {
        event: StreamEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    /// Every tool call of an assistant message gets a start and an end, also the calls that
    /// were never run (skipped, blocked, aborted): the end says how it went.
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        arguments: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        partial: ToolOutput,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResultMessage,
        outcome: ToolOutcome,
    },
    TurnEnd {
        turn: u64,
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    /// The run is over; `messages` are the ones it added to the history.
    AgentEnd {
        messages: Vec<AgentMessage>,
        summary: RunSummary,
    },
    /// A compaction began: the history is being summarised.
    CompactionStart {
        reason: CompactReason,
    },
    /// A compaction ended. When compacted, every reader of the history replaces
    /// `messages[..replaced]` by one `CompactionSummary` message; on failure nothing changed.
    CompactionEnd {
        reason: CompactReason,
        outcome: CompactionOutcome,
    },
    /// The model of the next request.
    ModelChange {
        model: Model,
    },
    /// The thinking level of the next request.
    ThinkingChange {
        level: ThinkingLevel,
    },
    /// The working mode from the next model call on (default, auto-edit, plan).
    ModeChange {
        mode: crate::Mode,
    },
    /// The history was replaced (a new session, a resumed one). `session` names where the
    /// host keeps the new history (its session file), `None` when it is not kept.
    HistoryReset {
        /// Shared: every subscriber gets the same history, not a copy of a long session each.
        messages: Arc<[AgentMessage]>,
        reason: ResetReason,
        session: Option<String>,
    },
    /// A message joined the steering or follow-up queue.
    Queued {
        id: u64,
        kind: QueueKind,
        message: AgentMessage,
    },
    /// Queued messages went into the history at the start of turn `turn`.
    QueueDelivered {
        ids: Vec<u64>,
        turn: u64,
    },
    /// Queued messages left the queue undelivered and are handed back to the user: the
    /// follow-ups of an aborted run, or everything the user pulled back.
    QueueReturned {
        messages: Vec<QueuedMessage>,
    },
    /// A tool call waits for the user's approval (answer with `Agent::decide`).
    ApprovalRequested {
        request: ApprovalRequest,
    },
    /// The question `id` was answered (by the user, or with a denial by an abort).
    ApprovalDecided {
        id: u64,
        decision: ApprovalDecision,
    },
    /// A tool batch (or a `!cmd` command) changed files; the workspace before it can be
    /// restored.
    CheckpointTaken {
        record: CheckpointRecord,
    },
    /// Files were restored from a checkpoint (undo, redo, rewind).
    CheckpointRestored {
        record: RestoreRecord,
    },
    /// The conversation moved back to an earlier point of the session (`/rewind`, `/tree`):
    /// `messages` is the history from now on; what came after stays in the session file as
    /// another branch. `leaf` is the session entry the history now ends at (`None`: empty).
    Rewound {
        messages: Arc<[AgentMessage]>,
        leaf: Option<String>,
    },
    /// The extra tools changed (an MCP server became ready, failed, or `mcp_search` made
    /// tools callable): `tools` names every extra tool offered from the next model call on.
    ToolsChanged {
        tools: Vec<String>,
    },
    /// The host's MCP servers changed state.
    McpStatus {
        status: crate::McpStatus,
    },
    /// A user-configured hook ran (or failed to): every run is announced, so a hook never
    /// fires — or fails — unseen.
    HookRun {
        run: HookRun,
    },
    /// An event of a subagent (a child agent a `task` call started), as its own agent sent
    /// it. Nothing of it enters this agent's history.
    Subagent {
        subagent: SubagentRef,
        event: Box<AgentEvent>,
    },
}

impl AgentEvent {
    /// The event itself, out of its `Subagent` wrappers (a subagent's subagent is wrapped
    /// twice), with whether it was wrapped.
    pub fn unwrapped(&self) -> (&AgentEvent, bool) {
        let mut event = self;
        let mut wrapped = false;
        while let AgentEvent::Subagent { event: inner, .. } = event {
            event = inner;
            wrapped = true;
        }
        (event, wrapped)
    }

    /// A streaming delta (also a subagent's): readers of settled events skip them.
    pub fn is_delta(&self) -> bool {
        match self {
            AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. } => true,
            AgentEvent::Subagent { event, .. } => event.is_delta(),
            _ => false,
        }
    }
}

/// Which subagent an event or a question comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentRef {
    /// Unique among the subagents of this process (`explore-2`).
    pub id: String,
    /// Its agent definition's name (`explore`).
    pub name: String,
}

/// One run of a configured hook command and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRun {
    /// The lifecycle point: `session_start`, `user_prompt_submit`, `pre_tool_use`,
    /// `post_tool_use`, `stop`, `pre_compact`.
    pub event: String,
    /// The command line, as configured.
    pub command: String,
    pub outcome: HookOutcome,
    /// Wall time of the command, in milliseconds.
    pub duration_ms: u64,
    /// The tool call it ran for (tool events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// What the user should read: the block reason, the warning, the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a hook run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Exit 0: the action goes on.
    Ok,
    /// Exit 0 and the hook replaced the tool call's arguments.
    Rewrote,
    /// Exit 2: the action was blocked (stop hook: the agent was told to go on).
    Blocked,
    /// Another exit code, or output that could not be read: the action goes on.
    Warning,
    /// Killed (with its process group) after its timeout; the action goes on.
    TimedOut,
    /// The command could not be started; the action goes on.
    Failed,
}

/// Why a compaction was attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// The context neared the model's window before a model call.
    Threshold,
    /// The provider rejected the request as too long.
    Overflow,
    /// The user asked for it.
    Manual,
}

/// How a compaction attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// `messages[..replaced]` were replaced by one `CompactionSummary` message.
    Compacted {
        summary: CompactionSummary,
        replaced: usize,
    },
    /// The history was left as it was.
    Failed { error: String },
}

/// Why the history was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetReason {
    /// A new, empty session.
    New,
    /// A saved session was loaded.
    Resume,
    /// The current session was copied into a new one, which goes on from here.
    Fork,
}

/// How one tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// Ran and succeeded.
    Ok,
    /// Ran (or could not: unknown tool, bad arguments) and failed.
    Error,
    /// Not run: the user sent a new message first, or the reply was cut off.
    Skipped,
    /// Not run: a hook refused it.
    Blocked,
    /// Stopped or never started because the run was aborted or the request failed; also a
    /// wait cut short by a new message.
    Aborted,
}

/// One tool call of a run and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    pub id: String,
    pub name: String,
    pub outcome: ToolOutcome,
}

/// What a run did, carried by its `agent_end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The stop reason of each model call, in order.
    pub stop_reasons: Vec<StopReason>,
    /// Every tool call, in the order they ended.
    pub tools: Vec<ToolRun>,
    /// Tokens and cost of the run's model calls, its subagents' included.
    pub usage: llm::Usage,
    /// The subagents' part of `usage`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subagent_usage: llm::Usage,
    /// Why the run was stopped from inside, when it was (not the user's abort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<RunStop>,
    /// Events the agent had to make up because the run did not close what it opened (a bug or
    /// a panic in the loop). Always 0 in a healthy run.
    pub repairs: u32,
}

/// What stopped a run before its work was done, besides the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStop {
    /// Its deadline passed: it ended as an abort does (every call paired, commands killed).
    Deadline,
    /// A required tool was not called, even when forced (see `ToolRequirement`).
    RequirementUnmet,
}

impl RunStop {
    /// What the user reads.
    pub fn explain(self) -> &'static str {
        match self {
            RunStop::Deadline => "the run's deadline passed",
            RunStop::RequirementUnmet => "the model did not call the tool it was required to",
        }
    }
}

fn is_zero(usage: &llm::Usage) -> bool {
    *usage == llm::Usage::default()
}

impl RunSummary {
    /// How many tool calls ended with `outcome`.
    pub fn count(&self, outcome: ToolOutcome) -> usize {
        self.tools.iter().filter(|t| t.outcome == outcome).count()
    }
}
