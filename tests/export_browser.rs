//! The exported page in a real browser: headless chromium (`--dump-dom`, the network pointed
//! at nothing) renders the whole conversation, and nothing the conversation carries runs —
//! a message with `</script>`, an `<img onerror>` and a `<script>` that would mark the page if
//! it ran leaves the page unmarked.
//!
//! Ignored by `cargo test`: it needs chromium, which `.ci/run` installs
//! (`scripts/install-test-browser.sh`) and then runs this with `--ignored`.
#![cfg(unix)]

mod common;

use common::*;
use mock_llm::Reply;
use serde_json::json;

/// Would mark the page (an attribute on `<body>`, a new title) if any of it ran.
const HOSTILE: &str = "</script><script>document.title='pwned'</script>\
                       <img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">";

fn browser() -> std::path::PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|path| path.is_file())
            })
        })
        .expect("chromium on the PATH: run scripts/install-test-browser.sh")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium: scripts/install-test-browser.sh, then --ignored"]
async fn the_exported_page_renders_in_a_browser_and_runs_nothing() {
    let env = Env::new();
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": format!("echo '{HOSTILE}'")})),
        Reply::text(format!(
            "The **answer**, with {HOSTILE} in it.\n\n```rust\nfn main() {{}}\n```"
        )),
    ])
    .await;
    let out = env
        .run(Some(&server), &["-p", &format!("look at {HOSTILE}")], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = env.work.path().join("page.html");
    let out = env
        .run(None, &["export", "-o", page.to_str().unwrap()], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    let profile = tempfile::tempdir().unwrap();
    let page_url = format!("file://{}", page.display());
    let mut command = std::process::Command::new(browser());
    command.args([
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        // Any request the page made would go nowhere.
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--virtual-time-budget=2000",
        "--dump-dom",
    ]);
    command.arg(format!("--user-data-dir={}", profile.path().display()));
    // Root (CI) cannot run chromium's own sandbox.
    if unsafe { libc::geteuid() } == 0 {
        command.arg("--no-sandbox");
    }
    command.arg(&page_url);
    let dumped = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(dumped.status.success(), "{}", text(&dumped.stderr));
    let dom = text(&dumped.stdout);
    // The whole conversation is there: the prompt, the call, its output, the answer.
    for shown in [
        "look at &lt;/script&gt;",
        "echo '&lt;/script&gt;",
        "The <strong>answer</strong>, with &lt;/script&gt;",
        "<details",
        // The code block, highlighted.
        "<pre style=\"background-color:",
    ] {
        assert!(dom.contains(shown), "{shown:?} not rendered:\n{dom}");
    }
    // Nothing ran.
    // (The text of the messages names the marks; only the marks themselves count.)
    assert!(!dom.contains("data-pwned=\"1\""), "a handler ran:\n{dom}");
    assert!(
        !dom.contains("<title>pwned</title>"),
        "a script ran:\n{dom}"
    );
    assert!(!dom.contains("<script"), "a script element exists:\n{dom}");
}
