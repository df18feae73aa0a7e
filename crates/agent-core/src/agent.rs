//! The `Agent` handle: what hosts hold to drive the agent.
//!
//! Commands (see `protocol`) go over a channel to the task that owns the conversation
//! (`owner`); every consequence comes back as events to each subscriber.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use llm::{Model, ThinkingLevel};
use tokio::sync::{mpsc, oneshot};

use crate::owner::Owner;
use crate::protocol::{AgentConfig, AgentError, AgentSnapshot, Command, Deltas, Reply};
use crate::{
    AgentEvent, AgentMessage, Mode, QueueKind, QueueMode, QueuedMessage, ResetReason,
    ToolRequirement,
};

/// A handle to a running agent; cheap to clone. When the last handle is dropped the current
/// run is aborted and the agent task ends.
#[derive(Clone)]
pub struct Agent {
    tx: mpsc::UnboundedSender<Command>,
    /// Ids of queued messages, handed out here so `steer` can return one at once.
    next_id: Arc<AtomicU64>,
}

impl Agent {
    /// Starts the agent task on the current tokio runtime.
    pub fn spawn(config: AgentConfig) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(Owner::new(config).serve(rx));
        Self {
            tx,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Every event from now on, in order. Unbounded: a slow reader never stalls the loop and
    /// never loses an event.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.send(Command::Subscribe(tx, Deltas::Included));
        rx
    }

    /// Every event from now on except the streaming deltas (`MessageUpdate`,
    /// `ToolExecutionUpdate`): for readers that act on what is settled (the session recorder,
    /// the checkpoint timeline). A model sends ~100 deltas a second; each one handed to such a
    /// reader is a wake-up for nothing.
    pub fn subscribe_settled(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.send(Command::Subscribe(tx, Deltas::Skipped));
        rx
    }

    /// Starts a run with a user message; `Busy` while a run is in progress.
    pub async fn prompt(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.prompt_all(vec![message]).await
    }

    pub async fn prompt_all(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.ask(|reply| Command::Prompt(messages, None, reply))
            .await
            .and_then(|r| r)
    }

    /// Starts a run that is stopped, as an abort stops it, once `deadline` has passed
    /// (`agent_end` then says `stopped_by: deadline`); it replaces the agent's own deadline.
    pub async fn prompt_within(
        &self,
        message: AgentMessage,
        deadline: Duration,
    ) -> Result<(), AgentError> {
        self.ask(|reply| Command::Prompt(vec![message], Some(deadline), reply))
            .await
            .and_then(|r| r)
    }

