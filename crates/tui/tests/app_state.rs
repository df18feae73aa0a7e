//! How agent events and user actions change the UI state.

use agent_core::{AgentEvent, AgentMessage, QueueKind, QueuedMessage, RunSummary};
use llm::{AssistantBuilder, StopReason, StreamEvent, ToolResultMessage, UserContent};
use tui::app::App;
use tui::cells::CellKind;
use tui::status::Status;

fn history() -> Vec<AgentMessage> {
    let mut b = AssistantBuilder::new("m", "p");
    let (i, _) = b.toolcall_start("call_1", "ls");
    b.toolcall_delta(i, "{}");
    b.end_open_toolcalls();
    let StreamEvent::Done { message } = b.done(StopReason::ToolUse) else {
        unreachable!()
    };
    vec![
        AgentMessage::user("list"),
        AgentMessage::Assistant(message),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "ls".into(),
            content: vec![UserContent::Text {
                text: "a\nb".into(),
            }],
            details: None,
            is_error: false,
            timestamp: 0,
        }),
    ]
}

#[test]
fn a_history_loads_again_after_the_transcript_is_cleared() {
    let mut app = App::new(Status::default());
    app.load_history(&history());
    let cells = app.cells.len();
    // /new then /resume of the same session: the same tool call ids come back.
    app.clear_transcript();
    app.load_history(&history());
    assert_eq!(app.cells.len(), cells);
    assert!(
        app.cells
            .iter()
            .any(|c| matches!(&c.kind, CellKind::Tool(t) if t.result.is_some()))
    );
}

#[test]
fn an_abort_says_so_and_returned_messages_go_back_into_the_editor() {
    let mut app = App::new(Status::default());
    app.on_event(&AgentEvent::AgentStart);
    for (id, kind, text) in [
        (1, QueueKind::Steer, "use tabs"),
        (2, QueueKind::FollowUp, "then docs"),
    ] {
        app.on_event(&AgentEvent::Queued {
            id,
            kind,
            message: AgentMessage::user(text),
        });
    }
    assert_eq!(app.queue.len(), 2);
    app.abort_requested = true;
    app.editor.set_text("my draft");
    let actions = app.on_event(&AgentEvent::AgentEnd {
        messages: Vec::new(),
        summary: RunSummary::default(),
    });
    assert!(actions.is_empty());
    assert!(!app.running);
    assert!(
        app.cells
            .iter()
            .any(|c| matches!(&c.kind, CellKind::Error(e) if e.starts_with("Interrupted")))
    );
    // The agent hands the follow-up back and delivers the steer to its next run.
    app.on_event(&AgentEvent::QueueReturned {
        messages: vec![QueuedMessage {
            id: 2,
            kind: QueueKind::FollowUp,
            message: AgentMessage::user("then docs"),
        }],
    });
    app.on_event(&AgentEvent::QueueDelivered {
        ids: vec![1],
        turn: 3,
    });
    assert!(app.queue.is_empty());
    assert_eq!(app.editor.text(), "then docs\nmy draft");
}

#[test]
fn a_reply_cut_at_the_output_limit_says_it_is_incomplete() {
    let mut app = App::new(Status::default());
    let mut b = AssistantBuilder::new("m", "p");
    b.text_delta("The first half of");
    let StreamEvent::Done { message } = b.done(StopReason::Length) else {
        unreachable!()
    };
    app.on_event(&AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message),
    });
    assert!(
        app.cells
            .iter()
            .any(|c| matches!(&c.kind, CellKind::Error(e) if e.contains("cut off at the model's output token limit")))
    );
}

#[test]
fn model_thinking_and_history_changes_come_from_events() {
    let mut app = App::new(Status::default());
    let mut model = llm::Model {
        id: "big".into(),
        provider: "p".into(),
        api: llm::Api::OpenaiCompletions,
        base_url: "https://api.example.com/v1".into(),
        context_window: 1_000,
        max_output: 100,
        reasoning: true,
        images: false,
        cost: llm::ModelCost::default(),
    };
    app.on_event(&AgentEvent::ModelChange {
        model: model.clone(),
    });
    assert_eq!(
        (app.status.model.as_str(), app.status.context_window),
        ("big", 1_000)
    );
    // A model on this machine is named with its server and real window.
    let mut local = model.clone();
    local.base_url = "http://127.0.0.1:11434/v1".into();
    local.provider = "ollama".into();
    local.context_window = 40_960;
    app.on_event(&AgentEvent::ModelChange {
        model: local.clone(),
    });
    assert_eq!(app.status.model, "ollama · big · 40k ctx");
    // llama.cpp names a model by its file's path: the file name is shown.
    local.provider = "llama.cpp".into();
    local.id = "/models/cache/SmolLM2-135M-Instruct.Q4_1.gguf".into();
    local.context_window = 2_048;
    app.on_event(&AgentEvent::ModelChange { model: local });
    assert_eq!(
        app.status.model,
        "llama.cpp · SmolLM2-135M-Instruct.Q4_1.gguf · 2k ctx"
    );
    model.id = "small".into();
    app.on_event(&AgentEvent::ModelChange { model });
    app.on_event(&AgentEvent::ThinkingChange {
        level: llm::ThinkingLevel::High,
    });
    assert_eq!(app.status.thinking, Some(llm::ThinkingLevel::High));
    app.on_event(&AgentEvent::HistoryReset {
        messages: history().into(),
        reason: agent_core::ResetReason::Resume,
        session: None,
    });
    assert!(matches!(&app.cells[0].kind, CellKind::User(u) if u == "list"));
    assert!(
        matches!(&app.cells.last().unwrap().kind, CellKind::Notice(n) if n.starts_with("Resumed"))
    );
}

