//! A scripted LLM server on 127.0.0.1 speaking real HTTP and server-sent events.
//!
//! A [`Script`] is a queue of [`Reply`]s; each request takes the next one. Every request body is
//! recorded so tests can assert what the agent sent. Faults (HTTP errors, dropped connections,
//! malformed data, a missing terminal event, a stalled stream) are part of the script.

mod openai_chat;
mod script;
mod server;

pub use script::{Fault, Reply, Script, ScriptToolCall, ScriptUsage};
pub use server::{MockServer, RecordedRequest};
