//! Assembles an assistant message from stream events.
//!
//! Providers use it to allocate content-block indexes and to build the final message; the agent
//! loop uses it to know what had arrived when a run is aborted mid-stream.

use crate::{
    AssistantContent, AssistantMessage, ErrorKind, StopReason, StreamEvent, ToolCall, Usage,
};

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    /// A tool call still streaming its arguments.
    PartialCall {
        id: String,
        name: String,
        raw: String,
    },
    DoneCall(ToolCall),
    WebSearch(crate::WebSearch),
}

/// Accumulates stream events into an [`AssistantMessage`].
#[derive(Debug)]
pub struct AssistantBuilder {
    model: String,
    provider: String,
    blocks: Vec<Block>,
    pub usage: Usage,
}

impl AssistantBuilder {
    pub fn new(model: &str, provider: &str) -> Self {
        Self {
            model: model.to_string(),
            provider: provider.to_string(),
            blocks: Vec::new(),
            usage: Usage::default(),
        }
    }

    /// Applies an event produced elsewhere (by a provider) to this builder.
    pub fn apply(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::Start
            | StreamEvent::Retry { .. }
            | StreamEvent::Done { .. }
            | StreamEvent::Error { .. } => {}
            StreamEvent::TextDelta { index, delta } => {
                if let Some(Block::Text(text)) = self.slot(*index, || Block::Text(String::new())) {
                    text.push_str(delta);
                }
            }
            StreamEvent::ThinkingDelta { index, delta } => {
                let new = || Block::Thinking {
                    text: String::new(),
                    signature: None,
                };
                if let Some(Block::Thinking { text, .. }) = self.slot(*index, new) {
                    text.push_str(delta);
                }
            }
            StreamEvent::ThinkingSignature { index, signature } => {
                // A signed block may have no visible text (redacted or empty reasoning).
                let new = || Block::Thinking {
                    text: String::new(),
                    signature: None,
                };
                if let Some(Block::Thinking { signature: s, .. }) = self.slot(*index, new) {
                    *s = Some(signature.clone());
                }
            }
            StreamEvent::ToolcallStart { index, id, name } => {
                let new = || Block::PartialCall {
                    id: id.clone(),
                    name: name.clone(),
                    raw: String::new(),
                };
                self.slot(*index, new);
            }
            StreamEvent::ToolcallDelta { index, delta } => {
                if let Some(Block::PartialCall { raw, .. }) = self.blocks.get_mut(*index) {
                    raw.push_str(delta);
                }
            }
            StreamEvent::ToolcallEnd { index, tool_call } => {
                if let Some(block) = self.blocks.get_mut(*index) {
                    *block = Block::DoneCall(tool_call.clone());
                }
            }
            StreamEvent::WebSearch { index, search } => {
                self.slot(*index, || Block::WebSearch(search.clone()));
            }
        }
    }

    /// The block at `index`, created with `new` when it is the next one.
    fn slot(&mut self, index: usize, new: impl FnOnce() -> Block) -> Option<&mut Block> {
        if index == self.blocks.len() {
            self.blocks.push(new());
        }
        self.blocks.get_mut(index)
    }

    /// Appends text, continuing the last block when it is text; returns the event to emit.
    pub fn text_delta(&mut self, delta: &str) -> StreamEvent {
        let index = match self.blocks.last() {
            Some(Block::Text(_)) => self.blocks.len() - 1,
            _ => self.blocks.len(),
        };
        self.emit(StreamEvent::TextDelta {
            index,
            delta: delta.to_string(),
        })
    }

    /// Adds a finished web search of the provider's as a block of its own.
    pub fn web_search(&mut self, search: crate::WebSearch) -> StreamEvent {
        let index = self.blocks.len();
        self.emit(StreamEvent::WebSearch { index, search })
    }

    /// Appends reasoning text, continuing the last block when it is thinking and not yet
    /// signed (a signature closes a block: the next reasoning is a block of its own).
    pub fn thinking_delta(&mut self, delta: &str) -> StreamEvent {
        let index = self.open_thinking_index();
        self.emit(StreamEvent::ThinkingDelta {
            index,
            delta: delta.to_string(),
        })
    }

    /// Signs the open thinking block, opening an empty one when there is none.
    pub fn thinking_signature(&mut self, signature: &str) -> StreamEvent {
        let index = self.open_thinking_index();
        self.emit(StreamEvent::ThinkingSignature {
            index,
            signature: signature.to_string(),
        })
    }

    fn open_thinking_index(&self) -> usize {
        match self.blocks.last() {
            Some(Block::Thinking {
                signature: None, ..
            }) => self.blocks.len() - 1,
            _ => self.blocks.len(),
        }
    }

    /// Opens a tool call block; returns its index and the event.
    pub fn toolcall_start(&mut self, id: &str, name: &str) -> (usize, StreamEvent) {
        let index = self.blocks.len();
        let event = self.emit(StreamEvent::ToolcallStart {
            index,
            id: id.to_string(),
            name: name.to_string(),
        });
        (index, event)
    }

    pub fn toolcall_delta(&mut self, index: usize, delta: &str) -> StreamEvent {
        self.emit(StreamEvent::ToolcallDelta {
            index,
            delta: delta.to_string(),
        })
    }

    /// Closes the tool call at `index`, parsing its arguments strictly; `None` when no call is
    /// streaming there (already closed, or never opened).
    pub fn toolcall_end(&mut self, index: usize) -> Option<StreamEvent> {
        let Some(Block::PartialCall { id, name, raw }) = self.blocks.get(index) else {
            return None;
        };
        let tool_call = ToolCall::from_raw(id.clone(), name.clone(), raw);
        Some(self.emit(StreamEvent::ToolcallEnd { index, tool_call }))
    }

    /// The raw argument text streamed so far for the call at `index`.
    pub fn toolcall_raw(&self, index: usize) -> Option<&str> {
        match self.blocks.get(index) {
            Some(Block::PartialCall { raw, .. }) => Some(raw),
            _ => None,
        }
    }

    /// At the end of a response: records `usage` with its cost at `model`'s prices, and closes
    /// the tool calls still open (their events are returned).
    pub fn settle(&mut self, model: &crate::Model, usage: Option<Usage>) -> Vec<StreamEvent> {
        if let Some(usage) = usage {
            self.usage = usage;
            self.usage.cost = model.cost_of(&usage);
        }
        self.end_open_toolcalls()
    }

    /// Closes every tool call still streaming, parsing its arguments strictly.
    pub fn end_open_toolcalls(&mut self) -> Vec<StreamEvent> {
        let open: Vec<usize> = (0..self.blocks.len())
            .filter(|&i| matches!(self.blocks[i], Block::PartialCall { .. }))
            .collect();
        open.into_iter()
            .map(|index| {
                let Block::PartialCall { id, name, raw } = &self.blocks[index] else {
                    unreachable!("filtered above")
                };
                let tool_call = ToolCall::from_raw(id.clone(), name.clone(), raw);
                self.emit(StreamEvent::ToolcallEnd { index, tool_call })
            })
            .collect()
    }

    fn emit(&mut self, event: StreamEvent) -> StreamEvent {
        self.apply(&event);
        event
    }

    /// The message so far. Tool calls whose arguments did not finish are left out: their
    /// arguments cannot be trusted and their ids may be incomplete.
    pub fn snapshot(&self, stop_reason: StopReason) -> AssistantMessage {
        let mut message = AssistantMessage::empty(&self.model, &self.provider);
        message.stop_reason = stop_reason;
        message.usage = self.usage;
        message.content = self
            .blocks
            .iter()
            .filter_map(|block| match block {
                Block::Text(text) => Some(AssistantContent::Text { text: text.clone() }),
                Block::Thinking { text, signature } => Some(AssistantContent::Thinking {
                    thinking: text.clone(),
                    signature: signature.clone(),
                }),
                Block::PartialCall { .. } => None,
                Block::DoneCall(call) => Some(AssistantContent::ToolCall(call.clone())),
                Block::WebSearch(search) => Some(AssistantContent::WebSearch(search.clone())),
            })
            .collect();
        message
    }

    /// The `Done` event for a response that finished normally.
    pub fn done(&self, stop_reason: StopReason) -> StreamEvent {
        StreamEvent::Done {
            message: self.snapshot(stop_reason),
        }
    }

    /// The closing `Error` event: what arrived so far plus a readable reason.
    pub fn failed(&self, stop_reason: StopReason, reason: impl Into<String>) -> StreamEvent {
        self.failed_with(stop_reason, reason, None)
    }

    /// Like [`failed`](Self::failed), flagging a failure the caller can act on.
    pub fn failed_with(
        &self,
        stop_reason: StopReason,
        reason: impl Into<String>,
        kind: Option<ErrorKind>,
    ) -> StreamEvent {
        let mut message = self.snapshot(stop_reason);
        message.error_message = Some(reason.into());
        message.error_kind = kind;
        StreamEvent::Error { message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_blocks_keep_their_order() {
        let mut b = AssistantBuilder::new("m", "p");
        b.thinking_delta("hm");
        b.text_delta("Hel");
        b.text_delta("lo");
        let (i, _) = b.toolcall_start("c1", "read");
        b.toolcall_delta(i, r#"{"path":"#);
        b.toolcall_delta(i, r#""a"}"#);
        b.end_open_toolcalls();
        let msg = b.snapshot(StopReason::ToolUse);
        assert_eq!(msg.content.len(), 3);
        assert_eq!(msg.text(), "Hello");
        let call = msg.tool_calls().next().unwrap();
        assert_eq!(call.arguments["path"], "a");
        assert!(call.invalid_arguments.is_none());
    }

    #[test]
    fn a_signature_closes_its_thinking_block() {
        let mut b = AssistantBuilder::new("m", "p");
        b.thinking_delta("one");
        b.thinking_signature("sig1");
        b.thinking_delta("two");
        let (i, _) = b.toolcall_start("c", "ls");
        assert!(b.toolcall_end(i).is_some());
        assert!(b.toolcall_end(i).is_none(), "closed once");
        b.thinking_signature("sig3");
        let msg = b.snapshot(StopReason::Stop);
        let signatures: Vec<_> = msg
            .content
            .iter()
            .filter_map(|c| match c {
                AssistantContent::Thinking {
                    thinking,
                    signature,
                } => Some((thinking.as_str(), signature.as_deref())),
                _ => None,
            })
            .collect();
        assert_eq!(
            signatures,
            vec![("one", Some("sig1")), ("two", None), ("", Some("sig3"))]
        );
    }

    #[test]
    fn unfinished_tool_calls_are_dropped_from_snapshots() {
        let mut b = AssistantBuilder::new("m", "p");
        b.text_delta("x");
        let (i, _) = b.toolcall_start("c1", "read");
        b.toolcall_delta(i, r#"{"pa"#);
        let msg = b.snapshot(StopReason::Aborted);
        assert_eq!(msg.tool_calls().count(), 0);
        assert_eq!(msg.text(), "x");
    }

    #[test]
    fn broken_json_arguments_are_marked_invalid_not_lost() {
        let mut b = AssistantBuilder::new("m", "p");
        let (i, _) = b.toolcall_start("c1", "read");
        b.toolcall_delta(i, r#"{"path": "a""#);
        b.end_open_toolcalls();
        let msg = b.snapshot(StopReason::ToolUse);
        let call = msg.tool_calls().next().unwrap();
        let invalid = call.invalid_arguments.as_ref().unwrap();
        assert_eq!(invalid.raw, r#"{"path": "a""#);
        assert_eq!(call.arguments_text(), r#"{"path": "a""#);
    }

    #[test]
    fn a_consumer_rebuilds_the_same_message_from_events() {
        let mut producer = AssistantBuilder::new("m", "p");
        let mut consumer = AssistantBuilder::new("m", "p");
        let mut events = vec![producer.text_delta("a"), producer.thinking_delta("t")];
        let (i, e) = producer.toolcall_start("id", "ls");
        events.push(e);
        events.push(producer.toolcall_delta(i, "{}"));
        events.extend(producer.end_open_toolcalls());
        for e in &events {
            consumer.apply(e);
        }
        assert_eq!(
            consumer.snapshot(StopReason::Stop).content,
            producer.snapshot(StopReason::Stop).content
        );
    }
}
