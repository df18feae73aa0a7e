//! `config.toml`: the home file, then the project's `.coding-agent/config.toml` on top.
//! Unknown keys and wrong types are errors naming the file, line and key.

use std::collections::BTreeMap;
use std::path::Path;

use agent_core::QueueMode;
use llm::{Api, Model, ModelCost, ProviderEntry, Registry, ThinkingLevel};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default model, `provider/id` or a bare id.
    pub model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub queue: QueueConfig,
    #[serde(default)]
    pub compaction: CompactionConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    /// When the agent asks before acting: `untrusted`, `on-request` (default) or `never`.
    pub approval: Option<crate::guard::ApprovalMode>,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub checkpoints: CheckpointsConfig,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Where the TUI draws: `inline` (the default) or `alternate`.
    pub screen: Option<ScreenConfig>,
    /// The colours: `auto` (the default: asks the terminal its background), `dark` or
    /// `light`. `NO_COLOR` turns colours off whatever this says.
    pub theme: Option<ThemeConfig>,
    /// Turn on the provider's own web search where its API has one (OpenAI responses,
    /// Anthropic messages); `--search` does for one run. Off by default.
    pub web_search: Option<bool>,
    /// The working mode to start in: `default`, `auto-edit` or `plan` (`--start-mode`).
    pub start_mode: Option<agent_core::Mode>,
    /// `[subagents]`: the `task` tool's child agents.
    #[serde(default)]
    pub subagents: SubagentsConfig,
    /// `[[hooks]]`: commands run at lifecycle points (the home config's).
    #[serde(default)]
    pub hooks: Vec<extensions::HookConfig>,
    /// The `[[hooks]]` of a trusted repository's config, kept apart: they are the
    /// repository's, and the user is shown where each came from.
    #[serde(skip)]
    pub project_hooks: Vec<extensions::HookConfig>,
    /// `[mcp_servers.NAME]`: MCP servers whose tools the agent gets (Codex's shape).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, mcp::ServerConfig>,
    /// The names in `mcp_servers` a trusted repository's config set: each starts only once
    /// the user approved it for that repository (`crate::project_servers`).
    #[serde(skip)]
    pub project_mcp_servers: Vec<String>,
    #[serde(default)]
    pub mcp: McpConfig,
    /// What loading had to say (settings it ignored), for the user to see once.
    #[serde(skip)]
    pub notices: Vec<String>,
    /// Keys the setup screen stored in `auth.toml`, used when the provider's environment
    /// variable is not set.
    #[serde(skip)]
    pub stored_keys: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeConfig {
    Auto,
    Dark,
    Light,
}

impl ThemeConfig {
    pub fn choice(self) -> tui::theme::ThemeChoice {
        match self {
            Self::Auto => tui::theme::ThemeChoice::Auto,
            Self::Dark => tui::theme::ThemeChoice::Dark,
            Self::Light => tui::theme::ThemeChoice::Light,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScreenConfig {
    Inline,
    Alternate,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    #[serde(default)]
    pub bash: BashConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashConfig {
    /// Commands see the provider API keys (hidden by default).
    pub inherit_keys: Option<bool>,
}

/// `[mcp]`: how MCP tools reach the model.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The share of the model's window (in percent) all MCP tool definitions may take
    /// before only `mcp_search` is sent (default 10).
    pub tool_budget_percent: Option<f64>,
}

/// `[checkpoints]`: snapshots of the workspace around the agent's changes, for `/undo`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// On by default.
    pub enabled: Option<bool>,
}

/// `[sandbox]`: how commands are confined.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `read-only`, `workspace-write` (default) or `danger-full-access`.
    pub mode: Option<sandbox::SandboxMode>,
    /// More paths commands may write to (`~/` is the home directory).
    #[serde(default)]
    pub writable: Vec<std::path::PathBuf>,
    /// Whether commands may open network sockets (default: on in workspace-write).
    pub network: Option<bool>,
    /// Paths commands may not read (`~/.ssh`, `~/.aws`); the agent's own files are hidden
    /// anyway.
    #[serde(default)]
    pub deny_read: Vec<std::path::PathBuf>,
}

impl SandboxConfig {
    fn is_set(&self) -> bool {
        self.mode.is_some()
            || !self.writable.is_empty()
            || self.network.is_some()
            || !self.deny_read.is_empty()
    }
}

/// `[subagents]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentsConfig {
    /// How many children run at once (default 4); more `task` calls wait their turn.
    pub max_concurrent: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    pub base_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    pub steering: Option<QueueMode>,
    pub follow_up: Option<QueueMode>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    pub enabled: Option<bool>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
}

