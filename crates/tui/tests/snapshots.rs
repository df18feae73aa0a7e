//! What the user sees, as TestBackend snapshots: every cell type, the queue, popups, narrow and
//! wide terminals.

use agent_core::{AgentEvent, AgentMessage, QueueKind, RunSummary, ToolOutcome, ToolView};
use llm::{AssistantBuilder, StopReason, StreamEvent, ToolResultMessage, Usage, UserContent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use tui::app::App;
use tui::input::InputState;
use tui::popup::Popup;
use tui::status::Status;

/// An app that knows the built-in tools' views, as the binary tells it.
fn app() -> App {
    let mut app = App::new(status());
    app.tool_views = [
        ("bash", ToolView::Shell),
        ("edit", ToolView::Diff),
        ("write", ToolView::Diff),
        ("read", ToolView::Read),
        ("grep", ToolView::Search),
        ("find", ToolView::Find),
        ("ls", ToolView::List),
    ]
    .into_iter()
    .map(|(name, view)| (name.to_string(), view))
    .collect();
    app
}

fn status() -> Status {
    Status {
        model: "gpt-5".into(),
        thinking: Some(llm::ThinkingLevel::Medium),
        cwd: "~/src/project".into(),
        branch: Some("main".into()),
        context_window: 400_000,
        ..Status::default()
    }
}

/// Draws and returns the screen; the spinner and its clock are pinned so snapshots are stable.
fn screen(app: &mut App, input: &mut InputState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| tui::ui::draw(f, app, input)).unwrap();
    let text = format!("{}", terminal.backend());
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        for frame in ["⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] {
            line = line.replace(frame, "⠋");
        }
        if let Some(at) = line.find("Working (") {
            let end = line[at..].find("s ·").map_or(line.len(), |e| at + e);
            line.replace_range(at..end, "Working (0");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn user(text: &str) -> AgentEvent {
    AgentEvent::MessageEnd {
        message: AgentMessage::user(text),
    }
}

fn assistant(thinking: Option<&str>, text: &str, usage: Usage) -> Vec<AgentEvent> {
    let mut b = AssistantBuilder::new("gpt-5", "openai");
    let mut events = vec![AgentEvent::MessageStart {
        message: AgentMessage::Assistant(b.snapshot(StopReason::Stop)),
    }];
    if let Some(t) = thinking {
        events.push(AgentEvent::MessageUpdate {
            event: b.thinking_delta(t),
        });
    }
    events.push(AgentEvent::MessageUpdate {
        event: b.text_delta(text),
    });
    let StreamEvent::Done { mut message } = b.done(StopReason::Stop) else {
        unreachable!()
    };
    message.usage = usage;
    events.push(AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message),
    });
    events
}

fn tool(id: &str, name: &str, args: Value, result: Option<(&str, bool, Value)>) -> Vec<AgentEvent> {
    let mut events = vec![AgentEvent::ToolExecutionStart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        arguments: args,
    }];
    if let Some((text, is_error, details)) = result {
        events.push(AgentEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: name.into(),
            result: ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: name.into(),
                content: vec![UserContent::Text { text: text.into() }],
                details: Some(details),
                is_error,
                timestamp: 0,
            },
            outcome: if is_error {
                ToolOutcome::Error
            } else {
                ToolOutcome::Ok
            },
        });
    }
    events
}

