//! What `/mcp` shows and what the UI says when an MCP server fails: plain text from the last
//! `mcp_status` event.

use agent_core::{McpServerStatus, McpState, McpStatus};

use crate::status::tokens;

/// Tool names shown per server before "and N more".
const NAMES_SHOWN: usize = 8;

/// The `/mcp` listing.
pub fn listing(status: Option<&McpStatus>) -> String {
    let Some(status) = status.filter(|s| !s.servers.is_empty()) else {
        return "No MCP servers are configured. Add one to config.toml:\n\n\
                [mcp_servers.NAME]\ncommand = \"npx\"\nargs = [\"-y\", \"some-mcp-server\"]"
            .to_string();
    };
    let total: u64 = status
        .servers
        .iter()
        .filter(|s| s.state == McpState::Ready)
        .map(|s| s.tokens)
        .sum();
    let (ready, enabled) = status.counts();
    let mut out = format!(
        "MCP servers: {ready} of {enabled} ready · tool definitions {} tokens (budget {}, \
         10% of the window by default)",
        tokens(total),
        tokens(status.budget_tokens)
    );
    if status.search_mode {
        out.push_str(
            "\nOver the budget: the model gets `mcp_search` and the tools it finds, not all of \
             them.",
        );
    }
    for server in &status.servers {
        out.push('\n');
        out.push_str(&server_line(server));
    }
    out.push_str("\n/mcp restart NAME restarts one.");
    out
}

fn server_line(server: &McpServerStatus) -> String {
    let state = match server.state {
        McpState::Starting => "starting…",
        McpState::Ready => "ready",
        McpState::Failed => "failed",
        McpState::Disabled => "disabled",
    };
    let mut line = format!("• {} — {state}", server.name);
    if server.state == McpState::Ready {
        let prefix = format!("mcp__{}__", server.name);
        let names: Vec<&str> = server
            .tools
            .iter()
            .take(NAMES_SHOWN)
            .map(|t| t.strip_prefix(&prefix).unwrap_or(t))
            .collect();
        line.push_str(&format!(
            ", {} tools, {} tokens: {}",
            server.tools.len(),
            tokens(server.tokens),
            names.join(", ")
        ));
        if server.tools.len() > NAMES_SHOWN {
            line.push_str(&format!(" and {} more", server.tools.len() - NAMES_SHOWN));
        }
    }
    for why in &server.left_out {
        line.push_str(&format!("\n    not offered: {why}"));
    }
    if let Some(error) = &server.error {
        line.push_str(&format!("\n    last error: {error}"));
    }
    line
}

/// Servers that failed since `before` (new failures only), as lines for the transcript.
pub fn new_failures(before: Option<&McpStatus>, now: &McpStatus) -> Vec<String> {
    now.servers
        .iter()
        .filter(|s| s.state == McpState::Failed)
        .filter(|s| {
            !before.is_some_and(|b| {
                b.servers
                    .iter()
                    .any(|o| o.name == s.name && o.state == McpState::Failed && o.error == s.error)
            })
        })
        .map(|s| {
            format!(
                "MCP server `{}` failed: {} (/mcp lists the servers; /mcp restart {} tries again)",
                s.name,
                s.error.as_deref().unwrap_or("no reason given"),
                s.name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, state: McpState, error: Option<&str>) -> McpServerStatus {
        McpServerStatus {
            name: name.into(),
            state,
            tools: if state == McpState::Ready {
                vec![format!("mcp__{name}__echo"), format!("mcp__{name}__add")]
            } else {
                Vec::new()
            },
            tokens: if state == McpState::Ready { 1500 } else { 0 },
            error: error.map(str::to_string),
            left_out: Vec::new(),
        }
    }

    #[test]
    fn the_listing_shows_state_tools_tokens_and_errors() {
        let mut docs = server("docs", McpState::Ready, None);
        docs.left_out = vec!["`list`: its input schema is of type \"array\"".into()];
        let status = McpStatus {
            servers: vec![
                docs,
                server("gh", McpState::Failed, Some("did not start within 30 s")),
                server("off", McpState::Disabled, None),
            ],
            search_mode: false,
            budget_tokens: 20_000,
        };
        let text = listing(Some(&status));
        assert!(text.starts_with("MCP servers: 1 of 2 ready · tool definitions 1.5k tokens"));
        assert!(text.contains(
            "• docs — ready, 2 tools, 1.5k tokens: echo, add\n    not offered: `list`: its input"
        ));
        assert!(text.contains("• gh — failed\n    last error: did not start within 30 s"));
        assert!(text.contains("• off — disabled"));
        assert!(listing(None).contains("[mcp_servers.NAME]"));
    }

    #[test]
    fn a_failure_is_told_once() {
        let failed = McpStatus {
            servers: vec![server("gh", McpState::Failed, Some("boom"))],
            ..McpStatus::default()
        };
        assert_eq!(new_failures(None, &failed).len(), 1);
        assert!(new_failures(Some(&failed), &failed).is_empty());
    }
}
