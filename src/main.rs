//! `coding-agent`: parses flags and wires the crates together.
//!
//! For now only the headless print mode exists: it runs one prompt with the coding tools in the
//! current directory against any OpenAI-compatible server. The interactive TUI, sessions and
//! the full CLI come with their own issues.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{Agent, AgentConfig, AgentEvent, AgentMessage};
use clap::Parser;
use llm::openai_completions::OpenAiCompletions;
use llm::{Api, Model, ModelCost, StopReason, StreamEvent, StreamOptions};

#[derive(Parser)]
#[command(version, about = "An interactive terminal coding agent")]
struct Cli {
    /// Run one prompt to completion, streaming the answer to stdout.
    #[arg(short, long, value_name = "PROMPT")]
    print: Option<String>,
    /// Base URL of an OpenAI-compatible chat-completions API.
    #[arg(
        long,
        env = "CODING_AGENT_BASE_URL",
        default_value = "https://api.openai.com/v1"
    )]
    base_url: String,
    /// Model id sent to the server.
    #[arg(long, env = "CODING_AGENT_MODEL", default_value = "gpt-5")]
    model: String,
    /// API key (default: $OPENAI_API_KEY); local servers need none.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(prompt) = cli.print.clone() else {
        eprintln!(
            "coding-agent: the interactive TUI is not built yet.\n\
             Run one prompt headless instead:\n  \
             coding-agent -p \"your prompt\" --base-url http://127.0.0.1:8080/v1 --model MODEL"
        );
        return ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    runtime.block_on(print_mode(cli, prompt))
}

async fn print_mode(cli: Cli, prompt: String) -> ExitCode {
    let model = Model {
        id: cli.model,
        provider: "openai-compatible".into(),
        api: Api::OpenaiCompletions,
        base_url: cli.base_url,
        context_window: 128_000,
        max_output: 16_384,
        reasoning: false,
        cost: ModelCost::default(),
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(err) => {
            eprintln!("coding-agent: cannot read the current directory: {err}");
            return ExitCode::from(2);
        }
    };
    let mut config = AgentConfig::new(model, Arc::new(OpenAiCompletions::default()));
    config.tools = tools::all_tools(&cwd);
    config.stream_options = StreamOptions {
        api_key: cli.api_key,
        ..StreamOptions::default()
    };
    let agent = Agent::spawn(config);
    let mut events = agent.subscribe();
    if let Err(err) = agent.prompt(AgentMessage::user(prompt)).await {
        eprintln!("coding-agent: {err}");
        return ExitCode::FAILURE;
    }
    let mut stdout = std::io::stdout().lock();
    let mut failed = false;
    while let Some(event) = events.recv().await {
        match event {
            AgentEvent::MessageUpdate {
                event: StreamEvent::TextDelta { delta, .. },
            } => {
                // A closed stdout (a pipe into `head`) ends the output, not the process.
                let _ = stdout.write_all(delta.as_bytes());
                let _ = stdout.flush();
            }
            // Tool activity goes to stderr so stdout stays the answer.
            AgentEvent::ToolExecutionStart {
                tool_name,
                arguments,
                ..
            } => eprintln!("[{tool_name}] {arguments}"),
            AgentEvent::ToolExecutionEnd { result, .. } if result.is_error => {
                eprintln!(
                    "[{}] error: {}",
                    result.tool_name,
                    first_line(&result.text())
                );
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(message),
            } if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) => {
                failed = true;
                let reason = message.error_message.unwrap_or_default();
                eprintln!("\ncoding-agent: {reason}");
            }
            AgentEvent::AgentEnd { .. } => break,
            _ => {}
        }
    }
    let _ = writeln!(stdout);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
