//! Each rule of the turn loop, checked against a scripted in-process provider.

mod support;

use std::sync::Arc;

use agent_core::{
    AgentError, AgentEvent, AgentMessage, Concurrency, Hooks, NextTurn, QueueKind, QueueMode,
    ResetReason, ToolOutcome, ToolOutput, TurnInfo,
};
use async_trait::async_trait;
use llm::{Message, StopReason, ToolCall};
use support::*;

fn wire_roles(context: &llm::Context) -> Vec<&'static str> {
    context
        .messages
        .iter()
        .map(|m| match m {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "tool_result",
        })
        .collect()
}

fn last_user_text(context: &llm::Context) -> String {
    context
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User(u) => Some(u.plain_text()),
            _ => None,
        })
        .unwrap()
}

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
async fn steering_skips_the_tools_not_yet_started() {
    let reply = support::ReplyScript::new()
        .call("c1", "steerer", "{}")
        .call("c2", "echo", "{}")
        .call("c3", "echo", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("adjusted")])
        .tool(
            "steerer",
            Concurrency::Exclusive,
            Behaviour::Act(Action::Steer("use tabs".into())),
        )
        .tool("echo", Concurrency::Exclusive, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    assert_eq!(
        h.log(),
        ["start c1", "end c1"],
        "the rest of the batch is skipped"
    );
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(
        wire_roles(&contexts[1]),
        [
            "user",
            "assistant",
            "tool_result",
            "tool_result",
            "tool_result",
            "user"
        ]
    );
    let Message::ToolResult(skipped) = &contexts[1].messages[3] else {
        panic!()
    };
    assert!(skipped.is_error);
    assert!(
        skipped
            .text()
            .starts_with("Skipped: the user sent a new message")
    );
    assert_eq!(last_user_text(&contexts[1]), "use tabs");
    let outcomes: Vec<ToolOutcome> = h.summaries()[0].tools.iter().map(|t| t.outcome).collect();
    assert_eq!(
        outcomes,
        [ToolOutcome::Ok, ToolOutcome::Skipped, ToolOutcome::Skipped]
    );
}

#[tokio::test]
async fn shared_calls_already_running_finish_when_a_steer_arrives() {
    let reply = support::ReplyScript::new()
        .call("c1", "steerer", "{}")
        .call("c2", "slow", "{}")
        .call("c3", "write", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("adjusted")])
        .tool(
            "steerer",
            Concurrency::Shared,
            Behaviour::Act(Action::Steer("stop there".into())),
        )
        .tool(
            "slow",
            Concurrency::Shared,
            Behaviour::Sleep(std::time::Duration::from_millis(50)),
        )
        .tool("write", Concurrency::Exclusive, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    let log = h.log();
    assert!(
        log.contains(&"end c2".to_string()),
        "the running wait finished: {log:?}"
    );
    assert!(!log.contains(&"start c3".to_string()), "{log:?}");
    let results = tool_results(&h.messages().await);
    assert!(
        results[1].text().starts_with("slept"),
        "{}",
        results[1].text()
    );
    let outcomes: Vec<ToolOutcome> = h.summaries()[0].tools.iter().map(|t| t.outcome).collect();
    assert!(outcomes.contains(&ToolOutcome::Skipped), "{outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| **o == ToolOutcome::Ok).count(),
        2
    );
}

#[tokio::test]
async fn an_interruptible_wait_is_cut_short_by_a_steer() {
    let reply = support::ReplyScript::new()
        .call("c1", "wait", "{}")
        .call("c2", "steerer", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("adjusted")])
        .interruptible_tool("wait", Behaviour::Sleep(std::time::Duration::from_secs(60)))
        .tool(
            "steerer",
            Concurrency::Shared,
            Behaviour::Act(Action::Steer("enough waiting".into())),
        )
        .spawn();
    let started = std::time::Instant::now();
    h.run("go").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let results = tool_results(&h.messages().await);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .text()
            .contains("Stopped early: the user sent a new message")
    );
    assert_eq!(last_user_text(&h.provider.contexts()[1]), "enough waiting");
    let outcomes: Vec<ToolOutcome> = h.summaries()[0].tools.iter().map(|t| t.outcome).collect();
    assert!(outcomes.contains(&ToolOutcome::Aborted), "{outcomes:?}");
}

#[tokio::test]
async fn a_tool_with_side_effects_is_never_cut_short_by_a_steer() {
    let reply = support::ReplyScript::new()
        .call("c1", "work", "{}")
        .call("c2", "steerer", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("adjusted")])
        .tool(
            "work",
            Concurrency::Shared,
            Behaviour::Sleep(std::time::Duration::from_millis(200)),
        )
        .tool(
            "steerer",
            Concurrency::Shared,
            Behaviour::Act(Action::Steer("later".into())),
        )
        .spawn();
    h.run("go").await;
    let results = tool_results(&h.messages().await);
    assert!(!results[0].is_error, "{}", results[0].text());
    assert!(results[0].text().starts_with("slept"));
}

