//! `cargo bench --bench tui_stream`: the release binary in a pseudo-terminal while mock-llm
//! streams a 200 KB markdown reply in 4,000 deltas as fast as it can. Reports the process CPU
//! for the whole stream, how long after the last byte the last line is on screen, and peak RSS.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::{MockServer, Reply, Script};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const DELTAS: usize = 4_000;
const REPLY_BYTES: usize = 200_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let reply = markdown_reply();
    let chunk = reply.chars().count().div_ceil(DELTAS);
    let server = runtime
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(&reply).with_chunk_size(chunk)],
        }))
        .unwrap();

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
    command.args(["--base-url", &server.url(), "--model", "bench"]);
    command.cwd(std::env::temp_dir());
    command.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let pid = child.process_id().unwrap();
    let screen = Arc::new(Mutex::new(vt100::Parser::new(
        NonZeroU16::new(50).unwrap(),
        NonZeroU16::new(120).unwrap(),
        0,
    )));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let mut writer = pty.master.take_writer().unwrap();
    let parser = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            parser.lock().unwrap().process(&buf[..n]);
        }
    });
    let wait_for = |text: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if screen.lock().unwrap().screen().contents().contains(text) {
                return Instant::now();
            }
            assert!(Instant::now() < deadline, "never showed {text:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    wait_for("Type a message");
    let cpu_before = cpu_seconds(pid);
    writer.write_all(b"go\r").unwrap();
    writer.flush().unwrap();
    let shown = wait_for("END OF REPLY");
    let last_byte = runtime.block_on(async {
        loop {
            if let Some(t) = server.stream_end_times().first() {
                return *t;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss = peak_rss_mb(pid);
    let lag = shown.saturating_duration_since(last_byte);
    println!(
        "reply: {} KB in {DELTAS} deltas of {chunk} chars",
        reply.len() / 1000
    );
    println!("process CPU for the stream: {cpu:.2} s (target < 0.4 s)");
    println!(
        "last line on screen {:.0} ms after the last byte (target < 300 ms)",
        lag.as_secs_f64() * 1000.0
    );
    println!("peak RSS: {rss:.1} MB (target < 40 MB)");
    let _ = child.kill();
}

/// Markdown of about 200 KB: headings, paragraphs, lists and code, ending with a marker line.
fn markdown_reply() -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < REPLY_BYTES - 100 {
        i += 1;
        out.push_str(&format!("## Section {i}\n\nThis paragraph explains step {i} with **bold** words, `inline code` and a [link](https://example.com/{i}). It goes on long enough to wrap across a couple of lines in a normal terminal window.\n\n- first point of {i}\n- second point with `code`\n- third point\n\n```rust\nfn step_{i}(x: u32) -> u32 {{\n    x * {i} + 1\n}}\n```\n\n"));
    }
    out.push_str("END OF REPLY\n");
    out
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}
