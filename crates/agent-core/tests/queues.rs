//! Messages typed while the agent works: steering delivered before the next model call (the
//! tools not started yet skipped), follow-ups when the run would stop, and both handed back
//! whole on an abort or a failure.

mod support;

use agent_core::{
    AgentError, AgentEvent, AgentMessage, Concurrency, QueueKind, QueueMode, ToolOutcome,
};
use llm::{Message, StopReason};
use support::*;

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
