//! The tool trait the loop executes.

use async_trait::async_trait;
use llm::UserContent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Whether a tool may run beside others of the same batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// Read-only: runs together with the other shared calls around it.
    Shared,
    /// Mutating: waits for every call before it and blocks every call after it.
    Exclusive,
}

/// How a UI shows the calls of a tool: the tool says what it is, the UI picks the drawing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolView {
    /// A command and its streaming output (`command` argument).
    Shell,
    /// A file change with a diff (`path` argument, `diff` in the details).
    Diff,
    /// A file read (`path`, `offset`, `limit`).
    Read,
    /// A content search (`pattern`, `path`, `glob`).
    Search,
    /// A file-name search (`pattern`, `path`).
    Find,
    /// A directory listing (`path`).
    List,
    /// A subagent's job (`description`, `agent`), live while it runs.
    Task,
    /// A plan: markdown (`plan` as a string) or a checklist (`plan` as a list of
    /// `{step, status}`), shown whole.
    Plan,
    /// Anything else: the arguments and the first line of the result.
    #[default]
    Plain,
}

/// What a tool returns (also its partial updates while it runs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: Vec<UserContent>,
    /// Structured data for the UI (a diff, an exit code); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    /// Asks the loop not to call the model again after this batch; honoured only when every
    /// result of the batch asks for it.
    #[serde(default)]
    pub terminate: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![UserContent::Text { text: text.into() }],
            ..Self::default()
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// The text blocks joined by newlines (images are left out).
    pub fn plain_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text { text } => Some(text.as_str()),
                UserContent::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A failure the model should read; becomes an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self(message.to_string())
    }
}

type UpdateFn = dyn Fn(ToolOutput) + Send + Sync;

/// What a running tool gets besides its arguments.
pub struct ToolContext {
    pub tool_call_id: String,
    /// Cancelled when the run is aborted (or, for an interruptible tool, when the user sends
    /// a new message); tools must stop promptly (and kill their children).
    pub cancel: CancellationToken,
    on_update: Box<UpdateFn>,
}

impl ToolContext {
    pub fn new(
        tool_call_id: impl Into<String>,
        cancel: CancellationToken,
        on_update: impl Fn(ToolOutput) + Send + Sync + 'static,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            cancel,
            on_update: Box::new(on_update),
        }
    }

    /// Reports partial output (shown live; the final result replaces it).
    pub fn update(&self, partial: ToolOutput) {
        (self.on_update)(partial);
    }
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the arguments object; arguments are checked against its `required`
    /// fields and `type`s before `execute` runs.
    fn parameters(&self) -> Value;
    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }
    /// A tool that only waits (a poll, a sleep-like wait) and stops cleanly when its
    /// `cancel` fires: a steering message cuts it short instead of waiting for it. Never
    /// declare a tool with side effects interruptible — stopping it midway would leave half
    /// of its work done.
    fn interruptible(&self) -> bool {
        false
    }
    /// Whether the model is offered the tool in `mode` (plan mode offers nothing that
    /// changes files, and only plan mode offers the tool that presents a plan).
    fn offered_in(&self, mode: crate::Mode) -> bool {
        let _ = mode;
        true
    }
    /// How a UI shows its calls.
    fn view(&self) -> ToolView {
        ToolView::Plain
    }
    async fn execute(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;
}
