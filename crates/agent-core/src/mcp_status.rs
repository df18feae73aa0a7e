//! What the host tells every reader about its MCP servers (the status line's `mcp 2/3`,
//! `/mcp`, JSON mode). Plain data: the client itself lives in the `mcp` crate.

use serde::{Deserialize, Serialize};

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    /// Starting (or restarting): its tools are not offered yet.
    Starting,
    /// Connected; its tools are offered.
    Ready,
    /// Could not start, timed out, or exited: `error` says why.
    Failed,
    /// `enabled = false` in the config.
    Disabled,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    pub name: String,
    pub state: McpState,
    /// Names of the tools it offers (as the model sees them, `mcp__server__tool`).
    pub tools: Vec<String>,
    /// Estimated tokens of those tools' definitions.
    pub tokens: u64,
    /// The last failure, kept after a restart until it succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tools of the server that are not offered, each with why (a schema no provider takes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// Every configured server, and how their tools reach the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpStatus {
    pub servers: Vec<McpServerStatus>,
    /// The definitions exceed the context budget: only `mcp_search` (and the tools it
    /// found) are offered.
    pub search_mode: bool,
    /// The budget in tokens (a share of the model's window).
    pub budget_tokens: u64,
}

impl McpStatus {
    /// `(ready, enabled)`: the status line's `mcp 2/3`.
    pub fn counts(&self) -> (usize, usize) {
        let enabled = self
            .servers
            .iter()
            .filter(|s| s.state != McpState::Disabled)
            .count();
        let ready = self
            .servers
            .iter()
            .filter(|s| s.state == McpState::Ready)
            .count();
        (ready, enabled)
    }
}
