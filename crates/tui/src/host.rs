//! What the UI asks of the program around it: the models it may switch to and the sessions it
//! may start or resume. The binary implements it; the UI never touches session files.

use std::path::PathBuf;

use agent_core::AgentMessage;
use async_trait::async_trait;
use llm::{Model, ThinkingLevel};

/// A saved session as the `/resume` list shows it.
#[derive(Debug, Clone)]
pub struct SessionChoice {
    pub path: PathBuf,
    /// One line: date, message count, first prompt.
    pub label: String,
}

#[async_trait]
pub trait Host: Send + Sync + 'static {
    /// Models for `/model`.
    fn models(&self) -> Vec<Model>;
    /// The agent now uses `model`: record it in the session.
    fn model_changed(&self, model: &Model);
    fn thinking_changed(&self, level: ThinkingLevel);
    /// Starts a new, empty session (the agent is idle); returns a line to show.
    async fn new_session(&self) -> Result<String, String>;
    /// Sessions of this directory for `/resume`, newest first.
    fn sessions(&self) -> Vec<SessionChoice>;
    /// Loads a session into the agent (idle); returns its history to show.
    async fn resume(&self, path: PathBuf) -> Result<Vec<AgentMessage>, String>;
    /// How to come back to this session, shown at exit.
    fn resume_hint(&self) -> Option<String>;
}
