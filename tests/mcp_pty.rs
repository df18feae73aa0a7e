//! MCP servers in the real TUI (pseudo-terminal): the first frame does not wait for a slow
//! server, Esc cancels a hung MCP call (the server hears `notifications/cancelled`), and a
//! server that crashes shows in the transcript and in `/mcp`, and comes back with
//! `/mcp restart`.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::mcp_server_entry;
use common::pty::{Session, WAIT, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

/// A session whose home config holds `config`.
fn start(server: &MockServer, config: &str) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    Session::start_in(server, &[], (30, 100), (dir, home))
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_first_frame_and_prompt_do_not_wait_for_a_slow_server() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Answered at once.")],
        }))
        .unwrap();
    // Build the test server before the clock starts.
    let config = mcp_server_entry("slow", &["--delay-ms", "6000"], "");
    let started = Instant::now();
    let mut session = start(&server, &config);
    session.wait_for("Type a message");
    let first_frame = started.elapsed();
    eprintln!("first frame with a 6 s MCP server: {first_frame:?}");
    assert!(
        first_frame < Duration::from_secs(5),
        "the first frame took {first_frame:?}"
    );
    session.wait_for("mcp 0/1");
    // A prompt now is answered without the server's tools.
    session.type_text("hello");
    session.send("\r");
    session.wait_for("Answered at once.");
    let first = &server.requests()[0].body;
    assert!(
        !tool_names(first).iter().any(|n| n.starts_with("mcp__")),
        "{:?}",
        tool_names(first)
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "the prompt waited"
    );
    session.wait_for("mcp 1/1");
}

#[test]
fn esc_cancels_a_hung_mcp_call() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let marker = tempfile::tempdir().unwrap();
    let dir = marker.path().display().to_string();
    let mut session = start(&server, &mcp_server_entry("t", &["--marker", &dir], ""));
    server.push(Reply::tool_call("mcp__t__hang", json!({})));
    session.wait_for("Type a message");
    session.wait_for("mcp 1/1");
    session.type_text("hang please");
    session.send("\r");
    wait_for_file(&marker.path().join("hanging"));
    session.send("\x1b");
    session.wait_for("Interrupted");
    // The server was told, and the call is no longer running there.
    wait_for_file(&marker.path().join("cancel-notification"));
    wait_for_file(&marker.path().join("cancelled"));
    // The server survives a cancelled call.
    session.wait_for("mcp 1/1");
}

#[test]
fn a_crashed_server_shows_in_mcp_and_restarts() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::tool_call("mcp__t__crash", json!({})),
                Reply::text("The server died."),
            ],
        }))
        .unwrap();
    let mut session = start(&server, &mcp_server_entry("t", &[], ""));
    session.wait_for("Type a message");
    session.wait_for("mcp 1/1");
    session.type_text("crash it");
    session.send("\r");
    session.wait_for("The server died.");
    session.wait_for("MCP server `t` failed");
    session.wait_for("mcp 0/1");
    session.type_text("/mcp");
    session.send("\r");
    session.wait_for("• t — failed");
    session.wait_for("crashing on purpose");
    session.type_text("/mcp restart t");
    session.send("\r");
    session.wait_for("Restarting MCP server `t`");
    session.wait_for("mcp 1/1");
    session.type_text("/mcp");
    session.send("\r");
    session.wait_for("• t — ready, 9 tools");
}

#[test]
fn under_untrusted_an_mcp_call_asks_first() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::tool_call(
                    "mcp__t__write_file",
                    json!({"path": "made.txt", "text": "x"}),
                ),
                Reply::text("Written."),
            ],
        }))
        .unwrap();
    let config = format!(
        "approval = \"untrusted\"\n{}",
        mcp_server_entry("t", &[], "")
    );
    let mut session = start(&server, &config);
    session.wait_for("Type a message");
    session.wait_for("mcp 1/1");
    session.type_text("write it");
    session.send("\r");
    session.wait_for("Allow mcp__t__write_file?");
    let made = session.dir.path().join("made.txt");
    assert!(!made.exists(), "nothing runs before the answer");
    session.send("y");
    session.wait_for("Written.");
    assert!(made.exists());
}

/// Interactive, the user is asked about each of a trusted repository's MCP servers, shown
/// what it runs or where it connects; approved, the server starts, without the keys the
/// repository tried to give it, and is not asked about again.
#[test]
fn a_repository_s_server_is_asked_about_once_and_gets_no_key() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    server.push(Reply::tool_call(
        "mcp__y__getenv",
        json!({"name": "GEMINI_API_KEY"}),
    ));
    server.push(Reply::text("Checked."));
    server.push(Reply::text("Again."));
    let config = mcp_server_entry("y", &[], "env_vars = [\"GEMINI_API_KEY\"]");
    let prepare = |dir: &std::path::Path| {
        std::fs::create_dir_all(dir.join(".coding-agent")).unwrap();
        std::fs::write(dir.join(".coding-agent/config.toml"), &config).unwrap();
    };
    let mut session = Session::start_with_env(
        &server,
        &["--trust"],
        &[("GEMINI_API_KEY", "gemini-secret")],
        prepare,
    );
    session.wait_for("names an MCP server `y`: it runs `");
    session.wait_for("Start it (remembered for this repository until it changes)? [y/N]");
    session.send("y\r");
    session.wait_for("Type a message");
    session.type_text("check the key");
    session.send("\r");
    session.wait_for("Checked.");
    let requests = rt.block_on(server.wait_for_requests(2, WAIT)).unwrap();
    let result = requests[1].body["messages"].to_string();
    assert!(result.contains("(unset)"), "{result}");
    assert!(!result.contains("gemini-secret"), "{result}");
    let approved = std::fs::read_to_string(session.home.path().join("mcp-servers.toml")).unwrap();
    assert!(approved.contains("y stdio"), "{approved}");
    // The next start in the same repository does not ask again.
    let (dir, home) = session.into_dirs();
    let mut again = Session::start_in(&server, &["--trust"], (30, 100), (dir, home));
    again.wait_for("Type a message");
    assert!(!again.contents().contains("names an MCP server"));
    again.send("\x03\x03");
}
