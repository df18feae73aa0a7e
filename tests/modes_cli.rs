//! The working modes and the run deadline, seen from the binary: plan mode changes nothing by
//! any path a model, a repository's hook or an MCP server offers; a deadline ends a run the
//! way an abort does, with its own exit code; RPC switches modes and bounds one prompt.
//!
//! Unix only: the write paths are shell commands (see README, Windows).
#![cfg(unix)]

mod common;

use common::rpc::Rpc;
use common::*;
use mock_llm::{Fault, Reply};
use serde_json::json;

/// The names of the tools request `n` offered.
fn offered(server: &mock_llm::MockServer, n: usize) -> Vec<String> {
    tool_names(&server.requests()[n].body)
}

/// The text of the tool result the model got in request `n` (its last message).
fn tool_result(server: &mock_llm::MockServer, n: usize) -> String {
    let body = &server.requests()[n].body;
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A hostile model in plan mode tries every way to change a file: the write and edit tools
/// (not offered, called anyway), a shell redirection, `sed -i`, a command asking to run
/// outside the sandbox, an MCP server's writing tool; a user's hook that writes runs at each
/// call. Nothing changes, and the run ends with the plan, printed as the answer.
#[tokio::test]
async fn plan_mode_changes_nothing_by_any_path() {
    let env = Env::new();
    let work = env.work.path();
    std::fs::write(work.join("a.txt"), "original\n").unwrap();
    let hook = "echo hooked > hook-wrote.txt";
    let config = format!(
        "{}\n[[hooks]]\nevent = \"pre_tool_use\"\ncommand = \"{hook}\"\n",
        mcp_server_entry("t", &[], "")
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    let server = serve(vec![
        Reply::tool_call("write", json!({"path": "a.txt", "content": "pwned"})),
        Reply::tool_call(
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "original", "new_text": "pwned"}]}),
        ),
        Reply::tool_call("bash", json!({"command": "echo pwned > b.txt"})),
        Reply::tool_call("bash", json!({"command": "sed -i s/original/pwned/ a.txt"})),
        Reply::tool_call(
            "bash",
            json!({"command": "touch c.txt", "escalate": true, "justification": "needed"}),
        ),
        Reply::tool_call(
            "mcp__t__write_file",
            json!({"path": work.join("d.txt"), "text": "pwned"}),
        ),
        Reply::tool_call("bash", json!({"command": "cat a.txt"})),
        Reply::tool_call("submit_plan", json!({"plan": "1. Change a.txt."})),
    ])
    .await;
    let out = env
        .run_confined(
            Some(&server),
            &["--start-mode", "plan", "-p", "plan it"],
            "",
        )
        .await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "1. Change a.txt.", "{stderr}");
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "original\n"
    );
    for planted in ["b.txt", "c.txt", "d.txt", "hook-wrote.txt"] {
        assert!(!work.join(planted).exists(), "{planted} was written");
    }
    // What the model was told at each attempt.
    let tools = offered(&server, 0);
    assert!(tools.contains(&"submit_plan".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "write" || t == "edit"),
        "{tools:?}"
    );
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("You are in plan mode"), "{system}");
    for n in [1, 2] {
        assert!(
            tool_result(&server, n).contains("not found"),
            "{}",
            tool_result(&server, n)
        );
    }
    assert!(
        tool_result(&server, 5).contains("nothing runs outside the sandbox"),
        "{}",
        tool_result(&server, 5)
    );
    assert!(
        tool_result(&server, 6).contains("does not mark it read-only"),
        "{}",
        tool_result(&server, 6)
    );
    // Reading still works in plan mode.
    if something_confines() {
        assert!(
            tool_result(&server, 7).contains("original"),
            "{}",
            tool_result(&server, 7)
        );
    } else {
        // Nothing here confines commands: a command not known to be read-only does not run.
        assert!(
            tool_result(&server, 3).contains("nothing on this machine"),
            "{}",
            tool_result(&server, 3)
        );
        assert!(
            tool_result(&server, 7).contains("original"),
            "{}",
            tool_result(&server, 7)
        );
    }
    assert_eq!(server.requests().len(), 8);
}