fn conversation() -> App {
    let mut app = app();
    let mut events = vec![
        AgentEvent::AgentStart,
        user("Fix the failing test and explain."),
    ];
    events.extend(assistant(
        Some("The test compares floats exactly."),
        "I'll run the tests first.",
        Usage {
            input: 12_000,
            output: 400,
            cache_read: 30_000,
            cache_write: 0,
            cost: 0.0213,
        },
    ));
    events.extend(tool(
        "c1",
        "bash",
        json!({"command": "cargo test"}),
        Some(("running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... FAILED\nfailures:\n  c: 0.1 + 0.2 != 0.3\ntest result: FAILED", true, json!({"exit_code": 101, "duration_ms": 2300}))),
    ));
    events.extend(tool(
        "c2",
        "read",
        json!({"path": "src/lib.rs", "offset": 10, "limit": 20}),
        Some(("...", false, json!({"first_line": 10, "last_line": 29}))),
    ));
    events.extend(tool(
        "c3",
        "grep",
        json!({"pattern": "assert_eq", "path": "src"}),
        Some(("...", false, json!({"matches": 4, "files": 2}))),
    ));
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -12,3 +12,3 @@\n fn total() {\n-    assert_eq!(0.1 + 0.2, 0.3);\n+    assert!((0.1 + 0.2 - 0.3).abs() < 1e-9);\n }\n";
    events.extend(tool(
        "c4",
        "edit",
        json!({"path": "src/lib.rs", "edits": []}),
        Some((
            "Edited src/lib.rs: 1 replacement, +1 -1 lines.",
            false,
            json!({"diff": diff}),
        )),
    ));
    events.extend(tool(
        "c5",
        "find",
        json!({"pattern": "*.toml"}),
        Some(("Cannot read x: permission denied.", true, json!({}))),
    ));
    events.extend(assistant(
        None,
        "## Fixed\n\nThe test compared floats with `==`. Now it checks a **tolerance**:\n\n```rust\nassert!((a - b).abs() < 1e-9);\n```\n\n| test | before | after |\n|---|---|---|\n| c | failed | passes |\n\n1. ran the tests\n2. fixed `total`\n",
        Usage { input: 500, output: 200, cache_read: 42_000, cache_write: 0, cost: 0.0105 },
    ));
    events.push(AgentEvent::MessageEnd {
        message: AgentMessage::notice("Context compacted: 12 turns summarised."),
    });
    events.push(AgentEvent::AgentEnd {
        messages: Vec::new(),
        summary: RunSummary::default(),
    });
    for event in &events {
        app.on_event(event);
    }
    app
}

#[test]
fn a_whole_conversation_wide() {
    let mut app = conversation();
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 100, 60));
}

#[test]
fn a_whole_conversation_narrow() {
    let mut app = conversation();
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 40, 80));
}

#[test]
fn thinking_hidden_and_tools_expanded() {
    let mut app = conversation();
    app.show_thinking = false;
    app.expand_tools = true;
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 80, 70));
}

#[test]
fn a_running_command_with_queued_messages() {
    let mut app = app();
    let mut events = vec![AgentEvent::AgentStart, user("Build it")];
    events.extend(tool(
        "c1",
        "bash",
        json!({"command": "cargo build --release"}),
        None,
    ));
    events.push(AgentEvent::ToolExecutionUpdate {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        partial: agent_core::ToolOutput::text("   Compiling a v0.1.0\n   Compiling b v0.1.0\n   Compiling c v0.1.0\n   Compiling d v0.1.0\n   Compiling e v0.1.0\n   Compiling f v0.1.0\n   Compiling g v0.1.0"),
    });
    events.push(AgentEvent::Queued {
        id: 1,
        kind: QueueKind::FollowUp,
        message: AgentMessage::user("then run the tests"),
    });
    events.push(AgentEvent::Queued {
        id: 2,
        kind: QueueKind::Steer,
        message: AgentMessage::user("use the dev profile"),
    });
    for event in &events {
        app.on_event(event);
    }
    app.editor.set_text("and check clippy");
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 80, 20));
}

#[test]
fn the_command_popup() {
    let mut app = app();
    app.editor.set_text("/c");
    let mut input = InputState::default();
    input.popup = Popup::for_text("/c", &[]);
    insta::assert_snapshot!(screen(&mut app, &mut input, 80, 14));
}

#[test]
fn the_file_popup() {
    let mut app = app();
    app.editor.set_text("explain @mark");
    let files: Vec<String> = [
        "src/main.rs",
        "crates/tui/src/markdown.rs",
        "docs/marketing.md",
        "README.md",
    ]
    .map(String::from)
    .to_vec();
    let mut input = InputState::default();
    input.popup = Popup::for_text("explain @mark", &files);
    insta::assert_snapshot!(screen(&mut app, &mut input, 80, 14));
}

#[test]
fn scrolled_up_shows_how_to_get_back() {
    let mut app = conversation();
    app.scroll.from_end(10);
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 80, 16));
}