    /// Starts a run from the queued steering messages or, with none, from the history as it is
    /// (after an abort or a failed request).
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        self.ask(Command::Continue).await.and_then(|r| r)
    }

    /// Summarises the older history now (`/compact`), with optional extra instructions for the
    /// summary. Runs like a run: `Busy` while one is in progress, `abort` stops it, and the
    /// outcome arrives as `compaction_start` / `compaction_end` events; `wait_idle` waits for it.
    pub async fn compact(&self, instructions: Option<String>) -> Result<(), AgentError> {
        self.ask(|reply| Command::Compact(instructions, reply))
            .await
            .and_then(|r| r)
    }

    /// Queues a message for the next model call of the current run: the run stops starting
    /// tools and delivers it after the running ones finish. Idle, it starts a run. Returns the
    /// message's id (see the `queued` / `queue_delivered` / `queue_returned` events).
    pub fn steer(&self, message: AgentMessage) -> u64 {
        self.queue(QueueKind::Steer, message)
    }

    /// Queues a message for when the run would otherwise stop; idle, it starts a run.
    pub fn follow_up(&self, message: AgentMessage) -> u64 {
        self.queue(QueueKind::FollowUp, message)
    }

    fn queue(&self, kind: QueueKind, message: AgentMessage) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(Command::Queue(QueuedMessage { id, kind, message }));
        id
    }

    /// Answers the question `id` of an `approval_requested` event (an unknown or already
    /// answered id is ignored: another front end may have answered first).
    pub fn decide(&self, id: u64, decision: crate::ApprovalDecision) {
        self.send(Command::Decide(id, decision));
    }

    /// Stops the model stream and every running tool now. Then queued steering starts the
    /// next run, and queued follow-ups are handed back (`queue_returned`).
    pub fn abort(&self) {
        self.send(Command::Abort);
    }

    /// Stops like [`abort`](Self::abort), but starts nothing afterwards: whatever is queued is
    /// handed back (`queue_returned`). For a host that is shutting down.
    pub fn stop(&self) {
        self.send(Command::Stop);
    }

    /// Model of the next run (`model_change`).
    pub fn set_model(&self, model: Model) {
        self.send(Command::SetModel(model));
    }

    /// The working mode from the next model call on (`mode_change`).
    pub fn set_mode(&self, mode: Mode) {
        self.send(Command::SetMode(mode));
    }

    /// Requires the model to call a tool in the next run (see [`ToolRequirement`]); `None`
    /// withdraws a requirement no run has taken yet.
    pub fn require_tool(&self, requirement: Option<ToolRequirement>) {
        self.send(Command::Require(requirement));
    }

    /// How long each run may take from now on (`None`: no limit).
    pub fn set_deadline(&self, deadline: Option<Duration>) {
        self.send(Command::SetDeadline(deadline));
    }

    /// Thinking level of the next run (`thinking_change`).
    pub fn set_thinking(&self, level: ThinkingLevel) {
        self.send(Command::SetThinking(level));
    }

    /// Starts over with `messages` as the history (`history_reset`); `session` names where
    /// the host keeps it from now on. `Busy` while a run is in progress; the queues are kept.
    pub async fn reset(
        &self,
        messages: Vec<AgentMessage>,
        reason: ResetReason,
        session: Option<String>,
    ) -> Result<(), AgentError> {
        self.ask(|reply| Command::Reset {
            messages,
            reason,
            session,
            reply,
        })
        .await
        .and_then(|r| r)
    }

    /// Moves the conversation back to `messages` (an earlier point of the session, ending at
    /// session entry `leaf`), announced as `rewound`. `Busy` while a run is in progress.
    pub async fn rewind(
        &self,
        messages: Vec<AgentMessage>,
        leaf: Option<String>,
    ) -> Result<(), AgentError> {
        self.ask(|reply| Command::Rewind {
            messages,
            leaf,
            reply,
        })
        .await
        .and_then(|r| r)
    }

    /// Tells every reader about a checkpoint the host took itself (around a `!cmd`).
    pub fn announce_checkpoint(&self, record: crate::CheckpointRecord) {
        self.send(Command::Announce(AgentEvent::CheckpointTaken { record }));
    }

    /// Tells every reader about files the host restored (undo, redo, rewind).
    pub fn announce_restore(&self, record: crate::RestoreRecord) {
        self.send(Command::Announce(AgentEvent::CheckpointRestored { record }));
    }

    /// Tells every reader about a hook the host ran itself, outside a run (`session_start`).
    pub fn announce_hook_run(&self, run: crate::HookRun) {
        self.send(Command::Announce(AgentEvent::HookRun { run }));
    }

    /// Passes on an event of a subagent (see [`AgentEvent::Subagent`]): readers see it, the
    /// history does not take it, and its tokens count in the current run's summary.
    pub fn forward(&self, subagent: crate::SubagentRef, event: AgentEvent) {
        self.send(Command::Announce(AgentEvent::Subagent {
            subagent,
            event: Box::new(event),
        }));
    }

    /// Asks this agent's user a question of another agent (a subagent's call): announced and
    /// answered like this agent's own (`approval_requested`, [`Agent::decide`]); an abort, the
    /// end of the run or a stopped agent answers with a denial.
    pub async fn ask_user(&self, request: crate::ApprovalRequest) -> crate::ApprovalDecision {
        self.relay_question(request)
            .await
            .unwrap_or(crate::ApprovalDecision::Deny {
                reason: Some("the agent stopped".into()),
            })
    }

    /// Withdraws (denies) the open questions of subagent `id`: it stopped, nobody needs the
    /// answers (announced as `approval_decided`).
    pub fn withdraw_questions_of(&self, id: &str) {
        self.send(Command::Withdraw(id.to_string()));
    }

    async fn relay_question(
        &self,
        request: crate::ApprovalRequest,
    ) -> Result<crate::ApprovalDecision, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Ask(Box::new(request), reply))
            .map_err(|_| AgentError::Stopped)?;
        rx.await.map_err(|_| AgentError::Stopped)
    }

    /// Tells every reader how the host's MCP servers are doing.
    pub fn announce_mcp(&self, status: crate::McpStatus) {
        self.send(Command::Announce(AgentEvent::McpStatus { status }));
    }

    pub fn set_queue_modes(&self, steering: QueueMode, follow_up: QueueMode) {
        self.send(Command::SetQueueModes(steering, follow_up));
    }

    /// Empties both queues and hands back what they held, steering first (also announced as
    /// `queue_returned`).
    pub async fn take_queued(&self) -> Result<Vec<QueuedMessage>, AgentError> {
        self.ask(Command::TakeQueued).await
    }

    /// Runs `look` over the history where the agent keeps it and returns what it gives: no
    /// copy of the history is made (a snapshot of a long session is its size again). It
    /// runs on the agent's task, so it must be quick.
    pub async fn inspect<R: Send + 'static>(
        &self,
        look: impl FnOnce(&[AgentMessage]) -> R + Send + 'static,
    ) -> Result<R, AgentError> {
        self.ask(|reply: Reply<R>| {
            Command::Inspect(Box::new(move |messages| {
                let _ = reply.send(look(messages));
            }))
        })
        .await
    }

    /// The model calls go to now (a snapshot without the history's copy).
    pub async fn model(&self) -> Result<Model, AgentError> {
        self.ask(Command::Model).await
    }

    /// Whether a run is in progress (a snapshot without the history's copy).
    pub async fn running(&self) -> Result<bool, AgentError> {
        self.ask(Command::Running).await
    }

    pub async fn snapshot(&self) -> Result<AgentSnapshot, AgentError> {
        self.ask(Command::Snapshot).await
    }

    /// Resolves when no run is in progress (and none is about to start from queued messages).
    pub async fn wait_idle(&self) -> Result<(), AgentError> {
        self.ask(Command::WaitIdle).await
    }

    fn send(&self, command: Command) {
        // A stopped agent ignores commands; `ask` reports it.
        let _ = self.tx.send(command);
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).map_err(|_| AgentError::Stopped)?;
        rx.await.map_err(|_| AgentError::Stopped)
    }
}
