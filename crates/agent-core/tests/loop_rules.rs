//! Each rule of the turn loop, checked against a scripted in-process provider.

mod support;

use std::sync::Arc;

use agent_core::{
    AgentError, AgentEvent, AgentMessage, Concurrency, Hooks, NextTurn, ResetReason, ToolOutcome,
    ToolOutput, TurnInfo,
};
use async_trait::async_trait;
use llm::{Message, StopReason, ToolCall};
use support::*;

#[tokio::test]
async fn a_text_reply_produces_the_full_event_sequence() {
    let mut h = harness(vec![text_reply("Hello")]).spawn();
    let events = h.run("hi").await;
    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::MessageUpdate { .. }))
    );
    let messages = h.messages().await;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].preview(), "Hello");
    let AgentEvent::AgentEnd {
        messages: added,
        summary,
    } = events.last().unwrap()
    else {
        panic!()
    };
    assert_eq!(added, &messages);
    assert_eq!(summary.stop_reasons, [StopReason::Stop]);
    assert!(summary.tools.is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::TurnStart { turn: 1 }))
    );
}

#[tokio::test]
async fn tool_calls_run_and_their_results_reach_the_next_request() {
    let mut h = harness(vec![
        call_reply("c1", "echo", r#"{"x": 1}"#),
        text_reply("done"),
    ])
    .tool("echo", Concurrency::Shared, Behaviour::Echo)
    .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(
        wire_roles(&contexts[1]),
        ["user", "assistant", "tool_result"]
    );
    let Message::ToolResult(result) = &contexts[1].messages[2] else {
        panic!()
    };
    assert_eq!(result.tool_call_id, "c1");
    assert_eq!(result.text(), r#"echo {"x":1}"#);
    assert!(!result.is_error);
    assert_eq!(contexts[0].tools.len(), 1);
    assert_eq!(contexts[0].system_prompt, "You are a test.");
}

#[tokio::test]
async fn stop_with_tool_calls_still_runs_them() {
    let reply = support::ReplyScript::new()
        .call("c1", "echo", "{}")
        .done(StopReason::Stop);
    let mut h = harness(vec![reply, text_reply("ok")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    assert_eq!(h.log(), ["start c1", "end c1"]);
    assert_eq!(h.provider.contexts().len(), 2);
}

#[tokio::test]
async fn length_cut_tool_calls_are_not_run_and_ask_for_a_reissue() {
    let cut = support::ReplyScript::new()
        .call("c1", "echo", r#"{"x": 1}"#)
        .done(StopReason::Length);
    let mut h = harness(vec![cut, text_reply("retried")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    assert!(h.log().is_empty(), "the tool must not run");
    let results = tool_results(&h.messages().await);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0].text().contains("Issue the call again"),
        "{}",
        results[0].text()
    );
    assert_eq!(
        h.provider.contexts().len(),
        2,
        "the model gets to re-issue the call"
    );
}

#[tokio::test]
async fn a_provider_error_pairs_every_tool_call_and_ends_the_run() {
    let failing = support::ReplyScript::new()
        .call("c1", "echo", "{}")
        .partial_call("c2", "echo", r#"{"x": 1}"#)
        .error("503 Service Unavailable");
    let mut h = harness(vec![failing])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let messages = h.messages().await;
    assert_paired(&messages);
    let AgentMessage::Assistant(assistant) = &messages[1] else {
        panic!()
    };
    assert_eq!(assistant.stop_reason, StopReason::Error);
    assert_eq!(
        assistant.error_message.as_deref(),
        Some("503 Service Unavailable")
    );
    let ids: Vec<_> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1"], "the unfinished call is dropped");
    assert!(h.log().is_empty(), "nothing runs after an error");
    assert_eq!(h.provider.contexts().len(), 1);
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_text_and_completed_calls_only() {
    let reply = support::ReplyScript::new()
        .text("partial answer")
        .call("c1", "echo", "{}")
        .partial_call("c2", "echo", r#"{"x": 12}"#)
        .act(Action::Steer("keep me".into()))
        .act(Action::Abort)
        .hang();
    let mut h = harness(vec![reply, text_reply("kept")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    let messages = h.messages().await;
    assert_paired(&messages);
    let AgentMessage::Assistant(assistant) = &messages[1] else {
        panic!()
    };
    assert_eq!(assistant.stop_reason, StopReason::Aborted);
    assert_eq!(assistant.text(), "partial answer");
    let ids: Vec<_> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1"]);
    assert!(h.log().is_empty());
    // The steering that waited when the run was aborted starts the next run.
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(last_user_text(&contexts[1]), "keep me");
    let summaries = h.summaries();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[0].stop_reasons, [StopReason::Aborted]);
    assert_eq!(summaries[0].count(ToolOutcome::Aborted), 1);
}

#[tokio::test]
async fn abort_during_a_tool_stops_it_and_pairs_the_rest() {
    let reply = support::ReplyScript::new()
        .call("c1", "wait", "{}")
        .call("c2", "echo", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply])
        .tool("wait", Concurrency::Exclusive, Behaviour::WaitForAbort)
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    // Abort once the waiting tool has started.
    while !matches!(h.next_event().await, AgentEvent::ToolExecutionStart { .. }) {}
    h.agent.abort();
    h.settle().await;
    let messages = h.messages().await;
    assert_paired(&messages);
    let results = tool_results(&messages);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.is_error));
    assert_eq!(
        h.log(),
        ["start c1", "end c1"],
        "the second call never starts"
    );
    assert_eq!(
        h.provider.contexts().len(),
        1,
        "no model call after an abort"
    );
    let outcomes: Vec<ToolOutcome> = h.summaries()[0].tools.iter().map(|t| t.outcome).collect();
    assert_eq!(outcomes, [ToolOutcome::Aborted, ToolOutcome::Aborted]);
}

#[tokio::test]
async fn failures_become_error_results_and_the_run_goes_on() {
    let reply = support::ReplyScript::new()
        .call("c1", "missing", "{}")
        .call("c2", "echo", r#"{"x": "#)
        .call("c3", "echo", r#"{"x": "many"}"#)
        .call("c4", "fail", "{}")
        .call("c5", "boom", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("recovered")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .tool(
            "fail",
            Concurrency::Shared,
            Behaviour::Fail("disk on fire".into()),
        )
        .tool("boom", Concurrency::Shared, Behaviour::Panic)
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let results = tool_results(&h.messages().await);
    let texts: Vec<String> = results.iter().map(|r| r.text()).collect();
    assert!(results.iter().all(|r| r.is_error), "{texts:?}");
    assert!(
        texts[0].contains("Tool `missing` not found"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("not valid JSON"), "{}", texts[1]);
    assert!(texts[2].contains("`x` must be integer"), "{}", texts[2]);
    assert_eq!(texts[3], "disk on fire");
    assert!(texts[4].contains("crashed: tool exploded"), "{}", texts[4]);
    assert_eq!(h.provider.contexts().len(), 2, "the model sees the errors");
    assert_eq!(h.summaries()[0].count(ToolOutcome::Error), 5);
}

#[tokio::test]
async fn shared_calls_run_together() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let reply = support::ReplyScript::new()
        .call("c1", "meet", "{}")
        .call("c2", "meet", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("ok")])
        .tool("meet", Concurrency::Shared, Behaviour::Rendezvous(barrier))
        .spawn();
    h.run("go").await;
    let results = tool_results(&h.messages().await);
    assert!(results.iter().all(|r| r.text() == "met"), "{results:?}");
}

#[tokio::test]
async fn exclusive_calls_run_alone_and_results_keep_the_call_order() {
    let reply = support::ReplyScript::new()
        .call("a", "read", "{}")
        .call("b", "read", "{}")
        .call("c", "write", "{}")
        .call("d", "read", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("ok")])
        .tool("read", Concurrency::Shared, Behaviour::Echo)
        .tool("write", Concurrency::Exclusive, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    let log = h.log();
    let at = |entry: &str| log.iter().position(|l| l == entry).unwrap();
    assert!(
        at("end a") < at("start c") && at("end b") < at("start c"),
        "{log:?}"
    );
    assert!(at("end c") < at("start d"), "{log:?}");
    let ids: Vec<String> = tool_results(&h.messages().await)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn terminate_stops_only_when_every_result_asks() {
    let all = support::ReplyScript::new()
        .call("c1", "stop", "{}")
        .call("c2", "stop", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![all, text_reply("never")])
        .tool("stop", Concurrency::Shared, Behaviour::Terminate)
        .spawn();
    h.run("go").await;
    assert_eq!(
        h.provider.contexts().len(),
        1,
        "no model call after a terminating batch"
    );

    let mixed = support::ReplyScript::new()
        .call("c1", "stop", "{}")
        .call("c2", "echo", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![mixed, text_reply("continued")])
        .tool("stop", Concurrency::Shared, Behaviour::Terminate)
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    assert_eq!(
        h.provider.contexts().len(),
        2,
        "one result did not ask to terminate"
    );
}

#[tokio::test]
async fn tool_updates_stream_between_start_and_end() {
    let mut h = harness(vec![call_reply("c1", "progress", "{}"), text_reply("ok")])
        .tool("progress", Concurrency::Shared, Behaviour::Updates)
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let updates: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial, .. } => Some(partial_text(partial)),
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["partial 1", "partial 2"]);
}

fn partial_text(output: &ToolOutput) -> String {
    match &output.content[0] {
        llm::UserContent::Text { text } => text.clone(),
        _ => String::new(),
    }
}

struct Guard;

#[async_trait]
impl Hooks for Guard {
    async fn before_tool_call(
        &self,
        call: &ToolCall,
        _approvals: &agent_core::Approvals<'_>,
    ) -> Result<(), String> {
        if call.arguments["x"] == 13 {
            Err("13 is unlucky".into())
        } else {
            Ok(())
        }
    }

    async fn after_tool_call(&self, _call: &ToolCall, mut output: ToolOutput) -> ToolOutput {
        output.content.push(llm::UserContent::Text {
            text: "[redacted]".into(),
        });
        output
    }

    async fn prepare_next_turn(&self, _turn: &TurnInfo<'_>) -> NextTurn {
        NextTurn {
            model: Some(model("switched")),
            thinking: None,
        }
    }

    fn should_stop_after_turn(&self, turn: &TurnInfo<'_>) -> bool {
        turn.tool_results
            .iter()
            .any(|r| r.text().contains("stop-now"))
    }
}

#[tokio::test]
async fn hooks_block_rewrite_and_steer_the_next_turn() {
    let reply = support::ReplyScript::new()
        .call("c1", "echo", r#"{"x": 13}"#)
        .call("c2", "echo", r#"{"x": 1}"#)
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("ok")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(|c| c.hooks = Arc::new(Guard))
        .spawn();
    let events = h.run("go").await;
    let results = tool_results(&h.messages().await);
    assert!(results[0].is_error);
    assert!(results[0].text().contains("blocked: 13 is unlucky"));
    assert_eq!(
        h.log(),
        ["start c2", "end c2"],
        "the blocked call never ran"
    );
    assert!(results[1].text().ends_with("[redacted]"));
    assert_balanced(&events);
    // prepare_next_turn switched the model of the second call.
    assert_eq!(*h.provider.models.lock().unwrap(), ["scripted", "switched"]);
}

#[tokio::test]
async fn should_stop_after_turn_ends_the_run_and_hands_steering_back() {
    let reply = support::ReplyScript::new()
        .call("c1", "echo", r#"{"x": 1}"#)
        .act(Action::Steer("later".into()))
        .done(StopReason::ToolUse);
    struct StopAll;
    impl Hooks for StopAll {
        fn should_stop_after_turn(&self, _turn: &TurnInfo<'_>) -> bool {
            true
        }
    }
    let mut h = harness(vec![reply, text_reply("never")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(|c| c.hooks = Arc::new(StopAll))
        .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    assert_eq!(h.provider.contexts().len(), 1);
    // An idle agent holds nothing queued: the steer goes back to the user.
    assert!(h.agent.snapshot().await.unwrap().steering.is_empty());
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::QueueReturned { messages } if messages[0].message.preview() == "later"
    )));
}

#[tokio::test]
async fn notices_never_reach_the_provider() {
    let mut h = harness(vec![text_reply("a"), text_reply("b")])
        .configure(|c| c.messages = vec![AgentMessage::notice("compacted 3 turns")])
        .spawn();
    h.run("one").await;
    h.run("two").await;
    for context in h.provider.contexts() {
        for message in &context.messages {
            if let Message::User(u) = message {
                assert!(!u.plain_text().contains("compacted"));
            }
        }
    }
    assert!(matches!(h.messages().await[0], AgentMessage::Notice(_)));
}

#[tokio::test]
async fn a_stream_that_vanishes_becomes_an_error_message() {
    let mut h = harness(vec![support::ReplyScript::new().text("half").vanish()]).spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let AgentMessage::Assistant(a) = &h.messages().await[1] else {
        panic!()
    };
    assert_eq!(a.stop_reason, StopReason::Error);
    assert!(
        a.error_message
            .as_deref()
            .unwrap()
            .contains("ended without a result")
    );
}

#[tokio::test]
async fn continue_retries_after_a_failed_request() {
    let mut h = harness(vec![
        support::ReplyScript::new().error("502 Bad Gateway"),
        text_reply("second try"),
    ])
    .spawn();
    h.run("go").await;
    h.agent.continue_run().await.unwrap();
    let events = h.settle().await;
    assert_balanced(&events);
    let contexts = h.provider.contexts();
    assert_eq!(
        wire_roles(&contexts[1]),
        ["user"],
        "the empty failed answer is not sent"
    );
    let messages = h.messages().await;
    assert!(
        matches!(&messages[1], AgentMessage::Assistant(a) if a.stop_reason == StopReason::Error),
        "the failed answer is kept for the record"
    );
    assert_eq!(messages.last().unwrap().preview(), "second try");
}

#[tokio::test]
async fn agent_end_means_the_agent_takes_a_prompt_at_once() {
    let mut h = harness(vec![text_reply("one"), text_reply("two")]).spawn();
    h.agent.prompt(AgentMessage::user("a")).await.unwrap();
    while !matches!(h.next_event().await, AgentEvent::AgentEnd { .. }) {}
    assert_eq!(h.agent.prompt(AgentMessage::user("b")).await, Ok(()));
    h.settle().await;
}

#[tokio::test]
async fn reset_starts_over_when_idle_only() {
    let mut h = harness(vec![
        text_reply("one"),
        support::ReplyScript::new().hang(),
        text_reply("fresh"),
    ])
    .spawn();
    h.run("first").await;
    h.agent.prompt(AgentMessage::user("second")).await.unwrap();
    assert_eq!(
        h.agent.reset(Vec::new(), ResetReason::New, None).await,
        Err(AgentError::Busy)
    );
    h.agent.abort();
    h.settle().await;
    h.agent
        .reset(Vec::new(), ResetReason::New, Some("s2".into()))
        .await
        .unwrap();
    assert!(h.messages().await.is_empty());
    h.run("new start").await;
    let contexts = h.provider.contexts();
    assert_eq!(
        wire_roles(contexts.last().unwrap()),
        ["user"],
        "nothing of the old history"
    );
    assert!(h.seen.iter().any(|e| matches!(
        e,
        AgentEvent::HistoryReset { messages, reason: ResetReason::New, session: Some(s) }
            if messages.is_empty() && s == "s2"
    )));
}

#[tokio::test]
async fn model_and_thinking_switches_are_events() {
    let mut h = harness(vec![text_reply("a")]).spawn();
    h.agent.set_model(model("other"));
    h.agent.set_model(model("other"));
    h.agent.set_thinking(llm::ThinkingLevel::High);
    h.run("go").await;
    let switches: Vec<String> = h
        .seen
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModelChange { model } => Some(format!("model {}", model.id)),
            AgentEvent::ThinkingChange { level } => Some(format!("thinking {level:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        switches,
        ["model other", "thinking High"],
        "one event per change"
    );
    assert_eq!(*h.provider.models.lock().unwrap(), ["other"]);
}

#[tokio::test]
async fn stop_ends_the_run_and_starts_nothing_after_it() {
    let mut h = harness(vec![support::ReplyScript::new().hang()]).spawn();
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    let steer = h.agent.steer(AgentMessage::user("not now"));
    h.agent.stop();
    let events = h.settle().await;
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(!snapshot.running && snapshot.steering.is_empty());
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::QueueReturned { messages } if messages[0].id == steer
    )));
    assert_eq!(h.provider.contexts().len(), 1);
}
