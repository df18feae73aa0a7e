//! Memory stays bounded when a server sends one 50 MB event. Its own test binary holding a
//! single test, so the process's peak resident size measures this stream alone.

mod support;

use llm::{Api, StopReason};
use mock_llm::{Fault, Reply};
use support::{collect, options, serve};

/// The process's peak resident set size in bytes (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test]
async fn a_50_mb_event_does_not_cost_50_mb() {
    // Warm up: the runtime, the server, a connection and a normal reply.
    let server = serve(vec![
        Reply::text("warm up"),
        Reply::text("before the flood").with_fault(Fault::HugeEvent {
            after: 2,
            bytes: 50 * 1024 * 1024,
        }),
    ])
    .await;
    collect(&server, Api::OpenaiCompletions, options()).await;
    let before = peak_rss();
    let (_, message) = collect(&server, Api::OpenaiCompletions, options()).await;
    let grown = peak_rss().saturating_sub(before);
    assert_eq!(message.stop_reason, StopReason::Error);
    let reason = message.error_message.unwrap();
    assert!(reason.contains("larger than 16 MB"), "{reason}");
    eprintln!("peak RSS grew by {:.1} MB", grown as f64 / 1048576.0);
    assert!(
        grown < 48 * 1024 * 1024,
        "peak RSS grew by {} MB",
        grown / 1048576
    );
}
