//! The first run in a real terminal with nothing configured, no key and no local server: the
//! setup screen instead of an error, and from it a working session — by a server URL checked
//! live, or by a pasted key that is never shown and is stored privately.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::pty::{Session, runtime};
use mock_llm::{Emulation, MockServer, Reply, Script};

#[test]
fn a_server_url_checked_live_leads_to_a_working_session() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Hello through llama.cpp.")],
        }))
        .unwrap();
    server.emulate(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    });
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let mut session = Session::start_bare(&[], &[]);
    session.wait_for("coding-agent — first run");
    session.wait_for("Local servers were not looked for");
    session.wait_for("› openai");
    // The last choice: a server by URL. A dead one first: the error is shown.
    session.send("\x1b[F");
    session.wait_for("› A local server by URL");
    session.send("\r");
    session.wait_for("url:");
    session.type_text(&closed);
    session.send("\r");
    session.wait_for("refused");
    for _ in 0..closed.len() {
        session.send("\x7f");
    }
    session.wait_gone(&format!("url: {closed}"));
    session.type_text(&server.origin());
    session.send("\r");
    session.wait_for("answers:");
    session.wait_for("llama.cpp · smollm2 · 2048 tokens of context");
    session.send("\r");
    // The session: the status line names the server, the model and its window.
    session.wait_for("llama.cpp · smollm2 · 2k ctx");
    session.type_text("hi");
    session.send("\r");
    session.wait_for("Hello through llama.cpp.");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["model"], "smollm2");
    let auth = session.home.path().join("auth.toml");
    let stored = std::fs::read_to_string(&auth).unwrap();
    assert!(stored.contains(&server.origin()), "{stored}");
    assert_eq!(
        std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn a_pasted_key_is_never_shown_and_is_stored_privately() {
    let mut session = Session::start_bare(&[], &[]);
    session.wait_for("› openai");
    session.send("\r");
    session.wait_for("Paste your openai API key");
    // Where it goes, as this machine names it (issue 46).
    session.wait_for("/auth.toml (mode 0600)");
    assert!(
        !session.contents().contains("$CODING_AGENT_HOME"),
        "{}",
        session.contents()
    );
    session.send("\x1b[200~sk-very-secret-key\x1b[201~");
    session.wait_for("18 characters (not shown)");
    assert!(!session.contents().contains("very-secret"));
    session.send("\r");
    // The session starts with the default model of that provider; no request is made.
    session.wait_for("gpt-5");
    assert!(!session.contents().contains("very-secret"));
    let auth = session.home.path().join("auth.toml");
    let stored = std::fs::read_to_string(&auth).unwrap();
    assert!(
        stored.contains("\"openai\" = \"sk-very-secret-key\""),
        "{stored}"
    );
    assert!(stored.contains("model = \"openai/gpt-5\""), "{stored}");
    assert_eq!(
        std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn the_model_picker_lists_the_running_local_servers_models_live() {
    let rt = runtime();
    let chat = rt.block_on(MockServer::start(Script::default())).unwrap();
    let ollama = rt.block_on(MockServer::start(Script::default())).unwrap();
    ollama.emulate(Emulation::Ollama {
        models: vec![mock_llm::OllamaModel::new("qwen3:8b", 40_960).loaded(32_768)],
    });
    let url = chat.url();
    let mut session = Session::start_bare(
        &["--base-url", &url, "--model", "mock-model"],
        &[("CODING_AGENT_LOCAL_PROBES", &ollama.origin())],
    );
    session.wait_for("Type a message");
    // The background probe has answered once Ollama saw its last discovery request.
    let deadline = std::time::Instant::now() + common::pty::WAIT;
    while !ollama
        .discovery_requests()
        .iter()
        .any(|r| r == "POST /api/show")
    {
        assert!(std::time::Instant::now() < deadline, "never probed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    session.type_text("/model");
    session.send("\r");
    session.wait_for("openai/gpt-5");
    // Up from the first entry wraps to the last: the local model, listed after the registry's.
    session.send("\x1b[A");
    session.wait_for("ollama/qwen3:8b  32k ctx");
    session.send("\r");
    session.wait_for("ollama · qwen3:8b · 32k ctx");
}