/// A provider of the user's: a new one, or settings for a built-in one.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub api: Option<Api>,
    pub base_url: Option<String>,
    /// Environment variable holding the key.
    pub api_key_env: Option<String>,
    pub api_key: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub models: Vec<ModelConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub id: String,
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    #[serde(default)]
    pub reasoning: bool,
    /// Takes images as input.
    #[serde(default)]
    pub images: bool,
    #[serde(default)]
    pub cost: ModelCost,
}

impl Config {
    /// Every `[[hooks]]` table, the home config's first, with where it was written.
    pub fn all_hooks(&self) -> Vec<(extensions::HookConfig, extensions::Origin)> {
        let home = self
            .hooks
            .iter()
            .map(|h| (h.clone(), extensions::Origin::User));
        let project = self
            .project_hooks
            .iter()
            .map(|h| (h.clone(), extensions::Origin::Project));
        home.chain(project).collect()
    }

    /// The home config, then the project's over it (if the repository is trusted); missing
    /// files are fine.
    /// `trusted`: whether the repository's own config may be read at all.
    pub fn load(home: &Path, cwd: &Path, trusted: bool) -> Result<Self, String> {
        let mut config = Self::read(home)?.unwrap_or_default();
        let project = session::repository_root(cwd).join(".coding-agent/config.toml");
        let overrides = if trusted { Self::read(&project)? } else { None };
        if let Some(overrides) = overrides {
            // A repository must not point your API keys at another server.
            if !overrides.providers.is_empty() {
                return Err(format!(
                    "{}: [providers] may only be set in the home config.toml",
                    project.display()
                ));
            }
            // Nor hand them to the model's commands.
            if overrides.tools.bash.inherit_keys == Some(true) {
                return Err(format!(
                    "{}: [tools.bash] inherit_keys may only be turned on in the home config.toml",
                    project.display()
                ));
            }
            // Nor choose the model, which chooses the provider your key goes to. (Once a
            // repository can be trusted, a trusted one may.)
            let mut overrides = overrides;
            config.project_hooks = std::mem::take(&mut overrides.hooks);
            // Nor widen what the agent may do without asking.
            if overrides.sandbox.is_set() || overrides.approval.is_some() {
                overrides.sandbox = SandboxConfig::default();
                overrides.approval = None;
                config.notices.push(format!(
                    "{}: [sandbox] and `approval` are ignored: a repository cannot widen what \
                     the agent may do; set them in the home config.toml or with --sandbox / -a",
                    project.display()
                ));
            }
            // Nor start where edits go unasked.
            if overrides.start_mode == Some(agent_core::Mode::AutoEdit) {
                overrides.start_mode = None;
                config.notices.push(format!(
                    "{}: `start_mode = \"auto-edit\"` is ignored: a repository cannot widen what \
                     the agent may do; set it in the home config.toml or with --start-mode",
                    project.display()
                ));
            }
            // Nor take away the user's undo.
            if overrides.checkpoints.enabled.take().is_some() {
                config.notices.push(format!(
                    "{}: [checkpoints] is ignored: set it in the home config.toml",
                    project.display()
                ));
            }
            // Nor decide where a key goes through an MCP server, nor run one unconfined.
            for (name, server) in overrides.mcp_servers.iter_mut() {
                config
                    .notices
                    .extend(home_only_server_fields(name, server, &project));
                config.project_mcp_servers.push(name.clone());
            }
            if let Some(model) = overrides.model.take() {
                config.notices.push(format!(
                    "{}: `model = \"{model}\"` is ignored: a repository cannot choose the model \
                     (and so where your key goes); use --model or the home config.toml",
                    project.display()
                ));
            }
            config.merge(overrides);
        }
        Ok(config)
    }

