//! The session file: every entry type round-trips; damaged files load everything that is
//! intact; a process killed while appending loses at most its last line.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_core::{AgentEvent, AgentMessage, CompactReason, CompactionOutcome, CompactionSummary};
use llm::{
    Api, AssistantContent, AssistantMessage, ImageContent, Model, ModelCost, StopReason,
    ThinkingLevel, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage,
};
use serde_json::json;
use session::{Entry, EntryBody, Home, SessionWriter, find_session, list_sessions, load_session};

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

/// One message of every kind, with every optional field set.
fn every_message() -> Vec<AgentMessage> {
    let call = ToolCall::from_raw("call_1".into(), "read".into(), r#"{"path":"a.rs"}"#);
    let broken = ToolCall::from_raw("call_2".into(), "edit".into(), r#"{"path": "#);
    vec![
        AgentMessage::User(UserMessage {
            content: vec![
                UserContent::Text {
                    text: "look at this \u{1F600}\nline two".into(),
                },
                UserContent::Image(ImageContent::new("aGVsbG8=", "image/png")),
            ],
            timestamp: 1,
        }),
        AgentMessage::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig==".into()),
                },
                AssistantContent::Text {
                    text: "Reading.".into(),
                },
                AssistantContent::ToolCall(call),
                AssistantContent::ToolCall(broken),
            ],
            error_kind: None,
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input: 10,
                output: 5,
                cache_read: 3,
                cache_write: 2,
                cost: 0.25,
            },
            model: "m".into(),
            provider: "p".into(),
            error_message: None,
            timestamp: 2,
        }),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read".into(),
            content: vec![UserContent::Text {
                text: "fn main() {}".into(),
            }],
            details: Some(json!({"lines": 1})),
            is_error: false,
            timestamp: 3,
        }),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "call_2".into(),
            tool_name: "edit".into(),
            content: vec![UserContent::Text {
                text: "bad arguments".into(),
            }],
            details: None,
            is_error: true,
            timestamp: 4,
        }),
        AgentMessage::Assistant(AssistantMessage {
            stop_reason: StopReason::Aborted,
            error_message: Some("Request was aborted".into()),
            ..AssistantMessage::empty("m", "p")
        }),
        AgentMessage::notice("model switched"),
    ]
}

fn summary(text: &str) -> CompactionSummary {
    CompactionSummary {
        summary: text.into(),
        tokens_before: 42_000,
        timestamp: 99,
    }
}

#[test]
fn every_entry_type_round_trips() {
    let bodies = [
        EntryBody::ModelChange {
            provider: "p".into(),
            model: "m2".into(),
            server: None,
        },
        EntryBody::ModelChange {
            provider: "llama.cpp".into(),
            model: "smollm2".into(),
            server: Some("http://127.0.0.1:8080/v1".into()),
        },
        EntryBody::ThinkingChange(ThinkingLevel::High),
        EntryBody::Compaction {
            summary: summary("the summary"),
            first_kept_id: Some("abcd1234".into()),
        },
        EntryBody::Compaction {
            summary: summary("all of it"),
            first_kept_id: None,
        },
    ];
    let entries = every_message()
        .into_iter()
        .map(EntryBody::Message)
        .chain(bodies)
        .enumerate()
        .map(|(i, body)| Entry {
            id: format!("id{i}"),
            parent_id: i.checked_sub(1).map(|p| format!("id{p}")),
            timestamp: "2025-01-02T03:04:05.678Z".into(),
            body,
        });
    for entry in entries {
        let line = entry.to_json();
        assert!(!line.contains('\n'), "one line: {line}");
        assert_eq!(Entry::from_json(&line).unwrap(), entry, "{line}");
    }
}

