//! Tools added while the agent runs (MCP): offered from the next model call on, callable in
//! the same run, announced as `tools_changed`; a built-in keeps its name.

mod support;

use std::sync::{Arc, Mutex};

use agent_core::{AgentEvent, Concurrency, ExtraTools, Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use llm::StopReason;
use serde_json::{Value, json};
use support::*;

/// Makes `late` callable when it runs, as `mcp_search` does.
struct Adder {
    extra: ExtraTools,
}

#[async_trait]
impl Tool for Adder {
    fn name(&self) -> &str {
        "adder"
    }
    fn description(&self) -> &str {
        "adds a tool"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(&self, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        let late: Arc<dyn Tool> = Arc::new(TestTool {
            name: "late".into(),
            concurrency: Concurrency::Shared,
            interruptible: false,
            behaviour: Behaviour::Echo,
            log: Arc::new(Mutex::new(Vec::new())),
            slot: AgentSlot::default(),
        });
        // Clashes with the built-in `adder`: ignored.
        let clash: Arc<dyn Tool> = Arc::new(Adder {
            extra: self.extra.clone(),
        });
        self.extra.set(vec![late, clash]);
        Ok(ToolOutput::text("added"))
    }
}

fn tool_names(context: &llm::Context) -> Vec<String> {
    context.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn a_tool_added_mid_run_is_offered_and_callable_on_the_next_call() {
    let extra = ExtraTools::new();
    let for_config = extra.clone();
    let mut h = harness(vec![
        call_reply("c1", "adder", "{}"),
        call_reply("c2", "late", "{\"x\":1}"),
        text_reply("done"),
    ])
    .configure(move |config| {
        config.tools.push(Arc::new(Adder {
            extra: for_config.clone(),
        }));
        config.extra_tools = for_config;
    })
    .spawn();
    let events = h.run("go").await;

    let contexts = h.provider.contexts();
    assert_eq!(tool_names(&contexts[0]), ["adder"]);
    assert_eq!(tool_names(&contexts[1]), ["adder", "late"]);
    let late_end = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd { result, .. } if result.tool_name == "late" => {
                Some(result.clone())
            }
            _ => None,
        })
        .expect("late ran");
    assert!(!late_end.is_error, "{}", late_end.text());
    assert!(late_end.text().starts_with("late"));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolsChanged { tools } if tools == &["late", "adder"]
    )));
    let last = events.iter().rev().find_map(|e| match e {
        AgentEvent::TurnEnd { message, .. } => Some(message.stop_reason),
        _ => None,
    });
    assert_eq!(last, Some(StopReason::Stop));
    assert_eq!(extra.current().len(), 2);
}

#[tokio::test]
async fn a_late_subscriber_learns_the_last_mcp_status() {
    let h = harness(vec![]).spawn();
    let status = agent_core::McpStatus {
        servers: vec![agent_core::McpServerStatus {
            name: "docs".into(),
            state: agent_core::McpState::Ready,
            tools: vec!["mcp__docs__search".into()],
            tokens: 120,
            error: None,
            left_out: Vec::new(),
        }],
        search_mode: false,
        budget_tokens: 1000,
    };
    h.agent.announce_mcp(status.clone());
    let mut late = h.agent.subscribe();
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), late.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, AgentEvent::McpStatus { status });
}
