//! Command-line flags.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Debug, Parser)]
#[command(version, about = "An interactive terminal coding agent", after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Subcommand>,
    /// A first prompt (interactive), or the prompt of --mode json.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Run one prompt to completion and print the final answer; piped stdin is appended.
    #[arg(short, long, value_name = "PROMPT", conflicts_with = "prompt")]
    pub print: Option<String>,
    /// Attach an image (PNG, JPEG, GIF or WebP) to the first prompt; repeatable. In the TUI
    /// without a prompt it waits in the editor.
    #[arg(short = 'i', long = "image", value_name = "PATH")]
    pub images: Vec<PathBuf>,
    /// Turn on the provider's own web search (OpenAI responses, Anthropic); config:
    /// `web_search = true`.
    #[arg(long)]
    pub search: bool,
    /// interactive (default), json (every event as a JSON line) or rpc (JSON lines both ways).
    #[arg(long, value_enum, default_value_t = Mode::Interactive)]
    pub mode: Mode,
    /// Model as PROVIDER/ID or a bare id (see --list-models).
    #[arg(short, long, env = "CODING_AGENT_MODEL")]
    pub model: Option<String>,
    /// Provider of --model, when the id alone is ambiguous or with --base-url.
    #[arg(long)]
    pub provider: Option<String>,
    /// A one-off endpoint: the model is reached at this URL with --api.
    #[arg(long, env = "CODING_AGENT_BASE_URL")]
    pub base_url: Option<String>,
    /// Wire API of --base-url: openai-completions (the default), openai-responses or
    /// anthropic-messages.
    #[arg(long, value_name = "API")]
    pub api: Option<llm::Api>,
    /// The model's context window in tokens, when the server's (or the registry's) is wrong.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// API key for this run (else the provider's environment variable or the config).
    #[arg(long, hide_env_values = true)]
    pub api_key: Option<String>,
    /// off, minimal, low, medium or high.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<llm::ThinkingLevel>,
    /// Only these tools, comma-separated (read,write,edit,bash,grep,find,ls); empty for none.
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Work in this directory.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// List the known models and exit.
    #[arg(long)]
    pub list_models: bool,
    /// Continue the latest session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "session"])]
    pub continue_session: bool,
    /// Pick a session of this directory to resume.
    #[arg(short, long, conflicts_with = "session")]
    pub resume: bool,
    /// Resume this session (a path or an id prefix).
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,
    /// With --continue, --resume or --session: copy that session's conversation into a new
    /// session and continue there, leaving the original as it is (e.g. while another process
    /// has it open).
    #[arg(long, conflicts_with = "no_session")]
    pub fork: bool,
    /// Do not save this session.
    #[arg(long)]
    pub no_session: bool,
    /// How commands are confined: read-only, workspace-write (the default) or
    /// danger-full-access.
    #[arg(long, value_name = "MODE", env = "CODING_AGENT_SANDBOX")]
    pub sandbox: Option<sandbox::SandboxMode>,
    /// When to ask before acting: untrusted (every command not known read-only), on-request
    /// (the default: only to leave the sandbox or the workspace) or never.
    #[arg(short = 'a', long = "ask-for-approval", value_name = "MODE")]
    pub approval: Option<crate::guard::ApprovalMode>,
    /// The working mode to start in: default, auto-edit (edits in the workspace run without
    /// asking) or plan (read-only: investigate, then propose a plan); Shift+Tab cycles them.
    /// Config: `start_mode`.
    #[arg(long, value_name = "MODE")]
    pub start_mode: Option<agent_core::Mode>,
    /// Stop each run once this long has passed (`90s`, `10m`, `1h 30m`), as an abort does:
    /// commands killed, every call answered, the session saved; exit code 124 in -p and JSON.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub deadline: Option<std::time::Duration>,
    /// Load this repository's own config, SYSTEM.md and AGENTS.md for this run even though
    /// it is not trusted (headless modes never ask).
    #[arg(long)]
    pub trust: bool,
    /// Full screen on the alternate screen, scrolled in the app, instead of inline in the
    /// terminal's scrollback (config: `screen = "alternate"`).
    #[arg(long)]
    pub alt_screen: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum Subcommand {
    /// What confinement this machine offers for commands, and why something is missing.
    Doctor,
    /// Writes a session's current branch as one self-contained HTML page (or markdown).
    Export {
        /// The session: a path, or an id (or its start) of this directory's sessions;
        /// default the latest.
        session: Option<String>,
        /// html (default, or what -o's extension says) or md.
        #[arg(long, value_enum)]
        format: Option<crate::export::Format>,
        /// Where to write (default `<session id>.html` here; `-` for standard output).
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Interactive,
    Json,
    Rpc,
}

const AFTER_HELP: &str = "\
Configuration: $CODING_AGENT_HOME/config.toml (default ~/.coding-agent/config.toml), then
.coding-agent/config.toml in the project. Keys: OPENAI_API_KEY, ANTHROPIC_API_KEY,
GEMINI_API_KEY, DEEPSEEK_API_KEY, OPENROUTER_API_KEY, … or api_key in the config.
Local servers: with no model configured and no key set, Ollama (:11434), llama.cpp (:8080),
LM Studio (:1234) and vLLM (:8000) on 127.0.0.1, and OLLAMA_HOST, are looked for; the
interactive mode opens a setup screen when nothing is found.
Exit codes: 0 success, 1 the run failed or was aborted, 2 usage or configuration error
(also: the session to continue is open in another process; --fork continues in a copy),
124 the run's --deadline passed.";
