//! SIGKILL the agent while bash runs `sleep 60; echo`: the watchdog kills the command's whole
//! process group, grandchildren included. The "agent" is this test binary re-executed with an
//! environment variable, running the bash tool.
//!
//! Unix only: the commands are bash's, and the checks are process groups and signals.
#![cfg(unix)]

use std::process::Command;
use std::time::{Duration, Instant};

use agent_core::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tools::{BashTool, group_alive};

const AGENT_ENV: &str = "TOOLS_TEST_AGENT_PID_FILE";
const TEST_NAME: &str = "a_killed_agent_takes_its_commands_with_it";

/// The re-executed side: runs the command through the bash tool until it is killed.
fn be_the_agent(pid_file: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let tool = BashTool::new(std::env::temp_dir());
        let command = format!(
            "echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; sleep 60; echo done"
        );
        let ctx = ToolContext::new("call-1", CancellationToken::new(), |_| {});
        let _ = tool.execute(json!({"command": command}), ctx).await;
    });
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a `sleep` process runs in group `pgid`.
fn sleep_in_group(pgid: i32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((comm, rest)) = stat.split_once(") ") else {
            return false;
        };
        let pgrp = rest.split_whitespace().nth(2).and_then(|p| p.parse().ok());
        comm.ends_with("(sleep") && pgrp == Some(pgid) && !rest.starts_with('Z')
    })
}

#[test]
fn a_killed_agent_takes_its_commands_with_it() {
    if let Ok(pid_file) = std::env::var(AGENT_ENV) {
        be_the_agent(&pid_file);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pgid");
    let mut agent = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(AGENT_ENV, &pid_file)
        .spawn()
        .unwrap();
    wait_for("the command to start", Duration::from_secs(30), || {
        pid_file.exists()
    });
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for("the sleep to start", Duration::from_secs(10), || {
        sleep_in_group(pgid)
    });

    agent.kill().unwrap(); // SIGKILL: nothing in the agent can react
    agent.wait().unwrap();

    let gone = Instant::now() + Duration::from_secs(10);
    while group_alive(pgid as u32) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = group_alive(pgid as u32);
    if survived {
        // Clean up before failing.
        // SAFETY: a plain signal to the group the test started.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
    assert!(!survived, "group {pgid} outlived the killed agent");
}
