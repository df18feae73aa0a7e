//! From flags and config to a running agent: the model, the provider router, the tools, the
//! system prompt and the session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::{
    Agent, AgentConfig, AgentMessage, Mode, ModeSwitch, PlanMode, RequireWhen, ToolRequirement,
};
use llm::{Api, Model, ModelCost, Registry, RetryPolicy, Router, StreamOptions, ThinkingLevel};
use session::{
    CompactionSettings, Home, LoadedSession, PromptInputs, Recorder, RecorderSetup, ResumeError,
    SessionCompactor, SessionWriter, SystemPrompt, Timeline,
};

use crate::checkpoints::Checkpoints;
use crate::cli::Cli;
use crate::config::Config;
use crate::sessions::Sessions;
use crate::subagents::{Delegator, Subagents};

/// A failure before the agent runs: a message for the user and the exit code (2: usage).
#[derive(Debug)]
pub struct Fail(pub String);

/// Everything the modes need.
pub struct Setup {
    pub agent: Agent,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub cwd: PathBuf,
    pub registry: Registry,
    /// The last turns of the history the agent started with (a resumed session), for the UI,
    /// and how many messages come before them.
    pub history: Vec<AgentMessage>,
    pub history_earlier: usize,
    /// The session being recorded, and switching it.
    pub sessions: Arc<Sessions>,
    /// Runs `!cmd` commands, like the model's bash but outside the conversation.
    pub shell: Arc<dyn agent_core::Tool>,
    /// Hides the provider keys in what `!cmd` prints, as the agent does for its tools.
    pub redactor: agent_core::Redactor,
    /// Things the user should see once (config settings that were ignored).
    pub notices: Vec<String>,
    /// How each tool the agent has wants its calls shown.
    pub tool_views: std::collections::HashMap<String, agent_core::ToolView>,
    /// What confines commands and when the agent asks.
    pub safety: crate::safety::Safety,
    /// Whether the repository may steer the model, for `/status` (set by the caller, which
    /// decided it).
    pub trust: String,
    /// The MCP servers, starting in the background; `None`: none configured.
    pub mcp: Option<mcp::McpManager>,
    /// Skills, prompt templates and hooks.
    pub extensions: Arc<extensions::Extensions>,
    /// The `session_start` hooks that ran before the agent started, for the modes to show.
    pub hook_runs: Vec<agent_core::HookRun>,
    /// The agent's provider: a key the user enters later (`/model`) is added here.
    pub router: Router,
    /// Tokens every request carries besides the messages (system prompt, tool definitions).
    pub fixed_tokens: u64,
    /// The working mode the agent starts in.
    pub mode: Mode,
    /// The `task` tool's running children, to steer and stop one.
    pub subagents: Arc<Subagents>,
}

impl Setup {
    /// The message `text` stands for: a `/template args` or `/skill:name args` expanded,
    /// anything else as it is. `Err` names an unknown skill.
    pub fn expand(&self, text: &str) -> Result<String, String> {
        Ok(self
            .extensions
            .expand(text)?
            .unwrap_or_else(|| text.to_string()))
    }
}

pub fn home() -> Result<Home, Fail> {
    Home::from_env()
        .ok_or_else(|| Fail("cannot find a home directory: set CODING_AGENT_HOME or HOME".into()))
}

/// The registry with the user's providers and models added.
pub fn registry(config: &Config) -> Result<Registry, Fail> {
    let mut registry = Registry::builtin();
    config.extend_registry(&mut registry).map_err(Fail)?;
    Ok(registry)
}