#[test]
fn a_write_outside_the_workspace_waits_for_approval() {
    let mut app = app();
    let mut events = vec![AgentEvent::AgentStart, user("Fix the hosts file")];
    events.extend(tool("c1", "edit", json!({"path": "/etc/hosts"}), None));
    events.push(AgentEvent::ApprovalRequested {
        request: agent_core::ApprovalRequest {
            id: 7,
            tool_call_id: "c1".into(),
            tool_name: "edit".into(),
            subject: "/etc/hosts".into(),
            reason: "writes outside the workspace".into(),
            justification: Some("the test server needs a name".into()),
            diff: Some("--- a/etc/hosts\n+++ b/etc/hosts\n@@ -1,2 +1,3 @@\n 127.0.0.1 localhost\n+127.0.0.1 api.test\n ::1 localhost\n".into()),
            rule: None,
            subagent: None,
        },
    });
    for event in &events {
        app.on_event(event);
    }
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 80, 24));
}

#[test]
fn cjk_and_emoji_wrap_in_cells_the_queue_and_the_editor() {
    let mut app = app();
    let mut events = vec![
        AgentEvent::AgentStart,
        user("我想请你帮我看看这段代码为什么不能编译，谢谢你的帮助和耐心的解答 🙏"),
    ];
    events.extend(assistant(
        None,
        "当然可以。问题在第 12 行：`let x = vec![1, 2, 3];` 之后又借用了 `x`。\n\n\
         | 文件 | 说明 |\n|---|---|\n| main.rs | 借用检查器报告的错误在这里 🔍 |\n",
        Usage::default(),
    ));
    events.push(AgentEvent::Queued {
        id: 1,
        kind: QueueKind::FollowUp,
        message: AgentMessage::user("然后请运行所有的测试并告诉我结果，谢谢 🎉"),
    });
    for event in &events {
        app.on_event(event);
    }
    app.editor
        .set_text("再解释一下生命周期 lifetimes 是怎么工作的，最好有例子 👨‍👩‍👧 和图示");
    insta::assert_snapshot!(screen(&mut app, &mut InputState::default(), 40, 30));
}

/// A command the sandbox refused: the output once, the exit code in the footer only (not also
/// the `[Exit code 1.]` line meant for the model), and a short line for the user instead of
/// the sandbox's instructions to the model (issue 46).
#[test]
fn a_refused_command_shows_what_the_user_needs_once() {
    let mut app = app();
    let note = "[This command ran in the sandbox (workspace-write): it may write only in /w. \
                If the task needs more, run the command again with \"escalate\": true.]";
    let text = format!("touch: cannot touch '/etc/x': Permission denied\n[Exit code 1.]\n{note}");
    let mut events = vec![AgentEvent::AgentStart, user("touch it")];
    events.extend(tool(
        "c1",
        "bash",
        json!({"command": "touch /etc/x"}),
        Some((
            &text,
            true,
            json!({"exit_code": 1, "duration_ms": 200, "sandbox_refused": true,
                   "for_model": ["[Exit code 1.]", note]}),
        )),
    ));
    for event in events {
        app.on_event(&event);
    }
    let shown = screen(&mut app, &mut InputState::default(), 100, 16);
    assert!(shown.contains("Permission denied"), "{shown}");
    assert!(shown.contains("exit 1 · 0.2s"), "{shown}");
    assert!(!shown.contains("[Exit code 1.]"), "{shown}");
    assert!(!shown.contains("escalate"), "{shown}");
    assert!(
        shown.contains("The sandbox may have refused this"),
        "{shown}"
    );
}

