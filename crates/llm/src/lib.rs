//! Provider layer: the wire messages every provider understands, the one streaming event
//! interface, and the wire APIs (one table, `wire`) that map each provider protocol onto it;
//! [`Router`] is the one provider that sends a call through the wire API of its model.
//!
//! A provider stream never fails as a Rust error: transport failures, HTTP errors and malformed
//! data arrive as a final [`StreamEvent::Error`] carrying an assistant message whose
//! `stop_reason` is [`StopReason::Error`].

mod anthropic;
mod batch;
mod builder;
mod event;
mod eventsource;
mod http;
mod key_check;
pub mod local;
mod message;
mod model;
mod openai_completions;
mod openai_responses;
mod parse;
mod partial_json;
mod provider;
mod registry;
mod retry;
mod router;
mod sse;
pub mod tagged;
mod think_tags;
mod url;
mod wire;

pub use builder::AssistantBuilder;
pub use event::StreamEvent;
pub use http::{client_builder as http_client_builder, error_chain, is_context_overflow};
pub use key_check::{KeyCheck, check_key};
pub use message::{
    AssistantContent, AssistantMessage, ErrorKind, ImageContent, InvalidArguments, Message,
    StopReason, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage, WebSearch, WebSource,
    now_millis,
};
pub use model::{Api, Model, ModelCost, ThinkingLevel, UnknownThinkingLevel};
pub use partial_json::parse_partial_json;
pub use provider::{Context, EventStream, Provider, StreamOptions, ToolChoice, ToolSpec};
pub use registry::{ProviderEntry, Registry, RegistryError};
pub use retry::RetryPolicy;
pub use router::{Router, api_key_env, is_hosted_provider};
pub use sse::replay;
pub use url::{BaseUrlError, check_base_url, is_local_url};
pub use wire::{ImageLimit, UnknownApi, image_limit, offers_web_search};
