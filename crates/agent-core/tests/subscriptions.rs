//! What each kind of subscriber is handed.

mod support;

use agent_core::AgentEvent;
use llm::StopReason;
use support::*;

fn is_delta(event: &AgentEvent) -> bool {
    matches!(
        event,
        AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
    )
}

#[tokio::test]
async fn a_settled_subscriber_gets_every_event_but_the_deltas_in_order() {
    let reply = ReplyScript::new()
        .text("one ")
        .text("two ")
        .text("three")
        .done(StopReason::Stop);
    let mut h = harness(vec![reply]).spawn();
    let mut settled = h.agent.subscribe_settled();
    let all = h.run("go").await;
    let mut got = Vec::new();
    while let Ok(event) = settled.try_recv() {
        got.push(event);
    }
    assert!(
        all.iter().filter(|e| is_delta(e)).count() >= 3,
        "the full subscriber sees the deltas: {all:?}"
    );
    let expected: Vec<AgentEvent> = all.into_iter().filter(|e| !is_delta(e)).collect();
    assert!(expected.len() > 3, "{expected:?}");
    assert_eq!(got, expected);
}
