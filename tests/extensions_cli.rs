//! Skills, prompt templates and hooks, end to end: the binary against mock-llm in print and
//! JSON mode, with real hook scripts run by the shell (in the sandbox, as bash commands are).
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use mock_llm::Reply;
use serde_json::{Value, json};

mod common;

use common::*;

/// Writes an executable script into the home and returns its path.
fn script(env: &Env, name: &str, body: &str) -> String {
    let dir = env.home.path().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn config(env: &Env, text: &str) {
    std::fs::write(env.home.path().join("config.toml"), text).unwrap();
}

fn hook_runs(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "hook_run")
        .map(|e| &e["run"])
        .collect()
}

fn tool_end(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("a tool_execution_end event")
}

fn skill(root: &Path, dir: &str, name: &str) {
    let dir = root.join(dir).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\nStep one of {name}.\n"),
    )
    .unwrap();
}

fn system_prompt(server: &mock_llm::MockServer) -> String {
    server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_template_with_arguments_expands_in_print_mode() {
    let env = Env::new();
    let prompts = env.home.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review a file\n---\nReview $1 for $2.\nAll: $ARGUMENTS\n",
    )
    .unwrap();
    let server = serve(vec![Reply::text("Reviewed.")]).await;
    let out = env
        .run(
            Some(&server),
            &["-p", "/review src/lib.rs 'null checks'", "--tools", ""],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Reviewed.\n");
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "Review src/lib.rs for null checks.\nAll: src/lib.rs 'null checks'"
    );
}

#[tokio::test]
async fn a_template_expands_in_json_mode_and_an_unknown_skill_is_refused() {
    let env = Env::new();
    let prompts = env.home.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("explain.md"), "Explain $1 simply.").unwrap();
    let server = serve(vec![Reply::text("Sure.")]).await;
    let out = env
        .run(
            Some(&server),
            &["--mode", "json", "/explain monads", "--tools", ""],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "Explain monads simply."
    );
    let out = env
        .run(Some(&server), &["-p", "/skill:nope do it"], "")
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no skill `nope`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests().len(), 1, "nothing was sent");
}