pub fn router(config: &Config) -> Router {
    let mut router = Router::new();
    // Below the environment and the config: a key set there replaces the stored one.
    for (provider, key) in &config.stored_keys {
        if std::env::var(llm::api_key_env(provider)).is_err() && !key.is_empty() {
            router = router.with_key(provider.clone(), key.clone());
        }
    }
    for (name, provider) in &config.providers {
        let key = provider.api_key.clone().or_else(|| {
            provider
                .api_key_env
                .as_ref()
                .and_then(|var| std::env::var(var).ok())
        });
        if let Some(key) = key.filter(|k| !k.is_empty()) {
            router = router.with_key(name.clone(), key);
        }
        if !provider.headers.is_empty() {
            let headers = provider
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            router = router.with_headers(name.clone(), headers);
        }
    }
    router
}

/// A session to go on from: its history, and the writer that appends to it (or to its fork);
/// no writer with `--no-session`.
pub struct Resumed {
    pub loaded: LoadedSession,
    pub writer: Option<SessionWriter>,
}

/// Builds the agent for `cli` (and a resumed session, if asked).
pub async fn build(
    cli: &Cli,
    config: &Config,
    cwd: PathBuf,
    home: Home,
    resumed: Option<Resumed>,
    repo: session::RepoFiles,
    preset: Option<crate::local::Preset>,
) -> Result<Setup, Fail> {
    let (mut resumed, resumed_writer) = match resumed {
        Some(Resumed { loaded, writer }) => (Some(loaded), writer),
        None => (None, None),
    };
    let mut registry = registry(config)?;
    // A local server's models, for `/model` and for resuming a session made with one.
    for model in preset.iter().flat_map(|p| p.models.iter()) {
        registry.insert_model(model.clone());
    }
    let router = router(config);
    let fallback = || match &preset {
        Some(preset) => Ok(preset.model.clone()),
        None => resolve_model(cli, config, &registry, &router),
    };
    let mut model = match &resumed {
        // A resumed session keeps its model unless the flags name another.
        Some(session) if cli.model.is_none() && cli.base_url.is_none() => registry
            .get(&format!("{}/{}", session.provider, session.model))
            .map_or_else(fallback, Ok)?,
        _ => fallback()?,
    };
    if let Some(window) = cli.context_window {
        llm::local::window_given(&model);
        model.context_window = window;
        model.max_output = model.max_output.min((window / 4).max(256));
    }
    check_key(&model, cli, &router)?;
    let thinking = cli
        .thinking
        .or(resumed.as_ref().map(|s| s.thinking))
        .or(config.thinking)
        .unwrap_or(ThinkingLevel::Off);

    // The mode the session was left in, then the one asked for (announced once the session
    // records, so a change is saved and shown).
    let session_mode = resumed.as_ref().map_or(Mode::Default, |s| s.mode);
    let start_mode = cli
        .start_mode
        .or(resumed.as_ref().map(|s| s.mode))
        .or(config.start_mode)
        .unwrap_or_default();
    let working = ModeSwitch::new(session_mode);
    let safety = crate::safety::build(cli, config, &home, &cwd, &working);
    let mut tool_options = tool_options(config, &registry);
    // A host the user allowed at a private address (asked as such) may be one for fetch.
    let guard = safety.guard.clone();
    tool_options.fetch.host_allowed = Arc::new(move |host| {
        guard
            .rules
            .rules(&guard.project)
            .is_ok_and(|rules| rules.allows_private_host(host))
    });
    tool_options.bash.sandbox = safety.sandbox.clone();
    tool_options.bash.restriction = Some(safety.restriction.clone());
    // The `task` tool's children: definitions from the home and, trusted, the repository.
    let project = (repo == session::RepoFiles::Read).then(|| session::repository_root(&cwd));
    let definitions = extensions::AgentDefinitions::load(home.root(), project.as_deref());
    let definition_problems = definitions.problems.clone();
    let subagents = Subagents::new(
        definitions,
        config
            .subagents
            .max_concurrent
            .unwrap_or(crate::subagents::DEFAULT_MAX_CONCURRENT),
    );
    tool_options.delegate = Some(tools::Delegation(Arc::new(Delegator(subagents.clone()))));
    let chat_only = preset.as_ref().is_some_and(|p| p.chat_only);
    let only: Option<Vec<&str>> = cli.tools.as_ref().map(|names| {
        names
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .collect()
    });
    // A model that cannot call tools is sent none (the notice says so).
    let only = if chat_only { Some(Vec::new()) } else { only };
    let tools =
        tools::build(&cwd, &tool_options, only.as_deref()).map_err(|e| Fail(e.to_string()))?;
    // `!cmd` runs like the model's bash: same hidden keys, same spill directory.
    let shell: Arc<dyn agent_core::Tool> = Arc::new(tools::BashTool::with_options(
        cwd.clone(),
        tool_options.bash.clone(),
    ));
    // The date of the file this session is saved in (a fork's is today).
    let date = resumed_writer
        .as_ref()
        .and_then(|w| w.header().created.get(..10))
        .or(resumed.as_ref().and_then(|s| s.start_date()))
        .map_or_else(session::today, str::to_string);
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let tool_views = tools
        .iter()
        .map(|t| (t.name().to_string(), t.view()))
        .collect();
    let inputs = PromptInputs::gather(&home, &cwd, &date, tools::prompt_section(&names), repo);
    let mut system_prompt = SystemPrompt::load(&home, &cwd, repo).render(&inputs);
    // A repository's skills, templates and hooks steer the agent: a trusted one's only.
    let extensions = Arc::new(extensions::Extensions::load(
        home.root(),
        project.as_deref(),
        &config.all_hooks(),
        &tui::builtin_names(),
    ));
    let skills = extensions.skills.prompt_section();
    if !skills.is_empty() {
        system_prompt = format!("{}\n\n{skills}", system_prompt.trim_end());
    }

    // --api-key belongs to the model it was given for, not to every provider /model reaches.
    let router = match &cli.api_key {
        Some(key) => router.with_key(model.provider.clone(), key.clone()),
        None => router,
    };
    router.warm(&model);
    let provider: Arc<dyn llm::Provider> = Arc::new(router.clone());
    let mut stream_options = stream_options(config);
    stream_options.web_search = cli.search || config.web_search == Some(true);
    let search_notice = (stream_options.web_search && !llm::offers_web_search(model.api)).then(|| {
        format!(
            "Web search is on, but {} ({}) has no search tool of its own: only OpenAI's responses API and Anthropic's do. An MCP search server gives any model one (README, Web search).",
            model.id, model.api
        )
    });
    let mut agent_config = AgentConfig::new(model.clone(), provider.clone());
    agent_config.thinking = thinking;
    agent_config.system_prompt = system_prompt;
    agent_config.tools = tools;
    // The user's hook commands run at the guard's hook points, in the same sandbox as bash.
    let hooks = (!extensions.hooks.is_empty()).then(|| {
        Arc::new(extensions::ExtensionHooks::new(
            safety.guard.clone(),
            extensions.hooks.clone(),
            extensions::Runner {
                cwd: cwd.clone(),
                sandbox: safety.sandbox.clone(),
                restriction: Some(safety.restriction.clone()),
                hidden_env: tool_options.bash.hidden_env.clone(),
            },
        ))
    });
    agent_config.hooks = match &hooks {
        Some(hooks) => hooks.clone(),
        None => safety.guard.clone(),
    };
    agent_config.stream_options = stream_options.clone();
    let redactor = redactor(cli, config, &registry);
    agent_config.redactor = redactor.clone();
    let mcp = mcp_servers(config, &cwd, &safety, &tool_options, &model)?;
    if let Some(manager) = &mcp {
        agent_config.extra_tools = manager.extra_tools();
    }
    let _ = safety
        .guard
        .extra_tools
        .set(agent_config.extra_tools.clone());
    agent_config.mode = working;
    // Plan mode ends with a plan: only when the model has the tool to present one.
    agent_config.plan = agent_config
        .tools
        .iter()
        .any(|t| t.name() == tools::SUBMIT_PLAN)
        .then(plan_mode);
    agent_config.deadline = cli.deadline;
    if let Some(mode) = config.queue.steering {
        agent_config.steering_mode = mode;
    }
    if let Some(mode) = config.queue.follow_up {
        agent_config.follow_up_mode = mode;
    }
    let defaults = CompactionSettings::default();
    // Sent with every request; counted when the server reports no usage.
    let fixed_chars = agent_config.system_prompt.chars().count()
        + agent_config
            .tools
            .iter()
            .map(|t| t.name().len() + t.description().len() + t.parameters().to_string().len())
            .sum::<usize>();
    let fixed_tokens = (fixed_chars as u64).div_ceil(4);
    agent_config.compactor = Some(Arc::new(SessionCompactor {
        provider,
        options: stream_options,
        fixed_tokens,
        settings: CompactionSettings {
            enabled: config.compaction.enabled.unwrap_or(defaults.enabled),
            reserve_tokens: config
                .compaction
                .reserve_tokens
                .unwrap_or(defaults.reserve_tokens),
            keep_recent_tokens: config
                .compaction
                .keep_recent_tokens
                .unwrap_or(defaults.keep_recent_tokens),
        },
    }));
    // One copy of a resumed history, the agent's: the UI gets its last turns only.
    let messages = resumed
        .as_mut()
        .map(|s| std::mem::take(&mut s.messages))
        .unwrap_or_default();
    let shown = tui::app::tail_start(&messages);
    let history = messages[shown..].to_vec();
    let history_earlier = shown;
    agent_config.messages = messages;

    let writer = match (cli.no_session, resumed_writer) {
        (true, _) => None,
        (false, Some(writer)) => Some(writer),
        (false, None) => Some(SessionWriter::create(&home, &cwd, &model, thinking)),
    };
    let current = writer
        .as_ref()
        .map(|w| (w.path().to_path_buf(), w.header().id.clone()));
    let timeline = resumed
        .as_ref()
        .map_or_else(|| Timeline::new(0), |s| s.timeline.clone());
    // Snapshots cover the whole repository, as the sandbox's workspace does.
    let checkpoints = Arc::new(Checkpoints::new(
        home.root(),
        session::repository_root(&cwd),
        current.as_ref().map(|(_, id)| id.as_str()),
        timeline,
    ));
    let mut notices = config.notices.clone();
    notices.extend(preset.iter().flat_map(|p| p.notices.iter().cloned()));
    notices.extend(extensions.problems());
    notices.extend(definition_problems);
    notices.extend(search_notice);
    let mut hook_runs = Vec::new();
    if let Some(hooks) = &hooks {
        if let Some((_, id)) = &current {
            hooks.set_session(id);
        }
        let source = if agent_config.messages.is_empty() {
            "startup"
        } else {
            "resume"
        };
        let (runs, context) = hooks.session_start(source).await;
        hook_runs = runs;
        if let Some(context) = context {
            agent_config.system_prompt = format!(
                "{}\n\n# Session context (from session_start hooks)\n\n{context}",
                agent_config.system_prompt.trim_end()
            );
        }
    }
    if config.checkpoints.enabled == Some(false) {
        checkpoints.turn_off("off in the config ([checkpoints] enabled = false)");
    } else if let Err(reason) = crate::checkpoints::git_available() {
        // Said before anything changes, not after the first change that cannot be undone.
        notices.push(format!(
            "Checkpoints are off: {reason}. /undo and /rewind cannot take file changes back \
             until git is installed."
        ));
        checkpoints.turn_off(&reason);
    } else {
        agent_config.checkpointer = Some(Arc::new(crate::checkpoints::Hook {
            checkpoints: checkpoints.clone(),
            cwd: cwd.clone(),
        }));
    }
    // Where the children's session files go: beside the parent's, whichever it is by then.
    let parent_session: Arc<OnceLock<std::sync::Weak<Sessions>>> = Arc::default();
    let current_file = parent_session.clone();
    subagents.equip(crate::subagents::Kit {
        cwd: cwd.clone(),
        home: home.clone(),
        registry: registry.clone(),
        provider: agent_config.provider.clone(),
        tool_options: tool_options.clone(),
        read_only: sandbox::Restriction::new(safety.restriction.sandbox().clone(), || true),
        hooks: agent_config.hooks.clone(),
        stream_options: agent_config.stream_options.clone(),
        mode: agent_config.mode.clone(),
        redactor: agent_config.redactor.clone(),
        parent_tools: agent_config
            .tools
            .iter()
            .map(|t| t.name().to_string())
            .collect(),
        session: Arc::new(move || {
            let sessions = current_file.get()?.upgrade()?;
            sessions.current().map(|(path, _)| path)
        }),
        date: date.clone(),
    });
    let agent = Agent::spawn(agent_config);
    subagents.attach(&agent);
    checkpoints.follow(&agent);
    if let Some(manager) = &mcp {
        // Nothing waits for them here: their tools and states arrive as events.
        let announce = agent.clone();
        manager.start(move |status| announce.announce_mcp(status));
        follow_model(&agent, manager.clone());
    }
    let recorder = Recorder::spawn(
        agent.subscribe_settled(),
        writer,
        RecorderSetup {
            home: home.clone(),
            cwd: cwd.clone(),
            model: model.clone(),
            thinking,
        },
    );
    // After the recorder subscribed: a mode other than the session's is saved.
    agent.set_mode(start_mode);
    let sessions = Arc::new(Sessions::new(
        agent.clone(),
        recorder,
        checkpoints,
        tool_options.bash.spill_dir.clone(),
        home,
        cwd.clone(),
        cli.no_session,
        current,
    ));
    let _ = parent_session.set(Arc::downgrade(&sessions));
    if let Some(hooks) = &hooks {
        // Weak: the agent holds the hooks, and the sessions hold the agent.
        let sessions = Arc::downgrade(&sessions);
        hooks.follow_sessions(move || {
            sessions
                .upgrade()
                .and_then(|s| s.current())
                .map(|(_, id)| id)
        });
    }
    Ok(Setup {
        agent,
        model,
        thinking,
        cwd,
        registry,
        history,
        history_earlier,
        sessions,
        shell,
        redactor,
        trust: String::new(),
        notices,
        tool_views,
        safety,
        extensions,
        hook_runs,
        mcp,
        router,
        fixed_tokens,
        mode: start_mode,
        subagents,
    })
}

