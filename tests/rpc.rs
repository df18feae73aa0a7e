//! RPC mode over a real child process: every command of docs/rpc.md, and the queue after an
//! abort (steering runs next, follow-ups come back), as the TUI does it.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::time::Duration;

use common::rpc::Rpc;
use common::*;
use mock_llm::{Fault, Reply};
use serde_json::{Value, json};

/// The session recorder writes on its own thread, a moment after the events go out.
fn wait_exists(path: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::path::Path::new(path).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{path} was never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

// The test blocks on the child's output, so the server needs its own worker thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_over_a_child_process() {
    let env = Env::new();
    let server = serve(vec![
        Reply::text("First answer."),
        // The second run hangs until it is aborted.
        Reply::text("A long answer that never ends")
            .with_chunk_size(2)
            .with_fault(Fault::Stall { after: 3 }),
        // The steering queued during it starts the next run.
        Reply::text("Steered."),
        Reply::text("## Goal\nThe summary."),
        Reply::text("In the new session."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);

    // prompt, idle: a run.
    let r = rpc.call(1, json!({"type": "prompt", "message": "hello"}));
    assert_eq!(r["success"], true, "{r}");
    assert!(r.get("data").is_none());
    rpc.event("agent_end");

    // get_state.
    let state = rpc.call(2, json!({"type": "get_state"}))["data"].clone();
    assert_eq!(state["model"], "mock/a");
    assert_eq!(state["thinking"], "off");
    assert_eq!(state["busy"], false);
    assert_eq!(state["messages"], 2);
    assert_eq!(state["queue"], json!([]));
    let first_session = state["session"]["path"].as_str().unwrap().to_string();
    wait_exists(&first_session);

    // set_model and set_thinking are events too.
    assert_eq!(
        rpc.call(3, json!({"type": "set_model", "model": "mock/b"}))["success"],
        true
    );
    let change = rpc.event("model_change");
    assert_eq!(change["model"]["id"], "b");
    let bad = rpc.call(4, json!({"type": "set_model", "model": "nope/x"}));
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("unknown model `nope/x`")
    );
    assert_eq!(
        rpc.call(5, json!({"type": "set_thinking", "level": "high"}))["success"],
        true
    );
    assert_eq!(rpc.event("thinking_change")["level"], "high");

    // A run that hangs; prompt with streaming_behavior, steer and follow_up queue up.
    assert_eq!(
        rpc.call(6, json!({"type": "prompt", "message": "explain"}))["success"],
        true
    );
    rpc.wait_for("a text delta", |v| {
        v["type"] == "message_update" && v["event"]["type"] == "text_delta"
    });
    let busy = rpc.call(7, json!({"type": "prompt", "message": "again"}));
    assert_eq!(busy["success"], false);
    assert!(busy["error"].as_str().unwrap().contains("busy"));
    let queued = rpc.call(
        8,
        json!({"type": "prompt", "message": "use tabs", "streaming_behavior": "steer"}),
    );
    assert_eq!(queued["data"]["queued"]["kind"], "steer");
    let steer_id = queued["data"]["queued"]["id"].clone();
    let follow = rpc.call(9, json!({"type": "follow_up", "message": "then docs"}));
    assert_eq!(follow["data"]["queued"]["kind"], "follow_up");
    let steer2 = rpc.call(10, json!({"type": "steer", "message": "and spaces"}));
    assert_eq!(steer2["data"]["queued"]["kind"], "steer");
    let state = rpc.call(11, json!({"type": "get_state"}))["data"].clone();
    assert_eq!(state["busy"], true);
    let kinds: Vec<&str> = state["queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["steer", "steer", "follow_up"], "steering first");
    assert_eq!(state["queue"][0]["id"], steer_id);

    // abort: the follow-up comes back, the steering starts the next run.
    assert_eq!(rpc.call(12, json!({"type": "abort"}))["success"], true);
    let end = rpc.event("agent_end");
    assert_eq!(
        end["messages"].as_array().unwrap().last().unwrap()["stop_reason"],
        "aborted"
    );
    let returned = rpc.event("queue_returned");
    assert_eq!(
        returned["messages"][0]["message"]["content"][0]["text"],
        "then docs"
    );
    let delivered = rpc.event("queue_delivered");
    assert_eq!(delivered["ids"].as_array().unwrap().len(), 2);
    assert_eq!(delivered["ids"][0], steer_id);
    rpc.event("agent_end");
    let requests = server.requests();
    assert_eq!(requests[2].body["model"], "b", "set_model took effect");
    assert_eq!(last_user_text(&requests[2].body), "and spaces");

    // get_messages: hello, answer, explain, the aborted answer, two steers, the answer.
    let messages = rpc.call(13, json!({"type": "get_messages"}))["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 7, "{messages:#}");

    // compact.
    let r = rpc.call(
        14,
        json!({"type": "compact", "instructions": "keep the tabs decision"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let end = rpc.event("compaction_end");
    assert_eq!(end["outcome"]["status"], "compacted", "{end}");
    assert!(
        server.requests()[3]
            .body
            .to_string()
            .contains("keep the tabs decision"),
        "the instructions reach the summary request"
    );

    // new_session: announced as a history reset; the next run starts from nothing.
    let r = rpc.call(15, json!({"type": "new_session"}));
    let new_session = r["data"]["session"]["path"].as_str().unwrap().to_string();
    assert_ne!(new_session, first_session);
    let reset = rpc.event("history_reset");
    assert_eq!(reset["reason"], "new");
    assert_eq!(reset["messages"], json!([]));
    assert_eq!(reset["session"], new_session);
    rpc.call(16, json!({"type": "prompt", "message": "fresh"}));
    rpc.event("agent_end");
    let last = server.requests()[4].body.clone();
    assert_eq!(
        last["messages"].as_array().unwrap().len(),
        2,
        "system and the prompt only"
    );
    wait_exists(&new_session);

    // Malformed input gets an answer, never silence.
    let r = rpc.call(17, json!({"type": "frobnicate"}));
    assert_eq!(r["error"], "unknown command `frobnicate`");
    let r = rpc.call(18, json!({"type": "steer"}));
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid `steer` command"),
        "{r}"
    );
    rpc.send(json!("not an object"));
    rpc.send(Value::String("{".into()));
    rpc.finish();
}

// The seeds' example: three commands in one batch, a steer typed during the first. The first
// finishes, the other two never start, and the steer reaches the model right away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_skips_the_commands_of_the_batch_not_yet_started() {
    let env = Env::new();
    let dir = env.work.path();
    let flag = dir.join("release");
    let first = format!(
        "touch started-1; while [ ! -e {} ]; do sleep 0.05; done",
        flag.display()
    );
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": first}))
            .with_tool_call("bash", json!({"command": "touch ran-2; sleep 3"}))
            .with_tool_call("bash", json!({"command": "touch ran-3; sleep 3"})),
        Reply::text("Changed course."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    rpc.call(1, json!({"type": "prompt", "message": "three sleeps"}));
    let started = dir.join("started-1");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    rpc.call(2, json!({"type": "steer", "message": "stop sleeping"}));
    std::fs::write(&flag, "").unwrap();
    let end = rpc.event("agent_end");
    let outcomes: Vec<&str> = end["summary"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["ok", "skipped", "skipped"]);
    assert!(!dir.join("ran-2").exists() && !dir.join("ran-3").exists());
    let body = &server.requests()[1].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "user"
        ]
    );
    assert_eq!(last_user_text(body), "stop sleeping");
    assert_eq!(end["summary"]["repairs"], 0);
    rpc.finish();
}