#[test]
fn written_sessions_load_back_with_model_thinking_and_compaction_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let cwd = Path::new("/work/project");
    let mut writer = SessionWriter::create(&home, cwd, &model("m1"), ThinkingLevel::Off);
    assert!(
        !writer.path().exists(),
        "nothing written before the first entry"
    );
    let messages = every_message();
    for message in &messages {
        writer
            .record(&AgentEvent::MessageEnd {
                message: message.clone(),
            })
            .unwrap();
    }
    writer.record_model(&model("m1")).unwrap(); // unchanged: no entry
    writer.record_model(&model("m2")).unwrap();
    writer.record_thinking(ThinkingLevel::Medium).unwrap();
    writer
        .record(&AgentEvent::CompactionEnd {
            reason: CompactReason::Manual,
            outcome: CompactionOutcome::Compacted {
                summary: summary("first four"),
                replaced: 4,
            },
        })
        .unwrap();
    writer
        .record(&AgentEvent::MessageEnd {
            message: AgentMessage::user("after"),
        })
        .unwrap();

    let loaded = load_session(writer.path()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.header, *writer.header());
    assert_eq!(loaded.header.cwd, "/work/project");
    assert_eq!(
        (loaded.model.as_str(), loaded.thinking),
        ("m2", ThinkingLevel::Medium)
    );
    assert_eq!(loaded.entries, 10);
    let mut expected = vec![AgentMessage::CompactionSummary(summary("first four"))];
    expected.extend(messages[4..].iter().cloned());
    expected.push(loaded.messages.last().unwrap().clone());
    assert_eq!(loaded.messages, expected);
    assert_eq!(loaded.messages.len(), loaded.message_ids.len());

    // Every entry names the one before it.
    let text = std::fs::read_to_string(writer.path()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[1]["parent_id"].is_null());
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parent_id"], pair[0]["id"]);
    }

    // A second compaction replaces the first summary too (in a later process: the first
    // writer, and its lock, are gone).
    drop(writer);
    let mut writer = SessionWriter::resume(&loaded).unwrap();
    writer
        .record(&AgentEvent::CompactionEnd {
            reason: CompactReason::Threshold,
            outcome: CompactionOutcome::Compacted {
                summary: summary("second"),
                replaced: 3,
            },
        })
        .unwrap();
    let again = load_session(writer.path()).unwrap();
    assert_eq!(again.messages.len(), loaded.messages.len() - 2);
    assert_eq!(
        again.messages[0],
        AgentMessage::CompactionSummary(summary("second"))
    );
    assert_eq!(&again.messages[1..], &loaded.messages[3..]);
}

fn write_session(home: &Home, cwd: &Path, prompts: &[&str]) -> PathBuf {
    let mut writer = SessionWriter::create(home, cwd, &model("m"), ThinkingLevel::Off);
    for prompt in prompts {
        writer
            .record(&AgentEvent::MessageEnd {
                message: AgentMessage::user(*prompt),
            })
            .unwrap();
    }
    writer.path().to_path_buf()
}

#[test]
fn damaged_lines_are_skipped_with_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let path = write_session(&home, Path::new("/p"), &["one", "two", "three"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // Garbage in the middle, invalid UTF-8, and a last line cut off by a crash.
    lines.insert(2, "{\"type\":\"message\",\"id\":\"x\" garbage");
    let last = lines.pop().unwrap();
    let mut damaged = lines.join("\n").into_bytes();
    damaged.extend_from_slice(b"\n\xff\xfe\n");
    damaged.extend_from_slice(&last.as_bytes()[..last.len() / 2]);
    std::fs::write(&path, &damaged).unwrap();

    let loaded = load_session(&path).unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(|m| m.preview()).collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains(":3:"), "{}", loaded.warnings[0]);

    // Appending after the cut-off line starts a fresh line: the new entry is intact.
    let mut writer = SessionWriter::resume(&loaded).unwrap();
    writer
        .record(&AgentEvent::MessageEnd {
            message: AgentMessage::user("four"),
        })
        .unwrap();
    let reloaded = load_session(&path).unwrap();
    let texts: Vec<String> = reloaded.messages.iter().map(|m| m.preview()).collect();
    assert_eq!(texts, ["one", "two", "four"]);
    assert_eq!(reloaded.warnings.len(), 3);

    // A lost header is a warning too; the entries still load.
    let bytes = std::fs::read(&path).unwrap();
    let first_newline = bytes.iter().position(|&b| b == b'\n').unwrap();
    std::fs::write(&path, &bytes[first_newline + 1..]).unwrap();
    let headless = load_session(&path).unwrap();
    assert_eq!(headless.messages.len(), 3);
    assert!(headless.header.id.len() == 16, "id from the file name");
}