/// Keeps the MCP tool budget a share of the current model's window (`/model`, RPC
/// `set_model`).
fn follow_model(agent: &Agent, manager: mcp::McpManager) {
    let mut events = agent.subscribe_settled();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let agent_core::AgentEvent::ModelChange { model } = event {
                manager.set_context_window(model.context_window);
            }
        }
    });
}

/// The configured MCP servers, not started yet; a stdio server runs in the sandbox of bash,
/// without the provider keys.
fn mcp_servers(
    config: &Config,
    cwd: &Path,
    safety: &crate::safety::Safety,
    tool_options: &tools::ToolOptions,
    model: &Model,
) -> Result<Option<mcp::McpManager>, Fail> {
    if config.mcp_servers.is_empty() {
        return Ok(None);
    }
    for name in config.mcp_servers.keys() {
        mcp::check_name(name).map_err(|e| Fail(format!("config error: {e}")))?;
    }
    let share = config
        .mcp
        .tool_budget_percent
        .map_or(mcp::DEFAULT_CONTEXT_SHARE, |p| p / 100.0);
    Ok(Some(mcp::McpManager::new(
        config.mcp_servers.clone(),
        mcp::Launch {
            cwd: cwd.to_path_buf(),
            sandbox: safety.sandbox.clone(),
            hidden_env: tool_options.bash.hidden_env.clone(),
        },
        model.context_window,
        share,
        agent_core::ExtraTools::new(),
    )))
}

