//! What the mock server answers, request by request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The replies served in order, one per request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Script {
    pub replies: Vec<Reply>,
}

/// One scripted response.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Reply {
    pub thinking: Option<String>,
    pub text: Option<String>,
    pub tool_calls: Vec<ScriptToolCall>,
    /// Wire finish reason; by default `tool_calls` when there are tool calls, else `stop`.
    pub finish_reason: Option<String>,
    /// Characters per delta for text, thinking and tool-call arguments.
    pub chunk_size: usize,
    /// Pause before each data chunk, in milliseconds.
    pub delay_ms: u64,
    /// Answer with this HTTP status (and `error_body`) instead of a stream.
    pub status: Option<u16>,
    pub error_body: Option<String>,
    pub fault: Option<Fault>,
    /// Usage reported in the final chunk; estimated from the sizes when absent.
    pub usage: Option<ScriptUsage>,
    /// A captured SSE body served verbatim (in `chunk_size`-byte pieces) instead of the fields
    /// above: replays real servers' streams.
    pub raw_sse: Option<String>,
    /// Extra response headers (`retry-after` on a 429, say); on a stream they replace the
    /// defaults of the same name (`content-type: text/html` scripts a login page).
    pub headers: Vec<(String, String)>,
    /// Served only to a request whose first user message contains this text (a subagent's
    /// task): with agents asking at once, each gets its own replies whatever the order.
    /// Requests that match no reply's text get the first reply without one.
    pub for_request: Option<String>,
}

impl Default for Reply {
    fn default() -> Self {
        Self {
            thinking: None,
            text: None,
            tool_calls: Vec::new(),
            finish_reason: None,
            chunk_size: 8,
            delay_ms: 0,
            status: None,
            error_body: None,
            fault: None,
            usage: None,
            raw_sse: None,
            headers: Vec::new(),
            for_request: None,
        }
    }
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScriptToolCall {
    /// Generated (`call_<n>`) when absent.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// A JSON value sent serialised, or a string sent verbatim (to script broken JSON).
    pub arguments: Value,
}

impl ScriptToolCall {
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct ScriptUsage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
}

/// A way for the stream to go wrong. `after` counts data chunks sent before the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Close the connection abruptly.
    Drop { after: usize },
    /// Send a data line that is not JSON, then end the stream.
    Malformed { after: usize },
    /// End the stream cleanly but without its terminal event (`[DONE]`, `response.completed`,
    /// `message_stop`).
    NoDone,
    /// Stop sending and hold the connection open until the client goes away.
    Stall { after: usize },
    /// Stop sending content but keep the connection busy: a keep-alive every `every_ms`
    /// until the client goes away; `: ping` comments, or empty events (`data:`) when
    /// `empty_events`, or the API's own keep-alive event when `native` (Anthropic's
    /// `event: ping`, the Responses API's `response.in_progress`; comments for chat
    /// completions, which has none).
    KeepAlive {
        after: usize,
        every_ms: u64,
        #[serde(default)]
        empty_events: bool,
        #[serde(default)]
        native: bool,
    },
    /// Send one `data:` event of `bytes` bytes (generated as it is sent, never held whole),
    /// then go on with the rest.
    HugeEvent { after: usize, bytes: usize },
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }

    /// An HTTP error response.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Self {
            status: Some(status),
            error_body: Some(body.into()),
            ..Self::default()
        }
    }

    /// Serves a captured SSE body verbatim.
    pub fn raw_sse(body: impl Into<String>) -> Self {
        Self {
            raw_sse: Some(body.into()),
            chunk_size: 512,
            ..Self::default()
        }
    }

    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptToolCall {
            id: None,
            name: name.into(),
            arguments,
        });
        self
    }

    /// Only for the request whose first user message contains `text` (see `for_request`).
    pub fn for_request(mut self, text: impl Into<String>) -> Self {
        self.for_request = Some(text.into());
        self
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }

    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    pub fn with_chunk_size(mut self, chars: usize) -> Self {
        self.chunk_size = chars.max(1);
        self
    }

    pub fn with_delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_usage(mut self, usage: ScriptUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// Splits `text` into pieces of at most `size` characters.
pub(crate) fn chunks(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % size == 0 {
            out.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_on_characters() {
        assert_eq!(chunks("héllo", 2), vec!["hé", "ll", "o"]);
        assert!(chunks("", 3).is_empty());
    }

    #[test]
    fn scripts_read_from_json() {
        let script: Script = serde_json::from_str(
            r#"{"replies":[{"text":"hi","delay_ms":5},{"tool_calls":[{"name":"bash","arguments":{"command":"ls"}}],"fault":{"drop":{"after":2}}},{"status":500,"error_body":"boom"}]}"#,
        )
        .unwrap();
        assert_eq!(script.replies.len(), 3);
        assert_eq!(script.replies[0].chunk_size, 8);
        assert_eq!(script.replies[1].fault, Some(Fault::Drop { after: 2 }));
        assert_eq!(script.replies[2].status, Some(500));
    }
}
