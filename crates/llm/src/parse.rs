//! What each wire API implements: a parser that maps its server-sent events onto
//! [`StreamEvent`]s. The driver in `sse` feeds it; the table in `wire` names it.

use serde_json::Value;

use crate::http::{self, Failure};
use crate::{AssistantBuilder, Model, StreamEvent};

/// Whether the wire stream goes on after an event.
pub(crate) enum Flow {
    Continue,
    /// The terminal event arrived: the reply is complete.
    Finished,
}

/// Maps one wire API's events onto [`StreamEvent`]s.
pub(crate) trait WireParser: Send {
    /// The terminal event's name, for the error when a stream ends without it.
    fn terminal(&self) -> &'static str;

    /// Handles one SSE event (`name` is the `event:` field, `message` when absent). Events to
    /// emit go to `out`; an `Err` ends the stream with that failure.
    fn event(
        &mut self,
        name: &str,
        data: &str,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, Failure>;

    /// Whether an event only keeps the connection alive (Anthropic's `ping`, the Responses
    /// API's `response.in_progress`): it does not hold off the idle timeout, so a server that
    /// only pings times out like a silent one.
    fn keep_alive(&self, _name: &str, _data: &str) -> bool {
        false
    }

    /// The closing event once the terminal event arrived; may emit final events (tool-call
    /// ends) to `out` first.
    fn finish(
        &mut self,
        model: &Model,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> StreamEvent;
}

/// Parses `data` as JSON; anything else is a malformed stream.
pub(crate) fn json(data: &str, provider: &str) -> Result<Value, Failure> {
    serde_json::from_str(data).map_err(|err| Failure {
        reason: format!(
            "{provider} sent malformed data ({err}): {}",
            http::snippet(data)
        ),
        kind: None,
    })
}
