//! `read` of a 128 MB file that is one line costs kilobytes, not the line. Its own test binary
//! holding a single test, so the process's peak resident size measures this read alone.

mod common;

use std::io::Write;

use common::{call, text};
use serde_json::json;

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
async fn reading_a_huge_one_line_file_keeps_memory_flat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("minified.js");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let block = vec![b'x'; 1024 * 1024];
        for _ in 0..128 {
            file.write_all(&block).unwrap();
        }
        file.write_all(b"\nsecond line\n").unwrap();
    }
    // Warm up the runtime and the tool on a small file.
    std::fs::write(dir.path().join("small.txt"), "hi\n").unwrap();
    call(dir.path(), "read", json!({"path": "small.txt"}))
        .await
        .unwrap();
    let before = peak_rss();
    let out = call(dir.path(), "read", json!({"path": "minified.js"}))
        .await
        .unwrap();
    let grown = peak_rss().saturating_sub(before);
    let shown = text(&out);
    assert!(
        shown.contains("[line cut at 2000 chars]"),
        "{}",
        &shown[..100]
    );
    assert!(shown.contains("     2\tsecond line"));
    eprintln!("peak RSS grew by {:.1} MB", grown as f64 / 1048576.0);
    assert!(
        grown < 16 * 1024 * 1024,
        "peak RSS grew by {} MB",
        grown / 1048576
    );
}
