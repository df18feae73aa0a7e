//! Local servers end to end: with no key and no flags the binary finds an Ollama (mock-llm
//! emulating its discovery endpoints, named by CODING_AGENT_LOCAL_PROBES) and answers through
//! it with the window the server reported; a model without tools runs chat-only; `--base-url`
//! reads a llama.cpp server's `/props`; with nothing found, the headless modes exit 2 naming
//! what was probed.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

use mock_llm::{Emulation, LmStudioModel, MockServer, OllamaModel, Reply, Script};
use serde_json::json;

mod common;

use common::*;

async fn ollama(replies: Vec<Reply>, models: Vec<OllamaModel>) -> MockServer {
    let server = MockServer::start(Script { replies }).await.unwrap();
    server.emulate(Emulation::Ollama { models });
    server
}

/// The binary with no key and no model flag, probing only `server`.
fn probing(env: &Env, server: &MockServer, args: &[&str]) -> std::process::Command {
    let mut command = env.command(None, args);
    command.env("CODING_AGENT_LOCAL_PROBES", server.origin());
    command
}

async fn output(mut command: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn with_no_key_or_flag_a_running_ollama_answers_with_its_window() {
    let env = Env::new();
    let server = ollama(
        vec![Reply::text("Hello from Ollama."), Reply::text("Again.")],
        vec![
            OllamaModel::new("llama3.2:1b", 131_072),
            OllamaModel::new("qwen3:8b", 40_960).loaded(40_960),
        ],
    )
    .await;
    let out = output(probing(&env, &server, &["-p", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello from Ollama.\n");
    assert!(
        text(&out.stderr).contains("using ollama at"),
        "{}",
        text(&out.stderr)
    );
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["model"], "qwen3:8b", "the loaded model");
    assert!(request.header("authorization").is_none(), "no key is sent");

    let out = output(probing(&env, &server, &["--mode", "json", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    assert_eq!(events[0]["type"], "agent_start");
    assert_eq!(events[1]["type"], "model_change");
    assert_eq!(events[1]["model"]["context_window"], 40_960);
    assert_eq!(events[1]["model"]["provider"], "ollama");
    assert_eq!(events.last().unwrap()["type"], "agent_end");
}

#[tokio::test]
async fn a_model_that_cannot_call_tools_runs_chat_only_with_a_notice() {
    let env = Env::new();
    let server = ollama(
        vec![Reply::text("Just talking.")],
        vec![OllamaModel::new("gemma:2b", 8_192).without_tools()],
    )
    .await;
    let out = output(probing(&env, &server, &["-p", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("chat-only"),
        "{}",
        text(&out.stderr)
    );
    // Neither loaded nor num_ctx: Ollama's default window, and how to raise it.
    assert!(
        text(&out.stderr).contains("OLLAMA_CONTEXT_LENGTH"),
        "{}",
        text(&out.stderr)
    );
    let body = &server.requests()[0].body;
    assert!(body.get("tools").is_none(), "no tools sent: {body}");
}

#[tokio::test]
async fn a_key_means_no_probing_and_nothing_found_names_what_was_probed() {
    let env = Env::new();
    let server = ollama(vec![], vec![OllamaModel::new("qwen3:8b", 40_960)]).await;
    // Every request stays on this machine: openai's endpoint is the mock too.
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[retry]\nmax_retries = 0\n[providers.openai]\nbase_url = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    // With a key the named-by-default model is used: Ollama is never asked.
    let mut command = probing(&env, &server, &["--list-models"]);
    command.env("OPENAI_API_KEY", "sk-test");
    let out = output(command).await;
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("ollama/qwen3:8b"),
        "--list-models is live"
    );
    let before = server.discovery_requests().len();
    let mut command = probing(&env, &server, &["-p", "hi"]);
    command.env("OPENAI_API_KEY", "sk-test");
    let _ = output(command).await;
    assert_eq!(
        server.requests()[0].path,
        "/v1/responses",
        "the key's provider was used"
    );
    assert_eq!(
        server.discovery_requests().len(),
        before,
        "no probe with a key"
    );

    // Nothing answers: exit 2, and the message names the servers looked for.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let mut command = env.command(None, &["-p", "hi"]);
    command.env("CODING_AGENT_LOCAL_PROBES", &closed);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no API key found"));
    assert!(
        text(&out.stderr).contains(&format!("No local server answered at {closed}")),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn base_url_reads_a_llama_cpp_window_and_tool_call_messages_carry_empty_content() {
    let env = Env::new();
    std::fs::write(env.work.path().join("a.txt"), "alpha\n").unwrap();
    let server = MockServer::start(Script {
        replies: vec![
            Reply::tool_call("read", json!({"path": "a.txt"})),
            Reply::text("It says alpha."),
        ],
    })
    .await
    .unwrap();
    server.emulate(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    });
    let out = output(env.command(
        None,
        &[
            "--mode",
            "json",
            "--base-url",
            &server.url(),
            "--model",
            "smollm2",
            "read a.txt",
        ],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    assert_eq!(events[1]["model"]["context_window"], 2_048, "from /props");
    let second = &server.requests()[1].body;
    let assistant = &second["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"], "",
        "\"\" for a tool-call-only message, never null"
    );
    assert!(assistant["tool_calls"].is_array());

    // Errors name the URL, not `custom` (no retries: the port stays closed).
    std::fs::write(
        env.home.path().join("config.toml"),
        "[retry]\nmax_retries = 0\n",
    )
    .unwrap();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", l.local_addr().unwrap())
    };
    let out = output(env.command(None, &["-p", "x", "--base-url", &dead, "--model", "m"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(&dead), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("custom"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "no empty line for a run that failed before any text"
    );
}

#[tokio::test]
async fn lm_studio_is_found_and_answers_with_the_loaded_model_and_its_window() {
    let env = Env::new();
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Hello from LM Studio.")],
    })
    .await
    .unwrap();
    server.emulate(Emulation::LmStudio {
        models: vec![
            LmStudioModel::new("qwen2.5-coder-14b-instruct", 32_768),
            LmStudioModel::new("qwen3-8b", 40_960).loaded(8_192),
        ],
    });
    let out = output(probing(&env, &server, &["--mode", "json", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    assert_eq!(events[1]["model"]["id"], "qwen3-8b", "the loaded model");
    assert_eq!(events[1]["model"]["provider"], "lmstudio");
    assert_eq!(
        events[1]["model"]["context_window"], 8_192,
        "the window it was loaded with"
    );
    let request = &server.requests()[0];
    assert_eq!(request.body["model"], "qwen3-8b");
    assert!(request.body["tools"].is_array(), "it can call tools");
}

#[tokio::test]
async fn an_lm_studio_model_not_trained_for_tools_is_still_offered_them() {
    let env = Env::new();
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Reading it.")],
    })
    .await
    .unwrap();
    server.emulate(Emulation::LmStudio {
        models: vec![
            LmStudioModel::new("gemma-3-4b-it", 131_072)
                .loaded(4_096)
                .without_tools(),
        ],
    });
    let out = output(probing(&env, &server, &["-p", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Reading it.\n");
    // LM Studio gives any model tools through its default tool-use format: no chat-only.
    assert!(
        !text(&out.stderr).contains("chat-only"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.requests()[0].body["tools"].is_array());
}

#[tokio::test]
async fn vllm_is_found_with_its_window_and_without_tool_calling_falls_back_to_chat() {
    let env = Env::new();
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Just chatting.")],
    })
    .await
    .unwrap();
    server.emulate(Emulation::Vllm {
        model: "Qwen/Qwen2.5-Coder-7B-Instruct".into(),
        max_model_len: 16_384,
        tools: false,
    });
    let out = output(probing(&env, &server, &["--mode", "json", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    assert_eq!(events[1]["model"]["id"], "Qwen/Qwen2.5-Coder-7B-Instruct");
    assert_eq!(events[1]["model"]["provider"], "vllm");
    assert_eq!(
        events[1]["model"]["context_window"], 16_384,
        "max_model_len"
    );
    // vLLM started without --enable-auto-tool-choice refuses the tools with a 400: the
    // request goes again without them, once.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[0].body["tools"].is_array());
    assert!(requests[1].body.get("tools").is_none());
    let notice = events
        .iter()
        .find(|e| e.to_string().contains("chat-only mode"))
        .unwrap_or_else(|| panic!("no chat-only notice: {events:?}"));
    assert!(
        notice.to_string().contains("enable-auto-tool-choice"),
        "{notice}"
    );
}

#[tokio::test]
async fn a_server_that_rejects_tools_gets_the_request_again_without_them() {
    let env = Env::new();
    let server = serve(vec![
        Reply::status(
            400,
            r#"{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools"}}"#,
        ),
        Reply::text("Just chatting."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "hi"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Just chatting.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one retry, not three");
    assert!(requests[0].body["tools"].is_array());
    assert!(
        requests[1].body.get("tools").is_none(),
        "{}",
        requests[1].body
    );
}

#[tokio::test]
async fn a_500_that_says_the_request_is_malformed_is_not_retried() {
    let env = Env::new();
    // llama-cpp-python's answer to `"content": null`, with a traceback after it.
    let body = format!(
        "{{\"detail\":[{{\"loc\":[\"body\",\"messages\",2,\"content\"],\"msg\":\"none is not an allowed value\"}}],\"trace\":\"{}\"}}",
        "Traceback line\\n".repeat(50)
    );
    let server = serve(vec![Reply::status(500, body), Reply::text("never sent")]).await;
    let out = env.run(Some(&server), &["-p", "hi"], "").await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        server.requests().len(),
        1,
        "no retry of a request the server cannot take"
    );
    assert!(
        !text(&out.stderr).contains("gave up after"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

/// `--base-url` without `--model` against a server that cannot list its models (mock-llm
/// without an emulation, like many proxies): the error says what to add (issue 46).
#[tokio::test]
async fn base_url_without_a_model_list_says_to_name_the_model() {
    let env = Env::new();
    let server = MockServer::start(Script::default()).await.unwrap();
    let url = server.url();
    let out = output(env.command(None, &["--base-url", &url, "-p", "hi"])).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("add --model NAME"), "{stderr}");
    assert!(stderr.contains("/models"), "{stderr}");
}

/// A server that says nothing of its window (llama-cpp-python): the window is assumed, and a
/// notice says so and how to give the real one (issue 46).
#[tokio::test]
async fn an_assumed_window_is_said_to_be_one() {
    let env = Env::new();
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Hi."), Reply::text("Hi again.")],
    })
    .await
    .unwrap();
    server.emulate(Emulation::ModelsOnly {
        model: "smollm2".into(),
    });
    let out = output(env.command(None, &["--base-url", &server.url(), "-p", "hi"])).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("did not say smollm2's context window: 8192 tokens is assumed")
            && stderr.contains("--context-window"),
        "{stderr}"
    );
    // A window given is not questioned.
    let out = output(env.command(
        None,
        &[
            "--base-url",
            &server.url(),
            "--context-window",
            "4096",
            "-p",
            "hi",
        ],
    ))
    .await;
    assert!(
        !text(&out.stderr).contains("is assumed"),
        "{}",
        text(&out.stderr)
    );
}

/// A session started on a local server resumes on that server (its URL is in the session),
/// even with a hosted provider's key set; while the server is down, `--continue` names it and
/// says what to do instead of "no API key found".
#[tokio::test]
async fn a_session_on_a_local_server_continues_on_it_and_says_so_when_it_is_down() {
    let env = Env::new();
    let first = MockServer::start(Script {
        replies: vec![Reply::text("Started here.")],
    })
    .await
    .unwrap();
    first.emulate(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    });
    let url = first.url();
    let port = first.addr().port();
    let out = output(env.command(None, &["--base-url", &url, "-p", "hi"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    drop(first);

    // Down: the message names the server and the way on, and the request fails with the
    // connection's error, not "no API key".
    let out = output(env.command(None, &["--continue", "-p", "again"])).await;
    assert!(!out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains(&format!(
            "This session ran on llama.cpp at {url} (model smollm2), which does not answer"
        )),
        "{said}"
    );
    assert!(said.contains("--base-url URL --model NAME"), "{said}");
    assert!(!said.contains("no API key"), "{said}");

    // Up again (a slow start is waited for, not taken for absence): it goes on there, though
    // a hosted provider's key is set.
    let again = MockServer::start_on(
        Script {
            replies: vec![Reply::text("Continued here.")],
        },
        port,
    )
    .await
    .unwrap();
    again.emulate(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    });
    let mut command = env.command(None, &["--continue", "-p", "again"]);
    command.env("OPENAI_API_KEY", "sk-not-to-be-used-here");
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Continued here.\n");
    let request = &again.requests()[0];
    assert_eq!(request.body["model"], "smollm2");
    assert!(request.header("authorization").is_none());
    // The whole conversation went along.
    assert!(request.body.to_string().contains("Started here."));
}
