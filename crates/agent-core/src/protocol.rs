//! What passes between an [`Agent`](crate::Agent) handle and the task that owns the
//! conversation: how an agent starts, the commands it takes, what it answers.

use std::sync::Arc;
use std::time::Duration;

use llm::{Model, Provider, StreamOptions, ThinkingLevel};
use tokio::sync::{mpsc, oneshot};

use crate::redact::Redactor;
use crate::{
    AgentEvent, AgentMessage, ApprovalDecision, ApprovalRequest, Checkpointer, Compactor,
    ExtraTools, Hooks, Mode, ModeSwitch, NoHooks, PlanMode, QueueMode, QueuedMessage, ResetReason,
    Tool, ToolRequirement,
};

/// How an agent starts.
pub struct AgentConfig {
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub system_prompt: String,
    /// Serves every model the agent may switch to.
    pub provider: Arc<dyn Provider>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub hooks: Arc<dyn Hooks>,
    pub stream_options: StreamOptions,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    /// History to start from (a resumed session).
    pub messages: Vec<AgentMessage>,
    /// Summarises old history when the context nears the window; none: never compact.
    pub compactor: Option<Arc<dyn Compactor>>,
    /// Takes checkpoints around tool batches that can change files; none: no checkpoints.
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    /// Tools the host adds and replaces while the agent runs (MCP), after the built-ins.
    pub extra_tools: ExtraTools,
    /// The provider key values no tool output may carry (see [`Redactor`]).
    pub redactor: Redactor,
    /// The working mode, shared with whatever enforces it in the host.
    pub mode: ModeSwitch,
    /// What plan mode adds; without it plan mode only withholds the tools that change files.
    pub plan: Option<PlanMode>,
    /// How long each run may take before it is stopped as an abort is (none: no limit).
    pub deadline: Option<Duration>,
}

impl AgentConfig {
    pub fn new(model: Model, provider: Arc<dyn Provider>) -> Self {
        Self {
            model,
            thinking: ThinkingLevel::Off,
            system_prompt: String::new(),
            provider,
            tools: Vec::new(),
            hooks: Arc::new(NoHooks),
            stream_options: StreamOptions::default(),
            steering_mode: QueueMode::All,
            follow_up_mode: QueueMode::All,
            messages: Vec::new(),
            compactor: None,
            checkpointer: None,
            extra_tools: ExtraTools::default(),
            redactor: Redactor::default(),
            mode: ModeSwitch::default(),
            plan: None,
            deadline: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// A run is in progress: steer or queue a follow-up instead.
    Busy,
    /// `continue_run` found no queued message and a history that ends with the model's answer.
    NothingToContinue,
    /// `compact` found no compactor configured or nothing old enough to summarise.
    NothingToCompact,
    /// The agent task is gone.
    Stopped,
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Busy => "the agent is already running",
            Self::NothingToContinue => "there is nothing to continue from",
            Self::NothingToCompact => "there is nothing to compact",
            Self::Stopped => "the agent has stopped",
        })
    }
}

impl std::error::Error for AgentError {}

/// What the agent holds right now.
#[derive(Debug, Clone)]
pub struct AgentSnapshot {
    pub messages: Vec<AgentMessage>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub mode: Mode,
    pub running: bool,
    pub steering: Vec<QueuedMessage>,
    pub follow_up: Vec<QueuedMessage>,
    /// Questions waiting for the user's answer.
    pub approvals: Vec<ApprovalRequest>,
}

pub(crate) type Reply<T> = oneshot::Sender<T>;

pub(crate) enum Command {
    /// With a deadline of its own for this run.
    Prompt(
        Vec<AgentMessage>,
        Option<Duration>,
        Reply<Result<(), AgentError>>,
    ),
    Continue(Reply<Result<(), AgentError>>),
    Compact(Option<String>, Reply<Result<(), AgentError>>),
    Queue(QueuedMessage),
    Decide(u64, ApprovalDecision),
    Abort,
    Stop,
    SetModel(Model),
    SetThinking(ThinkingLevel),
    SetMode(Mode),
    /// A tool the next run must call (see `ToolRequirement`).
    Require(Option<ToolRequirement>),
    SetDeadline(Option<Duration>),
    Reset {
        messages: Vec<AgentMessage>,
        reason: ResetReason,
        session: Option<String>,
        reply: Reply<Result<(), AgentError>>,
    },
    SetQueueModes(QueueMode, QueueMode),
    Rewind {
        messages: Vec<AgentMessage>,
        leaf: Option<String>,
        reply: Reply<Result<(), AgentError>>,
    },
    Announce(AgentEvent),
    /// A question from elsewhere (a subagent's call), asked and answered as this agent's own.
    Ask(Box<ApprovalRequest>, Reply<ApprovalDecision>),
    /// Withdraws the open questions of the subagent with this id.
    Withdraw(String),
    TakeQueued(Reply<Vec<QueuedMessage>>),
    Snapshot(Reply<AgentSnapshot>),
    /// The model calls go to now.
    Model(Reply<Model>),
    /// Whether a run is in progress.
    Running(Reply<bool>),
    /// Runs over the history where it is, no copy made (see `Agent::inspect`).
    Inspect(Look),
    Subscribe(mpsc::UnboundedSender<AgentEvent>, Deltas),
    WaitIdle(Reply<()>),
}

/// A look at the history (`Command::Inspect`).
pub(crate) type Look = Box<dyn FnOnce(&[AgentMessage]) + Send>;

/// Whether a subscriber gets the streaming deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deltas {
    Included,
    Skipped,
}