#[tokio::test]
async fn skills_from_every_location_reach_the_system_prompt_of_a_trusted_repository() {
    let env = Env::new();
    skill(env.home.path(), "skills", "home-skill");
    skill(env.work.path(), ".coding-agent/skills", "ours");
    skill(env.work.path(), ".agents/skills", "agents-skill");
    skill(env.work.path(), ".claude/skills", "claude-skill");
    // The same name twice: reported, not silently shadowed.
    skill(env.work.path(), ".claude/skills", "ours");
    let server = serve(vec![Reply::text("ok"), Reply::text("ok")]).await;
    let out = env
        .run(Some(&server), &["-p", "hi", "--tools", "", "--trust"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let prompt = system_prompt(&server);
    for name in ["home-skill", "ours", "agents-skill", "claude-skill"] {
        assert!(
            prompt.contains(&format!("- {name}: The {name} skill. (")),
            "{name} in {prompt}"
        );
    }
    assert!(prompt.contains("/.coding-agent/skills/ours/SKILL.md"));
    assert!(!prompt.contains("/.claude/skills/ours/SKILL.md"));
    assert!(
        text(&out.stderr).contains("skill `ours` is defined twice"),
        "{}",
        text(&out.stderr)
    );

    // Not trusted: the repository's skills stay out, and the user is told why.
    let out = env
        .run(Some(&server), &["-p", "hi", "--tools", ""], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let prompt = server.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("- home-skill:"), "{prompt}");
    assert!(!prompt.contains("claude-skill"), "{prompt}");
    assert!(!prompt.contains("agents-skill"), "{prompt}");
    assert!(
        text(&out.stderr).contains("is not trusted"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn skill_invocation_sends_the_skill_and_the_arguments() {
    let env = Env::new();
    skill(env.home.path(), "skills", "deploy");
    let server = serve(vec![Reply::text("Deploying.")]).await;
    let out = env
        .run(
            Some(&server),
            &["-p", "/skill:deploy to staging", "--tools", ""],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sent.starts_with("<skill name=\"deploy\""), "{sent}");
    assert!(
        sent.contains("Step one of deploy.\n</skill>\n\nto staging"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_rm_rf_in_json_mode() {
    let env = Env::new();
    let guard = script(
        &env,
        "guard.sh",
        "if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi\nexit 0\n",
    );
    config(
        &env,
        &format!(
            "[[hooks]]\nevent = \"pre_tool_use\"\nmatcher = \"bash\"\ncommand = \"{guard}\"\n"
        ),
    );
    std::fs::create_dir(env.work.path().join("precious")).unwrap();
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "rm -rf precious"})),
        Reply::text("I was stopped."),
    ])
    .await;
    let out = env
        .run(Some(&server), &["--mode", "json", "clean up"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        env.work.path().join("precious").exists(),
        "the command never ran"
    );
    let events = json_events(&out.stdout);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["event"], "pre_tool_use");
    assert_eq!(runs[0]["outcome"], "blocked");
    assert_eq!(runs[0]["message"], "rm -rf is not allowed here");
    let end = tool_end(&events);
    assert_eq!(end["outcome"], "blocked");
    let result = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("rm -rf is not allowed here"), "{result}");
}

#[tokio::test]
async fn a_pre_tool_use_hook_rewrites_the_arguments() {
    let env = Env::new();
    let rewrite = script(
        &env,
        "rewrite.sh",
        "cat > /dev/null\necho '{\"updated_input\": {\"command\": \"echo rewritten by the hook\"}}'\n",
    );
    config(
        &env,
        &format!(
            "[[hooks]]\nevent = \"pre_tool_use\"\nmatcher = \"bash\"\ncommand = \"{rewrite}\"\n"
        ),
    );
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "echo original"})),
        Reply::text("Done."),
    ])
    .await;
    let out = env.run(Some(&server), &["--mode", "json", "go"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["outcome"], "rewrote");
    assert_eq!(tool_end(&events)["outcome"], "ok");
    let result = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("rewritten by the hook"), "{result}");
    assert!(!result.contains("original"), "{result}");
}

#[tokio::test]
async fn a_hook_that_times_out_is_killed_with_its_group_and_reported() {
    let env = Env::new();
    let pid_file = env.work.path().join("hook.pid");
    let slow = script(
        &env,
        "slow.sh",
        &format!("sleep 60 &\necho $! > {}\nwait\n", pid_file.display()),
    );
    config(
        &env,
        &format!("[[hooks]]\nevent = \"pre_tool_use\"\ncommand = \"{slow}\"\ntimeout_secs = 1\n"),
    );
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "echo still ran"})),
        Reply::text("Done."),
    ])
    .await;
    let started = Instant::now();
    let out = env.run(Some(&server), &["--mode", "json", "go"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(30));
    let events = json_events(&out.stdout);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["outcome"], "timed_out");
    assert!(runs[0]["duration_ms"].as_u64().unwrap() >= 1000);
    // The action goes on.
    assert_eq!(tool_end(&events)["outcome"], "ok");
    // The hook's child (`sleep 60`) died with the group.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or_default().trim();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "the hook's child still runs: {stat}"
    );
}

