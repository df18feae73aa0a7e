//! A scripted LLM server on 127.0.0.1 speaking real HTTP and server-sent events.
//!
//! The wire API follows the request path, as on the real servers: `…/chat/completions`
//! (OpenAI chat-completions), `…/responses` (OpenAI responses), `…/messages` (Anthropic).
//!
//! A [`Script`] is a queue of [`Reply`]s; each request takes the next one. Every request body is
//! recorded so tests can assert what the agent sent. Faults (HTTP errors, dropped connections,
//! malformed data, a missing terminal event, a stalled stream) are part of the script.

mod anthropic;
mod emulate;
mod openai_chat;
mod openai_responses;
mod script;
mod server;

pub use emulate::{Emulation, LmStudioModel, OllamaModel, VLLM_NO_TOOLS};
pub use script::{Fault, Reply, Script, ScriptToolCall, ScriptUsage};
pub use server::{MockServer, RecordedRequest, render_sse};
