//! Subagents from the binary, with mock-llm scripting the parent and each child (a child's
//! replies are matched by its job): children run at once, their events reach JSON and RPC
//! with their id, an abort stops every child and its commands with every call answered in all
//! the sessions, steering reaches only the child it names, a child can do no more than its
//! parent, and the parent's session keeps only the answers.
//!
//! Unix only: the children's work is shell commands (see README, Windows).
#![cfg(unix)]

mod common;

use common::rpc::Rpc;
use common::*;
use mock_llm::Reply;
use serde_json::{Value, json};

/// A definition that may write and run commands (explore, the default, only reads).
const WORKER: &str = "---\nname: worker\ndescription: does a piece of work\ntools: read, write, bash\n---\nDo the job you are given, then report what you did.\n";

fn with_worker(env: &Env) {
    let dir = env.home.path().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("worker.md"), WORKER).unwrap();
}

fn task(job: &str, agent: Option<&str>) -> Value {
    let mut args =
        json!({"description": format!("do {job}"), "prompt": format!("Job {job}: do it.")});
    if let Some(agent) = agent {
        args["agent"] = json!(agent);
    }
    args
}

/// The parent's first reply: one task call per job.
fn fan_out(jobs: &[&str], agent: Option<&str>) -> Reply {
    let mut reply = Reply::default();
    for job in jobs {
        reply = reply.with_tool_call("task", task(job, agent));
    }
    reply
}

/// A child's reply, for the child whose job is `job`.
fn child(job: &str, reply: Reply) -> Reply {
    reply.for_request(format!("Job {job}:"))
}

/// The files of the children's sessions.
fn child_sessions(env: &Env) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for parent in env.sessions() {
        let dir = session::spill_dir(&parent).join("subagents");
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}

/// Every tool call of a session file has its result.
fn assert_paired(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let message = &entry["message"];
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_call" {
                calls.push(block["id"].as_str().unwrap().to_string());
            }
        }
        if message["role"] == "tool_result" {
            results.push(message["tool_call_id"].as_str().unwrap().to_string());
        }
    }
    calls.sort();
    results.sort();
    assert!(!calls.is_empty(), "{}: no calls", path.display());
    assert_eq!(calls, results, "{}", path.display());
}

/// Events of one subagent, unwrapped, from `--mode json` output.
fn child_events(events: &[Value], id: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "subagent" && e["subagent"]["id"] == id)
        .map(|e| e["event"].clone())
        .collect()
}