/// Every provider key value the agent knows (`--api-key`, the config's and `auth.toml`'s keys,
/// the variables that hold keys), to be kept out of tool output: a command can read them
/// where the agent keeps them (its own command line under `/proc`, an inherited variable).
pub fn redactor(cli: &Cli, config: &Config, registry: &Registry) -> agent_core::Redactor {
    let from_env = key_env_vars(config, registry)
        .into_iter()
        .filter_map(|name| std::env::var(name).ok());
    let configured = config.providers.values().filter_map(|p| p.api_key.clone());
    agent_core::Redactor::new(
        cli.api_key
            .iter()
            .cloned()
            .chain(config.stored_keys.values().cloned())
            .chain(configured)
            .chain(from_env),
    )
}

/// The variables that hold provider keys: every provider's, and the config's `api_key_env`s
/// ([`tools::key_env_vars`]).
fn key_env_vars(config: &Config, registry: &Registry) -> Vec<String> {
    let extra: Vec<String> = config
        .providers
        .values()
        .filter_map(|p| p.api_key_env.clone())
        .collect();
    tools::key_env_vars(registry, &extra)
}

/// The tools' options from the config: bash commands do not see the provider keys (every
/// provider's variable, the config's `api_key_env`s, any `*_API_KEY`) unless
/// `[tools.bash] inherit_keys = true`.
pub fn tool_options(config: &Config, registry: &Registry) -> tools::ToolOptions {
    let hidden_env = if config.tools.bash.inherit_keys == Some(true) {
        Vec::new()
    } else {
        key_env_vars(config, registry)
    };
    tools::ToolOptions {
        bash: tools::BashOptions {
            hidden_env,
            ..tools::BashOptions::default()
        },
        fetch: tools::FetchOptions::default(),
        delegate: None,
    }
}

