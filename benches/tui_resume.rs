//! `cargo bench --bench tui_resume`: `coding-agent --continue` on a 100 MB session (about
//! 100,000 messages) in a 120×50 pseudo-terminal, inline and on the alternate screen. Reports
//! the time from start to the first frame showing the end of the conversation, and peak RSS.
//!
//! `cargo bench --bench tui_resume -- images`: the same resume of a session of 300 turns of
//! which 100 prompts each carry a 1 MB screenshot, against the same session without them.

#[path = "common/launch.rs"]
mod launch;
#[path = "common/process.rs"]
mod process;
#[path = "common/screen.rs"]
mod screen;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_core::{AgentEvent, AgentMessage};
use launch::Launched;
use llm::{
    Api, AssistantContent, AssistantMessage, Model, ModelCost, StopReason, ThinkingLevel, ToolCall,
    ToolResultMessage, UserContent,
};
use mock_llm::{MockServer, Script};
use process::peak_rss_mb;
use session::{Home, SessionWriter};

const TARGET_BYTES: u64 = 100 * 1024 * 1024;

fn main() {
    if std::env::args().any(|a| a == "images") {
        return images();
    }
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (messages, bytes, last) = write_session(home.path(), work.path());
    println!("session: {messages} messages, {:.0} MB", bytes as f64 / 1e6);
    // First, while this process has no other child: the export's peak RSS is the children's.
    export(home.path(), work.path());
    for (mode, args) in [
        ("inline", &[][..]),
        ("alternate screen", &["--alt-screen"][..]),
    ] {
        let (first_frame, rss) = resume(home.path(), work.path(), args, &last);
        println!(
            "{mode}: first frame {:.0} ms · peak RSS {rss:.0} MB",
            first_frame.as_secs_f64() * 1000.0
        );
    }
}

/// A realistic turn: a prompt, an answer with a tool call, a sizeable tool result.
fn turn(i: usize) -> [AgentMessage; 3] {
    let id = format!("call_{i}");
    let mut answer = AssistantMessage::empty("bench", "bench");
    answer.stop_reason = StopReason::ToolUse;
    answer.content = vec![
        AssistantContent::Text {
            text: format!("Let me read file {i} to check the \"quoted\" part.\n").repeat(4),
        },
        AssistantContent::ToolCall(ToolCall::from_raw(
            id.clone(),
            "read".into(),
            &format!(r#"{{"path":"src/module_{i}.rs"}}"#),
        )),
    ];
    let result = ToolResultMessage {
        tool_call_id: id,
        tool_name: "read".into(),
        content: vec![UserContent::Text {
            text: format!("fn item_{i}() {{\n    println!(\"line\\t{i}\");\n}}\n").repeat(50),
        }],
        details: None,
        is_error: false,
        timestamp: 0,
    };
    [
        AgentMessage::user(format!("Please look at module {i}")),
        AgentMessage::Assistant(answer),
        AgentMessage::ToolResult(result),
    ]
}

/// A session of 300 turns, every third prompt with a 1 MB image attached, resumed three times
/// alternating with the same session without images.
fn images() {
    let with = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let without = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let last = write_image_session(with.0.path(), with.1.path(), true);
    write_image_session(without.0.path(), without.1.path(), false);
    for run in 1..=3 {
        for (name, (home, work)) in [("100 images", &with), ("no images", &without)] {
            let (first_frame, rss) = resume(home.path(), work.path(), &[], &last);
            println!(
                "run {run}, {name}: first frame {:.0} ms · peak RSS {rss:.0} MB",
                first_frame.as_secs_f64() * 1000.0
            );
        }
    }
}

/// 300 turns; with `images`, every third prompt carries 1 MB of its own image bytes (stored
/// beside the session by the writer, as an attached screenshot is). Returns the last prompt.
fn write_image_session(home: &Path, cwd: &Path, images: bool) -> String {
    use base64::Engine as _;
    let home = Home::new(home);
    let mut writer = SessionWriter::create(&home, cwd, &bench_model(), ThinkingLevel::Off);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..300 {
        let mut messages = turn(i);
        if images && i % 3 == 0 {
            // A PNG signature, then bytes that do not compress (as a screenshot's do not).
            let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
            while bytes.len() < 1 << 20 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.extend_from_slice(&seed.to_le_bytes());
            }
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            messages[0] = AgentMessage::User(llm::UserMessage::with_images(
                format!("Please look at module {i}"),
                vec![llm::ImageContent::new(data, "image/png")],
            ));
        }
        for message in messages {
            writer
                .record(&AgentEvent::MessageEnd { message })
                .expect("bench write");
        }
    }
    "Please look at module 299".into()
}

