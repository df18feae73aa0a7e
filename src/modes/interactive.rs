//! The TUI, with the session switching and `!cmd` shell it asks the host for.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use llm::{Model, Registry, ToolResultMessage, now_millis};
use tokio_util::sync::CancellationToken;
use tui::{Host, OnOutput, SessionChoice};

use crate::sessions::Sessions;
use crate::setup::Setup;

pub async fn run(setup: Setup, first_prompt: Option<String>) -> ExitCode {
    let options = tui::Options {
        cwd: setup.cwd.clone(),
        model: setup.model.id.clone(),
        thinking: Some(setup.thinking),
        context_window: setup.model.context_window,
        history: setup.history.clone(),
        notices: setup.notices.clone(),
        tool_views: setup.tool_views.clone(),
        first_prompt,
    };
    let host = Arc::new(TuiHost {
        sessions: setup.sessions.clone(),
        registry: setup.registry.clone(),
        shell: setup.shell.clone(),
    });
    let result = tui::run(setup.agent.clone(), host, options).await;
    for error in setup.sessions.recorder().finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    match result {
        Ok(()) => {
            println!("{}", setup.sessions.status_line());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("coding-agent: terminal error: {err}");
            ExitCode::FAILURE
        }
    }
}

struct TuiHost {
    sessions: Arc<Sessions>,
    registry: Registry,
    shell: Arc<dyn Tool>,
}

#[async_trait]
impl Host for TuiHost {
    fn models(&self) -> Vec<Model> {
        self.registry.models()
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
                SessionChoice {
                    path: s.path,
                    label: format!("{when} · {} messages · {prompt}", s.message_count),
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
        let ctx = ToolContext::new("shell", cancel, move |partial: ToolOutput| {
            on_output(partial.plain_text());
        });
        let args = serde_json::json!({ "command": command });
        let output = self
            .shell
            .execute(args, ctx)
            .await
            .unwrap_or_else(|e| ToolOutput::error(e.0));
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
        self.sessions.status_line()
    }
}
