//! bash does not hand provider keys to commands unless the host opts in. Its own test binary
//! holding a single test: it sets environment variables, which no other test may race.

mod common;

use agent_core::{Tool, ToolContext};
use common::text;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tools::{BashOptions, BashTool, key_env_vars};

async fn env_of(tool: &BashTool) -> String {
    let ctx = ToolContext::new("call-1", CancellationToken::new(), |_| {});
    let out = tool.execute(json!({"command": "env"}), ctx).await.unwrap();
    text(&out)
}

#[tokio::test]
async fn provider_keys_are_hidden_unless_the_host_opts_in() {
    // SAFETY: this binary's only test, set before anything else runs in it.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-openai-secret");
        std::env::set_var("SOMETHING_NEW_API_KEY", "sk-new-secret");
        std::env::set_var("MY_LLM_TOKEN", "tok-secret");
        std::env::set_var("HARMLESS_SETTING", "visible");
    }
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path().to_path_buf();

    let env = env_of(&BashTool::new(cwd.clone())).await;
    assert!(!env.contains("sk-openai-secret"), "{env}");
    assert!(!env.contains("sk-new-secret"), "any *_API_KEY: {env}");
    assert!(env.contains("HARMLESS_SETTING=visible"));

    // The host adds the variables its config names.
    let registry = llm::Registry::builtin();
    let hidden = key_env_vars(&registry, &["MY_LLM_TOKEN".to_string()]);
    assert!(hidden.contains(&"ANTHROPIC_API_KEY".to_string()));
    let tool = BashTool::with_options(
        cwd.clone(),
        BashOptions {
            hidden_env: hidden,
            ..BashOptions::default()
        },
    );
    let env = env_of(&tool).await;
    assert!(
        !env.contains("tok-secret") && !env.contains("sk-openai-secret"),
        "{env}"
    );

    // `[tools.bash] inherit_keys = true`: nothing hidden.
    let tool = BashTool::with_options(
        cwd,
        BashOptions {
            hidden_env: Vec::new(),
            ..BashOptions::default()
        },
    );
    let env = env_of(&tool).await;
    assert!(env.contains("OPENAI_API_KEY=sk-openai-secret"), "{env}");
    assert!(env.contains("MY_LLM_TOKEN=tok-secret"));
}