/// What plan mode adds to the system prompt, and how the model is reminded to end with a plan.
fn plan_mode() -> PlanMode {
    PlanMode {
        instructions: "# Plan mode\n\nYou are in plan mode: investigate and propose; change \
                       nothing. The tools that write files are not offered, and commands run in \
                       a read-only sandbox (without the network), so run only commands that \
                       read. Read the code and what the user points at, then present a \
                       concrete plan with `submit_plan`: the goal, the files to change and how, \
                       the risks, and how to check the result. The user then decides: implement \
                       it, change it, or drop it. If you need an answer from the user first, \
                       put the question in the plan."
            .into(),
        submit: ToolRequirement {
            tool: tools::SUBMIT_PLAN.into(),
            reminder: "You are in plan mode and have not presented a plan yet. Present it \
                       now with `submit_plan` (a question for the user can go in the plan)."
                .into(),
            when: RequireWhen::BeforeStop,
        },
    }
}

fn stream_options(config: &Config) -> StreamOptions {
    let defaults = RetryPolicy::default();
    StreamOptions {
        retry: RetryPolicy {
            max_retries: config.retry.max_retries.unwrap_or(defaults.max_retries),
            base_delay: config
                .retry
                .base_delay_ms
                .map_or(defaults.base_delay, Duration::from_millis),
            max_delay: config
                .retry
                .max_delay_ms
                .map_or(defaults.max_delay, Duration::from_millis),
        },
        ..StreamOptions::default()
    }
}

