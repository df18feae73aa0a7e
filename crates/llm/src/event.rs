//! The one streaming interface every wire API is mapped onto.

use serde::{Deserialize, Serialize};

use crate::{AssistantMessage, ToolCall, WebSearch};

/// One event of a provider stream. A stream ends with exactly one `Done` or `Error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The request failed before any byte of the response and will be sent again after
    /// `delay_ms` (attempt `attempt` of `max` retries). Nothing of the message was lost.
    Retry {
        attempt: u32,
        max: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The server accepted the request and the response began.
    Start,
    /// Text appended to content block `index`.
    TextDelta { index: usize, delta: String },
    /// Reasoning text appended to content block `index`.
    ThinkingDelta { index: usize, delta: String },
    /// The signature of thinking block `index` (replayed to the provider).
    ThinkingSignature { index: usize, signature: String },
    /// A tool call opened content block `index`.
    ToolcallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A fragment of the tool call's JSON arguments.
    ToolcallDelta { index: usize, delta: String },
    /// The tool call's arguments are complete.
    ToolcallEnd { index: usize, tool_call: ToolCall },
    /// The provider's own search tool ran (or the answer cited sources): block `index`.
    WebSearch { index: usize, search: WebSearch },
    /// The response finished; `message` is the whole assistant message.
    Done { message: AssistantMessage },
    /// The request or stream failed (or was aborted); `message` holds what arrived so far,
    /// with `stop_reason` `error` or `aborted` and a readable `error_message`.
    Error { message: AssistantMessage },
}