#[test]
fn a_tool_call_shows_its_arguments_while_they_stream() {
    let mut app = App::new(Status::default());
    app.tool_views
        .insert("write".into(), agent_core::ToolView::Diff);
    let mut b = AssistantBuilder::new("m", "p");
    let (i, start) = b.toolcall_start("c1", "write");
    let mut events = vec![start];
    events.push(b.toolcall_delta(i, r#"{"path": "src/ma"#));
    for event in &events {
        app.on_event(&AgentEvent::MessageUpdate {
            event: event.clone(),
        });
    }
    let args = |app: &App| match &app.cells[0].kind {
        CellKind::Tool(t) => t.args.clone(),
        _ => panic!("a tool cell"),
    };
    assert_eq!(args(&app)["path"], "src/ma");
    // A huge content streams on; the header keeps what it had, at a bounded cost.
    let huge = format!(r#"in.rs", "content": "{}"#, "x".repeat(1 << 20));
    app.on_event(&AgentEvent::MessageUpdate {
        event: b.toolcall_delta(i, &huge),
    });
    assert_eq!(args(&app)["path"], "src/main.rs");
    // Aborted before the arguments completed: the call is dropped from the message.
    let StreamEvent::Error { message } = b.failed(StopReason::Aborted, "Request was aborted")
    else {
        unreachable!()
    };
    assert!(message.tool_calls().next().is_none());
    app.on_event(&AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message),
    });
    let CellKind::Tool(cell) = &app.cells[0].kind else {
        panic!()
    };
    let result = cell
        .result
        .as_ref()
        .expect("the dropped call says it did not run");
    assert!(result.is_error && result.text().starts_with("Not run"));
    assert_eq!(
        app.cells
            .iter()
            .filter(|c| matches!(c.kind, CellKind::Tool(_)))
            .count(),
        1
    );
}

fn question(id: u64, rule: Option<&[&str]>) -> AgentEvent {
    AgentEvent::ApprovalRequested {
        request: agent_core::ApprovalRequest {
            id,
            tool_call_id: format!("c{id}"),
            tool_name: "bash".into(),
            subject: "cargo test -p x".into(),
            reason: "runs outside the sandbox".into(),
            justification: Some("needs the network".into()),
            diff: None,
            rule: rule.map(|r| r.iter().map(|w| w.to_string()).collect()),
            subagent: None,
        },
    }
}

#[test]
fn keys_answer_the_question_on_screen() {
    use agent_core::ApprovalDecision;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use tui::action::Action;
    use tui::input::{InputState, on_key};
    let key = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    let mut app = App::new(Status::default());
    let mut input = InputState::default();
    app.on_event(&question(1, Some(&["cargo", "test"])));
    assert_eq!(
        on_key(&mut app, &mut input, key('y')),
        [Action::Decide(1, ApprovalDecision::Approve)]
    );
    assert_eq!(
        on_key(&mut app, &mut input, key('a')),
        [Action::Decide(1, ApprovalDecision::ApproveAlways)]
    );
    assert_eq!(
        on_key(&mut app, &mut input, key('n')),
        [Action::Decide(1, ApprovalDecision::Deny { reason: None })]
    );
    // Typing is typing; Enter then denies and steers with the text.
    for c in "use the cache".chars() {
        assert!(on_key(&mut app, &mut input, key(c)).is_empty());
    }
    let actions = on_key(
        &mut app,
        &mut input,
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
    );
    assert!(matches!(
        &actions[0],
        Action::Decide(1, ApprovalDecision::Deny { .. })
    ));
    assert_eq!(actions[1], Action::Steer("use the cache".into()));
    // Answered (by anyone): the record stays, the question goes.
    app.on_event(&AgentEvent::ApprovalDecided {
        id: 1,
        decision: ApprovalDecision::Approve,
    });
    assert!(app.approvals.is_empty());
    assert!(
        matches!(&app.cells.last().unwrap().kind, CellKind::Notice(n) if n.starts_with("Allowed bash once"))
    );
    // Without a rule on offer, `a` is just a letter.
    app.on_event(&question(2, None));
    assert!(on_key(&mut app, &mut input, key('a')).is_empty());
}

#[test]
fn ctrl_l_draws_the_screen_again_and_types_nothing() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use tui::action::Action;
    use tui::input::{InputState, on_key};
    let mut app = App::new(Status::default());
    let mut input = InputState::default();
    app.editor.set_text("half a prompt");
    let ctrl_l = KeyEvent::new(KeyCode::Char('l'), KeyModifiers::CONTROL);
    assert_eq!(on_key(&mut app, &mut input, ctrl_l), [Action::Repaint]);
    assert_eq!(app.editor.text(), "half a prompt");
}

#[test]
fn a_resumed_conversation_puts_its_prompts_in_the_history() {
    use llm::AssistantMessage;
    let mut app = App::new(Status::default());
    let answer = || AgentMessage::Assistant(AssistantMessage::empty("m", "p"));
    app.load_history(&[
        AgentMessage::user("first question"),
        answer(),
        AgentMessage::user("continue"),
        answer(),
        AgentMessage::user("continue"),
        answer(),
    ]);
    assert!(app.editor.history_up());
    assert_eq!(app.editor.text(), "continue");
    // The same prompt twice in a row is one entry.
    assert!(app.editor.history_up());
    assert_eq!(app.editor.text(), "first question");
}

#[test]
fn a_fork_says_it_is_one() {
    let mut app = App::new(Status::default());
    app.on_event(&AgentEvent::HistoryReset {
        messages: history().into(),
        reason: agent_core::ResetReason::Fork,
        session: None,
    });
    assert!(matches!(
        &app.cells.last().unwrap().kind,
        CellKind::Notice(n) if n.starts_with("Forked: you go on in a copy")
    ));
}
