//! The binary end to end: `coding-agent -p` against mock-llm over HTTP.

use std::process::Command;

use mock_llm::{MockServer, Reply, Script};

/// Runs the binary off the async runtime, so the in-process server keeps serving.
async fn run(server: &MockServer, prompt: &str) -> std::process::Output {
    let (url, prompt) = (server.url(), prompt.to_string());
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_coding-agent"))
            .args(["-p", &prompt, "--base-url", &url, "--model", "mock-model"])
            .env_remove("OPENAI_API_KEY")
            .env_remove("CODING_AGENT_BASE_URL")
            .env_remove("CODING_AGENT_MODEL")
            .output()
            .expect("binary runs")
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn print_mode_streams_the_answer_to_stdout() {
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Hi there!").with_chunk_size(2)],
    })
    .await
    .unwrap();
    let output = run(&server, "hello").await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Hi there!\n");
    let request = &server.requests()[0];
    assert_eq!(request.body["model"], "mock-model");
    assert_eq!(
        request.body["messages"][0],
        serde_json::json!({"role": "user", "content": "hello"})
    );
    assert!(
        request.header("authorization").is_none(),
        "no key, no header"
    );
}

#[tokio::test]
async fn provider_errors_exit_non_zero_with_a_readable_message() {
    let server = MockServer::start(Script {
        replies: vec![Reply::status(
            401,
            r#"{"error":{"message":"invalid API key"}}"#,
        )],
    })
    .await
    .unwrap();
    let output = run(&server, "hello").await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("401 Unauthorized: invalid API key"),
        "{stderr}"
    );
}

#[tokio::test]
async fn print_mode_runs_tools_in_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "from the file\n").unwrap();
    let server = MockServer::start(Script {
        replies: vec![
            Reply::tool_call("read", serde_json::json!({"path": "hello.txt"})),
            Reply::text("The file says hello."),
        ],
    })
    .await
    .unwrap();
    let url = server.url();
    let cwd = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_coding-agent"))
            .args([
                "-p",
                "what is in hello.txt?",
                "--base-url",
                &url,
                "--model",
                "m",
            ])
            .current_dir(cwd)
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "The file says hello.\n"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("[read]"));
    let second = &server.requests()[1].body;
    assert_eq!(second["messages"][2]["role"], "tool");
    assert_eq!(second["messages"][2]["content"], "     1\tfrom the file\n");
    let tools: Vec<&str> = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["read", "write", "edit", "bash", "grep", "find", "ls"]
    );
}
