//! Tool calls a crash left without a result: loading closes them with an "interrupted" error
//! result right after the call's other results, resuming writes the same into the file, and
//! loading alone never writes.

use std::path::{Path, PathBuf};

use agent_core::{AgentEvent, AgentMessage, CompactReason, CompactionOutcome, CompactionSummary};
use llm::{
    Api, AssistantContent, AssistantMessage, Model, ModelCost, StopReason, ThinkingLevel, ToolCall,
    ToolResultMessage, UserContent,
};
use session::{Home, INTERRUPTED, SessionWriter, list_sessions, load_session};

fn model() -> Model {
    Model {
        id: "m".into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".into(),
        context_window: 100_000,
        max_output: 4_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

fn calls(ids: &[(&str, &str)]) -> AgentMessage {
    let mut answer = AssistantMessage::empty("m", "test");
    answer.stop_reason = StopReason::ToolUse;
    answer.content = ids
        .iter()
        .map(|(id, name)| {
            AssistantContent::ToolCall(ToolCall::from_raw(
                id.to_string(),
                name.to_string(),
                r#"{"command":"sleep 60"}"#,
            ))
        })
        .collect();
    AgentMessage::Assistant(answer)
}

fn result(id: &str, name: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![UserContent::Text { text: "ok".into() }],
        details: None,
        is_error: false,
        timestamp: 5,
    })
}

fn write(home: &Home, messages: &[AgentMessage]) -> (SessionWriter, PathBuf) {
    let mut writer = SessionWriter::create(home, Path::new("/p"), &model(), ThinkingLevel::Off);
    for message in messages {
        writer
            .record(&AgentEvent::MessageEnd {
                message: message.clone(),
            })
            .unwrap();
    }
    let path = writer.path().to_path_buf();
    (writer, path)
}

/// The results of the history as (call id, tool, text, is_error).
fn results(messages: &[AgentMessage]) -> Vec<(String, String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some((
                r.tool_call_id.clone(),
                r.tool_name.clone(),
                match &r.content[..] {
                    [UserContent::Text { text }] => text.clone(),
                    _ => String::new(),
                },
                r.is_error,
            )),
            _ => None,
        })
        .collect()
}

/// Every call has its result among the results right after it, before any other message.
fn assert_paired(messages: &[AgentMessage]) {
    for (i, message) in messages.iter().enumerate() {
        let AgentMessage::Assistant(a) = message else {
            continue;
        };
        let following: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|m| matches!(m, AgentMessage::ToolResult(_) | AgentMessage::Notice(_)))
            .filter_map(|m| match m {
                AgentMessage::ToolResult(r) => Some(r.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        for c in &a.content {
            if let AssistantContent::ToolCall(call) = c {
                assert!(
                    following.contains(&call.id.as_str()),
                    "call {} of message {i} has no result right after it",
                    call.id
                );
            }
        }
    }
}

fn interrupted(id: &str, name: &str) -> (String, String, String, bool) {
    (id.into(), name.into(), INTERRUPTED.into(), true)
}

fn ok(id: &str, name: &str) -> (String, String, String, bool) {
    (id.into(), name.into(), "ok".into(), false)
}

#[test]
fn a_crash_mid_tool_is_closed_on_load_and_written_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    // The agent was killed while `b` ran: `a` has its result, `b` none.
    let (writer, path) = write(
        &home,
        &[
            AgentMessage::user("run them"),
            calls(&[("a", "read"), ("b", "bash")]),
            result("a", "read"),
        ],
    );
    drop(writer);
    let before = std::fs::read(&path).unwrap();

    let loaded = load_session(&path).unwrap();
    assert_eq!(loaded.repaired, 1);
    assert_eq!(
        results(&loaded.messages),
        [ok("a", "read"), interrupted("b", "bash")]
    );
    assert_paired(&loaded.messages);
    assert_eq!(loaded.messages.len(), loaded.message_ids.len());
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("closed 1 unfinished tool call")),
        "{:?}",
        loaded.warnings
    );
    // Loading, and listing, never write.
    assert_eq!(list_sessions(&home, Path::new("/p")).len(), 1);
    assert_eq!(std::fs::read(&path).unwrap(), before, "loading wrote");

    let mut writer = SessionWriter::resume(&loaded).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        written.lines().count(),
        before.split(|&b| b == b'\n').count()
    );
    assert!(written.lines().last().unwrap().contains(INTERRUPTED));
    // Built once: a message carries the millisecond it was made.
    let go_on = AgentMessage::user("go on");
    writer
        .record(&AgentEvent::MessageEnd {
            message: go_on.clone(),
        })
        .unwrap();
    drop(writer);

    let again = load_session(&path).unwrap();
    assert_eq!(again.repaired, 0);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    let mut expected = loaded.messages.clone();
    expected.push(go_on);
    assert_eq!(again.messages, expected, "the file holds what was loaded");
    assert_eq!(
        &again.message_ids[..loaded.message_ids.len()],
        loaded.message_ids
    );
}

