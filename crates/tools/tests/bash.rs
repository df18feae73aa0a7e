//! bash: output, exit codes, limits, timeouts, aborts and background jobs.
//!
//! Unix only: the commands are bash's, and the checks are process groups and signals.
#![cfg(unix)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{call, call_with, text};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use tools::group_alive;

/// Waits (up to `limit`) for the process group to disappear; true if it did.
async fn group_gone_within(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !group_alive(pgid as u32) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    !group_alive(pgid as u32)
}

/// Waits for `path` to hold a pid written by the command.
async fn read_pid(path: &std::path::Path) -> i32 {
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the command never wrote its pid");
}

#[tokio::test]
async fn runs_in_the_working_directory_with_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.txt"), "").unwrap();
    let out = call(
        dir.path(),
        "bash",
        json!({"command": "ls; echo oops >&2; read x || echo no-stdin"}),
    )
    .await
    .unwrap();
    let shown = text(&out);
    assert!(
        shown.contains("here.txt") && shown.contains("oops") && shown.contains("no-stdin"),
        "{shown}"
    );
    assert!(!out.is_error);
    assert_eq!(out.details.unwrap()["exit_code"], 0);
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        dir.path(),
        "bash",
        json!({"command": "echo failing; exit 3"}),
    )
    .await
    .unwrap();
    assert!(out.is_error);
    assert_eq!(text(&out), "failing\n[Exit code 3.]");
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_saves_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(dir.path(), "bash", json!({"command": "seq 1 100000"}))
        .await
        .unwrap();
    let shown = text(&out);
    assert!(
        shown
            .starts_with("[Output truncated: showing the last 2000 lines of 100000. Full output: "),
        "{}",
        &shown[..120]
    );
    assert!(
        shown.ends_with("\n100000\n") || shown.ends_with("\n100000"),
        "{}",
        &shown[shown.len() - 30..]
    );
    assert!(!shown.contains("\n97999\n"));
    let path = out.details.unwrap()["full_output"]
        .as_str()
        .unwrap()
        .to_string();
    let saved = std::fs::read_to_string(&path).unwrap();
    assert_eq!(saved.lines().count(), 100_000);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn partial_output_streams_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let updates = Arc::new(Mutex::new(Vec::new()));
    // The second line waits for the first update, so the test needs no sleep to see one.
    let flag = dir.path().join("seen");
    let command = format!(
        "echo first; while [ ! -e {} ]; do sleep 0.02; done; echo second",
        flag.display()
    );
    let task = {
        let (dir, updates) = (dir.path().to_path_buf(), updates.clone());
        tokio::spawn(async move {
            call_with(
                &dir,
                "bash",
                json!({"command": command}),
                CancellationToken::new(),
                updates,
            )
            .await
        })
    };
    loop {
        if updates
            .lock()
            .unwrap()
            .iter()
            .any(|u| text(u).contains("first"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    std::fs::write(&flag, "").unwrap();
    let out = task.await.unwrap().unwrap();
    assert_eq!(text(&out), "first\nsecond\n");
}

#[tokio::test]
async fn timeout_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("echo $$ > {}; sleep 30 & sleep 30", pid_file.display());
    let out = call(
        dir.path(),
        "bash",
        json!({"command": command, "timeout": 1}),
    )
    .await
    .unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("Timed out after 1s"), "{}", text(&out));
    let pgid = read_pid(&pid_file).await;
    assert!(
        group_gone_within(pgid, Duration::from_secs(1)).await,
        "group {pgid} survived"
    );
}

#[tokio::test]
async fn abort_kills_grandchildren_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // A grandchild that ignores SIGTERM needs the SIGKILL that follows.
    let command = format!(
        "echo $$ > {}; bash -c 'trap \"\" TERM; sleep 30' & sleep 30",
        pid_file.display()
    );
    let cancel = CancellationToken::new();
    let task = {
        let (dir, cancel) = (dir.path().to_path_buf(), cancel.clone());
        tokio::spawn(async move {
            call_with(
                &dir,
                "bash",
                json!({"command": command}),
                cancel,
                Default::default(),
            )
            .await
        })
    };
    let pgid = read_pid(&pid_file).await;
    let aborted_at = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("Aborted"), "{}", text(&out));
    assert!(
        group_gone_within(pgid, Duration::from_secs(1)).await,
        "group {pgid} survived"
    );
    assert!(aborted_at.elapsed() < Duration::from_secs(5), "abort hung");
}

#[tokio::test]
async fn a_background_job_does_not_hold_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("sleep 100 & echo $! > {}; echo started", pid_file.display());
    let task = tokio::spawn({
        let dir = dir.path().to_path_buf();
        async move { call(&dir, "bash", json!({"command": command})).await }
    });
    // Bounded by a generous timeout: a hang here is the bug this test exists for.
    let out = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call returned")
        .unwrap()
        .unwrap();
    assert_eq!(text(&out), "started\n");
    let pid = read_pid(&pid_file).await;
    // The job the command started on purpose keeps running; clean it up.
    // SAFETY: plain signal to a pid we started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}
