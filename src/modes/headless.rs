//! `-p PROMPT` (the final answer on stdout) and `--mode json` (every event as a JSON line).
//! Ctrl+C aborts the run cleanly: running commands are killed and the session is saved.

use std::io::Write;
use std::process::ExitCode;

use agent_core::{AgentEvent, AgentMessage, HookOutcome};
use llm::StopReason;

use crate::setup::Setup;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The final answer; tool activity and errors on stderr.
    Answer,
    /// Every event, one JSON object per line.
    Events,
}

pub async fn run(
    setup: Setup,
    prompt: String,
    images: Vec<llm::ImageContent>,
    output: Output,
) -> ExitCode {
    // `-p "/review src/lib.rs"` runs the template, as typing it in the TUI does.
    let prompt = match setup.expand(&prompt) {
        Ok(prompt) => prompt,
        Err(err) => {
            eprintln!("coding-agent: {err}");
            return ExitCode::from(2);
        }
    };
    let Setup {
        agent,
        sessions,
        hook_runs,
        model,
        mcp,
        ..
    } = setup;
    let mut events = agent.subscribe();
    // The session_start hooks ran before anyone listened: their runs go first.
    for run in hook_runs {
        agent.announce_hook_run(run);
    }
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
    let message = AgentMessage::User(llm::UserMessage::with_images(prompt, images));
    if let Err(err) = agent.prompt(message).await {
        eprintln!("coding-agent: {err}");
        return ExitCode::FAILURE;
    }
    let mut stdout = std::io::stdout().lock();
    let mut stop = stop_signals();
    let mut last = None;
    let mut interrupted = false;
    let mut plan = None;
    let mut stopped_by = None;
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
            if matches!(event, AgentEvent::AgentStart) {
                // What the run talks to, with the context window the server reported (a
                // detected local server's is its own, not a registry guess).
                let model = AgentEvent::ModelChange {
                    model: model.clone(),
                };
                let line = serde_json::to_string(&model).unwrap_or_default();
                let _ = writeln!(stdout, "{line}");
            }
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
                if output == Output::Answer && refused_planted(result).is_some() =>
            {
                // Said to the user, not only to the model: git must not be run, nor the
                // repository trusted, on what a command planted.
                for (path, what) in refused_planted(result).into_iter().flatten() {
                    eprintln!(
                        "coding-agent: warning: a command created {path} ({what}); it was \
                         refused (removed)"
                    );
                }
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
            AgentEvent::HookRun { run }
                if output == Output::Answer && run.outcome != HookOutcome::Ok =>
            {
                let outcome = serde_json::to_value(run.outcome).unwrap_or_default();
                eprintln!(
                    "[hook {}] {}: {}",
                    run.event,
                    outcome.as_str().unwrap_or_default(),
                    one_line(run.message.as_deref().unwrap_or(&run.command), 200)
                );
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Notice(notice),
            } if output == Output::Answer => eprintln!("coding-agent: {}", notice.text),
            // In plan mode the answer is the plan the run ended with.
            AgentEvent::ToolExecutionEnd { result, .. }
                if result.tool_name == tools::SUBMIT_PLAN && !result.is_error =>
            {
                plan = tools::submitted_plan(result.details.as_ref());
            }
            // Nothing else queues messages in these modes: the first run's end is the end.
            AgentEvent::AgentEnd { summary, .. } => {
                stopped_by = summary.stopped_by;
                break;
            }
            _ => {}
        }
    }
    for error in sessions.recorder().finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    let Some(message) = last else {
        return ExitCode::FAILURE;
    };
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    if let Some(plan) = plan.filter(|_| output == Output::Answer) {
        let _ = writeln!(stdout, "{plan}");
    } else if output == Output::Answer && !(failed && message.text().is_empty()) {
        // A run that failed before any text prints nothing, not an empty line.
        let _ = writeln!(stdout, "{}", message.text());
    }
    if let Some(stop) = stopped_by {
        eprintln!("coding-agent: stopped: {}", stop.explain());
        return ExitCode::from(match stop {
            // As timeout(1) says it.
            agent_core::RunStop::Deadline => 124,
            agent_core::RunStop::RequirementUnmet => 1,
        });
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

/// The signals that ask to stop cleanly (SIGINT, SIGTERM, SIGHUP; Ctrl+C, Ctrl+Break,
/// closing the console on Windows), as one stream.
pub fn stop_signals() -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    if let Ok(mut signals) = platform::signals::Signals::stops() {
        tokio::spawn(async move {
            while signals.recv().await.is_some() {
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// What a bash result says it refused (protected paths a command created), as
/// `(path, what it is)`, when there is anything.
fn refused_planted(result: &llm::ToolResultMessage) -> Option<Vec<(String, String)>> {
    let list = result
        .details
        .as_ref()?
        .get("refused_planted")?
        .as_array()?;
    let planted: Vec<(String, String)> = list
        .iter()
        .filter_map(|p| {
            let text = |key: &str| p.get(key)?.as_str().map(str::to_string);
            Some((text("path")?, text("what")?))
        })
        .collect();
    (!planted.is_empty()).then_some(planted)
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
