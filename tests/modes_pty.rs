//! The working modes in the TUI, in a real pseudo-terminal against mock-llm: Shift+Tab cycles
//! them on the status line, a plan-mode run pins its checklist above the editor and ends with
//! a choice, and "implement" sends the plan in default mode.
//!
//! Unix only: these drive the binary through pseudo-terminals (see README, Windows).
#![cfg(unix)]

mod common;

use common::pty::{Session, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

const SHIFT_TAB: &str = "\x1b[Z";

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn shift_tab_plans_and_an_accepted_plan_is_implemented_in_default_mode() {
    let rt = runtime();
    let plan = "1. Fix the parser.\n2. Add a test.";
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::tool_call(
                    "update_plan",
                    json!({"plan": [
                        {"step": "Read the parser", "status": "in_progress"},
                        {"step": "Write the plan", "status": "pending"}
                    ]}),
                ),
                Reply::tool_call("submit_plan", json!({ "plan": plan })),
                Reply::text("Implemented."),
            ],
        }))
        .unwrap();
    let mut session = Session::start(&server);
    session.wait_for("Type a message");
    session.send(SHIFT_TAB);
    session.wait_for("Auto-edit mode");
    session.send(SHIFT_TAB);
    session.wait_for("⏸ plan mode");
    session.type_text("plan the fix");
    session.send("\r");
    session.wait_for("The plan is ready");
    let screen = session.contents();
    assert!(screen.contains("Implement it"), "{screen}");
    let first = &server.requests()[0].body;
    let tools = tool_names(first);
    assert!(tools.contains(&"submit_plan".to_string()), "{tools:?}");
    assert!(!tools.contains(&"write".to_string()), "{tools:?}");
    // Enter picks the first choice: implement.
    session.send("\r");
    session.wait_for("Implemented.");
    session.wait_gone("⏸ plan mode");
    // The checklist stays pinned above the editor while a step is left.
    let screen = session.contents();
    assert!(screen.contains("Plan · 0 of 2 done"), "{screen}");
    assert!(screen.contains("▸ Read the parser"), "{screen}");
    // The plan is shown whole in the transcript, not as its arguments.
    assert!(screen.contains("  2. Add a test."), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let last = requests[2].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"].as_str().unwrap(),
        format!("Implement this plan:\n\n{plan}")
    );
    let tools = tool_names(&requests[2].body);
    assert!(tools.contains(&"write".to_string()), "{tools:?}");
    assert!(!tools.contains(&"submit_plan".to_string()), "{tools:?}");
}