#[tokio::test]
async fn follow_ups_wait_until_the_run_would_stop() {
    let reply = support::ReplyScript::new()
        .call("c1", "queuer", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![
        reply,
        text_reply("first done"),
        text_reply("second done"),
    ])
    .tool(
        "queuer",
        Concurrency::Exclusive,
        Behaviour::Act(Action::FollowUp("and then docs".into())),
    )
    .spawn();
    let events = h.run("go").await;
    assert_balanced(&events);
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 3);
    // The follow-up is not in the request right after the tool result…
    assert_eq!(last_user_text(&contexts[1]), "go");
    // …but after the answer that would have ended the run.
    assert_eq!(
        wire_roles(&contexts[2]),
        ["user", "assistant", "tool_result", "assistant", "user"]
    );
    assert_eq!(last_user_text(&contexts[2]), "and then docs");
    let starts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentStart))
        .count();
    assert_eq!(starts, 1, "one run serves the follow-up");
}

#[tokio::test]
async fn one_at_a_time_delivers_one_steering_message_per_turn() {
    let reply = support::ReplyScript::new()
        .act(Action::Steer("one".into()))
        .act(Action::Steer("two".into()))
        .call("c1", "echo", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("a"), text_reply("b")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(|c| c.steering_mode = QueueMode::OneAtATime)
        .spawn();
    h.run("go").await;
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 3);
    assert_eq!(last_user_text(&contexts[1]), "one");
    assert_eq!(last_user_text(&contexts[2]), "two");
}

#[tokio::test]
async fn all_mode_delivers_every_steering_message_at_once() {
    let reply = support::ReplyScript::new()
        .act(Action::Steer("one".into()))
        .act(Action::Steer("two".into()))
        .call("c1", "echo", "{}")
        .done(StopReason::ToolUse);
    let mut h = harness(vec![reply, text_reply("a")])
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .spawn();
    h.run("go").await;
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(
        wire_roles(&contexts[1]),
        ["user", "assistant", "tool_result", "user", "user"]
    );
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
async fn abort_runs_queued_steering_next_and_hands_follow_ups_back() {
    let mut h = harness(vec![
        support::ReplyScript::new().text("thinking…").hang(),
        text_reply("resumed"),
    ])
    .spawn();
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    assert_eq!(
        h.agent.prompt(AgentMessage::user("again")).await,
        Err(AgentError::Busy)
    );
    h.agent.steer(AgentMessage::user("do it differently"));
    h.agent.follow_up(AgentMessage::user("then tests"));
    h.agent.abort();
    h.settle().await;
    // The steer started the next run by itself; the follow-up came back to the user.
    let returned: Vec<String> = h
        .seen
        .iter()
        .filter_map(|e| match e {
            AgentEvent::QueueReturned { messages } => Some(messages),
            _ => None,
        })
        .flatten()
        .map(|q| q.message.preview())
        .collect();
    assert_eq!(returned, ["then tests"]);
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(snapshot.steering.is_empty() && snapshot.follow_up.is_empty());
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(wire_roles(&contexts[1]), ["user", "assistant", "user"]);
    assert_eq!(last_user_text(&contexts[1]), "do it differently");
    assert_eq!(
        h.agent.continue_run().await,
        Err(AgentError::NothingToContinue)
    );
}

#[tokio::test]
async fn take_queued_returns_both_queues_and_empties_them() {
    let mut h = harness(vec![support::ReplyScript::new().hang()]).spawn();
    h.agent.prompt(AgentMessage::user("go")).await.unwrap();
    let s = h.agent.steer(AgentMessage::user("s"));
    let f = h.agent.follow_up(AgentMessage::user("f"));
    let taken = h.agent.take_queued().await.unwrap();
    let got: Vec<(u64, QueueKind)> = taken.iter().map(|q| (q.id, q.kind)).collect();
    assert_eq!(got, [(s, QueueKind::Steer), (f, QueueKind::FollowUp)]);
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(snapshot.steering.is_empty() && snapshot.follow_up.is_empty());
    h.agent.abort();
    h.settle().await;
    assert!(
        h.seen
            .iter()
            .any(|e| matches!(e, AgentEvent::QueueReturned { messages } if messages.len() == 2))
    );
}

#[tokio::test]
async fn a_message_queued_while_idle_starts_a_run() {
    let mut h = harness(vec![text_reply("done"), text_reply("picked up")]).spawn();
    h.run("first").await;
    // A UI that still thought the run was going sends a steer: it must not wait unseen.
    h.agent.steer(AgentMessage::user("late steer"));
    let events = h.settle().await;
    assert_balanced(&events);
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 2);
    assert_eq!(last_user_text(&contexts[1]), "late steer");
}