/// The model used when nothing names one: the first whose provider has a key.
pub const DEFAULT_MODELS: [&str; 4] = [
    "openai/gpt-5",
    "anthropic/claude-sonnet-4-5",
    "google/gemini-2.5-pro",
    "deepseek/deepseek-chat",
];

/// The model the flags and config ask for; with neither, the first provider with a key.
pub fn resolve_model(
    cli: &Cli,
    config: &Config,
    registry: &Registry,
    router: &Router,
) -> Result<Model, Fail> {
    let named = match (&cli.provider, &cli.model) {
        (Some(provider), Some(id)) if !id.starts_with(&format!("{provider}/")) => {
            Some(format!("{provider}/{id}"))
        }
        (_, Some(name)) => Some(name.clone()),
        (_, None) => config.model.clone(),
    };
    if let Some(url) = &cli.base_url {
        llm::check_base_url(url).map_err(|e| Fail(format!("--base-url: {e}")))?;
        let name = named
            .ok_or_else(|| Fail("--base-url needs --model (the id the server expects)".into()))?;
        let known = registry.get(&name);
        let (provider, id) = match (&cli.provider, name.split_once('/')) {
            (Some(p), _) => (
                p.clone(),
                name.strip_prefix(&format!("{p}/"))
                    .unwrap_or(&name)
                    .to_string(),
            ),
            (None, _) => ("custom".to_string(), name.clone()),
        };
        return Ok(Model {
            id,
            provider,
            api: cli
                .api
                .or(known.as_ref().map(|m| m.api))
                .unwrap_or(Api::OpenaiCompletions),
            base_url: url.clone(),
            context_window: known.as_ref().map_or(128_000, |m| m.context_window),
            max_output: known.as_ref().map_or(16_384, |m| m.max_output),
            reasoning: known.as_ref().is_some_and(|m| m.reasoning),
            images: known.as_ref().is_some_and(|m| m.images),
            cost: known.map_or(ModelCost::default(), |m| m.cost),
        });
    }
    if let Some(name) = named {
        return registry
            .get(&name)
            .ok_or_else(|| Fail(format!("unknown model `{name}`; `coding-agent --list-models` lists them, and config.toml can add one")));
    }
    DEFAULT_MODELS
        .iter()
        .filter_map(|name| registry.get(name))
        .find(|m| router.key(&m.provider).is_some())
        .ok_or_else(|| Fail(no_key()))
}

