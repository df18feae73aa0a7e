//! The working modes in the TUI, in a real pseudo-terminal against mock-llm: Shift+Tab cycles
//! them on the status line, a plan-mode run pins its checklist above the editor and ends with
//! a choice, and "implement" sends the plan in default mode.
//!
//! Unix only: these drive the binary through pseudo-terminals (see README, Windows).
#![cfg(unix)]

mod common;

use common::pty::{Session, runtime};
use common::tool_names;
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

const SHIFT_TAB: &str = "\x1b[Z";

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
    let last = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["content"].as_str().unwrap(),
        format!("Implement this plan:\n\n{plan}")
    );
    let tools = tool_names(&requests[2].body);
    assert!(tools.contains(&"write".to_string()), "{tools:?}");
    assert!(!tools.contains(&"submit_plan".to_string()), "{tools:?}");
}

/// Two subagents in the TUI: each shows as a live line under its `task` call; one's question
/// is asked in the parent's UI naming it; Ctrl+G shows the other's transcript, where Esc stops
/// that child alone and the parent goes on.
#[test]
fn subagents_are_seen_asked_for_and_stopped_one_by_one() {
    let rt = runtime();
    let task = |job: &str| json!({"description": format!("job {job}"), "prompt": format!("Job {job}: do it."), "agent": "worker"});
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::default()
                    .with_tool_call("task", task("A"))
                    .with_tool_call("task", task("B")),
                Reply::tool_call("fetch", json!({"url": "http://127.0.0.1:9/secret"}))
                    .for_request("Job A:"),
                // Known to be read-only: it runs also where nothing confines commands (the
                // worker writes nothing, so its commands are held read-only).
                Reply::tool_call("bash", json!({"command": "sleep 600"})).for_request("Job B:"),
                Reply::text("A was refused.").for_request("Job A:"),
                Reply::text("Parent done."),
            ],
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("agents")).unwrap();
    std::fs::write(
        home.path().join("agents/worker.md"),
        "---\nname: worker\ndescription: works\ntools: read, bash, fetch\n---\nDo the job.\n",
    )
    .unwrap();
    let mut session = Session::start_in(&server, &[], (40, 110), (dir, home));
    session.wait_for("Type a message");
    session.type_text("fan out");
    session.send("\r");
    // A's question, in the parent's UI, naming the child.
    session.wait_for("(subagent worker-");
    session.wait_for("· running bash ·");
    session.send("n");
    session.wait_for("A was refused.");
    // Ctrl+G: the running child (B) is shown first.
    session.send("\x07");
    session.wait_for("(running) · Enter steers it");
    session.send("\x1b");
    session.wait_for("the main agent goes on");
    session.wait_for("Parent done.");
    let screen = session.contents();
    assert!(screen.contains("the user stopped it"), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "B made no second request");
}