#[tokio::test]
async fn an_aborted_prompt_stays_in_the_history_not_in_the_queue() {
    let mut h = harness(vec![
        support::ReplyScript::new().hang(),
        text_reply("answer"),
    ])
    .spawn();
    h.agent.prompt(AgentMessage::user("first")).await.unwrap();
    h.agent.abort();
    let events = h.settle().await;
    assert_balanced(&events);
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(
        snapshot.steering.is_empty(),
        "the prompt is not turned into steering"
    );
    assert_eq!(snapshot.messages[0].preview(), "first");
    assert_paired(&snapshot.messages);
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

#[tokio::test]
async fn a_failed_run_hands_queued_messages_back() {
    let failing = support::ReplyScript::new()
        .act(Action::Steer("try another way".into()))
        .act(Action::FollowUp("and then".into()))
        .error("500 Internal Server Error");
    let mut h = harness(vec![failing]).spawn();
    let events = h.run("go").await;
    let returned: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::QueueReturned { messages } => Some(messages),
            _ => None,
        })
        .flatten()
        .map(|q| q.message.preview())
        .collect();
    assert_eq!(returned, ["try another way", "and then"]);
    assert_eq!(h.provider.contexts().len(), 1, "no retry by itself");
}

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

/// Records what the loop asks; fails when told to.
#[derive(Default)]
struct CountingCheckpointer {
    asked: std::sync::Mutex<Vec<String>>,
    fail: bool,
}

#[async_trait]
impl agent_core::Checkpointer for CountingCheckpointer {
    fn changes_files(&self, calls: &[ToolCall]) -> bool {
        calls.iter().any(|c| c.name == "write")
    }

    async fn before(&self) -> Result<String, String> {
        self.asked.lock().unwrap().push("before".into());
        if self.fail {
            return Err("the store is full".into());
        }
        Ok("tree-1".into())
    }

    async fn after(
        &self,
        mark: String,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<agent_core::CheckpointRecord>, String> {
        self.asked.lock().unwrap().push(format!("after {mark}"));
        Ok(Some(agent_core::CheckpointRecord {
            id: "cp1".into(),
            before: mark,
            after: "tree-2".into(),
            changed: vec![agent_core::FileChange {
                path: "a.txt".into(),
                kind: agent_core::FileChangeKind::Modified,
            }],
            skipped: Vec::new(),
            tool_call_ids,
        }))
    }
}

#[tokio::test]
async fn a_batch_that_changes_files_is_checkpointed_and_announced() {
    let checkpointer = Arc::new(CountingCheckpointer::default());
    let reply = support::ReplyScript::new()
        .call("c1", "write", "{}")
        .call("c2", "echo", "{}")
        .done(StopReason::ToolUse);
    let plugged = checkpointer.clone();
    let mut h = harness(vec![
        call_reply("c0", "echo", "{}"),
        reply,
        text_reply("ok"),
    ])
    .tool("write", Concurrency::Exclusive, Behaviour::Echo)
    .tool("echo", Concurrency::Shared, Behaviour::Echo)
    .configure(move |c| c.checkpointer = Some(plugged))
    .spawn();
    let events = h.run("go").await;
    // The read-only batch was not checkpointed; the writing one was, around the whole batch.
    assert_eq!(
        *checkpointer.asked.lock().unwrap(),
        ["before", "after tree-1"]
    );
    let taken: Vec<&agent_core::CheckpointRecord> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CheckpointTaken { record } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].tool_call_ids, ["c1", "c2"]);
    let k = kinds(&events);
    let taken_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::CheckpointTaken { .. }))
        .unwrap();
    let last_tool_end = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "c2"))
        .unwrap();
    assert!(taken_at > last_tool_end, "{k:?}");
}

#[tokio::test]
async fn a_failed_checkpoint_is_told_after_the_results_and_the_work_goes_on() {
    let checkpointer = Arc::new(CountingCheckpointer {
        fail: true,
        ..Default::default()
    });
    let plugged = checkpointer.clone();
    let mut h = harness(vec![call_reply("c1", "write", "{}"), text_reply("ok")])
        .tool("write", Concurrency::Exclusive, Behaviour::Echo)
        .configure(move |c| c.checkpointer = Some(plugged))
        .spawn();
    h.run("go").await;
    assert_eq!(h.log(), ["start c1", "end c1"], "the tool ran anyway");
    let messages = h.messages().await;
    assert_paired(&messages);
    let note = messages
        .iter()
        .position(|m| matches!(m, AgentMessage::Notice(n) if n.text.contains("the store is full")))
        .expect("the user is told");
    assert!(matches!(messages[note - 1], AgentMessage::ToolResult(_)));
}
