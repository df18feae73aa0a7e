//! The `Provider` trait every wire API implements.

use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{Message, Model, RetryPolicy, ThinkingLevel};

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

#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Sent as a bearer token (or the provider's key header); local servers need none.
    pub api_key: Option<String>,
    /// Output token limit sent with every request; the model's `max_output` when absent.
    pub max_tokens: Option<u64>,
    pub thinking: ThinkingLevel,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
    /// Retries of requests that fail before the first byte of the response.
    pub retry: RetryPolicy,
    /// A response that sends no content for this long fails (default 120 s): a hung server
    /// must never hang the agent. Keep-alive comments and empty events are not content.
    pub idle_timeout: Duration,
    /// Turn on the provider's own web search tool where its API has one (OpenAI responses,
    /// Anthropic messages); other APIs ignore it.
    pub web_search: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            max_tokens: None,
            thinking: ThinkingLevel::Off,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(120),
            web_search: false,
        }
    }
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