    fn read(path: &Path) -> Result<Option<Self>, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
        };
        Self::parse(&text)
            .map(Some)
            .map_err(|err| format!("{}:{err}", path.display()))
    }

    /// Parses one file; the error starts with `line:column: `.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|err| {
            let (line, column) = err.span().map_or((1, 1), |span| position(text, span.start));
            format!("{line}:{column}: {}", err.message().trim())
        })
    }

    fn merge(&mut self, other: Self) {
        self.model = other.model.or(self.model.take());
        self.thinking = other.thinking.or(self.thinking);
        self.retry.max_retries = other.retry.max_retries.or(self.retry.max_retries);
        self.retry.base_delay_ms = other.retry.base_delay_ms.or(self.retry.base_delay_ms);
        self.retry.max_delay_ms = other.retry.max_delay_ms.or(self.retry.max_delay_ms);
        self.queue.steering = other.queue.steering.or(self.queue.steering);
        self.queue.follow_up = other.queue.follow_up.or(self.queue.follow_up);
        let c = &mut self.compaction;
        c.enabled = other.compaction.enabled.or(c.enabled);
        c.reserve_tokens = other.compaction.reserve_tokens.or(c.reserve_tokens);
        c.keep_recent_tokens = other.compaction.keep_recent_tokens.or(c.keep_recent_tokens);
        let bash = &mut self.tools.bash;
        bash.inherit_keys = other.tools.bash.inherit_keys.or(bash.inherit_keys);
        self.providers.extend(other.providers);
        self.screen = other.screen.or(self.screen);
        self.theme = other.theme.or(self.theme);
        self.web_search = other.web_search.or(self.web_search);
        self.start_mode = other.start_mode.or(self.start_mode);
        self.subagents.max_concurrent = other
            .subagents
            .max_concurrent
            .or(self.subagents.max_concurrent);
        // A trusted repository may add servers (and replace one of the same name).
        self.mcp_servers.extend(other.mcp_servers);
        self.mcp.tool_budget_percent = other
            .mcp
            .tool_budget_percent
            .or(self.mcp.tool_budget_percent);
        // `[sandbox]` and `approval` come from the home config only (see `load`); the
        // project's `[[hooks]]` are kept apart in `project_hooks`.
    }

    /// Adds the configured providers and models to `registry`.
    pub fn extend_registry(&self, registry: &mut Registry) -> Result<(), String> {
        for (name, provider) in &self.providers {
            let known = registry.provider(name).cloned();
            let api = provider.api.or(known.as_ref().map(|p| p.api));
            let base_url = provider.base_url.clone().or(known.map(|p| p.base_url));
            let (Some(api), Some(base_url)) = (api, base_url) else {
                if provider.models.is_empty() {
                    continue;
                }
                return Err(format!(
                    "config: provider `{name}` needs `api` and `base_url` (it is not a built-in provider)"
                ));
            };
            llm::check_base_url(&base_url)
                .map_err(|e| format!("config: provider `{name}`: base_url {e}"))?;
            registry.insert_provider(
                name,
                ProviderEntry {
                    api,
                    base_url: base_url.clone(),
                },
            );
            for model in &provider.models {
                registry.insert_model(Model {
                    id: model.id.clone(),
                    provider: name.clone(),
                    api,
                    base_url: base_url.clone(),
                    context_window: model.context_window.unwrap_or(128_000),
                    max_output: model.max_output.unwrap_or(16_384),
                    reasoning: model.reasoning,
                    images: model.images,
                    cost: model.cost,
                });
            }
        }
        Ok(())
    }
}