#[test]
fn sessions_are_listed_newest_first_and_found_by_id_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let cwd = Path::new("/p");
    let older = write_session(&home, cwd, &["first   prompt\nof the older", "x"]);
    let newer = write_session(&home, cwd, &["newer"]);
    // Make the order independent of the clock's resolution.
    let file = std::fs::File::options().append(true).open(&older).unwrap();
    file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000))
        .unwrap();
    write_session(&home, Path::new("/elsewhere"), &["other"]);

    let listed = list_sessions(&home, cwd);
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].path, newer);
    assert_eq!(listed[1].first_prompt, "first prompt of the older");
    assert_eq!(listed[1].message_count, 2);
    assert_eq!(listed[1].cwd, "/p");
    assert!(listed[1].size > 0);
    assert_eq!(
        session::latest_session(&home, cwd).unwrap().unwrap().path,
        newer
    );
    // `--continue` takes the path alone, without reading the file.
    assert_eq!(
        session::latest_session_path(&home, cwd).unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        session::latest_session_path(&home, Path::new("/none")).unwrap(),
        None
    );
    assert!(
        session::latest_session(&home, Path::new("/none"))
            .unwrap()
            .is_none()
    );

    let id = &listed[1].id;
    assert_eq!(find_session(&home, cwd, &id[..6]).unwrap(), older);
    assert_eq!(
        find_session(&home, cwd, older.to_str().unwrap()).unwrap(),
        older
    );
    assert!(find_session(&home, cwd, "zzzz").is_err());
    assert!(find_session(&home, cwd, "").is_err());
    // Another directory's session is found by its id too.
    let other = &list_sessions(&home, Path::new("/elsewhere"))[0];
    assert_eq!(find_session(&home, cwd, &other.id).unwrap(), other.path);
}

/// The child side of the crash test: appends messages forever, reporting progress on stdout.
#[test]
fn crash_child_appends_until_killed() {
    let Some(home) = std::env::var_os("SESSION_CRASH_CHILD_HOME") else {
        return; // Only does something when the crash test starts it.
    };
    let home = Home::new(home);
    let mut writer =
        SessionWriter::create(&home, Path::new("/crash"), &model("m"), ThinkingLevel::Off);
    let mut stdout = std::io::stdout();
    for i in 0u64.. {
        let text = format!("message {i} {}", "x".repeat((i % 50) as usize * 40));
        writer
            .record(&AgentEvent::MessageEnd {
                message: AgentMessage::user(text),
            })
            .unwrap();
        if i % 200 == 199 {
            let _ = writeln!(stdout, "CRASH-CHILD wrote {}", i + 1);
            let _ = stdout.flush();
        }
    }
}

#[test]
fn a_process_killed_while_appending_loses_at_most_its_last_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child_appends_until_killed", "--nocapture"])
        .env("SESSION_CRASH_CHILD_HOME", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut reported = 0;
    let mut line = String::new();
    // Kill it mid-stream, after it reported 1000 messages written.
    while reported < 1000 {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "child ended early"
        );
        if let Some(n) = line.trim().strip_prefix("CRASH-CHILD wrote ") {
            reported = n.parse().unwrap();
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix: no destructor or flush runs.
    child.wait().unwrap();

    let home = Home::new(tmp.path());
    let info = session::latest_session(&home, Path::new("/crash"))
        .unwrap()
        .unwrap();
    let loaded = load_session(&info.path).unwrap();
    assert!(
        loaded.messages.len() >= reported,
        "{} < {reported}",
        loaded.messages.len()
    );
    assert!(loaded.warnings.len() <= 1, "{:?}", loaded.warnings);
    for (i, message) in loaded.messages.iter().enumerate() {
        assert!(
            message.preview().starts_with(&format!("message {i} ")),
            "message {i} intact and in order"
        );
    }
}
