//! `coding-agent`: parses flags and wires the crates together.
//!
//! Without `-p` it opens the interactive TUI; with `-p` it runs one prompt headless. Both use
//! the coding tools in the current directory against an OpenAI-compatible server.

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
    /// A first prompt for the interactive session.
    #[arg(value_name = "PROMPT", conflicts_with = "print")]
    prompt: Option<String>,
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    match cli.print.clone() {
        Some(prompt) => runtime.block_on(print_mode(cli, prompt)),
        None => runtime.block_on(interactive(cli)),
    }
}

fn model(cli: &Cli) -> Model {
    Model {
        id: cli.model.clone(),
        provider: "openai-compatible".into(),
        api: Api::OpenaiCompletions,
        base_url: cli.base_url.clone(),
        context_window: 128_000,
        max_output: 16_384,
        reasoning: false,
        cost: ModelCost::default(),
    }
}

/// An agent with every tool, working in `cwd`.
fn agent(cli: &Cli, cwd: &std::path::Path) -> Agent {
    let mut config = AgentConfig::new(model(cli), Arc::new(OpenAiCompletions::default()));
    config.tools = tools::all_tools(cwd);
    config.stream_options = StreamOptions {
        api_key: cli.api_key.clone(),
        ..StreamOptions::default()
    };
    Agent::spawn(config)
}

fn cwd() -> Result<std::path::PathBuf, ExitCode> {
    std::env::current_dir().map_err(|err| {
        eprintln!("coding-agent: cannot read the current directory: {err}");
        ExitCode::from(2)
    })
}

async fn interactive(cli: Cli) -> ExitCode {
    let cwd = match cwd() {
        Ok(cwd) => cwd,
        Err(code) => return code,
    };
    let agent = agent(&cli, &cwd);
    if let Some(prompt) = &cli.prompt
        && let Err(err) = agent.prompt(AgentMessage::user(prompt)).await
    {
        eprintln!("coding-agent: {err}");
        return ExitCode::FAILURE;
    }
    let options = tui::Options {
        cwd,
        model: cli.model.clone(),
        thinking: None,
        context_window: model(&cli).context_window,
        history: Vec::new(),
    };
    match tui::run(agent, options).await {
        Ok(()) => {
            println!("Bye. This session was not saved: sessions are not built yet.");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("coding-agent: terminal error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn print_mode(cli: Cli, prompt: String) -> ExitCode {
    let cwd = match cwd() {
        Ok(cwd) => cwd,
        Err(code) => return code,
    };
    let agent = agent(&cli, &cwd);
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
