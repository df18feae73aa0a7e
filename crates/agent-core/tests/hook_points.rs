//! The hook points a host's hook commands run at: a refused prompt, replaced tool arguments,
//! a stop hook that sends the run on (and its cap), against the scripted provider.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agent_core::{
    AgentEvent, AgentMessage, Approvals, Concurrency, HookContext, HookOutcome, HookRun, Hooks,
};
use async_trait::async_trait;
use llm::ToolCall;
use serde_json::{Value, json};
use support::*;

fn run(event: &str, outcome: HookOutcome) -> HookRun {
    HookRun {
        event: event.into(),
        command: "test".into(),
        outcome,
        duration_ms: 0,
        tool_call_id: None,
        message: None,
    }
}

struct RefuseSecrets;

#[async_trait]
impl Hooks for RefuseSecrets {
    async fn before_prompt(
        &self,
        message: AgentMessage,
        cx: &HookContext<'_>,
    ) -> Result<AgentMessage, String> {
        if text_of(&message).contains("secret") {
            cx.report(run("user_prompt_submit", HookOutcome::Blocked));
            return Err("no secrets".into());
        }
        Ok(message)
    }
}

#[tokio::test]
async fn a_refused_prompt_never_reaches_the_provider() {
    let mut h = harness(vec![text_reply("fine")])
        .configure(|c| c.hooks = Arc::new(RefuseSecrets))
        .spawn();
    let events = h.run("the secret is 42").await;
    assert_balanced(&events);
    assert_no_repairs(&events);
    assert!(h.provider.contexts().is_empty(), "no model call");
    let messages = h.messages().await;
    assert_eq!(messages.len(), 1);
    assert!(matches!(&messages[0], AgentMessage::Notice(n) if n.text.contains("no secrets")));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::HookRun { run } if run.outcome == HookOutcome::Blocked
    )));
    // The next prompt goes through as usual.
    let events = h.run("hello").await;
    assert_balanced(&events);
    assert_eq!(h.provider.contexts().len(), 1);
}

/// Replaces `x` by 7 and refuses what the approval check is then shown otherwise.
struct Rewrite;

#[async_trait]
impl Hooks for Rewrite {
    async fn rewrite_tool_call(
        &self,
        call: &ToolCall,
        _cx: &HookContext<'_>,
    ) -> Result<Option<Value>, String> {
        if call.arguments["x"] == 0 {
            return Err("zero is refused".into());
        }
        Ok(Some(json!({"x": 7})))
    }

    async fn before_tool_call(
        &self,
        call: &ToolCall,
        _approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        if call.arguments["x"] == 7 {
            Ok(())
        } else {
            Err(format!("the approval check saw {}", call.arguments))
        }
    }
}

#[tokio::test]
async fn replaced_arguments_are_what_is_approved_and_run() {
    let reply = support::ReplyScript::new()
        .call("c1", "echo", r#"{"x": 1}"#)
        .call("c2", "echo", r#"{"x": 0}"#)
        .done(llm::StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("ok")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(|c| c.hooks = Arc::new(Rewrite))
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let results = tool_results(&h.messages().await);
    assert_eq!(results[0].text(), r#"echo {"x":7}"#);
    assert!(results[1].is_error);
    assert!(
        results[1].text().contains("zero is refused"),
        "{}",
        results[1].text()
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolExecutionEnd { tool_call_id, outcome: agent_core::ToolOutcome::Blocked, .. }
            if tool_call_id == "c2"
    )));
}

/// Objects to every stop.
struct NeverDone(AtomicU32);

#[async_trait]
impl Hooks for NeverDone {
    async fn before_stop(
        &self,
        _messages: &[AgentMessage],
        continued: u32,
        _cx: &HookContext<'_>,
    ) -> Option<String> {
        assert_eq!(continued, self.0.fetch_add(1, Ordering::SeqCst));
        Some(format!("not done yet ({continued})"))
    }
}

#[tokio::test]
async fn a_stop_hook_sends_the_run_on_but_not_forever() {
    let replies = (0..10)
        .map(|i| text_reply(&format!("answer {i}")))
        .collect();
    let hooks = Arc::new(NeverDone(AtomicU32::new(0)));
    let shared = hooks.clone();
    let mut h = harness(replies)
        .configure(move |c| c.hooks = shared)
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    assert_no_repairs(&events);
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 6, "the first answer and five continuations");
    assert_eq!(hooks.0.load(Ordering::SeqCst), 5);
    let messages = h.messages().await;
    let last_user = messages
        .iter()
        .rev()
        .find(|m| matches!(m, AgentMessage::User(_)))
        .unwrap();
    assert_eq!(text_of(last_user), "not done yet (4)");
    let ends = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentEnd { .. }))
        .count();
    assert_eq!(ends, 1, "one run");
}
