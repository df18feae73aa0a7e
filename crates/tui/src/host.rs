//! What the UI asks of the program around it: the models it may switch to, the sessions it may
//! start or resume, and `!cmd` shell commands. The binary implements it; everything here that
//! touches the disk or a process runs off the UI task, and what changes the conversation comes
//! back as agent events, not as return values.

use std::path::PathBuf;

use agent_core::{OnConflict, RestoreOutcome};
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
    /// Models for `/model`: the one the session started with, the registry's, and those of
    /// the local servers found and saved.
    fn models(&self) -> Vec<Model>;
    /// How full the context of `messages` is, by the agent's own estimate (for a server that
    /// reports no token usage); `None`: no estimate.
    fn estimate_context(&self, _messages: &[agent_core::AgentMessage]) -> Option<u64> {
        None
    }
    /// `Some` when `model` cannot be called as it is: its provider has no key (and where a key
    /// would go).
    fn needs_key(&self, _model: &Model) -> Option<crate::popup::KeyAsk> {
        None
    }
    /// Checks `key` with `model`'s provider (one cheap request), and unless it refuses it,
    /// saves the key and uses it from now on. `Ok`: what was done; `Err`: what the provider
    /// answered.
    async fn add_key(&self, _model: Model, _key: String) -> Result<String, String> {
        Err("this session cannot store keys".into())
    }
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
    /// `/undo`: takes back the files of the agent's last step; announced as
    /// `checkpoint_restored`.
    async fn undo(&self, on: OnConflict) -> RestoreOutcome;
    /// `/redo`: re-applies the step undone last.
    async fn redo(&self, on: OnConflict) -> RestoreOutcome;
    /// The user messages of the history, for `/rewind`.
    async fn rewind_points(&self) -> Vec<RewindPoint>;
    /// Goes back to just before history index `index`; the conversation part is announced as
    /// `rewound`.
    async fn rewind(
        &self,
        index: usize,
        scope: RewindScope,
        on: OnConflict,
    ) -> Result<Rewinding, String>;
    /// The session as a tree, for `/tree`.
    async fn tree(&self) -> Result<Vec<TreeRow>, String>;
    /// Makes entry `id` the current leaf (a user message: the point just before it), with its
    /// files too when `code`.
    async fn jump(&self, id: String, code: bool, on: OnConflict) -> Result<Rewinding, String>;
    /// Names the newest message, for `/tree`.
    async fn label(&self, name: String) -> Result<(), String>;
    /// Copies the current branch into a new session file and goes on there; returns its id.
    async fn fork(&self) -> Result<String, String>;
    /// The prompt a `/template args` or `/skill:name args` line stands for; `Ok(None)` for
    /// any other text, `Err` for an unknown skill.
    fn expand(&self, _text: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    /// `/export`: writes the session's current branch to `path`, or a default file; says
    /// where.
    async fn export(&self, _path: Option<String>) -> Result<String, String> {
        Err("this session cannot export".into())
    }
    /// `/skills`: the skills and where each came from.
    /// Steers the running subagent `id`; false when it does not run.
    fn steer_subagent(&self, _id: &str, _text: &str) -> bool {
        false
    }

    /// Stops the running subagent `id` alone; false when it does not run.
    fn stop_subagent(&self, _id: &str) -> bool {
        false
    }

    fn skills(&self) -> String {
        "No skills.".to_string()
    }

    /// Stops and starts the MCP server `name`; its new state arrives as `mcp_status`.
    async fn mcp_restart(&self, name: String) -> Result<(), String> {
        Err(format!("no MCP server `{name}` is configured"))
    }
}

/// A user message `/rewind` can go back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPoint {
    /// Its index in the history.
    pub index: usize,
    pub text: String,
    /// Checkpoints after it that restoring the code would take back.
    pub checkpoints: usize,
}

/// What `/rewind` (and a `/tree` jump) restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindScope {
    /// The files and the conversation.
    Both,
    Conversation,
    Code,
}

impl RewindScope {
    pub fn code(self) -> bool {
        self != Self::Conversation
    }

    pub fn conversation(self) -> bool {
        self != Self::Code
    }
}

/// How a rewind or a `/tree` jump went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewinding {
    /// The restore of the files, when asked for. `Conflicts`: nothing at all was done.
    pub code: Option<agent_core::RestoreOutcome>,
    /// The conversation moved.
    pub conversation: bool,
    /// The user message gone back to before, to edit and send again.
    pub text: Option<String>,
}

/// One line of `/tree`: the session's nodes in order, indented where branches part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    pub id: String,
    pub depth: usize,
    pub user: bool,
    pub text: String,
    pub label: Option<String>,
    /// Checkpoints taken under this node.
    pub checkpoints: usize,
    /// The ids of the subagents its `task` calls ran.
    pub subagents: Vec<String>,
    /// On the way from the root to the current leaf.
    pub on_path: bool,
    /// The current leaf.
    pub current: bool,
}
