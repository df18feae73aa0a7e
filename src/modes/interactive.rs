//! The TUI, with the session and model switching it can ask for.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_core::{Agent, AgentMessage};
use async_trait::async_trait;
use llm::{Model, Registry, ThinkingLevel};
use session::{Home, SessionWriter};
use tui::{Host, SessionChoice};

use crate::recorder::Recorder;
use crate::setup::Setup;

pub async fn run(setup: Setup, first_prompt: Option<String>) -> ExitCode {
    let options = tui::Options {
        cwd: setup.cwd.clone(),
        model: setup.model.id.clone(),
        thinking: Some(setup.thinking),
        context_window: setup.model.context_window,
        history: setup.history.clone(),
        first_prompt,
    };
    let host = Arc::new(SessionHost {
        agent: setup.agent.clone(),
        recorder: setup.recorder.clone(),
        registry: setup.registry.clone(),
        home: setup.home.clone(),
        cwd: setup.cwd.clone(),
        no_session: setup.no_session,
        state: Mutex::new(State {
            model: setup.model.clone(),
            thinking: setup.thinking,
            session: setup.session.clone(),
        }),
    });
    let result = tui::run(setup.agent.clone(), host.clone(), options).await;
    for error in setup.recorder.finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    match result {
        Ok(()) => {
            match host.resume_hint() {
                Some(hint) => println!("{hint}"),
                None => println!("This session was not saved (--no-session)."),
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("coding-agent: terminal error: {err}");
            ExitCode::FAILURE
        }
    }
}

struct State {
    model: Model,
    thinking: ThinkingLevel,
    session: Option<(PathBuf, String)>,
}

struct SessionHost {
    agent: Agent,
    recorder: Recorder,
    registry: Registry,
    home: Home,
    cwd: PathBuf,
    no_session: bool,
    state: Mutex<State>,
}

impl SessionHost {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records into `writer` from now on.
    fn switch(&self, writer: Option<SessionWriter>) {
        self.state().session = writer
            .as_ref()
            .map(|w| (w.path().to_path_buf(), w.header().id.clone()));
        self.recorder.switch(writer);
    }
}

#[async_trait]
impl Host for SessionHost {
    fn models(&self) -> Vec<Model> {
        self.registry.models()
    }

    fn model_changed(&self, model: &Model) {
        self.state().model = model.clone();
        self.recorder.model(model.clone());
    }

    fn thinking_changed(&self, level: ThinkingLevel) {
        self.state().thinking = level;
        self.recorder.thinking(level);
    }

    async fn new_session(&self) -> Result<String, String> {
        self.agent
            .reset(Vec::new())
            .await
            .map_err(|e| e.to_string())?;
        let writer = {
            let state = self.state();
            (!self.no_session)
                .then(|| SessionWriter::create(&self.home, &self.cwd, &state.model, state.thinking))
        };
        self.switch(writer);
        Ok("New session.".to_string())
    }

    fn sessions(&self) -> Vec<SessionChoice> {
        session::list_sessions(&self.home, &self.cwd)
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

    async fn resume(&self, path: PathBuf) -> Result<Vec<AgentMessage>, String> {
        let loaded =
            session::load_session(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.agent
            .reset(loaded.messages.clone())
            .await
            .map_err(|e| e.to_string())?;
        let writer = if self.no_session {
            None
        } else {
            Some(SessionWriter::resume(&loaded).map_err(|e| format!("{}: {e}", path.display()))?)
        };
        self.switch(writer);
        Ok(loaded.messages)
    }

    fn resume_hint(&self) -> Option<String> {
        let state = self.state();
        let (_, id) = state.session.as_ref()?;
        Some(format!(
            "Resume this session with: coding-agent --session {id}"
        ))
    }
}
