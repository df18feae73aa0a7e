//! `-p PROMPT` (the final answer on stdout) and `--mode json` (every event as a JSON line).
//! Ctrl+C aborts the run cleanly: running commands are killed and the session is saved.

use std::io::Write;
use std::process::ExitCode;

use agent_core::{AgentEvent, AgentMessage};
use llm::StopReason;

use crate::setup::Setup;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The final answer; tool activity and errors on stderr.
    Answer,
    /// Every event, one JSON object per line.
    Events,
}

pub async fn run(setup: Setup, prompt: String, output: Output) -> ExitCode {
    let Setup {
        agent,
        sessions,
        mcp,
        ..
    } = setup;
    let mut events = agent.subscribe();
    // Nobody watches a status line here: the first model call has every server's tools, or
    // the reason it has none (bounded by each server's startup timeout).
    if let Some(mcp) = &mcp {
        mcp.wait_ready().await;
        let required = mcp.required_failures();
        if !required.is_empty() {
            for (name, error) in required {
                eprintln!("coding-agent: the required MCP server `{name}` failed: {error}");
            }
            return ExitCode::FAILURE;
        }
        if output == Output::Answer {
            for server in mcp.status().servers {
                if let Some(error) = server.error {
                    eprintln!("coding-agent: MCP server `{}` failed: {error}", server.name);
                }
            }
        }
    }
    if let Err(err) = agent.prompt(AgentMessage::user(prompt)).await {
        eprintln!("coding-agent: {err}");
        return ExitCode::FAILURE;
    }
    let mut stdout = std::io::stdout().lock();
    let mut stop = stop_signals();
    let mut last = None;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = events.recv() => match event {
                Some(event) => event,
                None => break,
            },
            _ = stop.recv() => {
                if interrupted {
                    exit_at_once();
                }
                interrupted = true;
                eprintln!("\ncoding-agent: interrupted, stopping… (again to quit at once)");
                agent.stop();
                continue;
            }
        };
        if output == Output::Events {
            // A closed stdout (piped into `head`) ends the output, not the run.
            let line = serde_json::to_string(&event).unwrap_or_default();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
        match &event {
            AgentEvent::ToolExecutionStart {
                tool_name,
                arguments,
                ..
            } if output == Output::Answer => {
                eprintln!("[{tool_name}] {}", one_line(&arguments.to_string(), 200));
            }
            AgentEvent::ToolExecutionEnd { result, .. }
                if output == Output::Answer && result.is_error =>
            {
                eprintln!(
                    "[{}] error: {}",
                    result.tool_name,
                    one_line(&result.text(), 200)
                );
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(message),
            } => {
                if message.stop_reason == StopReason::Length && output == Output::Answer {
                    eprintln!(
                        "coding-agent: warning: the reply was cut off at the output token limit; \
                         it is incomplete"
                    );
                }
                last = Some(message.clone());
            }
            // Nothing else queues messages in these modes: the first run's end is the end.
            AgentEvent::AgentEnd { .. } => break,
            _ => {}
        }
    }
    for error in sessions.recorder().finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    let Some(message) = last else {
        return ExitCode::FAILURE;
    };
    if output == Output::Answer {
        let _ = writeln!(stdout, "{}", message.text());
    }
    if interrupted {
        eprintln!("coding-agent: aborted");
        return ExitCode::FAILURE;
    }
    match message.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            if output == Output::Answer {
                eprintln!(
                    "coding-agent: {}",
                    message
                        .error_message
                        .unwrap_or_else(|| "the run failed".into())
                );
            }
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// A second interrupt while stopping: leave now. What the session recorder had not written yet
/// is lost, and a tool call left open is closed when the session is loaded again; running
/// commands are killed by the tools' watchdog when this process is gone.
pub fn exit_at_once() -> ! {
    eprintln!("coding-agent: stopped at once");
    std::process::exit(130)
}

/// SIGINT, SIGTERM and SIGHUP, as one stream: each asks to stop cleanly.
pub fn stop_signals() -> tokio::sync::mpsc::UnboundedReceiver<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for kind in [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ] {
        let tx = tx.clone();
        if let Ok(mut stream) = signal(kind) {
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
            });
        }
    }
    rx
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
