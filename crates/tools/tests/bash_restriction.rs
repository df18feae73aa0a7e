//! The read-only restriction of the bash tool (plan mode, a read-only subagent): while it
//! holds, a command that writes changes nothing — refused outright where nothing on the
//! machine can confine it, confined read-only where something can — and asking to run
//! outside the sandbox does not get it out.
#![cfg(unix)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::{Tool, ToolContext};
use sandbox::{Capabilities, Policy, Restriction, Sandbox, SandboxMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tools::{BashOptions, BashTool};

fn tool(ws: &std::path::Path, read_only: Sandbox, holds: Arc<AtomicBool>) -> BashTool {
    let restriction = Restriction::new(Arc::new(read_only), move || holds.load(Ordering::SeqCst));
    BashTool::with_options(
        ws.to_path_buf(),
        BashOptions {
            restriction: Some(restriction),
            ..BashOptions::default()
        },
    )
}

async fn run(tool: &BashTool, args: serde_json::Value) -> Result<String, String> {
    let ctx = ToolContext::new("c1", CancellationToken::new(), |_| {});
    tool.execute(args, ctx)
        .await
        .map(|out| out.plain_text())
        .map_err(|e| e.0)
}

#[tokio::test]
async fn a_restricted_command_changes_nothing_on_any_machine() {
    let ws = tempfile::tempdir_in("/var/tmp").unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    std::fs::write(ws_path.join("a.txt"), "original\n").unwrap();
    let policy = || Policy::new(SandboxMode::ReadOnly, &ws_path, &[], None);
    let holds = Arc::new(AtomicBool::new(true));
    for capabilities in [Capabilities::none(), sandbox::probe()] {
        let confines = capabilities.summary(&policy()).level != sandbox::Level::None;
        let tool = tool(
            &ws_path,
            Sandbox::new(policy(), capabilities),
            holds.clone(),
        );
        for command in ["echo pwned > b.txt", "sed -i s/original/pwned/ a.txt"] {
            for escalate in [false, true] {
                let args = json!({"command": command, "escalate": escalate});
                let outcome = run(&tool, args).await;
                if !confines {
                    let err = outcome.unwrap_err();
                    assert!(
                        err.contains("only commands known to be read-only run"),
                        "{err}"
                    );
                }
            }
        }
        assert!(!ws_path.join("b.txt").exists(), "confines: {confines}");
        assert_eq!(
            std::fs::read_to_string(ws_path.join("a.txt")).unwrap(),
            "original\n"
        );
        // Reading still works.
        let read = run(&tool, json!({"command": "cat a.txt"})).await.unwrap();
        assert!(read.contains("original"), "{read}");
    }
    // Lifted (out of plan mode), the same command writes: the check above could fail.
    holds.store(false, Ordering::SeqCst);
    let tool = tool(
        &ws_path,
        Sandbox::new(policy(), Capabilities::none()),
        holds.clone(),
    );
    run(&tool, json!({"command": "echo ok > b.txt"}))
        .await
        .unwrap();
    assert!(ws_path.join("b.txt").exists());
}
