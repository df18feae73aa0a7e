//! Rewinds, `/tree` jumps, labels and checkpoints in the session file: a rewind moves the
//! leaf back and keeps the old branch, the tree shows every branch, resume loads the chosen
//! one, and the checkpoints on a branch come back with it.

use agent_core::{AgentEvent, AgentMessage, CheckpointRecord, RestoreKind, RestoreRecord};
use llm::{Api, Model, ModelCost, ThinkingLevel};
use session::{Home, Leaf, SessionWriter, list_sessions, load_session, load_session_at, load_tree};

fn model(id: &str) -> Model {
    Model {
        id: id.into(),
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

fn say(writer: &mut SessionWriter, message: AgentMessage) {
    writer.record(&AgentEvent::MessageEnd { message }).unwrap();
}

fn exchange(writer: &mut SessionWriter, question: &str, answer: &str) {
    say(writer, AgentMessage::user(question));
    say(writer, assistant(answer));
}

fn assistant(text: &str) -> AgentMessage {
    let mut message = llm::AssistantMessage::empty("m", "test");
    message
        .content
        .push(llm::AssistantContent::Text { text: text.into() });
    AgentMessage::Assistant(message)
}

fn checkpoint(id: &str) -> CheckpointRecord {
    CheckpointRecord {
        id: id.into(),
        before: format!("{id}-before"),
        after: format!("{id}-after"),
        changed: vec![agent_core::FileChange {
            path: "src/a.rs".into(),
            kind: agent_core::FileChangeKind::Modified,
        }],
        skipped: Vec::new(),
        tool_call_ids: Vec::new(),
    }
}

fn previews(messages: &[AgentMessage]) -> Vec<String> {
    messages.iter().map(|m| m.preview()).collect()
}

fn rewind(writer: &mut SessionWriter, messages: &[AgentMessage], keep: usize) {
    writer
        .record(&AgentEvent::Rewound {
            messages: messages[..keep].into(),
            leaf: None,
        })
        .unwrap();
}

#[test]
fn two_rewinds_make_three_branches_and_each_can_be_loaded() {
    let home_dir = tempfile::tempdir().unwrap();
    let home = Home::new(home_dir.path());
    let cwd = home_dir.path().join("repo");
    let mut writer = SessionWriter::create(&home, &cwd, &model("m"), ThinkingLevel::Off);
    exchange(&mut writer, "one", "ONE");
    exchange(&mut writer, "two", "TWO");
    exchange(&mut writer, "three", "THREE");
    let path = writer.path().to_path_buf();
    let first = load_session(&path).unwrap().messages;

    // Rewind to just before "two" and go on differently.
    rewind(&mut writer, &first, 2);
    exchange(&mut writer, "two again", "TWO AGAIN");
    let second = load_session(&path).unwrap();
    assert_eq!(
        previews(&second.messages),
        ["one", "ONE", "two again", "TWO AGAIN"]
    );

    // Rewind to before the very first message.
    rewind(&mut writer, &second.messages, 0);
    let empty = load_session(&path).unwrap();
    assert!(empty.messages.is_empty(), "{:?}", previews(&empty.messages));
    exchange(&mut writer, "fresh start", "FRESH");

    let tree = load_tree(&path).unwrap();
    assert_eq!(tree.branches, 3);
    let roots: Vec<&str> = tree.roots().map(|i| tree.nodes[i].text.as_str()).collect();
    assert_eq!(roots, ["one", "fresh start"]);
    let path_texts: Vec<&str> = tree
        .current_path()
        .iter()
        .map(|&i| tree.nodes[i].text.as_str())
        .collect();
    assert_eq!(path_texts, ["fresh start", "FRESH"]);
    // "ONE" continues two ways.
    let one = tree.nodes.iter().position(|n| n.text == "ONE").unwrap();
    let children: Vec<&str> = tree.nodes[one]
        .children
        .iter()
        .map(|&i| tree.nodes[i].text.as_str())
        .collect();
    assert_eq!(children, ["two", "two again"]);
    let listed = list_sessions(&home, &cwd);
    assert_eq!(listed[0].branches, 3);

    // A /tree jump to the end of the first branch, then a restart: that branch loads.
    let three = tree.nodes.iter().find(|n| n.text == "THREE").unwrap();
    let at = load_session_at(&path, Leaf::Entry(&three.id)).unwrap();
    writer
        .record(&AgentEvent::Rewound {
            messages: at.messages.clone().into(),
            leaf: Some(three.id.clone()),
        })
        .unwrap();
    drop(writer);
    let resumed = load_session(&path).unwrap();
    assert_eq!(
        previews(&resumed.messages),
        ["one", "ONE", "two", "TWO", "three", "THREE"]
    );
    // A jump to a branch tip continues it: still three branches.
    assert_eq!(load_tree(&path).unwrap().branches, 3);
    let mut writer = SessionWriter::resume(&resumed).unwrap();
    exchange(&mut writer, "four", "FOUR");
    assert_eq!(load_session(&path).unwrap().messages.len(), 8);
}

#[test]
fn a_rewind_keeps_the_current_model_and_checkpoints_follow_their_branch() {
    let home_dir = tempfile::tempdir().unwrap();
    let home = Home::new(home_dir.path());
    let cwd = home_dir.path().join("repo");
    let mut writer = SessionWriter::create(&home, &cwd, &model("m"), ThinkingLevel::Off);
    exchange(&mut writer, "one", "ONE");
    writer
        .record(&AgentEvent::CheckpointTaken {
            record: checkpoint("c1"),
        })
        .unwrap();
    exchange(&mut writer, "two", "TWO");
    writer
        .record(&AgentEvent::CheckpointTaken {
            record: checkpoint("c2"),
        })
        .unwrap();
    writer
        .record(&AgentEvent::CheckpointRestored {
            record: RestoreRecord {
                kind: RestoreKind::Undo,
                checkpoints: vec!["c2".into()],
                restored: vec![agent_core::FileChange {
                    path: "src/a.rs".into(),
                    kind: agent_core::FileChangeKind::Modified,
                }],
                kept: Vec::new(),
                failed: Vec::new(),
                pre_restore: "pre".into(),
                post_restore: String::new(),
            },
        })
        .unwrap();
    writer.record_model(&model("other")).unwrap();
    writer.record_thinking(ThinkingLevel::High).unwrap();
    let path = writer.path().to_path_buf();

    let loaded = load_session(&path).unwrap();
    let ids: Vec<&str> = loaded
        .timeline
        .checkpoints()
        .iter()
        .map(|c| c.record.id.as_str())
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    assert_eq!(loaded.timeline.next_undo()[0].record.id, "c1");
    assert_eq!(loaded.timeline.next_redo()[0].record.id, "c2");
    assert_eq!(loaded.timeline.checkpoints()[1].at, 4);

    // Back to before "two": c2 was taken after it, so it is on the other branch now.
    rewind(&mut writer, &loaded.messages, 2);
    writer.label("before two").unwrap();
    drop(writer);
    let rewound = load_session(&path).unwrap();
    assert_eq!(previews(&rewound.messages), ["one", "ONE"]);
    let ids: Vec<&str> = rewound
        .timeline
        .checkpoints()
        .iter()
        .map(|c| c.record.id.as_str())
        .collect();
    assert_eq!(ids, ["c1"]);
    // The model chosen last stays in effect, though the branch point was before the switch.
    assert_eq!(rewound.model, "other");
    assert_eq!(rewound.thinking, ThinkingLevel::High);
    let tree = load_tree(&path).unwrap();
    let labelled = tree.nodes.iter().find(|n| n.label.is_some()).unwrap();
    assert_eq!(labelled.text, "ONE");
    assert_eq!(labelled.label.as_deref(), Some("before two"));
    assert_eq!(labelled.checkpoints, 1);
}

#[test]
fn a_jump_into_the_middle_of_a_tool_batch_closes_its_calls() {
    let home_dir = tempfile::tempdir().unwrap();
    let home = Home::new(home_dir.path());
    let cwd = home_dir.path().join("repo");
    let mut writer = SessionWriter::create(&home, &cwd, &model("m"), ThinkingLevel::Off);
    say(&mut writer, AgentMessage::user("run it"));
    let mut calling = llm::AssistantMessage::empty("m", "test");
    calling
        .content
        .push(llm::AssistantContent::ToolCall(llm::ToolCall {
            id: "call-1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "true"}),
            invalid_arguments: None,
        }));
    say(&mut writer, AgentMessage::Assistant(calling));
    say(
        &mut writer,
        AgentMessage::ToolResult(llm::ToolResultMessage {
            tool_call_id: "call-1".into(),
            tool_name: "bash".into(),
            content: vec![llm::UserContent::Text { text: "ok".into() }],
            details: None,
            is_error: false,
            timestamp: 1,
        }),
    );
    exchange(&mut writer, "next", "NEXT");
    let path = writer.path().to_path_buf();
    let tree = load_tree(&path).unwrap();
    let call = tree.nodes.iter().find(|n| n.text == "[bash]").unwrap();
    let at = load_session_at(&path, Leaf::Entry(&call.id)).unwrap();
    assert_eq!(at.repaired, 1);
    writer
        .record(&AgentEvent::Rewound {
            messages: at.messages.clone().into(),
            leaf: Some(call.id.clone()),
        })
        .unwrap();
    drop(writer);
    let loaded = load_session(&path).unwrap();
    assert_eq!(loaded.repaired, 0, "the jump wrote the closing result");
    // (The closing result's timestamp is when it was made: compare the rest.)
    assert_eq!(previews(&loaded.messages), previews(&at.messages));
    assert_eq!(loaded.messages.len(), 3);
    assert!(
        load_session_at(&path, Leaf::Entry("no-such-entry")).is_err(),
        "an unknown entry is an error"
    );
}

/// Writes JSON as people and tools often do: a space after every colon and comma.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

#[test]
fn a_file_reformatted_by_hand_lists_like_the_one_the_writer_wrote() {
    let home_dir = tempfile::tempdir().unwrap();
    let home = Home::new(home_dir.path());
    let cwd = home_dir.path().join("repo");
    let mut writer = SessionWriter::create(&home, &cwd, &model("m"), ThinkingLevel::Off);
    exchange(&mut writer, "one", "ONE");
    exchange(&mut writer, "two", "TWO");
    let path = writer.path().to_path_buf();
    let first = load_session(&path).unwrap().messages;
    rewind(&mut writer, &first, 2);
    exchange(&mut writer, "two again", "TWO AGAIN");
    drop(writer);
    let written = list_sessions(&home, &cwd).remove(0);
    assert_eq!((written.message_count, written.branches), (6, 2));

    let text = std::fs::read_to_string(&path).unwrap();
    let mut spaced = Vec::new();
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut serializer = serde_json::Serializer::with_formatter(&mut spaced, Spaced);
        serde::Serialize::serialize(&value, &mut serializer).unwrap();
        spaced.push(b'\n');
    }
    assert!(!spaced.starts_with(b"{\"type\":\""));
    std::fs::write(&path, &spaced).unwrap();

    let listed = list_sessions(&home, &cwd).remove(0);
    assert_eq!(
        (
            listed.message_count,
            listed.branches,
            listed.first_prompt.as_str(),
            listed.id.as_str()
        ),
        (6, 2, "one", written.id.as_str())
    );
    assert_eq!(
        previews(&load_session(&path).unwrap().messages),
        ["one", "ONE", "two again", "TWO AGAIN"]
    );
}
