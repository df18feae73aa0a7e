//! The binary end to end against mock-llm: print, json and rpc modes, piped stdin, sessions,
//! config errors and a missing key. Every run points CODING_AGENT_HOME at a temporary dir.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use mock_llm::Reply;
use serde_json::json;

mod common;

use common::rpc::Rpc;
use common::*;

#[tokio::test]
async fn print_mode_prints_the_final_answer_after_a_tool_round_trip() {
    let env = Env::new();
    std::fs::write(env.work.path().join("hello.txt"), "from the file\n").unwrap();
    let server = serve(vec![
        Reply::tool_call("read", json!({"path": "hello.txt"})).with_text("Reading it."),
        Reply::text("The file says hello."),
    ])
    .await;
    let out = env
        .run(Some(&server), &["-p", "what is in hello.txt?"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "The file says hello.\n",
        "only the final answer"
    );
    assert!(text(&out.stderr).contains("[read]"));
    let second = &server.requests()[1].body;
    assert_eq!(roles(second), ["system", "user", "assistant", "tool"]);
    assert!(
        second["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("You are coding-agent")
    );
    assert_eq!(second["messages"][3]["content"], "     1\tfrom the file\n");
    let tools: Vec<&str> = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "find",
            "ls",
            "fetch",
            "update_plan",
            "task"
        ]
    );
    assert_eq!(env.sessions().len(), 1, "the session was saved");
}

#[tokio::test]
async fn piped_stdin_is_appended_to_the_prompt() {
    let env = Env::new();
    let server = serve(vec![Reply::text("Looks fine.")]).await;
    let out = env
        .run(
            Some(&server),
            &["-p", "review this diff", "--tools", ""],
            "+ added line\n",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][1]["content"],
        "review this diff\n\n+ added line"
    );
    assert!(body.get("tools").is_none(), "--tools '' runs without tools");
}

