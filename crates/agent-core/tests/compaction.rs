//! Compaction inside the loop: before a model call, after a context-overflow error, by hand;
//! a failed summary leaves the history as it was.

mod support;

use agent_core::{AgentError, AgentEvent, AgentMessage, CompactionOutcome};
use llm::{Message, StopReason};
use support::{
    ReplyScript, TestCompactor, assert_balanced, assert_paired, call_reply, harness, text_reply,
};

fn first_user_text(messages: &[Message]) -> String {
    match &messages[0] {
        Message::User(user) => user.plain_text(),
        other => panic!("expected a user message first, got {other:?}"),
    }
}

#[tokio::test]
async fn compacts_before_the_model_call_when_the_context_is_full() {
    let compactor = TestCompactor::new(5, false);
    let c = compactor.clone();
    let mut h = harness(vec![
        call_reply("c1", "echo", r#"{"x":1}"#),
        text_reply("first done"),
        text_reply("second done"),
    ])
    .tool(
        "echo",
        agent_core::Concurrency::Shared,
        support::Behaviour::Echo,
    )
    .configure(move |config| config.compactor = Some(c))
    .spawn();
    h.run("one").await;
    assert!(
        compactor.calls.lock().unwrap().is_empty(),
        "small: no compaction"
    );

    // History: user, assistant(call), tool result, assistant, + new user = 5 → compact.
    let events = h.run("two").await;
    assert_balanced(&events);
    let kinds = support::kinds(&events);
    let start = kinds.iter().position(|k| k == "compaction_start").unwrap();
    let end = kinds.iter().position(|k| k == "compaction_end").unwrap();
    let answer = kinds
        .iter()
        .position(|k| k == "message_start:assistant")
        .unwrap();
    assert!(start < end && end < answer, "{kinds:?}");

    let contexts = h.provider.contexts();
    let last = &contexts[2].messages;
    assert_eq!(last.len(), 2, "summary + the new prompt");
    assert!(first_user_text(last).contains("summary of 4 messages"));
    let messages = h.messages().await;
    assert!(matches!(messages[0], AgentMessage::CompactionSummary(_)));
    assert_eq!(messages[1].preview(), "two");
    assert_eq!(messages[2].preview(), "second done");
    assert_paired(&messages);
}

#[tokio::test]
async fn a_failed_summary_leaves_the_history_untouched() {
    let compactor = TestCompactor::new(3, true);
    let c = compactor.clone();
    let mut h = harness(vec![text_reply("a"), text_reply("b")])
        .configure(move |config| config.compactor = Some(c))
        .spawn();
    h.run("one").await;
    let before = h.messages().await;
    let events = h.run("two").await;
    assert_balanced(&events);
    let failed = events.iter().any(|e| {
        matches!(
            e,
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Failed { .. },
                ..
            }
        )
    });
    assert!(failed);
    // The model still got the whole history, and the agent still holds it.
    assert_eq!(h.provider.contexts()[1].messages.len(), 3);
    let after = h.messages().await;
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(after.len(), before.len() + 2);
}

#[tokio::test]
async fn a_context_overflow_compacts_once_and_retries() {
    let compactor = TestCompactor::new(usize::MAX, false);
    let c = compactor.clone();
    let overflow = || {
        ReplyScript::new()
            .error("400: This model's maximum context length is 8192 tokens, you requested 9000")
    };
    let mut h = harness(vec![text_reply("a"), overflow(), text_reply("after retry")])
        .configure(move |config| config.compactor = Some(c))
        .spawn();
    h.run("one").await;
    let events = h.run("two").await;
    assert_balanced(&events);
    assert_eq!(compactor.calls.lock().unwrap().len(), 1);
    let contexts = h.provider.contexts();
    assert_eq!(contexts.len(), 3);
    assert!(first_user_text(&contexts[2].messages).contains("summary of 2 messages"));
    let messages = h.messages().await;
    assert_eq!(messages.last().unwrap().preview(), "after retry");

    // A second overflow in the same run is not retried again.
    let c2 = TestCompactor::new(usize::MAX, false);
    let c3 = c2.clone();
    let mut h = harness(vec![text_reply("a"), overflow(), overflow()])
        .configure(move |config| config.compactor = Some(c3))
        .spawn();
    h.run("one").await;
    h.run("two").await;
    assert_eq!(h.provider.contexts().len(), 3);
    let messages = h.messages().await;
    let AgentMessage::Assistant(last) = messages.last().unwrap() else {
        panic!("ends with the failed answer")
    };
    assert_eq!(last.stop_reason, StopReason::Error);
}

#[tokio::test]
async fn compact_by_hand_with_instructions() {
    let compactor = TestCompactor::new(usize::MAX, false);
    let c = compactor.clone();
    let mut h = harness(vec![text_reply("a"), text_reply("b")])
        .configure(move |config| config.compactor = Some(c))
        .spawn();
    assert_eq!(
        h.agent.compact(None).await,
        Err(AgentError::NothingToCompact)
    );
    h.run("one").await;
    h.run("two").await;
    h.agent
        .compact(Some("keep the file names".into()))
        .await
        .unwrap();
    let events = h.settle().await;
    assert_balanced(&events);
    let kinds = support::kinds(&events);
    assert_eq!(kinds, ["compaction_start", "compaction_end"]);
    let calls = compactor.calls.lock().unwrap().clone();
    assert_eq!(calls[0].1.as_deref(), Some("keep the file names"));
    let messages = h.messages().await;
    assert_eq!(messages.len(), 3, "summary, last prompt, last answer");
    assert!(matches!(messages[0], AgentMessage::CompactionSummary(_)));

    let mut plain = harness(vec![]).spawn();
    assert_eq!(
        plain.agent.compact(None).await,
        Err(AgentError::NothingToCompact)
    );
    plain.settle().await;
}
