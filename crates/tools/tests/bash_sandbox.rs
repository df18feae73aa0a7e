//! The bash tool with a sandbox, on the real kernel: confined commands, the note that tells
//! the model what the sandbox allows, escalation, background jobs.
//!
//! Every `scenario_*` test runs as the current user, as root (as in CI) again as `nobody`,
//! and again as on a machine whose kernel refuses Landlock and namespaces; where a layer is
//! missing, a scenario checks the degraded behaviour (see `sandbox/tests/support/layers.rs`).
//!
//! Linux only: the sandbox's layers are Linux's (macOS's are run by
//! `sandbox/tests/seatbelt_run.rs`).
#![cfg(target_os = "linux")]

mod common;
#[path = "../../sandbox/tests/support/layers.rs"]
mod layers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Tool, ToolContext, ToolOutput};
use layers::{Layer, capabilities, has, missing_is_reported};
use sandbox::{Policy, Sandbox, SandboxMode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tools::{BashOptions, BashTool};

const EXPECT_UID: &str = "BASH_SANDBOX_TEST_EXPECT_UID";

fn expect_user() {
    layers::expect_degraded_if_asked();
    if let Ok(uid) = std::env::var(EXPECT_UID) {
        // SAFETY: getuid cannot fail.
        assert_eq!(unsafe { libc::getuid() }.to_string(), uid);
    }
}

/// A workspace and a directory beside it, both under `/var/tmp` (outside the temp dirs the
/// sandbox allows).
struct Scene {
    _dirs: [tempfile::TempDir; 2],
    ws: PathBuf,
    outside: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let ws = tempfile::tempdir_in("/var/tmp").unwrap();
        let outside = tempfile::tempdir_in("/var/tmp").unwrap();
        Scene {
            ws: ws.path().canonicalize().unwrap(),
            outside: outside.path().canonicalize().unwrap(),
            _dirs: [ws, outside],
        }
    }

    fn tool(&self, mode: SandboxMode, network: Option<bool>) -> BashTool {
        let policy = Policy::new(mode, &self.ws, &[], network);
        BashTool::with_options(
            self.ws.clone(),
            BashOptions {
                sandbox: Some(Arc::new(Sandbox::new(policy, capabilities()))),
                ..BashOptions::default()
            },
        )
    }

    /// The command with `$OUT` set to the outside dir and git's identity given.
    fn script(&self, command: &str) -> String {
        format!(
            "export OUT='{}' HOME=\"$PWD\" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t \
             GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
             GIT_COMMITTER_EMAIL=t@example.com\n{command}",
            self.outside.display()
        )
    }
}

async fn call(tool: &BashTool, mut args: Value) -> ToolOutput {
    agent_core::validate_arguments(&tool.parameters(), &mut args).unwrap();
    let ctx = ToolContext::new("call-1", CancellationToken::new(), |_| {});
    tool.execute(args, ctx).await.unwrap()
}

async fn bash(scene: &Scene, tool: &BashTool, command: &str) -> ToolOutput {
    call(tool, json!({"command": scene.script(command)})).await
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            llm::UserContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn layers(output: &ToolOutput) -> Value {
    output.details.as_ref().unwrap()["sandbox"]["layers"].clone()
}

#[track_caller]
fn assert_refused_with_note(output: &ToolOutput, message: &str) {
    let shown = text(output);
    assert!(output.is_error, "{shown}");
    assert!(shown.contains(message), "{shown}");
    assert!(
        shown.contains("This command ran in the sandbox")
            && shown.contains("\"escalate\": true")
            && shown.contains("\"justification\""),
        "no sandbox note: {shown}"
    );
}

fn wait_for(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !path.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    path.exists()
}

#[test]
fn scenarios_hold_without_landlock_or_namespaces() {
    layers::run_scenarios_degraded("scenario_");
}

#[test]
fn scenarios_hold_for_a_user_that_is_not_root() {
    use std::os::unix::fs::PermissionsExt;
    if !common::running_as_root() {
        // This run's own scenarios are an ordinary user's.
        // SAFETY: geteuid cannot fail.
        assert_ne!(unsafe { libc::geteuid() }, 0);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("bash_sandbox");
    common::copy_executable(&std::env::current_exe().unwrap(), &copy);
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(&copy)
        .args(["scenario_", "--test-threads=2"])
        .current_dir(dir.path())
        .env(EXPECT_UID, "65534")
        .env("HOME", "/nonexistent")
        .env_remove("TMPDIR")
        .output()
        .unwrap();
    let all = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the scenarios failed as nobody:\n{all}"
    );
    assert!(
        all.contains("test result: ok") && !all.contains("running 0 tests"),
        "{all}"
    );
}

#[tokio::test]
async fn scenario_a_refused_write_tells_the_model_how_to_escalate() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, None);
    let ok = bash(&scene, &tool, "touch inside.txt && echo made").await;
    assert!(!ok.is_error, "{}", text(&ok));
    assert!(scene.ws.join("inside.txt").exists());
    assert!(!text(&ok).contains("sandbox"), "{}", text(&ok));
    let refused = bash(&scene, &tool, "touch \"$OUT/outside\"").await;
    let expected = layers::available(&["userns", "mountns", "landlock", "seccomp"]);
    assert_eq!(layers(&refused), expected.join("+"));
    if !layers::writes_held() {
        // Nothing confines the write here: it happens, the report says why, and the result
        // lists what was left out.
        missing_is_reported(Layer::Landlock);
        assert!(!refused.is_error, "{}", text(&refused));
        assert!(scene.outside.join("outside").exists());
        let left_out = &refused.details.as_ref().unwrap()["sandbox"]["left_out"];
        assert!(left_out.to_string().contains("Landlock"), "{left_out}");
        return;
    }
    assert_refused_with_note(&refused, layers::write_refusal());
    assert!(text(&refused).contains(&format!("it may write only in {}", scene.ws.display())));
    // The UI is told which lines are the model's, to say them its own way.
    let details = refused.details.as_ref().unwrap();
    assert_eq!(details["sandbox_refused"], true);
    let for_model = details["for_model"].to_string();
    assert!(
        for_model.contains("[Exit code 1.]") && for_model.contains("escalate"),
        "{for_model}"
    );
    assert!(!scene.outside.join("outside").exists());
    // A failure that is not the sandbox's gets no note.
    let other = bash(&scene, &tool, "exit 3").await;
    assert!(other.is_error);
    assert!(!text(&other).contains("sandbox"), "{}", text(&other));
}

