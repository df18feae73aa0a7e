//! bash's saved output: in the directory the host gives (or a private temporary one), never
//! readable by others, capped with its end kept, and repointable when the session changes.
//!
//! Unix only: the commands are bash's, and the checks are process groups and signals.
#![cfg(unix)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use agent_core::{Tool, ToolContext, ToolOutput};
use common::text;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tools::{BashOptions, BashTool, SpillDir};

async fn run(tool: &BashTool, command: &str) -> ToolOutput {
    let ctx = ToolContext::new("call-1", CancellationToken::new(), |_| {});
    tool.execute(json!({"command": command}), ctx)
        .await
        .unwrap()
}

fn saved_path(out: &ToolOutput) -> std::path::PathBuf {
    out.details.as_ref().unwrap()["full_output"]
        .as_str()
        .expect("the output was saved")
        .into()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

#[tokio::test]
async fn a_huge_output_is_capped_keeping_its_end_in_the_hosts_private_dir() {
    let work = tempfile::tempdir().unwrap();
    let spill = work.path().join("session/spill");
    let cap = 1024 * 1024;
    let tool = BashTool::with_options(
        work.path().to_path_buf(),
        BashOptions {
            spill_dir: SpillDir::new(&spill),
            spill_cap: cap,
            ..BashOptions::default()
        },
    );
    // About 15 MB of output, fifteen times the cap.
    let out = run(&tool, "seq 1 2000000").await;
    let path = saved_path(&out);
    assert_eq!(path.parent(), Some(spill.as_path()));
    assert_eq!(mode(&spill), 0o700, "the directory is private");
    assert_eq!(mode(&path), 0o600, "the file is private");
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("bash-") && name.len() > 20, "{name}");
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.len() as u64 <= cap, "{} bytes", saved.len());
    assert!(saved.ends_with("\n2000000\n"), "the last line is kept");
    let numbers: Vec<u64> = saved.lines().map(|l| l.parse().unwrap()).collect();
    assert!(
        numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "whole lines, in order, from a line start"
    );
    let shown = text(&out);
    assert!(
        shown.contains("were saved to") && shown.contains("were dropped"),
        "{}",
        &shown[..300]
    );
    let dropped = out.details.as_ref().unwrap()["full_output_dropped_bytes"]
        .as_u64()
        .unwrap();
    let total: u64 = (1..=2_000_000u64)
        .map(|n| n.to_string().len() as u64 + 1)
        .sum();
    assert_eq!(dropped + saved.len() as u64, total);
}

#[tokio::test]
async fn the_default_dir_is_private_and_the_host_can_repoint_it() {
    let work = tempfile::tempdir().unwrap();
    let handle = SpillDir::default();
    let tool = BashTool::with_options(
        work.path().to_path_buf(),
        BashOptions {
            spill_dir: handle.clone(),
            ..BashOptions::default()
        },
    );
    let out = run(&tool, "seq 1 5000").await;
    let first = saved_path(&out);
    let temp_dir = first.parent().unwrap();
    assert_eq!(mode(temp_dir), 0o700);
    assert_eq!(mode(&first), 0o600);
    assert!(
        temp_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("coding-agent-bash-")
    );
    assert_eq!(
        std::fs::read_to_string(&first).unwrap().lines().count(),
        5000
    );

    // A new session: the host points the same handle elsewhere.
    let next = work.path().join("next-session");
    handle.set(&next);
    let out = run(&tool, "seq 1 5000").await;
    let second = saved_path(&out);
    assert_eq!(second.parent(), Some(next.as_path()));
    assert_ne!(first, second);
}
