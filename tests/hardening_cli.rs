//! The binary against hostile or broken input: a repository that tries to pick the model, a
//! mistyped base URL, a reply cut at the output limit, command output too long to show.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::process::Stdio;

use common::*;
use mock_llm::Reply;
use serde_json::json;

#[tokio::test]
async fn a_repository_config_cannot_choose_the_model() {
    let env = Env::new();
    let server = serve(vec![Reply::text("From the home model.")]).await;
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "model = \"mine/m\"\n[providers.mine]\napi = \"openai-completions\"\nbase_url = \"{}\"\napi_key = \"sk-home\"\nmodels = [{{ id = \"m\" }}]\n",
            server.url()
        ),
    )
    .unwrap();
    // The repository asks for the built-in local provider (127.0.0.1:8080): the user's key
    // would go there.
    std::fs::create_dir_all(env.work.path().join(".coding-agent")).unwrap();
    std::fs::write(
        env.work.path().join(".coding-agent/config.toml"),
        "model = \"local/evil\"\n",
    )
    .unwrap();
    // Even trusted, a repository cannot choose it.
    let out = env.run(None, &["--trust", "-p", "hi"], "").await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "From the home model.");
    assert!(
        stderr.contains("`model = \"local/evil\"` is ignored"),
        "{stderr}"
    );
    let request = &server.requests()[0];
    assert_eq!(request.body["model"], "m");
    assert_eq!(request.header("authorization"), Some("Bearer sk-home"));
}

#[tokio::test]
async fn a_mistyped_base_url_is_named_with_its_flag() {
    let env = Env::new();
    for bad in ["127.0.0.1:8080/v1", "htp:/localhost", "ftp://host/v1"] {
        let out = env
            .run(None, &["--base-url", bad, "--model", "m", "-p", "hi"], "")
            .await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("--base-url") && stderr.contains(bad),
            "{stderr}"
        );
        assert!(!stderr.contains("API key"), "{stderr}");
    }
}

#[tokio::test]
async fn a_reply_cut_at_the_output_limit_is_flagged_and_the_limit_is_sent() {
    let env = Env::new();
    let server = serve(vec![
        Reply::text("The first half of the ans").with_finish_reason("length"),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "write a lot"], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(text(&out.stdout).trim(), "The first half of the ans");
    assert!(
        stderr.contains("cut off at the output token limit"),
        "{stderr}"
    );
    let body = &server.requests()[0].body;
    assert!(body["max_tokens"].as_u64().is_some_and(|n| n > 0), "{body}");
}

#[tokio::test]
async fn long_command_output_is_saved_privately_beside_the_session() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "seq 1 30000"})),
        Reply::text("Counted."),
    ])
    .await;
    let mut command = env.command(Some(&server), &["-p", "count"]);
    let out = tokio::task::spawn_blocking(move || command.stdin(Stdio::null()).output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let saved = result
        .split("Full output: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("the result names the saved file: {result}"))
        .trim()
        .to_string();
    let session = env
        .sessions()
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let spill_dir = session.with_extension("spill");
    assert!(
        saved.starts_with(&*spill_dir.to_string_lossy()),
        "{saved} is not in {}",
        spill_dir.display()
    );
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&saved), 0o600);
    assert_eq!(mode(&spill_dir.to_string_lossy()), 0o700);
    assert!(
        std::fs::read_to_string(&saved)
            .unwrap()
            .ends_with("30000\n")
    );

    // Deleting the session deletes its saved outputs at the next start.
    std::fs::remove_file(&session).unwrap();
    let server = serve(vec![Reply::text("Hi.")]).await;
    let out = env
        .run(Some(&server), &["-p", "hi", "--no-session"], "")
        .await;
    assert!(out.status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while spill_dir.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the orphaned outputs stayed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