/// 1-based line and column of byte `offset`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Takes off a repository's MCP server what only the home config may set, with a notice for
/// each: the variables whose values (provider keys) it would get or send (`env_vars`,
/// `bearer_token_env`, `env_http_headers`), and running unconfined (`sandbox = false`).
fn home_only_server_fields(
    name: &str,
    server: &mut mcp::ServerConfig,
    project: &Path,
) -> Vec<String> {
    let mut notices = Vec::new();
    let mut keys = Vec::new();
    if !std::mem::take(&mut server.env_vars).is_empty() {
        keys.push("env_vars");
    }
    if server.bearer_token_env.take().is_some() {
        keys.push("bearer_token_env");
    }
    if !std::mem::take(&mut server.env_http_headers).is_empty() {
        keys.push("env_http_headers");
    }
    if !keys.is_empty() {
        notices.push(format!(
            "{}: MCP server `{name}`: {} ignored: a repository cannot decide which of your \
             variables (your keys) a server gets; set them for it in the home config.toml",
            project.display(),
            if keys.len() == 1 {
                format!("`{}` is", keys[0])
            } else {
                format!("`{}` are", keys.join("`, `"))
            }
        ));
    }
    if server.sandbox == Some(false) {
        server.sandbox = None;
        notices.push(format!(
            "{}: MCP server `{name}`: `sandbox = false` is ignored: a repository cannot run a \
             server unconfined; set it in the home config.toml",
            project.display()
        ));
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_section() {
        let config = Config::parse(
            r#"
model = "local/qwen"
thinking = "high"
[retry]
max_retries = 5
[queue]
steering = "one-at-a-time"
[compaction]
reserve_tokens = 8000
[tools.bash]
inherit_keys = true
[providers.local]
api = "openai-completions"
base_url = "http://127.0.0.1:8080/v1"
headers = { "x-team" = "a" }
models = [{ id = "qwen", context_window = 32768 }]
"#,
        )
        .unwrap();
        assert_eq!(config.thinking, Some(ThinkingLevel::High));
        assert_eq!(config.queue.steering, Some(QueueMode::OneAtATime));
        assert_eq!(config.tools.bash.inherit_keys, Some(true));
        let mut registry = Registry::builtin();
        config.extend_registry(&mut registry).unwrap();
        assert_eq!(registry.get("local/qwen").unwrap().context_window, 32768);
    }

    #[test]
    fn reads_hooks() {
        let config = Config::parse(
            r#"
[[hooks]]
event = "pre_tool_use"
matcher = "bash"
command = "./check.sh"
timeout_secs = 5
[[hooks]]
event = "stop"
command = "true"
"#,
        )
        .unwrap();
        assert_eq!(config.hooks.len(), 2);
        assert_eq!(config.hooks[0].event, extensions::HookEvent::PreToolUse);
        assert_eq!(config.hooks[0].timeout_secs, Some(5));
        let err = Config::parse("[[hooks]]\nevent = \"pre_tool\"\ncommand = \"x\"\n").unwrap_err();
        assert!(err.starts_with("2:9:"), "{err}");
    }

    #[test]
    fn reads_codex_shaped_mcp_servers() {
        let config = Config::parse(
            r#"
[mcp_servers.docs]
command = "npx"
args = ["-y", "@acme/docs-mcp"]
env = { DOCS_TOKEN = "x" }
startup_timeout_secs = 10
enabled_tools = ["search"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env = "REMOTE_TOKEN"
tool_timeout_secs = 30

[mcp]
tool_budget_percent = 5
"#,
        )
        .unwrap();
        assert_eq!(config.mcp_servers.len(), 2);
        assert!(config.mcp_servers["docs"].offers("search"));
        assert_eq!(
            config.mcp_servers["remote"].tool_timeout(),
            std::time::Duration::from_secs(30)
        );
        assert_eq!(config.mcp.tool_budget_percent, Some(5.0));
        let err = Config::parse("[mcp_servers.x]\ncommand = \"a\"\nbogus = 1\n").unwrap_err();
        assert!(err.contains("unknown field `bogus`"), "{err}");
    }

    #[test]
    fn errors_name_line_and_key() {
        let err = Config::parse("model = \"x\"\n[queue]\nsteer = \"all\"\n").unwrap_err();
        assert!(err.starts_with("3:1: unknown field `steer`"), "{err}");
        let err = Config::parse("thinking = 3\n").unwrap_err();
        assert!(err.starts_with("1:12:"), "{err}");
    }
}
