//! Lifecycle events: the only thing the loop sends out.

use llm::{AssistantMessage, StreamEvent, ToolResultMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentMessage, CompactReason, CompactionOutcome, ToolOutput};

/// One lifecycle event. Every `*_start` is followed by its `*_end`, whatever fails, and a run
/// always ends with exactly one `AgentEnd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    AgentStart,
    TurnStart,
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
    },
    TurnEnd {
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    /// The run is over; `messages` are the ones it added to the history.
    AgentEnd {
        messages: Vec<AgentMessage>,
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
    /// The steering or follow-up queue changed; previews of what is still queued.
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
}