/// Two explore children work at once (each one's command starts before either ends), their
/// events carry their ids, and the parent gets each one's answer as its task call's result;
/// the parent's session holds the answers and none of the children's work, which is in files
/// of their own that `--continue` never picks.
#[tokio::test]
async fn two_children_run_at_once_and_the_parent_keeps_only_their_answers() {
    let env = Env::new();
    let server = serve(vec![
        fan_out(&["A", "B"], None),
        child(
            "A",
            Reply::tool_call("bash", json!({"command": "sleep 2; echo child-a-output"})),
        ),
        child(
            "B",
            Reply::tool_call("bash", json!({"command": "sleep 2; echo child-b-output"})),
        ),
        child("A", Reply::text("A found it in src/a.rs")),
        child("B", Reply::text("B found it in src/b.rs")),
        Reply::text("Both answered."),
    ])
    .await;
    let out = env.run(Some(&server), &["--mode", "json", "go"], "").await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events = json_events(&out.stdout);
    let ids: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e["type"] == "subagent")
        .map(|e| e["subagent"]["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        ["explore-1", "explore-2"]
    );
    // Both commands started before either ended: they ran at the same time.
    let order: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "subagent")
        .filter(|e| {
            let kind = e["event"]["type"].as_str().unwrap_or_default();
            (kind == "tool_execution_start" || kind == "tool_execution_end")
                && e["event"]["tool_name"] == "bash"
        })
        .map(|e| {
            (
                e["event"]["type"].as_str().unwrap().to_string(),
                e["subagent"]["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(
        order[..2]
            .iter()
            .all(|(kind, _)| kind == "tool_execution_start"),
        "{order:?}"
    );
    // The parent's second request has both answers as the task results.
    let requests = server.requests();
    let last = &requests.last().unwrap().body;
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        results,
        ["A found it in src/a.rs", "B found it in src/b.rs"]
    );
    // The child's events say what it ran; the parent's session has none of it.
    let a = child_events(&events, "explore-1");
    assert!(a.iter().any(|e| e["type"] == "tool_execution_start"));
    let parent = std::fs::read_to_string(&env.sessions()[0]).unwrap();
    assert!(parent.contains("A found it in src/a.rs"), "{parent}");
    assert!(
        !parent.contains("child-a-output"),
        "a child's work leaked into the parent"
    );
    assert!(!parent.contains(r#""type":"subagent""#), "{parent}");
    let children = child_sessions(&env);
    assert_eq!(children.len(), 2, "{children:?}");
    for file in &children {
        assert_paired(file);
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("-output"), "{text}");
    }
    // The parent's run summary counts the children's tokens.
    let end = events.iter().rfind(|e| e["type"] == "agent_end").unwrap();
    assert!(
        end["summary"]["subagent_usage"]["output"].as_u64().unwrap() > 0,
        "{end}"
    );
    // `--continue` goes on with the parent, never a child.
    assert_eq!(env.sessions().len(), 1);
}

/// Ctrl+C while two children run commands: every child and its command stops, and every
/// call is answered in all three sessions.
#[tokio::test]
async fn an_abort_stops_every_child_and_its_command_and_pairs_every_call() {
    let env = Env::new();
    with_worker(&env);
    let work = env.work.path().to_path_buf();
    let wait = |job: &str| json!({"command": format!("echo $$ > {job}.pid; exec sleep 60")});
    let server = serve(vec![
        fan_out(&["A", "B"], Some("worker")),
        child("A", Reply::tool_call("bash", wait("A"))),
        child("B", Reply::tool_call("bash", wait("B"))),
    ])
    .await;
    let mut command = env.command(Some(&server), &["-p", "go"]);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut agent = command.spawn().unwrap();
    let a = command_pid(&mut agent, &work.join("A.pid")).await;
    let b = command_pid(&mut agent, &work.join("B.pid")).await;
    // SAFETY: signals to the agent this test started.
    unsafe { libc::kill(agent.id() as i32, libc::SIGINT) };
    let out = tokio::task::spawn_blocking(move || agent.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    for pid in [a, b] {
        // SAFETY: a signal 0 probe of a pid this test read.
        assert!(
            unsafe { libc::kill(pid, 0) } != 0,
            "command {pid} outlived the abort"
        );
    }
    assert_paired(&env.sessions()[0]);
    let children = child_sessions(&env);
    assert_eq!(children.len(), 2, "{children:?}");
    for file in &children {
        assert_paired(file);
    }
}

/// Over RPC: steering one child reaches that child's next request only, and a child's
/// `subagent` events carry its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_one_child_reaches_only_its_next_request() {
    let env = Env::new();
    with_worker(&env);
    let hold = json!({"command": "while [ ! -e go ]; do sleep 0.05; done"});
    let server = serve(vec![
        fan_out(&["A", "B"], Some("worker")),
        child("A", Reply::tool_call("bash", hold.clone())),
        child("B", Reply::tool_call("bash", hold)),
        child("A", Reply::text("A done")),
        child("B", Reply::text("B done")),
        Reply::text("All done."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    rpc.call(1, json!({"type": "prompt", "message": "go"}));
    // Which id is A's: its first user message is its job.
    let mut running = std::collections::HashMap::new();
    while running.len() < 2 {
        let event = rpc.event("subagent");
        let inner = &event["event"];
        if inner["type"] == "tool_execution_start" {
            running.insert(event["subagent"]["id"].as_str().unwrap().to_string(), ());
        }
    }
    let a_id = rpc
        .seen
        .iter()
        .find(|e| {
            e["type"] == "subagent"
                && e["event"]["type"] == "message_end"
                && e["event"]["message"]["role"] == "user"
                && e["event"]["message"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Job A:"))
        })
        .map(|e| e["subagent"]["id"].as_str().unwrap().to_string())
        .expect("A's job was seen");
    let state = rpc.call(2, json!({"type": "get_state"}));
    assert_eq!(
        state["data"]["subagents"].as_array().unwrap().len(),
        2,
        "{state}"
    );
    let steered = rpc.call(
        3,
        json!({"type": "subagent_steer", "subagent": a_id, "message": "Also check the tests."}),
    );
    assert_eq!(steered["success"], true, "{steered}");
    let unknown = rpc.call(4, json!({"type": "subagent_abort", "subagent": "nobody-9"}));
    assert_eq!(unknown["success"], false, "{unknown}");
    std::fs::write(env.work.path().join("go"), "").unwrap();
    rpc.event("agent_end");
    // The tree lists the children under the reply that started them, with their files.
    let tree = rpc.call(5, json!({"type": "get_tree"}));
    let listed: Vec<Value> = tree["data"]["tree"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["subagents"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(listed.len(), 2, "{tree}");
    for child in &listed {
        let path = child["session"].as_str().unwrap();
        assert!(std::path::Path::new(path).exists(), "{path}");
    }
    rpc.finish();
    let requests = server.requests();
    let of = |job: &str| -> Vec<String> {
        requests
            .iter()
            .filter(|r| {
                r.body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["role"] == "user")
                    .is_some_and(|m| {
                        m["content"]
                            .as_str()
                            .unwrap_or_default()
                            .starts_with(&format!("Job {job}:"))
                    })
            })
            .map(|r| r.body.to_string())
            .collect()
    };
    let (a, b) = (of("A"), of("B"));
    assert_eq!((a.len(), b.len()), (2, 2));
    assert!(a[1].contains("Also check the tests."), "{}", a[1]);
    assert!(!b[1].contains("Also check the tests."), "{}", b[1]);
    assert!(!a[0].contains("Also check the tests."));
}

/// A child can do no more than its parent: under a read-only parent its write is refused
/// (nobody can approve in print mode) and its command cannot write; in plan mode it is not
/// even offered the write tool.
#[tokio::test]
async fn a_child_does_no_more_than_its_read_only_parent() {
    let env = Env::new();
    with_worker(&env);
    let work = env.work.path();
    let server = serve(vec![
        fan_out(&["A"], Some("worker")),
        child(
            "A",
            Reply::tool_call("write", json!({"path": "x.txt", "content": "pwned"})),
        ),
        child(
            "A",
            Reply::tool_call("bash", json!({"command": "echo pwned > y.txt"})),
        ),
        child("A", Reply::text("I could not write.")),
        Reply::text("The worker could not write."),
    ])
    .await;
    let out = env
        .run_confined(Some(&server), &["--sandbox", "read-only", "-p", "go"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !work.join("x.txt").exists(),
        "the child's write went through"
    );
    // Confined by the kernel where it can; elsewhere asked about, which print mode refuses.
    assert!(!work.join("y.txt").exists(), "the child's command wrote");
    let child_requests: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("Job A:"))
        .map(|r| r.body.clone())
        .collect();
    let refused = child_requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(refused.contains("the sandbox is read-only"), "{refused}");
    assert!(refused.contains("nobody can approve"), "{refused}");

    // In plan mode the child is not offered what writes.
    let server = serve(vec![
        fan_out(&["B"], Some("worker")),
        child("B", Reply::text("Looked only.")),
        Reply::tool_call("submit_plan", json!({"plan": "Nothing to change."})),
    ])
    .await;
    let out = env
        .run(Some(&server), &["--start-mode", "plan", "-p", "plan"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let child_tools = tool_names(&server.requests()[1].body);
    assert_eq!(child_tools, ["read", "bash"], "{child_tools:?}");
}

/// A child that may start children of its own is their ceiling: a read-only scout's
/// grandchild gets none of the writing tools its own definition lists.
#[tokio::test]
async fn a_grandchild_gets_no_more_than_its_parent_child() {
    let env = Env::new();
    with_worker(&env);
    std::fs::write(
        env.home.path().join("agents/scout.md"),
        "---\nname: scout\ndescription: looks\ntools: read, task\n---\nLook, and delegate.\n",
    )
    .unwrap();
    let server = serve(vec![
        fan_out(&["A"], Some("scout")),
        child("A", Reply::tool_call("task", task("G", Some("worker")))),
        child("G", Reply::text("grandchild looked")),
        child("A", Reply::text("scout done")),
        Reply::text("Done."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "go"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    let grandchild = requests
        .iter()
        .find(|r| r.body.to_string().contains("Job G:") && !r.body.to_string().contains("Job A:"))
        .expect("the grandchild asked");
    assert_eq!(
        tool_names(&grandchild.body),
        ["read"],
        "no write, no bash, no task"
    );
    let scout = requests
        .iter()
        .find(|r| {
            r.body["messages"][1]["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("Job A:"))
        })
        .expect("the scout asked");
    assert_eq!(tool_names(&scout.body), ["read", "task"]);
}