fn check_key(model: &Model, cli: &Cli, router: &Router) -> Result<(), Fail> {
    if cli.api_key.is_some()
        || llm::is_local_url(&model.base_url)
        || router.key(&model.provider).is_some()
    {
        return Ok(());
    }
    let var = llm::api_key_env(&model.provider);
    Err(Fail(format!(
        "no API key for provider `{}` (model {}): set {var}, pass --api-key, or set api_key in config.toml under [providers.{}]",
        model.provider, model.id, model.provider
    )))
}

/// What to do when no key and no server was found, naming the config file this run reads
/// (`$CODING_AGENT_HOME` honoured).
pub fn no_key() -> String {
    let config = Home::from_env().map_or_else(
        || "~/.coding-agent/config.toml".to_string(),
        |home| home.config_file().display().to_string(),
    );
    format!(
        "no API key found.
Set one of OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or DEEPSEEK_API_KEY (or
OPENROUTER_API_KEY with --model openrouter/…), or use a local server (llama.cpp, Ollama, vLLM):

  coding-agent --base-url http://127.0.0.1:8080/v1 --model MODEL

or add it to {config} once:

  model = \"local/MODEL\"
  [providers.local]
  base_url = \"http://127.0.0.1:8080/v1\"
  models = [{{ id = \"MODEL\" }}]"
    )
}

/// The session `--continue`, `--resume` or `--session` asks for, loaded and locked for
/// appending (or forked, with `--fork`). Tool calls a crash left open are closed in the file
/// here, before the agent's first request.
pub fn find_resumed(cli: &Cli, home: &Home, cwd: &Path) -> Result<Option<Resumed>, Fail> {
    let path = if cli.continue_session {
        match session::latest_session_path(home, cwd) {
            Ok(Some(path)) => path,
            Ok(None) => return Err(Fail(format!("no session to continue in {}", cwd.display()))),
            Err(e) => return Err(Fail(format!("cannot read the latest session: {e}"))),
        }
    } else if let Some(query) = &cli.session {
        session::find_session(home, cwd, query)
            .map_err(|e| Fail(format!("no session `{query}`: {e}")))?
    } else if cli.resume {
        match pick_session(home, cwd)? {
            Some(path) => path,
            None => return Ok(None),
        }
    } else if cli.fork {
        return Err(Fail(
            "--fork needs the session to copy: --continue, --resume or --session".into(),
        ));
    } else {
        return Ok(None);
    };
    let resumed = open_session(cli, home, cwd, &path)?;
    // Each warning names the file already.
    for warning in &resumed.loaded.warnings {
        eprintln!("coding-agent: {warning}");
    }
    if cli.fork
        && let Some(writer) = &resumed.writer
    {
        eprintln!(
            "coding-agent: forked {} into {}",
            path.display(),
            writer.path().display()
        );
    }
    Ok(Some(resumed))
}

fn open_session(cli: &Cli, home: &Home, cwd: &Path, path: &Path) -> Result<Resumed, Fail> {
    // Another process may append between loading and locking: then load again.
    for _ in 0..5 {
        let mut loaded = session::load_session(path)
            .map_err(|e| Fail(format!("cannot load {}: {e}", path.display())))?;
        let writer = if cli.no_session {
            None
        } else if cli.fork {
            Some(
                SessionWriter::fork(home, cwd, &loaded)
                    .map_err(|e| Fail(format!("cannot fork {}: {e}", path.display())))?,
            )
        } else {
            match SessionWriter::resume_taking(&mut loaded) {
                Ok(writer) => Some(writer),
                Err(ResumeError::Changed(_)) => continue,
                Err(ResumeError::Locked(_)) => {
                    return Err(Fail(format!(
                        "session {} is in use by another coding-agent process ({}).\n\
                         Wait until it ends, or add --fork to continue in a copy of it.",
                        loaded.header.id,
                        path.display()
                    )));
                }
                Err(e) => return Err(Fail(format!("cannot append to {e}"))),
            }
        };
        return Ok(Resumed { loaded, writer });
    }
    Err(Fail(format!(
        "{} keeps changing (another process is writing it); try again, or add --fork",
        path.display()
    )))
}

/// `--resume`: a numbered list on the terminal; the user types a number.
fn pick_session(home: &Home, cwd: &Path) -> Result<Option<PathBuf>, Fail> {
    let sessions = session::list_sessions(home, cwd);
    if sessions.is_empty() {
        return Err(Fail(format!("no sessions to resume in {}", cwd.display())));
    }
    eprintln!("Sessions in {} (newest first):", cwd.display());
    for (i, s) in sessions.iter().enumerate().take(20) {
        let prompt: String = s.first_prompt.chars().take(60).collect();
        let branches = match s.branches {
            1 => String::new(),
            n => format!("  {n} branches"),
        };
        eprintln!(
            "{:>3}. {}  {:>4} messages  {:>7}{branches}  {prompt}",
            i + 1,
            s.created.get(..16).unwrap_or(&s.created).replace('T', " "),
            s.message_count,
            human_size(s.size)
        );
    }
    eprint!(
        "Resume which? [1-{}, Enter to cancel] ",
        sessions.len().min(20)
    );
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Fail(format!("cannot read the choice: {e}")))?;
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let n: usize = line
        .parse()
        .map_err(|_| Fail(format!("`{line}` is not a number from the list")))?;
    sessions
        .get(n.wrapping_sub(1))
        .map(|s| Some(s.path.clone()))
        .ok_or_else(|| Fail(format!("{n} is not in the list")))
}

fn human_size(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{:.0} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// `--list-models`.
pub fn list_models(registry: &Registry) -> String {
    let mut out = String::from(
        "MODEL                                      API                  CONTEXT   $IN/M  $OUT/M\n",
    );
    for m in registry.models() {
        out.push_str(&format!(
            "{:<42} {:<20} {:>7}  {:>6.2}  {:>6.2}\n",
            format!("{}/{}", m.provider, m.id),
            m.api.to_string(),
            m.context_window,
            m.cost.input,
            m.cost.output
        ));
    }
    out
}