#[test]
fn unanswered_calls_followed_by_more_messages_are_closed_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    // An older version went on after a crash: a user message after unanswered calls, which
    // every provider rejects.
    let (writer, path) = write(
        &home,
        &[
            AgentMessage::user("one"),
            calls(&[("a", "read"), ("b", "bash")]),
            result("a", "read"),
            AgentMessage::notice("aborted"),
            AgentMessage::user("two"),
            calls(&[("c", "bash")]),
            AgentMessage::user("three"),
        ],
    );
    drop(writer);
    let before = std::fs::read_to_string(&path).unwrap();
    let loaded = load_session(&path).unwrap();
    assert_eq!(loaded.repaired, 2);
    assert_paired(&loaded.messages);
    let previews: Vec<String> = loaded.messages.iter().map(|m| m.preview()).collect();
    assert_eq!(previews[0], "one");
    assert!(
        matches!(loaded.messages[3], AgentMessage::ToolResult(_)),
        "b right after a"
    );
    assert!(matches!(loaded.messages[4], AgentMessage::Notice(_)));
    assert_eq!(previews[5], "two");
    assert!(
        matches!(loaded.messages[7], AgentMessage::ToolResult(_)),
        "c before three"
    );
    assert_eq!(previews[8], "three");
    assert_eq!(
        results(&loaded.messages),
        [
            ok("a", "read"),
            interrupted("b", "bash"),
            interrupted("c", "bash")
        ]
    );

    drop(SessionWriter::resume(&loaded).unwrap());
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(
        after.starts_with(&before),
        "the old entries stay in the file"
    );
    let again = load_session(&path).unwrap();
    assert_eq!(again.repaired, 0);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.messages, loaded.messages);
    assert_eq!(again.message_ids, loaded.message_ids);
    assert_eq!(again.leaf_id, loaded.leaf_id);
}

#[test]
fn a_repair_before_a_later_compaction_keeps_the_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let (mut writer, path) = write(
        &home,
        &[
            AgentMessage::user("one"),
            AgentMessage::user("two"),
            calls(&[("a", "bash")]),
            AgentMessage::user("three"),
        ],
    );
    // Compacted: "one" replaced; the unanswered call is kept.
    writer
        .record(&AgentEvent::CompactionEnd {
            reason: CompactReason::Manual,
            outcome: CompactionOutcome::Compacted {
                summary: CompactionSummary {
                    summary: "said one".into(),
                    tokens_before: 10,
                    timestamp: 1,
                },
                replaced: 1,
            },
        })
        .unwrap();
    writer.record_thinking(ThinkingLevel::High).unwrap();
    drop(writer);
    let loaded = load_session(&path).unwrap();
    assert_eq!(loaded.repaired, 1);
    assert_paired(&loaded.messages);
    assert!(matches!(
        loaded.messages[0],
        AgentMessage::CompactionSummary(_)
    ));
    assert_eq!(
        loaded.messages.len(),
        5,
        "summary, two, call, result, three"
    );
    drop(SessionWriter::resume(&loaded).unwrap());
    let again = load_session(&path).unwrap();
    assert_eq!(again.repaired, 0);
    assert_eq!(again.messages, loaded.messages);
    assert_eq!(again.message_ids, loaded.message_ids);
    assert_eq!(
        again.thinking,
        ThinkingLevel::High,
        "state kept on the new branch"
    );
}

#[test]
fn a_forked_session_carries_the_repaired_history_and_leaves_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let (writer, path) = write(&home, &[AgentMessage::user("one"), calls(&[("a", "bash")])]);
    drop(writer);
    let before = std::fs::read(&path).unwrap();
    let loaded = load_session(&path).unwrap();
    let fork = SessionWriter::fork(&home, Path::new("/p"), &loaded).unwrap();
    assert_ne!(fork.path(), path);
    drop(fork);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the original is untouched"
    );
    let forked = list_sessions(&home, Path::new("/p"))
        .into_iter()
        .find(|s| s.path != path)
        .unwrap();
    let copy = load_session(&forked.path).unwrap();
    assert_eq!(copy.repaired, 0);
    assert_eq!(copy.messages, loaded.messages);
}