#[tokio::test]
async fn scenario_escalate_runs_outside_the_sandbox() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, None);
    let out = call(
        &tool,
        json!({
            "command": scene.script("touch \"$OUT/escalated\""),
            "escalate": true,
            "justification": "write the build cache beside the workspace",
        }),
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(scene.outside.join("escalated").exists());
    assert_eq!(out.details.as_ref().unwrap()["sandbox"], Value::Null);
    // Escalation is per call: the next one is confined again.
    let again = bash(&scene, &tool, "touch \"$OUT/again\"").await;
    assert_eq!(again.is_error, has(Layer::Landlock));
    assert_eq!(scene.outside.join("again").exists(), !has(Layer::Landlock));
}

#[tokio::test]
async fn scenario_git_config_and_hooks_are_read_only_but_git_commits() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, None);
    let init = bash(
        &scene,
        &tool,
        "git init -q && echo a > a && git add a && git commit -qm one && echo committed",
    )
    .await;
    assert!(!init.is_error, "{}", text(&init));
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        let hook = bash(&scene, &tool, "echo 'echo pwned' > .git/hooks/pre-commit").await;
        assert!(!hook.is_error, "{}", text(&hook));
        return;
    }
    let hook = bash(&scene, &tool, "echo 'echo pwned' > .git/hooks/pre-commit").await;
    assert_refused_with_note(&hook, "Read-only file system");
    assert!(text(&hook).contains(".git/hooks, .git/config and .coding-agent/ are read-only"));
    let config = bash(&scene, &tool, "echo '[alias] x = !evil' >> .git/config").await;
    assert_refused_with_note(&config, "Read-only file system");
    let commit = bash(
        &scene,
        &tool,
        "echo b >> a && git commit -qam two && git log --oneline",
    )
    .await;
    assert!(!commit.is_error, "{}", text(&commit));
    assert_eq!(text(&commit).lines().count(), 2, "{}", text(&commit));
    assert!(!scene.ws.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn scenario_background_jobs_and_grandchildren_stay_confined() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, Some(false));
    let out = bash(
        &scene,
        &tool,
        "(sleep 0.2; touch \"$OUT/outside2\" 2> bg.err; echo done > bg.done) > /dev/null 2>&1 &\n\
         echo started",
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(wait_for(&scene.ws.join("bg.done"), Duration::from_secs(30)));
    let errors = std::fs::read_to_string(scene.ws.join("bg.err")).unwrap();
    if !layers::writes_held() {
        missing_is_reported(Layer::Landlock);
        assert!(scene.outside.join("outside2").exists());
        return;
    }
    assert!(errors.contains(layers::write_refusal()), "{errors}");
    assert!(!scene.outside.join("outside2").exists());
    let grandchild = bash(&scene, &tool, "bash -c 'sh -c \"touch \\\"$OUT/deep\\\"\"'").await;
    assert_refused_with_note(&grandchild, layers::write_refusal());
    assert!(!scene.outside.join("deep").exists());
}

#[tokio::test]
async fn scenario_network_off_is_explained() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, Some(false));
    let out = bash(
        &scene,
        &tool,
        "perl -MSocket -e 'socket(my $s, AF_INET, SOCK_STREAM, 0) or die \"socket: $!\\n\"'",
    )
    .await;
    if !has(Layer::Seccomp) {
        missing_is_reported(Layer::Seccomp);
        assert!(!out.is_error, "{}", text(&out));
        return;
    }
    assert_refused_with_note(&out, "socket: Operation not permitted");
    assert!(
        text(&out).contains("the network is off (no IP sockets at all, localhost included"),
        "{}",
        text(&out)
    );
    let layers = layers(&out);
    let expected = layers::available(&["landlock", "seccomp"]).join("+");
    assert!(layers.as_str().unwrap().ends_with(&expected), "{layers}");
}

