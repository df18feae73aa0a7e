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
    // The provider, played by the mock: it takes one key, as a hosted one does.
    let rt = runtime();
    let provider = rt.block_on(MockServer::start(Script::default())).unwrap();
    provider.require_key("sk-very-secret-key");
    let url = provider.url();
    let mut session = Session::start_bare_with_home(&[], &[], |home| {
        std::fs::write(
            home.join("config.toml"),
            format!("[providers.openai]\nbase_url = \"{url}\"\n"),
        )
        .unwrap();
    });
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
    // A wrong key first: checked with the provider, refused in its words, asked again.
    session.send("\x1b[200~sk-wrong-key-1234\x1b[201~");
    session.send("\r");
    session.wait_for("openai answered 401: Incorrect API key provided");
    session.wait_for("key: (nothing yet)");
    session.send("\x1b[200~sk-very-secret-key\x1b[201~");
    session.wait_for("18 characters (not shown)");
    assert!(!session.contents().contains("very-secret"));
    session.send("\r");
    // The session starts with the default model of that provider, saying the key was taken;
    // the only requests were the two checks.
    session.wait_for("openai accepted the key; saved to");
    session.wait_for("gpt-5");
    assert_eq!(
        provider.discovery_requests(),
        ["GET /v1/models (refused: no valid key)", "GET /v1/models"]
    );
    assert!(provider.requests().is_empty());
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

/// A server that answers but does not list its models (mock-llm without `--emulate`, many
/// proxies): the screen asks for the model's name instead of ending at the 404, and the next
/// start finds the server again by that name, with no screen.
#[test]
fn a_server_without_a_model_list_is_used_with_the_model_named() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            // Like llama-cpp-python: no token usage.
            replies: vec![
                Reply::text("First.").with_usage(mock_llm::ScriptUsage::default()),
                Reply::text("Again."),
            ],
        }))
        .unwrap();
    let mut session = Session::start_bare(&[], &[]);
    session.wait_for("› openai");
    session.send("\x1b[F");
    session.send("\r");
    session.wait_for("url:");
    session.type_text(&server.origin());
    session.send("\r");
    session.wait_for("answered 404");
    session.wait_for("type the name of the model it serves");
    session.type_text("my-model");
    session.send("\r");
    // Its window was not said: assumed, shown as such, and how to give the real one.
    session.wait_for("local · my-model · 8k ctx?");
    session.wait_for("8192 tokens is assumed");
    session.wait_for("· 0% of 8k");
    session.type_text("hi");
    session.send("\r");
    session.wait_for("First.");
    // No usage came: the gauge is the agent's own estimate, marked `~`.
    session.wait_for("· ~");
    assert!(!session.contents().contains("· 0% of 8k"));
    assert_eq!(server.requests()[0].body["model"], "my-model");
    let auth = std::fs::read_to_string(session.home.path().join("auth.toml")).unwrap();
    assert!(auth.contains("[server_models]"), "{auth}");
    // The next start: straight to the session.
    let mut again = Session::start_bare_with_home(&[], &[], |home| {
        std::fs::write(home.join("auth.toml"), &auth).unwrap();
    });
    again.wait_for("local · my-model · 8k ctx");
    assert!(!again.contents().contains("first run"));
    again.type_text("hi again");
    again.send("\r");
    again.wait_for("Again.");
    session.send("\x04");
    again.send("\x04");
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
    // The model in use first and marked, the servers on this machine next.
    session.wait_for("custom/mock-model  ● in use");
    session.send("\x1b[B");
    session.wait_for("ollama/qwen3:8b  at 127.0.0.1");
    session.send("\r");
    session.wait_for("ollama · qwen3:8b · 32k ctx");
}

/// `/model` from a local server to a hosted model without a key and back: the key is asked
/// for (never shown), checked with the provider, refused and then taken; the server the
/// session started with stays in the list, first when in use, found by typing.
#[test]
fn the_model_picker_asks_for_a_missing_key_and_returns_to_the_local_server() {
    let rt = runtime();
    let local = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Local answer."), Reply::text("Local again.")],
        }))
        .unwrap();
    local.emulate(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    });
    let hosted = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Hosted answer.")],
        }))
        .unwrap();
    hosted.require_key("sk-the-right-key-0042");
    let hosted_url = hosted.url();
    let local_url = local.url();
    let mut session = Session::start_bare_with_home(&["--base-url", &local_url], &[], |home| {
        std::fs::write(
            home.join("config.toml"),
            format!("[providers.openai]\nbase_url = \"{hosted_url}\"\n"),
        )
        .unwrap();
    });
    session.wait_for("llama.cpp · smollm2 · 2k ctx");
    session.type_text("/model");
    session.send("\r");
    session.wait_for("llama.cpp/smollm2  ● in use");
    session.wait_for("needs a key (OPENAI_API_KEY)");
    // Typing filters: to the hosted model, whose provider has no key.
    session.type_text("gpt-5-mini");
    session.wait_for("filter: gpt-5-mini");
    session.wait_gone("llama.cpp/smollm2");
    session.send("\r");
    session.wait_for("openai needs an API key");
    session.wait_for("key: (nothing yet)");
    // A wrong key: the provider's words, and nothing switched or saved.
    session.send("\x1b[200~sk-a-wrong-key-0000\x1b[201~");
    session.wait_for("key: 19 characters (not shown)");
    session.send("\r");
    session.wait_for("openai answered 401: Incorrect API key provided");
    assert!(!session.home.path().join("auth.toml").exists());
    assert!(session.contents().contains("llama.cpp · smollm2"));
    // The right one: checked, saved privately, and the switch made.
    session.send("\x1b[200~sk-the-right-key-0042\x1b[201~");
    session.send("\r");
    // A reasoning model: its thinking level next.
    session.wait_for("How much thinking?");
    session.send("\r");
    session.wait_gone("How much thinking?");
    session.wait_for("openai accepted the key; saved to");
    session.wait_for("Model: openai/gpt-5-mini");
    assert!(!session.contents().contains("the-right-key"));
    let auth = std::fs::read_to_string(session.home.path().join("auth.toml")).unwrap();
    assert!(
        auth.contains("\"openai\" = \"sk-the-right-key-0042\""),
        "{auth}"
    );
    session.type_text("hi");
    session.send("\r");
    session.wait_for("Hosted answer.");
    assert_eq!(hosted.requests()[0].body["model"], "gpt-5-mini");
    // Back to the server the session started with: listed, found by typing.
    session.type_text("/model");
    session.send("\r");
    session.wait_for("openai/gpt-5-mini  ● in use");
    session.type_text("smol");
    session.wait_for("filter: smol");
    session.send("\r");
    session.wait_for("llama.cpp · smollm2 · 2k ctx");
    session.type_text("and now?");
    session.send("\r");
    session.wait_for("Local answer.");
    assert_eq!(local.requests()[0].body["model"], "smollm2");
}
