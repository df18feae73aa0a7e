//! How agent events and user actions change the UI state.

use agent_core::{AgentEvent, AgentMessage};
use llm::{AssistantBuilder, StopReason, StreamEvent, ToolResultMessage, UserContent};
use tui::app::{Action, App};
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
fn an_abort_takes_the_queues_back_when_the_run_ends() {
    let mut app = App::new(Status::default());
    app.on_event(&AgentEvent::AgentStart);
    app.abort_requested = true;
    let actions = app.on_event(&AgentEvent::AgentEnd {
        messages: Vec::new(),
    });
    assert_eq!(actions, [Action::PullQueued { after_abort: true }]);
    assert!(!app.running);
    assert!(
        app.cells
            .iter()
            .any(|c| matches!(&c.kind, CellKind::Error(e) if e.starts_with("Interrupted")))
    );
}