#[tokio::test]
async fn scenario_read_only_refuses_writes_in_the_workspace() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::ReadOnly, None);
    let out = bash(&scene, &tool, "echo x > new.txt").await;
    if !layers::writes_held() {
        missing_is_reported(Layer::Landlock);
        assert!(!out.is_error, "{}", text(&out));
        return;
    }
    assert_refused_with_note(&out, layers::write_refusal());
    assert!(
        text(&out).contains("it may not write any file"),
        "{}",
        text(&out)
    );
    assert!(!scene.ws.join("new.txt").exists());
    let read = bash(&scene, &tool, "ls -a > /dev/null && echo read").await;
    assert!(!read.is_error, "{}", text(&read));
}

#[tokio::test]
async fn the_schema_offers_escalation_and_the_description_explains_it() {
    let tool = BashTool::new(std::env::temp_dir());
    let params = tool.parameters();
    assert_eq!(params["properties"]["escalate"]["type"], "boolean");
    assert_eq!(params["properties"]["justification"]["type"], "string");
    assert_eq!(params["required"], json!(["command"]));
    assert!(tool.description().contains("`escalate`"));
    assert!(tool.description().contains("`justification`"));
}

#[tokio::test]
async fn without_a_sandbox_commands_run_unconfined() {
    let scene = Scene::new();
    let tool = BashTool::new(scene.ws.clone());
    let out = bash(&scene, &tool, "touch \"$OUT/free\"").await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(scene.outside.join("free").exists());
    assert_eq!(out.details.as_ref().unwrap()["sandbox"], Value::Null);
}

#[tokio::test]
async fn scenario_a_git_redirection_is_refused() {
    expect_user();
    let scene = Scene::new();
    let init = bash(
        &scene,
        &scene.tool(SandboxMode::WorkspaceWrite, None),
        "git init -q",
    )
    .await;
    assert!(!init.is_error, "{}", text(&init));
    // Made after `git init`, as the host makes it at startup.
    let tool = scene.tool(SandboxMode::WorkspaceWrite, None);
    let refused = format!(
        "[Refused: a command created {}: a redirection that makes git take its config and \
         hooks from another directory, which commands may not write.",
        scene.ws.join(".git/commondir").display()
    );
    // .git/commondir cannot be bind-mounted before it exists: the kernel lets it through,
    // here from a background job that outlives its command.
    let out = bash(
        &scene,
        &tool,
        "(sleep 0.2; echo \"$OUT\" > .git/commondir; touch made) > /dev/null 2>&1 &",
    )
    .await;
    assert!(!text(&out).contains("Refused"), "{}", text(&out));
    assert!(wait_for(&scene.ws.join("made"), Duration::from_secs(30)));
    // The next command's result refuses it: removed, and said (the details reach the user).
    let next = bash(&scene, &tool, "true").await;
    assert!(text(&next).contains(&refused), "{}", text(&next));
    assert!(text(&next).contains("It was removed."), "{}", text(&next));
    assert!(!scene.ws.join(".git/commondir").exists());
    let details = next.details.as_ref().unwrap();
    assert_eq!(
        details["refused_planted"][0]["path"],
        json!(scene.ws.join(".git/commondir").display().to_string())
    );
    let after = bash(&scene, &tool, "true").await;
    assert!(!text(&after).contains("Refused"), "{}", text(&after));
}

/// A `.coding-agent/` that did not exist cannot be bound read-only: a command that creates
/// one is refused after the fact (issue 45), while one the user let run unconfined keeps
/// what it made, and a planted one from before is still refused after it.
#[tokio::test]
async fn scenario_a_created_project_config_is_refused_unless_approved() {
    expect_user();
    let scene = Scene::new();
    let tool = scene.tool(SandboxMode::WorkspaceWrite, None);
    let project = scene.ws.join(".coding-agent");
    let out = bash(
        &scene,
        &tool,
        "mkdir .coding-agent && echo 'model = \"x\"' > .coding-agent/config.toml",
    )
    .await;
    let shown = text(&out);
    assert!(
        shown.contains(&format!(
            "[Refused: a command created {}: the repository's agent settings",
            project.display()
        )) && shown.contains("It was removed."),
        "{shown}"
    );
    assert!(!project.exists());
    assert_eq!(
        out.details.as_ref().unwrap()["refused_planted"][0]["path"],
        json!(project.display().to_string())
    );

    // An unconfined command the user approved (escalate) may create it.
    let escalated = call(
        &tool,
        json!({
            "command": scene.script("mkdir .coding-agent && touch .coding-agent/SYSTEM.md"),
            "escalate": true,
            "justification": "the user asked for a project prompt",
        }),
    )
    .await;
    assert!(!escalated.is_error, "{}", text(&escalated));
    let next = bash(&scene, &tool, "true").await;
    assert!(!text(&next).contains("Refused"), "{}", text(&next));
    assert!(project.join("SYSTEM.md").exists());
}
