//! `mcp_search`: offered instead of the MCP tools when their definitions would take more than
//! the context budget. The model searches names and descriptions; the tools it finds are
//! offered from its next step on.

use std::sync::Weak;

use agent_core::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::manager::Inner;

pub const NAME: &str = "mcp_search";
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

pub(crate) struct McpSearch {
    pub manager: Weak<Inner>,
    pub description: String,
}

impl McpSearch {
    pub fn new(manager: Weak<Inner>, hidden: usize) -> Self {
        Self {
            manager,
            description: format!(
                "Search the {hidden} tools of the user's MCP servers (their definitions are too \
                 large to send all at once) by keywords in their names and descriptions. The \
                 tools found become callable from your next step, named mcp__server__tool."
            ),
        }
    }
}

#[async_trait]
impl Tool for McpSearch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "keywords, e.g. `issue create` or a server name"},
                "limit": {"type": "integer", "description": "how many tools to make callable (default 5, at most 20)"}
            },
            "required": ["query"]
        })
    }

    async fn execute(&self, arguments: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = arguments["query"].as_str().unwrap_or("").trim().to_string();
        if query.is_empty() {
            return Err(ToolError("`query` is empty".into()));
        }
        let limit = arguments["limit"]
            .as_u64()
            .map_or(DEFAULT_LIMIT, |n| n as usize)
            .clamp(1, MAX_LIMIT);
        let Some(manager) = self.manager.upgrade() else {
            return Err(ToolError("the MCP servers are gone".into()));
        };
        let found = manager.search_and_activate(&query, limit);
        if found.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No MCP tool matches `{query}`. Try other keywords or a server name."
            )));
        }
        let mut text = String::from("These tools are callable from your next step:\n");
        for (name, description) in found {
            let first = description.lines().next().unwrap_or("");
            let short: String = first.chars().take(200).collect();
            text.push_str(&format!("- {name}: {short}\n"));
        }
        Ok(ToolOutput::text(text))
    }
}

/// How well a tool matches: the number of query words found in its name or description
/// (case-insensitive); 0: not at all.
pub(crate) fn score(query: &str, name: &str, description: &str) -> usize {
    let haystack = format!("{} {}", name.to_lowercase(), description.to_lowercase());
    query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            // A word in the name counts double.
            let in_name = name.to_lowercase().contains(w) as usize;
            (haystack.contains(w) as usize) + in_name
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::score;

    #[test]
    fn names_count_more_than_descriptions() {
        assert_eq!(
            score("issue", "mcp__gh__create_issue", "Creates an issue"),
            2
        );
        assert_eq!(score("issue", "mcp__gh__list", "Lists issues"), 1);
        assert_eq!(score("weather", "mcp__gh__list", "Lists issues"), 0);
    }
}
