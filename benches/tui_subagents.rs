//! `cargo bench --bench tui_subagents`: the release binary in a 120×50 pseudo-terminal while
//! four subagents stream at once. The parent's first reply fans out four `task` calls; mock-llm
//! then streams each child a 50 KB markdown answer in 1,000 deltas 10 ms apart (four streams
//! at a real model's pace, together), and the parent's last reply ends with a marker. While the
//! children stream, characters are typed into the editor one at a time and the time until each
//! shows on screen is measured (a frame is 16 ms at 60 Hz). Three cases: the main view, one
//! child's transcript shown (Ctrl+G), and that with answers twice as long. Reports the CPU of
//! the whole fan-out, the key latencies, peak RSS, and the CPU over 2 s once everything is
//! done.

#[path = "common/launch.rs"]
mod launch;
#[path = "common/process.rs"]
mod process;
#[path = "common/screen.rs"]
mod screen;

use std::io::Write;
use std::time::{Duration, Instant};

use launch::Launched;
use mock_llm::{MockServer, Reply, Script};
use process::{cpu_seconds, peak_rss_mb};

const CHILDREN: usize = 4;
/// Deltas per 50 KB: one every 50 characters, 10 ms apart.
const DELTAS_PER_50_KB: usize = 1_000;

fn main() {
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    // 50 KB each with the main view; the same with one child's transcript on screen (Ctrl+G);
    // twice as long with it on screen: a cost that grew with the answer would show as more
    // than twice the CPU.
    for (bytes, view) in [(50_000, false), (50_000, true), (100_000, true)] {
        let label = format!(
            "four subagents streaming {} KB each, 10 ms deltas, {}",
            bytes / 1000,
            if view {
                "one shown (Ctrl+G)"
            } else {
                "main view"
            }
        );
        if filter.as_ref().is_some_and(|f| !label.contains(f.as_str())) {
            continue;
        }
        measure(&label, bytes, view);
    }
}

fn measure(label: &str, child_bytes: usize, view: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut fan_out = Reply::default();
    let mut replies = Vec::new();
    for n in 1..=CHILDREN {
        fan_out = fan_out.with_tool_call(
            "task",
            serde_json::json!({"description": format!("part {n}"), "prompt": format!("Job {n}: summarise part {n}.")}),
        );
        let answer = markdown(n, child_bytes);
        let deltas = DELTAS_PER_50_KB * child_bytes / 50_000;
        let chunk = answer.chars().count().div_ceil(deltas);
        replies.push(
            Reply::text(answer)
                .with_chunk_size(chunk)
                .with_delay_ms(10)
                .for_request(format!("Job {n}:")),
        );
    }
    replies.insert(0, fan_out);
    replies.push(Reply::text(
        "All four parts are summarised.\n\nEND OF REPLY",
    ));
    let server = runtime
        .block_on(MockServer::start(Script { replies }))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let Launched {
        mut child,
        pid,
        screen,
        keys,
        ..
    } = launch::agent(&server.url(), &[], work.path(), home.path());
    let wait_for = |text: &str| screen.wait(Duration::from_secs(120), |c| c.contains(text));
    wait_for("Type a message");
    let type_keys = |bytes: &[u8]| {
        let mut keys = keys.lock().unwrap();
        keys.write_all(bytes).unwrap();
        keys.flush().unwrap();
    };
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    type_keys(b"go\r");
    // The four children stream: each one's line under its task call shows it running.
    screen.wait(Duration::from_secs(60), |c| {
        c.matches("· thinking ·").count() + c.matches("· running").count() >= CHILDREN
    });
    if view {
        type_keys(b"\x07");
        wait_for("(running) · Enter steers it");
    }
    let mut latencies = Vec::new();
    let mut typed = String::new();
    for c in "steeringtextxyz".chars() {
        typed.push(c);
        let sent = Instant::now();
        type_keys(c.to_string().as_bytes());
        let shown = screen.wait(Duration::from_secs(10), |s| s.contains(typed.as_str()));
        latencies.push(shown.saturating_duration_since(sent));
        std::thread::sleep(Duration::from_millis(150));
    }
    // Take the typed text back out, so it is not sent when the run ends.
    type_keys(b"\x03");
    let done = wait_for("END OF REPLY");
    let cpu = cpu_seconds(pid) - cpu_before;
    std::thread::sleep(Duration::from_millis(500));
    let idle_before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(2));
    let idle = cpu_seconds(pid) - idle_before;
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label}: fan-out {:.1} s wall · CPU {:.2} s · key to screen median {:.1} ms, max {:.1} ms ({} keys) · peak RSS {:.1} MB · idle CPU over 2 s {:.2} s",
        done.saturating_duration_since(started).as_secs_f64(),
        cpu,
        ms(latencies[latencies.len() / 2]),
        ms(*latencies.last().unwrap()),
        latencies.len(),
        peak_rss_mb(pid),
        idle
    );
    let _ = child.kill();
    let _ = child.wait();
}

fn markdown(n: usize, bytes: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        i += 1;
        out.push_str(&format!("## Part {n}, section {i}\n\nThis paragraph explains step {i} with **bold** words, `inline code` and a [link](https://example.com/{i}).\n\n- first point\n- second point with `code`\n\n"));
    }
    out
}