#[tokio::test]
async fn a_stop_hook_sends_the_agent_on_once() {
    let env = Env::new();
    let marker = env.work.path().join("stop-hook-ran");
    let stop = script(
        &env,
        "stop.sh",
        &format!(
            "cat > /dev/null\nif [ -e {m} ]; then exit 0; fi\ntouch {m}\necho 'run the tests first' >&2\nexit 2\n",
            m = marker.display()
        ),
    );
    config(
        &env,
        &format!("[[hooks]]\nevent = \"stop\"\ncommand = \"{stop}\"\n"),
    );
    let server = serve(vec![Reply::text("Done."), Reply::text("Tests pass.")]).await;
    let out = env
        .run(Some(&server), &["-p", "fix it", "--tools", ""], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Tests pass.\n");
    assert!(text(&out.stderr).contains("[hook stop] blocked: run the tests first"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(last.contains("run the tests first"), "{last}");

    // In JSON mode too: both runs of the hook are events.
    std::fs::remove_file(&marker).unwrap();
    let server = serve(vec![Reply::text("Done."), Reply::text("Tests pass.")]).await;
    let out = env
        .run(
            Some(&server),
            &["--mode", "json", "fix it", "--tools", ""],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = json_events(&out.stdout);
    let outcomes: Vec<_> = hook_runs(&events)
        .iter()
        .map(|r| r["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outcomes, ["blocked", "ok"]);
}

#[tokio::test]
async fn a_user_prompt_submit_hook_can_refuse_a_prompt_or_add_context() {
    let env = Env::new();
    let screen = script(
        &env,
        "screen.sh",
        "if grep -q secret; then echo 'no secrets in prompts' >&2; exit 2; fi\necho 'The build uses make.'\n",
    );
    config(
        &env,
        &format!("[[hooks]]\nevent = \"user_prompt_submit\"\ncommand = \"{screen}\"\n"),
    );
    let server = serve(vec![Reply::text("Use make.")]).await;
    let out = env
        .run(
            Some(&server),
            &["-p", "the secret is 42", "--tools", ""],
            "",
        )
        .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no secrets in prompts"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.requests().is_empty(), "the prompt was not sent");

    let out = env
        .run(Some(&server), &["-p", "how do I build?", "--tools", ""], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = &server.requests()[0].body["messages"][1]["content"];
    let sent = sent.to_string();
    assert!(sent.contains("how do I build?"), "{sent}");
    assert!(sent.contains("The build uses make."), "{sent}");
}

#[tokio::test]
async fn a_hook_that_fails_warns_and_the_action_goes_on() {
    let env = Env::new();
    let broken = script(
        &env,
        "broken.sh",
        "cat > /dev/null\necho 'oops' >&2\nexit 3\n",
    );
    config(
        &env,
        &format!("[[hooks]]\nevent = \"post_tool_use\"\ncommand = \"{broken}\"\n"),
    );
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": "echo fine"})),
        Reply::text("Done."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "go"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("[hook post_tool_use] warning: exited with 3: oops"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "Done.\n");
}

/// A directory outside every place the sandbox lets commands write (as in safety_cli).
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let policy = sandbox::Policy::new(
        sandbox::SandboxMode::WorkspaceWrite,
        Path::new("/nonexistent-workspace"),
        &[],
        None,
    );
    assert!(!policy.write_allowed(dir.path()));
    dir
}

#[tokio::test]
async fn hooks_run_in_the_sandbox_and_session_start_adds_context() {
    let env = Env::new();
    let away = outside();
    let target = away.path().join("escaped.txt");
    let start = script(
        &env,
        "start.sh",
        &format!(
            "cat > /dev/null\ntouch inside.txt\ntouch {} 2>/dev/null\necho 'Today is release day.'\n",
            target.display()
        ),
    );
    config(
        &env,
        &format!("[[hooks]]\nevent = \"session_start\"\ncommand = \"{start}\"\n"),
    );
    let server = serve(vec![Reply::text("ok")]).await;
    let out = env
        .run_confined(Some(&server), &["--mode", "json", "hi", "--tools", ""], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        env.work.path().join("inside.txt").exists(),
        "the hook ran in the workspace"
    );
    // Where nothing confines writes (no Landlock), the user's own hook writes where it likes,
    // as `coding-agent doctor` says.
    assert_eq!(
        target.exists(),
        !writes_are_confined(),
        "the hook's write outside is refused exactly where the sandbox can refuse it"
    );
    let prompt = system_prompt(&server);
    assert!(prompt.contains("Today is release day."), "{prompt}");
    let events = json_events(&out.stdout);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["event"], "session_start");
    assert_eq!(runs[0]["outcome"], "ok");
}

// The RPC helper blocks its thread while it waits: the mock server needs another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_expands_templates_and_a_pre_compact_hook_can_keep_the_history() {
    let env = Env::new();
    let server = serve(vec![Reply::text("First."), Reply::text("Second.")]).await;
    let seen = env.work.path().join("pre-compact.json");
    let keep = script(
        &env,
        "keep.sh",
        &format!(
            "cat > {}\necho 'keep the history, please' >&2\nexit 2\n",
            seen.display()
        ),
    );
    let prompts = env.home.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("explain.md"), "Explain $1.").unwrap();
    config(
        &env,
        &format!(
            "[providers.mock]\napi = \"openai-completions\"\nbase_url = \"{}\"\nmodels = [{{ id = \"a\" }}]\n\
             [[hooks]]\nevent = \"pre_compact\"\ncommand = \"{keep}\"\n",
            server.url()
        ),
    );
    let mut command = env.command(None, &["--mode", "rpc", "--model", "mock/a", "--tools", ""]);
    command.stderr(std::process::Stdio::null());
    let mut rpc = common::rpc::Rpc::spawn(command);
    let r = rpc.call(1, json!({"type": "prompt", "message": "/explain closures"}));
    assert_eq!(r["success"], true, "{r}");
    rpc.event("agent_end");
    let r = rpc.call(2, json!({"type": "prompt", "message": "and more"}));
    assert_eq!(r["success"], true, "{r}");
    rpc.event("agent_end");
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "Explain closures."
    );

    let r = rpc.call(3, json!({"type": "compact"}));
    assert_eq!(r["success"], true, "{r}");
    let run = rpc.event("hook_run");
    assert_eq!(run["run"]["event"], "pre_compact");
    assert_eq!(run["run"]["outcome"], "blocked");
    let end = rpc.event("compaction_end");
    assert_eq!(end["outcome"]["status"], "failed", "{end}");
    assert!(
        end["outcome"]["error"]
            .as_str()
            .unwrap()
            .contains("keep the history, please"),
        "{end}"
    );
    assert_eq!(server.requests().len(), 2, "no summary was asked for");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "pre_compact");
    assert_eq!(input["trigger"], "manual");
    // Hooks are told the session they run in, also after /new.
    let state = rpc.call(4, json!({"type": "get_state"}));
    let id = state["data"]["session"]["id"].as_str().unwrap().to_string();
    assert_eq!(input["session_id"], id.as_str());
    let r = rpc.call(5, json!({"type": "new_session"}));
    assert_eq!(r["success"], true, "{r}");
    server.push(Reply::text("Third."));
    server.push(Reply::text("Fourth."));
    for (n, text) in [(6, "one"), (7, "two")] {
        let r = rpc.call(n, json!({"type": "prompt", "message": text}));
        assert_eq!(r["success"], true, "{r}");
        rpc.event("agent_end");
    }
    let r = rpc.call(8, json!({"type": "compact"}));
    assert_eq!(r["success"], true, "{r}");
    rpc.event("compaction_end");
    let state = rpc.call(9, json!({"type": "get_state"}));
    let new_id = state["data"]["session"]["id"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["session_id"], new_id.as_str());
    rpc.finish();
}

#[tokio::test]
async fn a_repository_s_hooks_run_only_when_it_is_trusted() {
    let env = Env::new();
    let project = env.work.path().join(".coding-agent");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.toml"),
        "[[hooks]]\nevent = \"user_prompt_submit\"\ncommand = \"touch repo-hook-ran\"\n",
    )
    .unwrap();
    let server = serve(vec![Reply::text("one"), Reply::text("two")]).await;
    let out = env
        .run(Some(&server), &["--mode", "json", "hi", "--tools", ""], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!env.work.path().join("repo-hook-ran").exists());
    assert!(hook_runs(&json_events(&out.stdout)).is_empty());
    assert!(
        text(&out.stderr).contains("is not trusted"),
        "{}",
        text(&out.stderr)
    );

    let out = env
        .run(
            Some(&server),
            &["--mode", "json", "hi", "--tools", "", "--trust"],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(env.work.path().join("repo-hook-ran").exists());
    assert_eq!(hook_runs(&json_events(&out.stdout)).len(), 1);
}
