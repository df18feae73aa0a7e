//! The manager against the real test server (crates/mcp-test-server) over stdio: background
//! start, tools callable, errors as results, a hung call cancelled with the protocol's
//! notification, a crash and a slow start reported, restart, and the search tool over budget.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{Concurrency, ExtraTools, McpState, McpStatus, Tool, ToolContext};
use mcp::{Launch, McpManager, ServerConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod support;
use support::test_server;

fn server(args: &[&str]) -> ServerConfig {
    ServerConfig {
        command: Some(test_server().display().to_string()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..ServerConfig::default()
    }
}

struct Fixture {
    manager: McpManager,
    extra: ExtraTools,
    statuses: Arc<Mutex<Vec<McpStatus>>>,
    _dir: tempfile::TempDir,
}

fn start(servers: Vec<(&str, ServerConfig)>, window: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let extra = ExtraTools::new();
    let configs: BTreeMap<String, ServerConfig> = servers
        .into_iter()
        .map(|(n, c)| (n.to_string(), c))
        .collect();
    let manager = McpManager::new(
        configs,
        Launch {
            cwd: dir.path().to_path_buf(),
            sandbox: None,
            hidden_env: vec!["SECRET_KEY".into()],
        },
        window,
        mcp::DEFAULT_CONTEXT_SHARE,
        extra.clone(),
    );
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let sink = statuses.clone();
    manager.start(move |s| sink.lock().unwrap().push(s));
    Fixture {
        manager,
        extra,
        statuses,
        _dir: dir,
    }
}

async fn ready(f: &Fixture) {
    tokio::time::timeout(Duration::from_secs(60), f.manager.wait_ready())
        .await
        .expect("servers settle");
}

fn tool(f: &Fixture, name: &str) -> Arc<dyn Tool> {
    f.extra
        .current()
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn ctx(cancel: CancellationToken) -> ToolContext {
    ToolContext::new("call-1", cancel, |_| {})
}

async fn wait_for_file(path: &std::path::Path) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} never appeared", path.display()));
}

#[tokio::test]
async fn tools_arrive_named_by_server_and_answer() {
    let f = start(vec![("t", server(&[]))], 200_000);
    // Nothing waited for the server: right after start it is still starting.
    assert_eq!(f.manager.status().servers[0].state, McpState::Starting);
    ready(&f).await;
    let status = f.manager.status();
    assert_eq!(status.counts(), (1, 1));
    assert!(!status.search_mode);
    assert!(status.servers[0].tokens > 0);
    let names: Vec<String> = f
        .extra
        .current()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(names.contains(&"mcp__t__echo".to_string()), "{names:?}");

    let echo = tool(&f, "mcp__t__echo");
    assert_eq!(echo.concurrency(), Concurrency::Shared, "readOnlyHint");
    assert_eq!(
        tool(&f, "mcp__t__add").concurrency(),
        Concurrency::Exclusive
    );
    let out = echo
        .execute(json!({"text": "hi"}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.plain_text(), "echo: hi");
    assert_eq!(out.details, Some(json!({"structured": {"echoed": "hi"}})));

    let failed = tool(&f, "mcp__t__fail")
        .execute(json!({}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.plain_text(), "it failed on purpose");

    let image = tool(&f, "mcp__t__image")
        .execute(json!({}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(image.content.len(), 2);
}

#[tokio::test]
async fn a_cancelled_call_tells_the_server() {
    let marker = tempfile::tempdir().unwrap();
    let dir = marker.path().display().to_string();
    let f = start(vec![("t", server(&["--marker", &dir]))], 200_000);
    ready(&f).await;
    let hang = tool(&f, "mcp__t__hang");
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let cancel = cancel.clone();
        async move { hang.execute(json!({}), ctx(cancel)).await }
    });
    wait_for_file(&marker.path().join("hanging")).await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call returns at once")
        .unwrap();
    assert!(result.unwrap_err().0.contains("cancelled"));
    wait_for_file(&marker.path().join("cancel-notification")).await;
}

#[tokio::test]
async fn a_tool_timeout_ends_the_call() {
    let mut config = server(&[]);
    config.tool_timeout_secs = Some(0.3);
    let f = start(vec![("t", config)], 200_000);
    ready(&f).await;
    let err = tool(&f, "mcp__t__hang")
        .execute(json!({}), ctx(CancellationToken::new()))
        .await
        .unwrap_err();
    assert!(err.0.contains("tool_timeout_secs"), "{}", err.0);
}

#[tokio::test]
async fn failures_say_why_and_a_restart_recovers() {
    let mut slow = server(&["--delay-ms", "5000"]);
    slow.startup_timeout_secs = Some(0.5);
    let f = start(
        vec![
            ("broken", server(&["--fail-start", "missing API token"])),
            ("crashy", server(&[])),
            ("slow", slow),
            (
                "off",
                ServerConfig {
                    enabled: Some(false),
                    ..server(&[])
                },
            ),
        ],
        200_000,
    );
    ready(&f).await;
    let status = f.manager.status();
    let by_name = |n: &str| status.servers.iter().find(|s| s.name == n).unwrap().clone();
    let broken = by_name("broken");
    assert_eq!(broken.state, McpState::Failed);
    assert!(
        broken
            .error
            .as_deref()
            .unwrap()
            .contains("missing API token"),
        "{broken:?}"
    );
    let slow = by_name("slow");
    assert_eq!(slow.state, McpState::Failed);
    assert!(
        slow.error
            .as_deref()
            .unwrap()
            .contains("startup_timeout_secs")
    );
    assert_eq!(by_name("off").state, McpState::Disabled);
    assert_eq!(status.counts(), (1, 3));

    // The crash tool takes its server down: the call fails, the server shows as failed.
    let out = tool(&f, "mcp__crashy__crash")
        .execute(json!({}), ctx(CancellationToken::new()))
        .await;
    assert!(out.is_err());
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let s = f.manager.status();
            if s.servers
                .iter()
                .any(|s| s.name == "crashy" && s.state == McpState::Failed)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the crash is noticed");
    let crashy = f
        .manager
        .status()
        .servers
        .into_iter()
        .find(|s| s.name == "crashy")
        .unwrap();
    assert!(
        crashy
            .error
            .as_deref()
            .unwrap()
            .contains("crashing on purpose"),
        "{crashy:?}"
    );
    assert!(
        !f.extra
            .current()
            .iter()
            .any(|t| t.name().starts_with("mcp__crashy__"))
    );

    f.manager.restart("crashy").unwrap();
    ready(&f).await;
    assert_eq!(f.manager.status().counts(), (1, 3));
    assert!(
        f.extra
            .current()
            .iter()
            .any(|t| t.name() == "mcp__crashy__echo")
    );
    assert!(
        f.manager
            .restart("nope")
            .unwrap_err()
            .contains("no MCP server")
    );
    assert!(!f.statuses.lock().unwrap().is_empty());
}

#[tokio::test]
async fn many_large_tools_hide_behind_search() {
    let f = start(vec![("big", server(&["--many", "200"]))], 200_000);
    ready(&f).await;
    let status = f.manager.status();
    assert!(status.search_mode, "{} tokens", status.servers[0].tokens);
    assert!(status.servers[0].tokens > status.budget_tokens);
    let offered: Vec<String> = f
        .extra
        .current()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(offered, ["mcp_search"]);

    let search = tool(&f, "mcp_search");
    let out = search
        .execute(json!({"query": "topic-17"}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert!(
        out.plain_text().contains("mcp__big__big_17"),
        "{}",
        out.plain_text()
    );
    let offered: Vec<String> = f
        .extra
        .current()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(
        offered.contains(&"mcp__big__big_17".to_string()),
        "{offered:?}"
    );
    let ran = tool(&f, "mcp__big__big_17")
        .execute(json!({"value": "x"}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(ran.plain_text(), "big_17 ran");
}

#[tokio::test]
async fn filtered_tools_are_not_offered() {
    let mut config = server(&[]);
    config.enabled_tools = Some(vec!["echo".into(), "add".into()]);
    config.disabled_tools = vec!["add".into()];
    let f = start(vec![("t", config)], 200_000);
    ready(&f).await;
    let offered: Vec<String> = f
        .extra
        .current()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(offered, ["mcp__t__echo"]);
}

fn process_gone(pid: i32) -> bool {
    // A zombie is as good as gone: it holds nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn a_restart_ends_everything_the_server_started() {
    let f = start(vec![("t", server(&[]))], 200_000);
    ready(&f).await;
    let out = tool(&f, "mcp__t__spawn_sleeper")
        .execute(json!({}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    let pid: i32 = out.plain_text().trim().parse().unwrap();
    assert!(!process_gone(pid));
    f.manager.restart("t").unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !process_gone(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server's grandchild died with it");
    ready(&f).await;
}

#[tokio::test]
async fn the_budget_follows_the_model_window() {
    let f = start(vec![("t", server(&["--many", "20"]))], 2_000_000);
    ready(&f).await;
    assert!(!f.manager.status().search_mode);
    let all = f.extra.current().len();
    assert!(all > 20);
    // A model with a small window: only the search tool.
    f.manager.set_context_window(50_000);
    let status = f.manager.status();
    assert!(
        status.search_mode,
        "{} of {}",
        status.servers[0].tokens, status.budget_tokens
    );
    assert_eq!(f.extra.current().len(), 1);
    f.manager.set_context_window(2_000_000);
    assert_eq!(f.extra.current().len(), all);
}

/// An answer larger than a message may be (16 MiB) fails its call at once, saying how large
/// it was, instead of being dropped while the call waits out its timeout; the server stays
/// usable (issue 45).
#[tokio::test]
async fn an_oversized_answer_fails_its_call_at_once_with_the_size() {
    let mut config = server(&["--odd"]);
    // Far longer than the test may take: a call that waited for it would fail the test.
    config.tool_timeout_secs = Some(600.0);
    let f = start(vec![("t", config)], 200_000);
    ready(&f).await;
    let huge = tool(&f, "mcp__t__huge");
    let call = huge.execute(json!({"mb": 17}), ctx(CancellationToken::new()));
    let err = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call fails at once")
        .unwrap_err();
    assert!(
        err.0.contains("17.0 MB") && err.0.contains("16.0 MB"),
        "{}",
        err.0
    );
    // Just under the limit still arrives whole, and the server still answers.
    let out = tool(&f, "mcp__t__huge")
        .execute(json!({"mb": 15}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.plain_text().len(), 15 << 20);
    let out = tool(&f, "mcp__t__echo")
        .execute(json!({"text": "still here"}), ctx(CancellationToken::new()))
        .await
        .unwrap();
    assert!(out.plain_text().contains("still here"));
}

/// A tool whose input schema is not an object would make every request of the session fail
/// (providers refuse it): it is not offered, and `/mcp` says so (issue 45).
#[tokio::test]
async fn a_tool_with_a_non_object_schema_is_left_out_and_said() {
    let f = start(vec![("t", server(&["--odd"]))], 200_000);
    ready(&f).await;
    let names: Vec<String> = f
        .extra
        .current()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(names.contains(&"mcp__t__huge".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("list_input")), "{names:?}");
    for tool in f.extra.current().iter() {
        assert_eq!(tool.parameters()["type"], "object", "{}", tool.name());
    }
    let status = f.manager.status();
    assert_eq!(status.servers[0].left_out.len(), 1, "{status:?}");
    assert!(
        status.servers[0].left_out[0].contains("`list_input`"),
        "{status:?}"
    );
}
