//! The client over streamable HTTP against the test server in `--http` mode: a bearer token
//! from the environment and a configured header reach the server; without them it fails
//! with the server's refusal.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use agent_core::{ExtraTools, McpState, ToolContext};
use mcp::{Launch, McpManager, ServerConfig};
use serde_json::json;
use support::test_server;
use tokio_util::sync::CancellationToken;

/// The test server over streamable HTTP, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(token: &str) -> HttpServer {
    use std::io::BufRead;
    let mut child = std::process::Command::new(test_server())
        .args(["--http", "--expect-token", token])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    HttpServer { child, url }
}

#[tokio::test]
async fn a_streamable_http_server_with_a_bearer_token_and_headers() {
    // reqwest has no TLS provider of its own here (as in the binary's main).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let remote = http_server("s3cret");
    let var = "MCP_TEST_TOKEN_FOR_HTTP";
    // SAFETY: the only test of this binary, on a current-thread runtime: no other thread
    // reads the environment while it changes.
    unsafe { std::env::set_var(var, "s3cret") };
    let headers: BTreeMap<String, String> = [("X-Team".to_string(), "infra".to_string())].into();
    let good = ServerConfig {
        url: Some(remote.url.clone()),
        bearer_token_env: Some(var.into()),
        headers: headers.clone(),
        ..ServerConfig::default()
    };
    let no_token = ServerConfig {
        url: Some(remote.url.clone()),
        headers,
        ..ServerConfig::default()
    };
    let extra = ExtraTools::new();
    let manager = McpManager::new(
        [("remote".to_string(), good), ("anon".to_string(), no_token)].into(),
        Launch {
            cwd: std::env::temp_dir(),
            sandbox: None,
            hidden_env: Vec::new(),
        },
        200_000,
        mcp::DEFAULT_CONTEXT_SHARE,
        extra.clone(),
    );
    manager.start(|_| {});
    tokio::time::timeout(Duration::from_secs(60), manager.wait_ready())
        .await
        .expect("servers settle");
    let status = manager.status();
    let remote_state = status.servers.iter().find(|s| s.name == "remote").unwrap();
    assert_eq!(remote_state.state, McpState::Ready, "{remote_state:?}");
    let anon = status.servers.iter().find(|s| s.name == "anon").unwrap();
    assert_eq!(anon.state, McpState::Failed);
    assert!(
        anon.error.as_deref().unwrap().contains("401")
            || anon
                .error
                .as_deref()
                .unwrap()
                .to_lowercase()
                .contains("unauthorized"),
        "{anon:?}"
    );
    let add = extra
        .current()
        .iter()
        .find(|t| t.name() == "mcp__remote__add")
        .cloned()
        .expect("the remote server's tools");
    let out = add
        .execute(
            json!({"a": 2, "b": 40}),
            ToolContext::new("c1", CancellationToken::new(), |_| {}),
        )
        .await
        .unwrap();
    assert_eq!(out.plain_text(), "42");
}
