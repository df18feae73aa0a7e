//! Resuming a 100 MB session and appending one message.
//!
//! `cargo bench -p session --bench session_io` — prints load time, peak RSS (VmHWM) and the
//! median and worst append time.

use std::path::Path;
use std::time::{Duration, Instant};

use agent_core::{AgentEvent, AgentMessage};
use llm::{
    Api, AssistantContent, AssistantMessage, Model, ModelCost, StopReason, ThinkingLevel, ToolCall,
    ToolResultMessage, UserContent,
};
use session::{Home, SessionWriter, load_session};

const TARGET_BYTES: u64 = 100 * 1024 * 1024;

fn model() -> Model {
    Model {
        id: "bench".into(),
        provider: "bench".into(),
        api: Api::OpenaiCompletions,
        base_url: String::new(),
        context_window: 200_000,
        max_output: 8_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
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
            text: format!("fn item_{i}() {{\n    println!(\"line\\t{i}\");\n}}\n").repeat(60),
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

fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn record(writer: &mut SessionWriter, message: AgentMessage) {
    writer
        .record(&AgentEvent::MessageEnd { message })
        .expect("bench write");
}

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = Home::new(tmp.path());
    let mut writer =
        SessionWriter::create(&home, Path::new("/bench"), &model(), ThinkingLevel::Off);
    let started = Instant::now();
    let mut i = 0;
    loop {
        for message in turn(i) {
            record(&mut writer, message);
        }
        i += 1;
        if i % 100 == 0 && std::fs::metadata(writer.path()).map_or(0, |m| m.len()) >= TARGET_BYTES {
            break;
        }
    }
    let size = std::fs::metadata(writer.path()).map_or(0, |m| m.len());
    println!(
        "generated {:.1} MB ({} messages) in {:.2?}",
        size as f64 / 1e6,
        i * 3,
        started.elapsed()
    );

    let rss_before = vm_hwm_kb().unwrap_or(0);
    let started = Instant::now();
    let loaded = load_session(writer.path()).expect("load");
    let load_time = started.elapsed();
    let rss_after = vm_hwm_kb().unwrap_or(0);
    assert_eq!(loaded.messages.len(), i * 3);
    assert!(loaded.warnings.is_empty());
    println!(
        "load: {load_time:.2?} for {} messages; peak RSS (VmHWM) {:.0} MB (before loading {:.0} MB)",
        loaded.messages.len(),
        rss_after as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    drop(loaded);

    // The `--resume` list reads the whole file too (message count, branch count).
    let started = Instant::now();
    let listed = session::list_sessions(&home, Path::new("/bench"));
    println!(
        "list (the --resume picker) with the big session: {:.2?}, {} message(s), {} branch(es)",
        started.elapsed(),
        listed[0].message_count,
        listed[0].branches
    );
    let started = Instant::now();
    let tree = session::load_tree(writer.path()).expect("tree");
    println!(
        "tree (/tree): {:.2?} for {} nodes",
        started.elapsed(),
        tree.nodes.len()
    );
    drop(tree);

    // Appending to the big file: one message per sample, as the recorder does on message_end.
    let mut times: Vec<Duration> = (0..2_000)
        .map(|k| {
            let [_, answer, _] = turn(k);
            let started = Instant::now();
            record(&mut writer, answer);
            started.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "append one message (~{} bytes): median {:.1?}, p99 {:.1?}, max {:.1?}",
        turn(0)[1].preview().len() + 200,
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1]
    );
}
