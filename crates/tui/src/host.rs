//! What the UI asks of the program around it: the models it may switch to, the sessions it may
//! start or resume, and `!cmd` shell commands. The binary implements it; everything here that
//! touches the disk or a process runs off the UI task, and what changes the conversation comes
//! back as agent events, not as return values.

use std::path::PathBuf;

use async_trait::async_trait;
use llm::{Model, ToolResultMessage};
use tokio_util::sync::CancellationToken;

/// A saved session as the `/resume` list shows it.
#[derive(Debug, Clone)]
pub struct SessionChoice {
    pub path: PathBuf,
    /// One line: date, message count, first prompt.
    pub label: String,
}

/// Partial output of a running shell command (its tail so far).
pub type OnOutput = Box<dyn Fn(String) + Send + Sync>;

#[async_trait]
pub trait Host: Send + Sync + 'static {
    /// Models for `/model`.
    fn models(&self) -> Vec<Model>;
    /// Starts a new, empty session (the agent is idle); the agent announces it with a
    /// `history_reset` event.
    async fn new_session(&self) -> Result<(), String>;
    /// Sessions of this directory for `/resume`, newest first.
    async fn sessions(&self) -> Vec<SessionChoice>;
    /// Loads a session into the agent (idle); the agent announces it with a `history_reset`.
    async fn resume(&self, path: PathBuf) -> Result<(), String>;
    /// Runs a `!cmd` shell command (the model never sees it) until it ends or `cancel` fires.
    async fn run_shell(
        &self,
        command: String,
        cancel: CancellationToken,
        on_output: OnOutput,
    ) -> ToolResultMessage;
    /// Where the session is saved and how to come back to it, in a line or two.
    fn session_status(&self) -> String;
    /// The sandbox, the approval mode and the repository's trust, for `/status`.
    fn safety_status(&self) -> String;
    /// The command prefixes the user always allows in this project.
    async fn rules(&self) -> Result<Vec<Vec<String>>, String>;
    /// Forgets one of them.
    async fn revoke_rule(&self, prefix: Vec<String>) -> Result<(), String>;
}
