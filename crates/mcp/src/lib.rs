//! The MCP client: the servers of `[mcp_servers.NAME]` as background tasks, their tools as
//! agent-core tools named `mcp__server__tool`.
//!
//! - [`config`]: the config entries, in Codex's shape.
//! - `client`: connecting over stdio (a child process in the sandbox of bash) or
//!   streamable HTTP, with the official SDK, `rmcp`.
//! - `tool`: one server tool as an agent-core tool; results mapped, calls cancelled.
//! - `search`: `mcp_search`, offered instead when all definitions exceed the context budget.
//! - [`McpManager`]: starts, watches and restarts the servers; hands their tools to the
//!   agent and announces every change.

mod client;
pub mod config;
mod line_cap;
mod manager;
mod search;
mod tool;

pub use client::Launch;
pub use config::{ServerConfig, Transport, check_name};
pub use manager::McpManager;
pub use search::NAME as SEARCH_TOOL;
pub use tool::tool_name;

/// The share of the model's window all MCP tool definitions may take before only
/// `mcp_search` is sent.
pub const DEFAULT_CONTEXT_SHARE: f64 = 0.10;
