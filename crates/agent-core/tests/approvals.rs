//! The loop's questions to the user: a hook asks before a call, the answer is an event, and an
//! abort answers every open question.

mod support;

use std::sync::Arc;

use agent_core::{AgentEvent, AgentMessage, Concurrency, Hooks, ToolOutcome};
use async_trait::async_trait;
use llm::{StopReason, ToolCall};
use support::*;

/// Asks the user before every call of `guarded`.
struct AskFirst;

#[async_trait]
impl Hooks for AskFirst {
    async fn before_tool_call(
        &self,
        call: &ToolCall,
        approvals: &agent_core::Approvals<'_>,
    ) -> Result<(), String> {
        if call.name != "guarded" {
            return Ok(());
        }
        let question = agent_core::Question {
            subject: call.arguments.to_string(),
            reason: "it is guarded".into(),
            ..Default::default()
        };
        match approvals.ask(question).await {
            agent_core::ApprovalDecision::Deny { reason } => Err(format!(
                "denied by the user{}",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )),
            _ => Ok(()),
        }
    }
}

fn guarded_harness(reply: Vec<Step>) -> Harness {
    harness(vec![reply, text_reply("after")])
        .tool("guarded", Concurrency::Shared, Behaviour::Echo)
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(|c| c.hooks = Arc::new(AskFirst))
        .spawn()
}

async fn question(h: &mut Harness) -> agent_core::ApprovalRequest {
    loop {
        if let AgentEvent::ApprovalRequested { request } = h.next_event().await {
            return request;
        }
    }
}

#[tokio::test]
async fn an_approved_call_runs_and_the_answer_is_an_event() {
    let mut h = guarded_harness(call_reply("c1", "guarded", r#"{"x": 1}"#));
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    let request = question(&mut h).await;
    assert_eq!(
        (request.tool_call_id.as_str(), request.tool_name.as_str()),
        ("c1", "guarded")
    );
    assert_eq!(request.reason, "it is guarded");
    assert!(h.log().is_empty(), "nothing runs before the answer");
    assert_eq!(
        h.agent.snapshot().await.unwrap().approvals,
        std::slice::from_ref(&request)
    );
    h.agent
        .decide(request.id, agent_core::ApprovalDecision::Approve);
    h.settle().await;
    assert_eq!(h.log(), ["start c1", "end c1"]);
    assert!(h.seen.iter().any(|e| matches!(
        e,
        AgentEvent::ApprovalDecided { id, decision: agent_core::ApprovalDecision::Approve } if *id == request.id
    )));
    assert_eq!(h.summaries()[0].tools[0].outcome, ToolOutcome::Ok);
}

#[tokio::test]
async fn a_denied_call_is_blocked_with_the_reason_and_others_run_meanwhile() {
    let reply = support::ReplyScript::new()
        .call("c1", "guarded", r#"{"x": 1}"#)
        .call("c2", "echo", r#"{"x": 2}"#)
        .done(StopReason::ToolUse);
    let mut h = guarded_harness(reply);
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    let request = question(&mut h).await;
    // The shared call beside it does not wait for the answer.
    while !h.log().contains(&"end c2".to_string()) {
        h.next_event().await;
    }
    h.agent.decide(
        request.id,
        agent_core::ApprovalDecision::Deny {
            reason: Some("not today".into()),
        },
    );
    h.settle().await;
    let results = tool_results(&h.messages().await);
    assert!(results[0].is_error);
    assert!(
        results[0].text().contains("denied by the user: not today"),
        "{}",
        results[0].text()
    );
    assert_eq!(
        h.summaries()[0]
            .tools
            .iter()
            .find(|t| t.id == "c1")
            .unwrap()
            .outcome,
        ToolOutcome::Blocked
    );
}

#[tokio::test]
async fn an_abort_answers_open_questions() {
    let mut h = guarded_harness(call_reply("c1", "guarded", r#"{"x": 1}"#));
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    let request = question(&mut h).await;
    h.agent.abort();
    h.settle().await;
    assert!(h.seen.iter().any(|e| matches!(
        e,
        AgentEvent::ApprovalDecided { id, decision: agent_core::ApprovalDecision::Deny { .. } } if *id == request.id
    )));
    assert!(h.log().is_empty());
    assert!(h.agent.snapshot().await.unwrap().approvals.is_empty());
    // A late answer to a withdrawn question changes nothing.
    h.agent
        .decide(request.id, agent_core::ApprovalDecision::Approve);
    assert!(h.settle().await.is_empty());
}
