//! A session file in the format of version 1, checked in by hand: it must keep loading to the
//! same history. Never regenerate `fixtures/golden-v1.jsonl`; a change that breaks this test
//! breaks every user's saved sessions.

use std::path::Path;

use agent_core::{AgentMessage, CompactionSummary, Notice};
use llm::{
    AssistantContent, AssistantMessage, StopReason, ThinkingLevel, ToolCall, ToolResultMessage,
    Usage, UserContent, UserMessage,
};
use serde_json::json;
use session::{Entry, load_session};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/golden-v1.jsonl"
);

fn expected() -> Vec<AgentMessage> {
    vec![
        AgentMessage::CompactionSummary(CompactionSummary {
            summary: "The user asked to fix a failing test in src/lib.rs.".into(),
            tokens_before: 48_000,
            timestamp: 1_748_770_300_000,
        }),
        AgentMessage::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "The test probably fails on an off-by-one.".into(),
                    signature: Some("c2lnbmF0dXJl".into()),
                },
                AssistantContent::Text {
                    text: "Let me look at the test.".into(),
                },
                AssistantContent::ToolCall(ToolCall::from_raw(
                    "toolu_01".into(),
                    "read".into(),
                    r#"{"path":"src/lib.rs"}"#,
                )),
            ],
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input: 1200,
                output: 80,
                cache_read: 1000,
                cache_write: 200,
                cost: 0.0042,
            },
            model: "claude-sonnet-4-5".into(),
            provider: "anthropic".into(),
            error_message: None,
            error_kind: None,
            timestamp: 1_748_770_203_000,
        }),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "toolu_01".into(),
            tool_name: "read".into(),
            content: vec![UserContent::Text {
                text: "     1\tpub fn add(a: i32, b: i32) -> i32 { a - b }\n".into(),
            }],
            details: Some(json!({"lines": 1})),
            is_error: false,
            timestamp: 1_748_770_204_000,
        }),
        AgentMessage::Assistant(AssistantMessage {
            content: vec![AssistantContent::Text {
                text: "Fixed: `add` subtracted.".into(),
            }],
            stop_reason: StopReason::Stop,
            usage: Usage {
                input: 1500,
                output: 20,
                cache_read: 0,
                cache_write: 0,
                cost: 0.001,
            },
            model: "gpt-5".into(),
            provider: "openai".into(),
            error_message: None,
            error_kind: None,
            timestamp: 1_748_770_209_000,
        }),
        AgentMessage::User(UserMessage {
            content: vec![UserContent::Text {
                text: "Thanks. Now the README.".into(),
            }],
            timestamp: 1_748_770_260_000,
        }),
        AgentMessage::Notice(Notice {
            text: "Compacted the conversation.".into(),
            timestamp: 1_748_770_301_000,
        }),
    ]
}

#[test]
fn the_golden_session_loads_to_its_history() {
    let loaded = load_session(Path::new(GOLDEN)).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.repaired, 0);
    assert_eq!(loaded.entries, 9);
    assert_eq!(loaded.header.id, "5f0c2a9e7b3d4c1a");
    assert_eq!(loaded.header.cwd, "/home/dev/project");
    assert_eq!(loaded.start_date(), Some("2025-06-01"));
    assert_eq!(
        (
            loaded.provider.as_str(),
            loaded.model.as_str(),
            loaded.thinking
        ),
        ("openai", "gpt-5", ThinkingLevel::High)
    );
    assert_eq!(loaded.messages, expected());
    assert_eq!(
        loaded.message_ids,
        [
            "a1000008", "a1000002", "a1000003", "a1000006", "a1000007", "a1000009"
        ]
    );
    assert_eq!(loaded.leaf_id.as_deref(), Some("a1000009"));
}

#[test]
fn the_golden_entries_are_written_back_byte_for_byte() {
    // The writer still speaks this format: each entry re-serialises to its line.
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    for line in text.lines().skip(1) {
        assert_eq!(Entry::from_json(line).unwrap().to_json(), line);
    }
}

#[test]
fn a_message_whose_role_is_not_first_reads_the_same() {
    // The loader reads a message straight into its variant when `role` comes first, as the
    // writer puts it; any other order takes serde's general path to the same message.
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    let mut reordered = 0;
    for line in text.lines().skip(1) {
        let Some((head, rest)) = line.split_once(r#""message":{"role":""#) else {
            continue;
        };
        let (role, fields) = rest.split_once("\",").unwrap();
        let fields = fields.strip_suffix("}}").unwrap();
        let moved = format!(r#"{head}"message":{{{fields},"role":"{role}"}}}}"#);
        assert_eq!(
            Entry::from_json(&moved).unwrap(),
            Entry::from_json(line).unwrap(),
            "{moved}"
        );
        reordered += 1;
    }
    assert_eq!(reordered, 6, "every message line of the golden file");
}