fn bench_model() -> Model {
    Model {
        id: "bench".into(),
        provider: "bench".into(),
        api: Api::OpenaiCompletions,
        base_url: String::new(),
        context_window: 200_000,
        max_output: 8_000,
        reasoning: false,
        images: true,
        cost: ModelCost::default(),
    }
}

/// Writes the session for `cwd`; returns its message count, size, and the last prompt.
fn write_session(home: &Path, cwd: &Path) -> (usize, u64, String) {
    let model = bench_model();
    let home = Home::new(home);
    let mut writer = SessionWriter::create(&home, cwd, &model, ThinkingLevel::Off);
    let mut count = 0;
    let mut i = 0;
    loop {
        for message in turn(i) {
            writer
                .record(&AgentEvent::MessageEnd { message })
                .expect("bench write");
            count += 1;
        }
        i += 1;
        let size = std::fs::metadata(writer.path()).map_or(0, |m| m.len());
        if size >= TARGET_BYTES {
            return (count, size, format!("Please look at module {}", i - 1));
        }
    }
}

fn resume(home: &Path, cwd: &Path, args: &[&str], last: &str) -> (Duration, f64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(MockServer::start(Script::default()))
        .unwrap();
    let mut args_all = vec!["--continue"];
    args_all.extend_from_slice(args);
    let Launched {
        mut child,
        pid,
        screen,
        started,
        ..
    } = launch::agent(&server.url(), &args_all, cwd, home);
    screen.wait(Duration::from_secs(120), |c| {
        c.contains(last) && c.contains("Type a message")
    });
    let first_frame = started.elapsed();
    // Let it settle, then read the high-water mark.
    std::thread::sleep(Duration::from_millis(300));
    let rss = peak_rss_mb(pid);
    let _ = child.kill();
    let _ = child.wait();
    (first_frame, rss)
}

/// `coding-agent export` of the session to HTML, then to markdown: wall time, the page's
/// size and the export's peak RSS (it streams: a message at a time).
fn export(home: &Path, cwd: &Path) {
    let agent = std::env::var_os("BENCH_AGENT")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_coding-agent").into());
    for (format, file) in [("html", "export.html"), ("md", "export.md")] {
        let out = cwd.join(file);
        let started = Instant::now();
        let status = std::process::Command::new(&agent)
            .args(["export", "--format", format, "-o"])
            .arg(&out)
            .current_dir(cwd)
            .env("CODING_AGENT_HOME", home)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        let took = started.elapsed();
        if !status.success() {
            // An older build (BENCH_AGENT) without the command.
            println!("export {format}: this build cannot export");
            return;
        }
        let size = std::fs::metadata(&out).map_or(0, |m| m.len());
        println!(
            "export {format}: {:.0} ms · {:.0} MB written · peak RSS of the exports so far {:.0} MB",
            took.as_secs_f64() * 1000.0,
            size as f64 / 1e6,
            children_peak_rss_mb()
        );
    }
}

/// The largest peak RSS of the children waited for so far (0 where there is no getrusage).
#[cfg(not(unix))]
fn children_peak_rss_mb() -> f64 {
    0.0
}

/// The largest peak RSS of the children waited for so far.
#[cfg(unix)]
fn children_peak_rss_mb() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid rusage to fill.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss as f64 / 1024.0
}