#[tokio::test]
async fn provider_errors_exit_1_with_a_readable_message() {
    let env = Env::new();
    let server = serve(vec![Reply::status(
        401,
        r#"{"error":{"message":"invalid API key"}}"#,
    )])
    .await;
    let out = env.run(Some(&server), &["-p", "hello"], "").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("401 Unauthorized: invalid API key"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn json_mode_streams_every_event_as_a_line() {
    let env = Env::new();
    let server = serve(vec![
        Reply::tool_call("ls", json!({})),
        Reply::text("Two files."),
    ])
    .await;
    let out = env
        .run(Some(&server), &["--mode", "json", "list files"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    assert!(kinds.contains(&"tool_execution_start") && kinds.contains(&"tool_execution_end"));
    assert_eq!(kinds.iter().filter(|k| **k == "turn_start").count(), 2);
}

// The test blocks on the child's output, so the server needs its own worker thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_mode_takes_commands_steers_and_aborts() {
    let env = Env::new();
    let flag = env.work.path().join("flag");
    let wait = format!(
        "while [ ! -e {} ]; do sleep 0.05; done; echo ok",
        flag.display()
    );
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": wait})),
        Reply::text("Steered answer."),
        Reply::text("A long answer that never ends")
            .with_chunk_size(2)
            .with_fault(mock_llm::Fault::Stall { after: 3 }),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.command(Some(&server), &["--mode", "rpc"]));
    assert_eq!(
        rpc.call(1, json!({"type": "prompt", "message": "start"}))["success"],
        true
    );
    rpc.event("tool_execution_start");
    assert_eq!(
        rpc.call(2, json!({"type": "steer", "message": "use tabs"}))["success"],
        true
    );
    std::fs::write(&flag, "").unwrap();
    rpc.event("agent_end");
    let state = rpc.call(3, json!({"type": "get_state"}));
    assert_eq!(state["data"]["busy"], false);
    assert_eq!(state["data"]["model"], "custom/mock-model");

    rpc.send(json!({"id": 4, "type": "prompt", "message": "explain"}));
    rpc.wait_for("a text delta", |v| {
        v["type"] == "message_update" && v["event"]["type"] == "text_delta"
    });
    rpc.send(json!({"id": 5, "type": "abort"}));
    let end = rpc.event("agent_end");
    let last = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["stop_reason"], "aborted");
    let bad = rpc.call(6, json!({"type": "frobnicate"}));
    assert_eq!(bad["success"], false);
    assert_eq!(bad["error"], "unknown command `frobnicate`");
    let messages = rpc.call(7, json!({"type": "get_messages"}));
    // start, call, result, steer, answer; explain, the aborted answer.
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 7);
    rpc.finish();

    let requests = server.requests();
    assert_eq!(
        roles(&requests[1].body),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert_eq!(requests[1].body["messages"][4]["content"], "use tabs");
}

#[tokio::test]
async fn continue_resumes_the_latest_session_with_its_history() {
    let env = Env::new();
    let server = serve(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "first question"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = env
        .run(Some(&server), &["-p", "second question", "--continue"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = &server.requests()[1].body;
    assert_eq!(roles(body), ["system", "user", "assistant", "user"]);
    assert_eq!(body["messages"][2]["content"], "First answer.");
    assert_eq!(env.sessions().len(), 1, "continued in the same file");
    let out = env
        .run(
            Some(&server),
            &["-p", "third", "--no-session", "--continue"],
            "",
        )
        .await;
    assert!(!text(&out.stderr).contains("panicked"));
}

#[tokio::test]
async fn config_errors_name_the_file_line_and_key() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "model = \"x\"\n[queue]\nsteer = \"all\"\n",
    )
    .unwrap();
    let out = env.run(None, &["-p", "hi"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config.toml:3:1: unknown field `steer`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_repository_cannot_redirect_provider_keys() {
    let env = Env::new();
    std::fs::create_dir_all(env.work.path().join(".coding-agent")).unwrap();
    let evil = "[providers.anthropic]\nbase_url = \"http://127.0.0.1:9/steal\"\n";
    std::fs::write(env.work.path().join(".coding-agent/config.toml"), evil).unwrap();
    // Even a trusted repository.
    let out = env.run(None, &["--trust", "-p", "hi"], "").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("[providers] may only be set in the home config.toml"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_first_run_without_any_key_explains_what_to_set() {
    let env = Env::new();
    let out = env.run(None, &["-p", "hi"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no API key found") && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
    assert!(stderr.contains("[providers.local]"), "{stderr}");
    // The config file this run reads, not a default it does not (issue 46).
    let config = env.home.path().join("config.toml");
    assert!(
        stderr.contains(&format!("add it to {} once", config.display())),
        "{stderr}"
    );
    let out = env
        .run(
            None,
            &["-p", "hi", "--model", "anthropic/claude-sonnet-4-5"],
            "",
        )
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("set ANTHROPIC_API_KEY"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_configured_local_provider_needs_no_key() {
    let env = Env::new();
    let server = serve(vec![Reply::text("Local hello.")]).await;
    let config = format!(
        "model = \"mybox/qwen\"\n[providers.mybox]\napi = \"openai-completions\"\nbase_url = \"{}\"\nmodels = [{{ id = \"qwen\", context_window = 32768 }}]\n",
        server.url()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    let out = env.run(None, &["-p", "hi"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Local hello.\n");
    assert_eq!(server.requests()[0].body["model"], "qwen");
}

#[tokio::test]
async fn list_models_and_usage_errors() {
    let env = Env::new();
    let out = env.run(None, &["--list-models"], "").await;
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("anthropic/claude-sonnet-4-5"));
    let out = env.run(None, &["--mode", "json"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let out = env.run(None, &["--thinking", "extreme"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let out = env
        .run(
            None,
            &[
                "--tools",
                "read,telepathy",
                "-p",
                "x",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
            ],
            "",
        )
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown tool `telepathy`"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn ctrl_c_in_print_mode_kills_the_command_and_saves_the_session() {
    let env = Env::new();
    let pid_file = env.work.path().join("pid");
    let command = format!("echo $$ > {}; sleep 30", pid_file.display());
    let server = serve(vec![Reply::tool_call("bash", json!({"command": command}))]).await;
    let mut child = env
        .command(Some(&server), &["-p", "sleep"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = command_pid(&mut child, &pid_file).await;
    // SAFETY: a plain signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        !tools::group_alive(pgid as u32),
        "the command outlived the interrupt"
    );
    let sessions = env.sessions();
    assert_eq!(sessions.len(), 1);
    let saved = std::fs::read_to_string(&sessions[0]).unwrap();
    assert!(
        saved.contains("\"role\":\"tool_result\""),
        "the aborted call's result was saved: {saved}"
    );
}

/// Runs `-p` with `OPENAI_API_KEY` set; the scripted model runs `env` through bash. Returns
/// what the model got back from the command.
async fn env_seen_by_bash(env: &Env) -> String {
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "env"})),
        Reply::text("Done."),
    ])
    .await;
    let mut command = env.command(Some(&server), &["-p", "show the environment"]);
    command
        .env("OPENAI_API_KEY", "sk-cli-secret")
        .env("VISIBLE_SETTING", "shown");
    let out = tokio::task::spawn_blocking(move || command.stdin(Stdio::null()).output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = &server.requests()[1].body;
    second["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn bash_commands_do_not_see_provider_keys_unless_the_home_config_allows() {
    let env = Env::new();
    let seen = env_seen_by_bash(&env).await;
    assert!(seen.contains("VISIBLE_SETTING=shown"), "{seen}");
    assert!(!seen.contains("sk-cli-secret"), "{seen}");

    // A repository cannot turn it on.
    std::fs::create_dir_all(env.work.path().join(".coding-agent")).unwrap();
    let repo_config = env.work.path().join(".coding-agent/config.toml");
    std::fs::write(&repo_config, "[tools.bash]\ninherit_keys = true\n").unwrap();
    let out = env.run(None, &["--trust", "-p", "hi"], "").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("inherit_keys may only be turned on in the home config.toml"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_file(&repo_config).unwrap();

    std::fs::write(
        env.home.path().join("config.toml"),
        "[tools.bash]\ninherit_keys = true\n",
    )
    .unwrap();
    let seen = env_seen_by_bash(&env).await;
    // The command has the key; its value never comes back out of the tool.
    assert!(seen.contains("OPENAI_API_KEY=[redacted]"), "{seen}");
    assert!(!seen.contains("sk-cli-secret"), "{seen}");
}

#[tokio::test]
async fn a_second_ctrl_c_leaves_at_once_and_the_watchdog_ends_the_command() {
    let env = Env::new();
    let pid_file = env.work.path().join("pid");
    // A command that ignores the polite SIGTERM: stopping it cleanly takes the kill grace.
    let command = format!(
        "trap '' TERM; echo $$ > {}; sleep 30; sleep 1",
        pid_file.display()
    );
    let server = serve(vec![Reply::tool_call("bash", json!({"command": command}))]).await;
    let mut child = env
        .command(Some(&server), &["-p", "sleep"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = command_pid(&mut child, &pid_file).await;
    let (lines, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // SAFETY: plain signals to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // The second one once the first is being handled (signals sent together may merge).
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("stopping")) {
        seen.push(
            rx.recv_timeout(Duration::from_secs(20))
                .expect("the agent says it stops"),
        );
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    seen.extend(rx.try_iter());
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        seen.push(line);
    }
    let stderr = seen.join("\n");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped at once"), "{stderr}");
    // The agent is gone; its watchdog takes the command group with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tools::group_alive(pgid as u32) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command outlived the agent"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn only_the_chosen_tools_are_offered_and_described() {
    let env = Env::new();
    let server = serve(vec![Reply::text("ok")]).await;
    let out = env
        .run(Some(&server), &["--tools", "read,grep", "-p", "hi"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = &server.requests()[0].body;
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read", "grep"]);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- read: ") && system.contains("- grep: "),
        "{system}"
    );
    for absent in ["- write:", "- edit:", "- bash:", "- find:", "- ls:"] {
        assert!(!system.contains(absent), "{absent} described: {system}");
    }
    let out = env
        .run(Some(&server), &["--tools", "read,rm", "-p", "hi"], "")
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown tool `rm`; the tools are read, write, edit"));
}

/// A plain-HTTP run never loads the system's trust roots: startup pays only for what it uses
/// (loading them read ~150 files on Linux before the first request). `SSL_CERT_FILE` names a
/// FIFO, which a root loader would open; a writer on the other end learns whether anyone did.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_plain_http_run_never_loads_the_trust_roots() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let env = Env::new();
    let fifo = env.home.path().join("roots.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let finished = Arc::new(AtomicBool::new(false));
    let opened_during_the_run = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (fifo, finished, opened) = (
            fifo.clone(),
            finished.clone(),
            opened_during_the_run.clone(),
        );
        std::thread::spawn(move || {
            // Blocks until a reader opens the FIFO: the agent's root loader, or this test.
            let _writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            opened.store(!finished.load(Ordering::SeqCst), Ordering::SeqCst);
        })
    };
    let server = serve(vec![Reply::text("Hello.")]).await;
    let mut command = env.command(Some(&server), &["-p", "hi"]);
    command
        .env("SSL_CERT_FILE", &fifo)
        .env_remove("SSL_CERT_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    // A loader waiting on the FIFO would hold the run forever: a deadline turns that into a
    // failure.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = child.wait_with_output().unwrap();
    finished.store(true, Ordering::SeqCst);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello.\n");
    // Lets the watcher go: this open is the test's own.
    drop(std::fs::File::open(&fifo).unwrap());
    watcher.join().unwrap();
    assert!(
        !opened_during_the_run.load(Ordering::SeqCst),
        "the run opened the trust roots ($SSL_CERT_FILE) for a plain-HTTP server"
    );
}

#[tokio::test]
async fn search_turns_on_the_providers_search_and_the_session_keeps_what_it_found() {
    let env = Env::new();
    let fixture = include_str!("../crates/llm/tests/fixtures/anthropic_web_search.sse");
    let server = serve(vec![Reply::raw_sse(fixture), Reply::text("Noted.")]).await;
    let url = server.url();
    let base = [
        "--base-url",
        url.as_str(),
        "--model",
        "claude-haiku-4-5",
        "--api",
        "anthropic-messages",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--search",
        "--mode",
        "json",
        "what changed in ratatui 0.30?",
    ]);
    let out = env.run(None, &args, "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools = server.requests()[0].body["tools"].clone();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "web_search_20250305"),
        "{tools}"
    );
    // JSON mode shows the search as it comes; the session keeps it.
    let events = json_events(&out.stdout);
    assert!(
        events.iter().any(|e| e["type"] == "message_update"
            && e["event"]["type"] == "web_search"
            && e["event"]["search"]["query"] == "ratatui 0.30 release notes"),
        "{events:?}"
    );
    let session = std::fs::read_to_string(&env.sessions()[0]).unwrap();
    assert!(session.contains("\"type\":\"web_search\""), "{session}");
    assert!(session.contains("https://ratatui.rs/highlights/v030/"));

    // Resumed without --search: no search tool, and the search is not sent back.
    let mut args = base.to_vec();
    args.extend(["--continue", "-p", "and then?"]);
    let out = env.run(None, &args, "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = server.requests()[1].body.to_string();
    assert!(!body.contains("web_search"), "{body}");
    assert!(
        body.contains("0.30 splits the crate"),
        "the answer's text is"
    );

    // A wire API without a search tool of its own says so instead of pretending.
    let mut args = vec!["--search", "-p", "hi", "--tools", ""];
    args.extend(["--base-url", url.as_str(), "--model", "mock-model"]);
    let out = env.run(None, &args, "").await;
    assert!(
        text(&out.stderr).contains("has no search tool of its own"),
        "{}",
        text(&out.stderr)
    );
}