/// The same commands outside plan mode do change files: the test above would see it.
#[tokio::test]
async fn outside_plan_mode_the_same_commands_write() {
    let env = Env::new();
    let work = env.work.path();
    std::fs::write(work.join("a.txt"), "original\n").unwrap();
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "echo pwned > b.txt"})),
        Reply::tool_call(
            "bash",
            json!({"command": "sed -i s/original/changed/ a.txt"}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "go"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(work.join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "changed\n"
    );
    // Without plan mode, submit_plan is not offered; write and edit are.
    let tools = offered(&server, 0);
    assert!(!tools.contains(&"submit_plan".to_string()), "{tools:?}");
    assert!(tools.contains(&"write".to_string()), "{tools:?}");
}

/// A plan-mode run that would end without a plan is reminded once, and the model that
/// complies is not forced (no `tool_choice` in any request).
#[tokio::test]
async fn a_plan_run_ending_without_a_plan_is_reminded_to_present_one() {
    let env = Env::new();
    let server = serve(vec![
        Reply::text("I think we should refactor."),
        Reply::tool_call("submit_plan", json!({"plan": "Refactor x."})),
    ])
    .await;
    let out = env
        .run(Some(&server), &["--start-mode", "plan", "-p", "plan"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Refactor x.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("have not presented a plan"),
        "{last}"
    );
    assert!(requests.iter().all(|r| r.body.get("tool_choice").is_none()));
}

/// The `nth` event of `kind` (from 1), whether it came before a response or comes later.
fn nth_event(rpc: &mut Rpc, kind: &str, nth: usize) -> serde_json::Value {
    loop {
        let seen: Vec<_> = rpc
            .seen
            .iter()
            .filter(|v| v["type"] == kind)
            .cloned()
            .collect();
        if let Some(event) = seen.get(nth - 1) {
            return event.clone();
        }
        rpc.event(kind);
    }
}

/// `--deadline` stops a run that would go on: the command is killed, its call answered, the
/// session saved, and the exit code is 124.
#[tokio::test]
async fn a_deadline_stops_the_run_kills_its_command_and_exits_124() {
    let env = Env::new();
    let pid_file = env.work.path().join("sleep.pid");
    let server = serve(vec![
        Reply::tool_call(
            "bash",
            json!({"command": "echo $$ > sleep.pid; exec sleep 60"}),
        ),
        Reply::text("never asked"),
    ])
    .await;
    let mut command = env.command(Some(&server), &["--deadline", "3s", "-p", "wait"]);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let pid = command_pid(&mut child, &pid_file).await;
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(stderr.contains("the run's deadline passed"), "{stderr}");
    // SAFETY: a signal 0 probe of a pid this test read.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "the command outlived the deadline");
    assert_eq!(server.requests().len(), 1);
    let session = std::fs::read_to_string(&env.sessions()[0]).unwrap();
    assert!(session.contains(r#""role":"tool_result""#), "{session}");
}

/// Over RPC: `set_mode` is an event and in `get_state`, the session keeps the mode across a
/// `--continue`, and a prompt's `deadline` bounds that run only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_sets_the_mode_and_bounds_a_prompt() {
    let env = Env::new();
    let server = serve(vec![
        Reply {
            fault: Some(Fault::Stall { after: 1 }),
            ..Reply::text("thinking about it for ever")
        },
        Reply::text("answered"),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    rpc.call(1, json!({"type": "set_mode", "mode": "plan"}));
    let event = nth_event(&mut rpc, "mode_change", 1);
    assert_eq!(event["mode"], "plan");
    let state = rpc.call(2, json!({"type": "get_state"}));
    assert_eq!(state["data"]["mode"], "plan", "{state}");
    let bad = rpc.call(3, json!({"type": "set_mode", "mode": "yolo"}));
    assert_eq!(bad["success"], false, "{bad}");
    rpc.call(
        4,
        json!({"type": "prompt", "message": "hi", "deadline": "1s"}),
    );
    let end = nth_event(&mut rpc, "agent_end", 1);
    assert_eq!(end["summary"]["stopped_by"], "deadline", "{end}");
    rpc.call(5, json!({"type": "set_mode", "mode": "auto-edit"}));
    assert_eq!(nth_event(&mut rpc, "mode_change", 2)["mode"], "auto-edit");
    rpc.finish();
    // The session remembers the mode it was left in.
    let out = env
        .run(
            Some(&server),
            &["--continue", "--mode", "json", "again"],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = std::fs::read_to_string(&env.sessions()[0]).unwrap();
    assert!(session.contains(r#""type":"mode_change","#), "{session}");
    let state_line = json_events(&out.stdout);
    assert!(
        !state_line
            .iter()
            .any(|e| e["type"] == "mode_change" && e["mode"] != "auto-edit"),
        "{state_line:?}"
    );
}