/// Every kind of popup, as the runtime fills them, on one screen after another.
fn every_popup() -> Vec<(&'static str, Popup)> {
    use tui::action::ChoiceKind;
    let items = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    vec![
        ("commands", Popup::for_text("/c", &[]).unwrap()),
        (
            "files",
            Popup::for_text(
                "explain @mark",
                &[
                    "crates/tui/src/markdown.rs".into(),
                    "docs/marketing.md".into(),
                ],
            )
            .unwrap(),
        ),
        (
            "model",
            Popup::choice(
                ChoiceKind::Model,
                items(&[
                    ("llama.cpp/smollm2", "● in use · at 127.0.0.1:8080 · 2k ctx"),
                    ("ollama/qwen3:8b", "at 127.0.0.1:11434 · 32k ctx"),
                    (
                        "openai/gpt-5",
                        "400k ctx · $1.25/$10 per M · needs a key (OPENAI_API_KEY)",
                    ),
                    (
                        "anthropic/claude-sonnet-4-5",
                        "200k ctx · $3/$15 per M · needs a key (ANTHROPIC_API_KEY)",
                    ),
                ]),
                0,
            ),
        ),
        (
            "key",
            Popup::Key {
                ask: tui::popup::KeyAsk {
                    provider: "openai".into(),
                    env: "OPENAI_API_KEY".into(),
                    file: "/home/someone/.coding-agent/auth.toml".into(),
                },
                choice: 2,
                typed: "sk-abcdefgh".into(),
                message: Some(
                    "openai answered 401: Incorrect API key provided — paste another key, or Esc"
                        .into(),
                ),
            },
        ),
        (
            "thinking",
            Popup::choice(
                ChoiceKind::Thinking,
                items(&[("off", ""), ("low", ""), ("medium", ""), ("high", "")]),
                2,
            ),
        ),
        (
            "session",
            Popup::choice(
                ChoiceKind::Session,
                items(&[
                    (
                        "2026-12-07 10:42 · 14 messages · fix the flaky parser test",
                        "",
                    ),
                    (
                        "2026-12-06 18:03 · 3 messages · 2 branches · explain the sandbox",
                        "",
                    ),
                ]),
                0,
            ),
        ),
        (
            "rule",
            Popup::choice(
                ChoiceKind::Rule,
                items(&[("cargo test", "revoke"), ("python3 -m unittest", "revoke")]),
                0,
            ),
        ),
        (
            "rewind",
            Popup::choice(
                ChoiceKind::Rewind,
                items(&[
                    (
                        "now rename the helper and update every caller",
                        "2 checkpoints after it",
                    ),
                    ("add a test for the empty input", "no file changes after it"),
                ]),
                0,
            ),
        ),
        (
            "rewind scope",
            Popup::choice(
                ChoiceKind::RewindScope,
                items(&[
                    (
                        "Code and conversation",
                        "restore the files of 2 checkpoints; go back to before this message",
                    ),
                    (
                        "Conversation only",
                        "go back to before this message; the files stay as they are",
                    ),
                    (
                        "Code only",
                        "restore the files of 2 checkpoints; the conversation stays",
                    ),
                ]),
                0,
            ),
        ),
        (
            "tree",
            Popup::choice(
                ChoiceKind::Tree,
                items(&[
                    ("• you: add a test for the empty input", "1 checkpoint"),
                    ("  ○ ai: Added `empty_input_is_rejected`", ""),
                    (
                        "  ● you: now rename the helper",
                        "[rename] · 2 checkpoints · you are here",
                    ),
                ]),
                2,
            ),
        ),
        (
            "tree scope",
            Popup::choice(
                ChoiceKind::TreeScope,
                items(&[
                    (
                        "Go there",
                        "the conversation goes on from there; the files stay as they are",
                    ),
                    (
                        "Go there with its files",
                        "and the files the agent changed go back to how they were there",
                    ),
                ]),
                0,
            ),
        ),
        (
            "conflict",
            Popup::choice(
                ChoiceKind::Conflict,
                items(&[
                    (
                        "Restore anyway",
                        "overwrite the changes made since to src/parser.rs, tests/parse.rs",
                    ),
                    (
                        "Skip those files",
                        "restore the rest, keep them as they are",
                    ),
                    ("Cancel", "change nothing"),
                ]),
                2,
            ),
        ),
    ]
}

fn every_popup_at(width: u16) -> String {
    let mut out = String::new();
    for (name, popup) in every_popup() {
        let mut app = app();
        let mut input = InputState::default();
        input.popup = Some(popup);
        out.push_str(&format!("── {name} ──\n"));
        // Only the rows above the editor: the rest is the same every time.
        let drawn = screen(&mut app, &mut input, width, 16);
        let rows: Vec<&str> = drawn.lines().collect();
        for row in &rows[..rows.len().saturating_sub(4)] {
            if !row.trim_matches(|c| c == '"' || c == ' ').is_empty() {
                out.push_str(row);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn every_popup_at_60_columns() {
    insta::assert_snapshot!(every_popup_at(60));
}

#[test]
fn every_popup_at_120_columns() {
    insta::assert_snapshot!(every_popup_at(120));
}
