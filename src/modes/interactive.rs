//! The TUI, with the session switching and `!cmd` shell it asks the host for.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{OnConflict, RestoreOutcome};
use agent_core::{Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use llm::{Model, Registry, ToolResultMessage, now_millis};
use tokio_util::sync::CancellationToken;
use tui::{Host, OnOutput, RewindPoint, RewindScope, Rewinding, SessionChoice, TreeRow};

use crate::sessions::Sessions;
use crate::setup::Setup;

pub async fn run(
    setup: Setup,
    first_prompt: Option<String>,
    images: Vec<attach::Attachment>,
    screen: tui::Screen,
) -> ExitCode {
    crate::checkpoints::prune_in_background(&setup.sessions.home);
    setup.sessions.checkpoints.warm_up();
    let options = tui::Options {
        cwd: setup.cwd.clone(),
        model: setup.model.clone(),
        thinking: Some(setup.thinking),
        context_window: setup.model.context_window,
        history: setup.history.clone(),
        history_earlier: setup.history_earlier,
        notices: setup.notices.clone(),
        tool_views: setup.tool_views.clone(),
        sandbox: setup.safety.summary.label.clone(),
        first_prompt,
        images,
        screen,
        extra_commands: setup
            .extensions
            .commands()
            .into_iter()
            .map(|c| (c.name, c.help))
            .collect(),
        hook_runs: setup.hook_runs.clone(),
        mode: setup.mode,
    };
    // `/model` lists what the running local servers offer: asked in the background, so a
    // start with a key set is not delayed by it.
    let local = Arc::new(std::sync::Mutex::new(Vec::new()));
    let found = local.clone();
    // The usual ports and the servers the setup screen saved.
    let auth = crate::auth::Auth::load(&setup.sessions.home).unwrap_or_default();
    let probes = crate::local::probes(&auth);
    tokio::spawn(async move {
        let servers = llm::local::detect(&probes, llm::local::PROBE_DEADLINE).await;
        let models: Vec<Model> = servers.iter().flat_map(|s| s.all_models()).collect();
        *found.lock().unwrap_or_else(|e| e.into_inner()) = models;
    });
    let host = Arc::new(TuiHost {
        local,
        started_with: setup.model.clone(),
        fixed_tokens: setup.fixed_tokens,
        router: setup.router.clone(),
        safety: safety_status(&setup),
        guard: setup.safety.guard.clone(),
        sessions: setup.sessions.clone(),
        registry: setup.registry.clone(),
        shell: setup.shell.clone(),
        redactor: setup.redactor.clone(),
        extensions: setup.extensions.clone(),
        mcp: setup.mcp.clone(),
        subagents: setup.subagents.clone(),
    });
    let result = tui::run(setup.agent.clone(), host, options).await;
    for error in setup.sessions.recorder().finish().await {
        say(
            std::io::stderr(),
            &format!("coding-agent: the session could not be saved: {error}"),
        );
    }
    match result {
        Ok(()) => {
            say(std::io::stdout(), &setup.sessions.status_line());
            ExitCode::SUCCESS
        }
        Err(err) => {
            say(
                std::io::stderr(),
                &format!("coding-agent: terminal error: {err}"),
            );
            ExitCode::FAILURE
        }
    }
}

/// A line for the user once the UI is gone, written whether or not the terminal still is (a
/// hangup ends the UI too), where `println!` would panic.
fn say(mut out: impl Write, line: &str) {
    let _ = writeln!(out, "{line}");
}

struct TuiHost {
    /// `/status`, worked out once: none of it changes during a run.
    safety: String,
    guard: Arc<crate::guard::Guard>,
    sessions: Arc<Sessions>,
    registry: Registry,
    shell: Arc<dyn Tool>,
    redactor: agent_core::Redactor,
    extensions: Arc<extensions::Extensions>,
    /// Models of the local servers running when the UI started.
    local: Arc<std::sync::Mutex<Vec<Model>>>,
    /// The model the session started with (a server given by URL is in no registry).
    started_with: Model,
    /// The agent's provider, shared: a key added here reaches it.
    router: llm::Router,
    /// System prompt and tool definitions, for the context estimate.
    fixed_tokens: u64,
    mcp: Option<mcp::McpManager>,
    subagents: Arc<crate::subagents::Subagents>,
}

#[async_trait]
impl Host for TuiHost {
    fn models(&self) -> Vec<Model> {
        let local = self.local.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut models = vec![self.started_with.clone()];
        // The servers on this machine first: what a user of one switches between.
        for model in local.into_iter().chain(self.registry.models()) {
            if !models
                .iter()
                .any(|m| m.provider == model.provider && m.id == model.id)
            {
                models.push(model);
            }
        }
        models
    }

    async fn export(&self, path: Option<String>) -> Result<String, String> {
        // From the session file, a message at a time: a copy of a long history would double
        // the agent's memory.
        let Some((file, id)) = self.sessions.current() else {
            return Err("nothing is recorded with --no-session".into());
        };
        let out = match path {
            Some(path) => self.sessions.cwd.join(path),
            None => self.sessions.cwd.join(format!("{id}.html")),
        };
        let format = crate::export::Format::of_path(&out);
        let redactor = self.redactor.clone();
        let target = out.clone();
        let count = tokio::task::spawn_blocking(move || {
            let written = crate::export::create(&target)?;
            crate::export::stream(&file, std::io::BufWriter::new(written), format, &redactor)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(format!(
            "Exported {count} message{} to {} (mode 0600).",
            if count == 1 { "" } else { "s" },
            out.display()
        ))
    }

    fn estimate_context(&self, messages: &[agent_core::AgentMessage]) -> Option<u64> {
        Some(session::compaction::estimate_context_tokens_with(
            messages,
            self.fixed_tokens,
        ))
    }

    fn needs_key(&self, model: &Model) -> Option<tui::popup::KeyAsk> {
        // A server on this machine takes no key; a hosted provider pointed at a proxy here
        // still does.
        let local_server =
            llm::is_local_url(&model.base_url) && !llm::is_hosted_provider(&model.provider);
        if local_server || self.router.key(&model.provider).is_some() {
            return None;
        }
        Some(tui::popup::KeyAsk {
            provider: model.provider.clone(),
            env: llm::api_key_env(&model.provider),
            file: crate::auth::Auth::path(&self.sessions.home)
                .display()
                .to_string(),
        })
    }

    async fn add_key(&self, model: Model, key: String) -> Result<String, String> {
        let checked = llm::check_key(&model, &key)
            .await
            .said(&model.provider)
            .map_err(|said| format!("{said} — paste another key, or Esc"))?;
        let home = &self.sessions.home;
        let mut auth = crate::auth::Auth::load(home)?;
        auth.keys.insert(model.provider.clone(), key.clone());
        let path = auth
            .save(home)
            .map_err(|e| format!("cannot save the key: {e}"))?;
        self.redactor.add(&key);
        self.router.add_key(model.provider.clone(), key);
        Ok(format!(
            "{checked}; saved to {} (mode 0600).",
            path.display()
        ))
    }

    fn expand(&self, text: &str) -> Result<Option<String>, String> {
        self.extensions.expand(text)
    }

    fn skills(&self) -> String {
        self.extensions.skills.report()
    }

    async fn new_session(&self) -> Result<(), String> {
        self.sessions.new_session().await
    }

    async fn sessions(&self) -> Vec<SessionChoice> {
        self.sessions
            .list()
            .await
            .into_iter()
            .take(50)
            .map(|s| {
                let prompt: String = s.first_prompt.chars().take(50).collect();
                let when = s.created.get(..16).unwrap_or(&s.created).replace('T', " ");
                let branches = match s.branches {
                    1 => String::new(),
                    n => format!(" · {n} branches"),
                };
                SessionChoice {
                    path: s.path,
                    label: format!("{when} · {} messages{branches} · {prompt}", s.message_count),
                }
            })
            .collect()
    }

    async fn resume(&self, path: PathBuf) -> Result<(), String> {
        self.sessions.resume(path).await
    }

    async fn run_shell(
        &self,
        command: String,
        cancel: CancellationToken,
        on_output: OnOutput,
    ) -> ToolResultMessage {
        let redactor = self.redactor.clone();
        let ctx = ToolContext::new("shell", cancel, move |mut partial: ToolOutput| {
            redactor.output(&mut partial);
            on_output(partial.plain_text());
        });
        let args = serde_json::json!({ "command": command });
        // Whatever the command changes can be undone like the agent's changes.
        let checkpoints = &self.sessions.checkpoints;
        let (output, note) = checkpoints
            .around(&self.sessions.agent, self.shell.execute(args, ctx))
            .await;
        let mut output = output.unwrap_or_else(|e| ToolOutput::error(e.0));
        self.redactor.output(&mut output);
        if let Some(note) = note {
            output.content.push(llm::UserContent::Text {
                text: format!("\n(no checkpoint: {note})"),
            });
        }
        ToolResultMessage {
            tool_call_id: "shell".into(),
            tool_name: "bash".into(),
            content: output.content,
            details: output.details,
            is_error: output.is_error,
            timestamp: now_millis(),
        }
    }

    fn session_status(&self) -> String {
        let mut line = self.sessions.status_line();
        // `/session` names the file even before anything is in it.
        if let Some((path, _)) = self.sessions.current()
            && !path.exists()
        {
            line.push_str(&format!("\nIts file will be {}", path.display()));
        }
        format!("{line}\n{}", self.sessions.checkpoints.status())
    }

    fn safety_status(&self) -> String {
        self.safety.clone()
    }

    fn steer_subagent(&self, id: &str, text: &str) -> bool {
        self.subagents.steer(id, text)
    }

    fn stop_subagent(&self, id: &str) -> bool {
        self.subagents.stop(id)
    }

    async fn mcp_restart(&self, name: String) -> Result<(), String> {
        match &self.mcp {
            Some(mcp) => mcp.restart(&name),
            None => Err("no MCP servers are configured ([mcp_servers.NAME] in config.toml)".into()),
        }
    }

    async fn rules(&self) -> Result<Vec<Vec<String>>, String> {
        let (store, project) = (self.guard.rules.clone(), self.guard.project.clone());
        tokio::task::spawn_blocking(move || store.list(&project).map_err(|e| e.to_string()))
            .await
            .map_err(|e| e.to_string())?
    }

    async fn undo(&self, on: OnConflict) -> RestoreOutcome {
        let s = &self.sessions;
        s.checkpoints.undo(&s.agent, on).await
    }

    async fn redo(&self, on: OnConflict) -> RestoreOutcome {
        let s = &self.sessions;
        s.checkpoints.redo(&s.agent, on).await
    }

    async fn rewind_points(&self) -> Vec<RewindPoint> {
        self.sessions.rewind_points().await
    }

    async fn rewind(
        &self,
        index: usize,
        scope: RewindScope,
        on: OnConflict,
    ) -> Result<Rewinding, String> {
        self.sessions.rewind(index, scope, on).await
    }

    async fn tree(&self) -> Result<Vec<TreeRow>, String> {
        self.sessions.tree_rows().await
    }

    async fn jump(&self, id: String, code: bool, on: OnConflict) -> Result<Rewinding, String> {
        self.sessions.jump(&id, code, on).await
    }

    async fn label(&self, name: String) -> Result<(), String> {
        self.sessions.label(&name).await
    }

    async fn fork(&self) -> Result<String, String> {
        self.sessions.fork().await
    }

    async fn revoke_rule(&self, prefix: Vec<String>) -> Result<(), String> {
        let (store, project) = (self.guard.rules.clone(), self.guard.project.clone());
        tokio::task::spawn_blocking(move || {
            store
                .revoke(&project, &prefix)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// The sandbox, the approval mode and what is not enforced, for `/status`.
fn safety_status(setup: &Setup) -> String {
    let safety = &setup.safety;
    let mut text = format!(
        "{} · approvals: {}",
        safety.summary.label,
        safety.approval.name()
    );
    if let Some(sandbox) = &safety.sandbox {
        let policy = sandbox.policy();
        text.push_str(&format!(
            "\nCommands write only in {} (and temp dirs{}); network {}.",
            policy.workspace.display(),
            if policy.writable.is_empty() {
                ""
            } else {
                ", [sandbox] writable"
            },
            if policy.network { "on" } else { "off" }
        ));
    }
    for missing in &safety.summary.missing {
        text.push_str(&format!("\nNot enforced: {missing}"));
    }
    // Plan mode is only as read-only as this machine can make commands.
    let plan = &safety.plan_summary;
    if plan.level == sandbox::Level::None {
        text.push_str(
            "\nPlan mode: nothing here confines commands read-only, so only commands known to \
             be read-only run in it.",
        );
    } else {
        text.push_str(&format!(
            "\nPlan mode: commands run read-only ({}).",
            plan.label
        ));
    }
    text.push_str(&format!("\nRepository: {}", setup.trust));
    text.push_str("\ncoding-agent doctor explains what this machine offers.");
    text
}
