//! The `Provider` trait every wire API implements.

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{Message, Model, ThinkingLevel};

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Everything one model call is about.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub system_prompt: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Sent as a bearer token (or the provider's key header); local servers need none.
    pub api_key: Option<String>,
    pub max_tokens: Option<u64>,
    pub thinking: ThinkingLevel,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
}

pub type EventStream = Pin<Box<dyn Stream<Item = crate::StreamEvent> + Send>>;

/// A streaming LLM client.
///
/// The returned stream yields events and ends with exactly one `Done` or `Error`; it never fails
/// as a Rust error. Cancelling `cancel` ends it promptly with an `Error` whose stop reason is
/// `aborted`. Dropping the stream cancels the request.
pub trait Provider: Send + Sync {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
        cancel: CancellationToken,
    ) -> EventStream;
}
