//! Provider layer: the wire messages every provider understands, the one streaming event
//! interface, and the provider clients that map each wire API onto it.
//!
//! A provider stream never fails as a Rust error: transport failures, HTTP errors and malformed
//! data arrive as a final [`StreamEvent::Error`] carrying an assistant message whose
//! `stop_reason` is [`StopReason::Error`].

mod builder;
mod event;
mod http;
mod message;
mod model;
pub mod openai_completions;
mod provider;

pub use builder::AssistantBuilder;
pub use event::StreamEvent;
pub use message::{
    AssistantContent, AssistantMessage, ImageContent, InvalidArguments, Message, StopReason,
    ToolCall, ToolResultMessage, Usage, UserContent, UserMessage, now_millis,
};
pub use model::{Api, Model, ModelCost, ThinkingLevel};
pub use provider::{Context, EventStream, Provider, StreamOptions, ToolSpec};
