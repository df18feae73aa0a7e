//! The whole loop over real HTTP against mock-llm, as a user drives it:
//! prompt → tool call → tool result → steer injected before the next call → follow-up after the
//! run → abort mid-stream → the history is still valid for the next request.

mod support;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    Agent, AgentConfig, AgentEvent, AgentMessage, Tool, ToolContext, ToolError, ToolOutput,
};
use async_trait::async_trait;

use llm::{Api, Model, ModelCost, StopReason};
use mock_llm::{Fault, MockServer, Reply, Script};
use serde_json::{Value, json};
use support::{assert_balanced, assert_paired};
use tokio::sync::{Notify, mpsc};

/// A tool that holds until the test opens the gate, so the test can type while it runs.
struct Gate(Arc<Notify>);

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "waits for the test"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            _ = self.0.notified() => Ok(ToolOutput::text("gate opened")),
            _ = ctx.cancel.cancelled() => Err(ToolError("aborted".into())),
        }
    }
}

async fn next_matching(
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
    seen: &mut Vec<AgentEvent>,
    want: impl Fn(&AgentEvent) -> bool,
) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("event within 10 s")
            .expect("agent alive");
        let hit = want(&event);
        seen.push(event);
        if hit {
            return;
        }
    }
}

/// Roles of a recorded chat-completions request, and a check that every tool call is answered.
fn roles_and_pairing(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "unanswered calls {open:?}");
                if let Some(calls) = m["tool_calls"].as_array() {
                    open = calls
                        .iter()
                        .map(|c| c["id"].as_str().unwrap().to_string())
                        .collect();
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                open.retain(|o| o != id);
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "unanswered calls {open:?}");
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn prompt_tool_steer_follow_up_abort_and_resume_over_http() {
    let server = MockServer::start(Script {
        replies: vec![
            Reply::tool_call("gate", json!({})).with_text("Let me check."),
            Reply::text("Steered: using tabs."),
            Reply::text("Follow-up: docs written."),
            Reply::text("This answer streams slowly and is cut off")
                .with_chunk_size(4)
                .with_fault(Fault::Stall { after: 4 }),
            Reply::text("Back after the abort."),
        ],
    })
    .await
    .unwrap();
    let gate = Arc::new(Notify::new());
    let model = Model {
        id: "mock-model".into(),
        provider: "mock".into(),
        api: Api::OpenaiCompletions,
        base_url: server.url(),
        context_window: 32_000,
        max_output: 1_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    };
    let mut config = AgentConfig::new(model, Arc::new(llm::Router::new()));
    config.tools.push(Arc::new(Gate(gate.clone())));
    let agent = Agent::spawn(config);
    let mut events = agent.subscribe();
    let mut seen = Vec::new();

    // Prompt → the model calls the tool; while it runs the user steers and queues a follow-up.
    agent
        .prompt(AgentMessage::user("Fix the indentation"))
        .await
        .unwrap();
    next_matching(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::ToolExecutionStart { .. })
    })
    .await;
    agent.steer(AgentMessage::user("use tabs"));
    agent.follow_up(AgentMessage::user("then write docs"));
    gate.notify_one();
    agent.wait_idle().await.unwrap();

    let requests = server
        .wait_for_requests(3, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        roles_and_pairing(&requests[1].body),
        ["user", "assistant", "tool", "user"]
    );
    assert_eq!(requests[1].body["messages"][2]["content"], "gate opened");
    assert_eq!(requests[1].body["messages"][3]["content"], "use tabs");
    assert_eq!(
        roles_and_pairing(&requests[2].body),
        ["user", "assistant", "tool", "user", "assistant", "user"]
    );
    assert_eq!(
        requests[2].body["messages"][5]["content"],
        "then write docs"
    );

    // A new prompt; abort while the answer streams.
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    agent
        .prompt(AgentMessage::user("Explain it"))
        .await
        .unwrap();
    next_matching(&mut events, &mut seen, |e| {
        matches!(
            e,
            AgentEvent::MessageUpdate {
                event: llm::StreamEvent::TextDelta { .. }
            }
        )
    })
    .await;
    agent.abort();
    agent.wait_idle().await.unwrap();
    server
        .wait_for_disconnects(1, Duration::from_secs(10))
        .await
        .unwrap();

    let snapshot = agent.snapshot().await.unwrap();
    let AgentMessage::Assistant(cut) = snapshot.messages.last().unwrap() else {
        panic!()
    };
    assert_eq!(cut.stop_reason, StopReason::Aborted);
    let partial = cut.text();
    assert!(!partial.is_empty(), "the streamed part is kept");
    assert!(
        "This answer streams slowly and is cut off".starts_with(&partial),
        "{partial}"
    );

    // The next request carries the whole, well-formed history.
    agent.prompt(AgentMessage::user("Go on")).await.unwrap();
    agent.wait_idle().await.unwrap();
    let requests = server
        .wait_for_requests(5, Duration::from_secs(10))
        .await
        .unwrap();
    let roles = roles_and_pairing(&requests[4].body);
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    assert_eq!(requests[4].body["messages"][8]["content"], cut.text());

    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    let runs: Vec<&[AgentEvent]> = seen
        .split_inclusive(|e| matches!(e, AgentEvent::AgentEnd { .. }))
        .collect();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_balanced(run);
    }
    let messages = agent.snapshot().await.unwrap().messages;
    assert_paired(&messages);
    assert_eq!(messages.last().unwrap().preview(), "Back after the abort.");
}
