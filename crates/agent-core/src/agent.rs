//! The `Agent` handle and the task that owns the conversation.
//!
//! Commands go in over a channel and are applied in order by one task, which owns the history,
//! the queues and the subscribers. Each run of the loop is a task of its own that reports back
//! over a second channel; its events reach every subscriber through the owner, which mirrors
//! the history from `message_end` events.

use std::sync::Arc;

use llm::{Model, Provider, StreamOptions, ThinkingLevel};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::balance::Balance;
use crate::compaction::{self, compact_history};
use crate::queue::Queue;
use crate::run::{Internal, LoopIo, RunContext, run_loop};
use crate::{
    AgentEvent, AgentMessage, CompactReason, CompactionOutcome, Compactor, Hooks, NoHooks,
    QueueMode, Tool,
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
    pub running: bool,
    pub steering: Vec<AgentMessage>,
    pub follow_up: Vec<AgentMessage>,
}

type Reply<T> = oneshot::Sender<T>;

enum Command {
    Prompt(Vec<AgentMessage>, Reply<Result<(), AgentError>>),
    Continue(Reply<Result<(), AgentError>>),
    Compact(Option<String>, Reply<Result<(), AgentError>>),
    Steer(AgentMessage),
    FollowUp(AgentMessage),
    Abort,
    SetModel(Model),
    SetThinking(ThinkingLevel),
    Reset(Vec<AgentMessage>, Reply<Result<(), AgentError>>),
    SetQueueModes(QueueMode, QueueMode),
    TakeQueued(Reply<(Vec<AgentMessage>, Vec<AgentMessage>)>),
    Snapshot(Reply<AgentSnapshot>),
    Subscribe(mpsc::UnboundedSender<AgentEvent>),
    WaitIdle(Reply<()>),
}

/// A handle to a running agent; cheap to clone. When the last handle is dropped the current
/// run is aborted and the agent task ends.
#[derive(Clone)]
pub struct Agent {
    tx: mpsc::UnboundedSender<Command>,
}

impl Agent {
    /// Starts the agent task on the current tokio runtime.
    pub fn spawn(config: AgentConfig) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (internal_tx, internal_rx) = mpsc::unbounded_channel();
        let owner = Owner {
            steering: Queue {
                mode: config.steering_mode,
                ..Queue::default()
            },
            follow_up: Queue {
                mode: config.follow_up_mode,
                ..Queue::default()
            },
            messages: config.messages,
            model: config.model,
            thinking: config.thinking,
            system_prompt: config.system_prompt,
            provider: config.provider,
            tools: Arc::new(config.tools),
            hooks: config.hooks,
            stream_options: config.stream_options,
            subscribers: Vec::new(),
            run: None,
            balance: Balance::default(),
            idle_waiters: Vec::new(),
            internal_tx,
            handles_alive: true,
            compactor: config.compactor,
        };
        tokio::spawn(owner.serve(rx, internal_rx));
        Self { tx }
    }

    /// Every event from now on, in order. Unbounded: a slow reader never stalls the loop and
    /// never loses an event.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.send(Command::Subscribe(tx));
        rx
    }

    /// Starts a run with a user message; `Busy` while a run is in progress.
    pub async fn prompt(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.prompt_all(vec![message]).await
    }

    pub async fn prompt_all(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.ask(|reply| Command::Prompt(messages, reply))
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

    /// Queues a message for the next model call of the current run (after the running tools).
    pub fn steer(&self, message: AgentMessage) {
        self.send(Command::Steer(message));
    }

    /// Queues a message for when the run would otherwise stop.
    pub fn follow_up(&self, message: AgentMessage) {
        self.send(Command::FollowUp(message));
    }

    /// Stops the model stream and every running tool now. The queues are kept.
    pub fn abort(&self) {
        self.send(Command::Abort);
    }

    /// Model of the next run.
    pub fn set_model(&self, model: Model) {
        self.send(Command::SetModel(model));
    }

    /// Starts over with `messages` as the history (empty for a new session); `Busy` while a
    /// run is in progress. The queues are kept.
    pub async fn reset(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.ask(|reply| Command::Reset(messages, reply))
            .await
            .and_then(|r| r)
    }

    pub fn set_thinking(&self, level: ThinkingLevel) {
        self.send(Command::SetThinking(level));
    }

    pub fn set_queue_modes(&self, steering: QueueMode, follow_up: QueueMode) {
        self.send(Command::SetQueueModes(steering, follow_up));
    }

    /// Empties both queues and returns what they held: (steering, follow-up).
    pub async fn take_queued(&self) -> Result<(Vec<AgentMessage>, Vec<AgentMessage>), AgentError> {
        self.ask(Command::TakeQueued).await
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

struct ActiveRun {
    cancel: CancellationToken,
}

/// The task that owns the conversation.
struct Owner {
    messages: Vec<AgentMessage>,
    steering: Queue,
    follow_up: Queue,
    model: Model,
    thinking: ThinkingLevel,
    system_prompt: String,
    provider: Arc<dyn Provider>,
    tools: Arc<Vec<Arc<dyn Tool>>>,
    hooks: Arc<dyn Hooks>,
    stream_options: StreamOptions,
    subscribers: Vec<mpsc::UnboundedSender<AgentEvent>>,
    run: Option<ActiveRun>,
    balance: Balance,
    idle_waiters: Vec<Reply<()>>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    /// False once every `Agent` handle is gone: finish the run, start no other.
    handles_alive: bool,
    compactor: Option<Arc<dyn Compactor>>,
}

impl Owner {
    async fn serve(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut internal: mpsc::UnboundedReceiver<Internal>,
    ) {
        loop {
            // Unbiased: a run streaming fast must not starve an abort.
            tokio::select! {
                Some(message) = internal.recv() => self.on_internal(message),
                command = commands.recv(), if self.handles_alive => match command {
                    Some(command) => self.on_command(command),
                    None => {
                        self.handles_alive = false;
                        if let Some(run) = &self.run {
                            run.cancel.cancel();
                        }
                    }
                },
            }
            if !self.handles_alive && self.run.is_none() {
                break;
            }
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Prompt(messages, reply) => {
                let result = if self.run.is_some() {
                    Err(AgentError::Busy)
                } else {
                    self.start_run(messages);
                    Ok(())
                };
                let _ = reply.send(result);
            }
            Command::Continue(reply) => {
                let _ = reply.send(self.continue_run());
            }
            Command::Compact(instructions, reply) => {
                let _ = reply.send(self.start_compaction(instructions));
            }
            Command::Steer(message) => {
                self.steering.messages.push_back(message);
                self.broadcast_queues();
                self.run_queued_if_idle();
            }
            Command::FollowUp(message) => {
                self.follow_up.messages.push_back(message);
                self.broadcast_queues();
                self.run_queued_if_idle();
            }
            Command::Abort => {
                if let Some(run) = &self.run {
                    run.cancel.cancel();
                }
            }
            Command::SetModel(model) => self.model = model,
            Command::SetThinking(level) => self.thinking = level,
            Command::Reset(messages, reply) => {
                let result = if self.run.is_some() {
                    Err(AgentError::Busy)
                } else {
                    self.messages = messages;
                    Ok(())
                };
                let _ = reply.send(result);
            }
            Command::SetQueueModes(steering, follow_up) => {
                self.steering.mode = steering;
                self.follow_up.mode = follow_up;
            }
            Command::TakeQueued(reply) => {
                let steering = self.steering.messages.drain(..).collect();
                let follow_up = self.follow_up.messages.drain(..).collect();
                let _ = reply.send((steering, follow_up));
                self.broadcast_queues();
            }
            Command::Snapshot(reply) => {
                let _ = reply.send(AgentSnapshot {
                    messages: self.messages.clone(),
                    model: self.model.clone(),
                    thinking: self.thinking,
                    running: self.run.is_some(),
                    steering: self.steering.messages.iter().cloned().collect(),
                    follow_up: self.follow_up.messages.iter().cloned().collect(),
                });
            }
            Command::Subscribe(tx) => self.subscribers.push(tx),
            Command::WaitIdle(reply) => {
                if self.run.is_none() {
                    let _ = reply.send(());
                } else {
                    self.idle_waiters.push(reply);
                }
            }
        }
    }

    fn continue_run(&mut self) -> Result<(), AgentError> {
        if self.run.is_some() {
            return Err(AgentError::Busy);
        }
        let queued: Vec<AgentMessage> = self.steering.messages.drain(..).collect();
        if !queued.is_empty() {
            self.broadcast_queues();
            self.start_run(queued);
            return Ok(());
        }
        let last = self
            .messages
            .iter()
            .rev()
            .find(|m| !matches!(m, AgentMessage::Notice(_)));
        let resumable = match last {
            Some(AgentMessage::User(_) | AgentMessage::ToolResult(_)) => true,
            // A failed request is retried: the provider drops the empty failed answer.
            Some(AgentMessage::Assistant(a)) => {
                a.stop_reason == llm::StopReason::Error && a.content.is_empty()
            }
            _ => false,
        };
        if !resumable {
            return Err(AgentError::NothingToContinue);
        }
        self.start_run(Vec::new());
        Ok(())
    }

    /// A manual compaction runs as a run without turns, so `Busy`, `abort` and `wait_idle`
    /// work on it unchanged.
    fn start_compaction(&mut self, instructions: Option<String>) -> Result<(), AgentError> {
        if self.run.is_some() {
            return Err(AgentError::Busy);
        }
        let Some(compactor) = self.compactor.clone() else {
            return Err(AgentError::NothingToCompact);
        };
        let planned = compactor.plan(&self.messages, &self.model, CompactReason::Manual);
        if !planned.is_some_and(|k| k > 0 && k <= self.messages.len()) {
            return Err(AgentError::NothingToCompact);
        }
        let cancel = CancellationToken::new();
        let mut messages = self.messages.clone();
        let model = self.model.clone();
        let tx = self.internal_tx.clone();
        let token = cancel.clone();
        let done = tx.clone();
        let compaction = async move {
            let emit = |event| {
                let _ = tx.send(Internal::Event(event));
            };
            compact_history(
                compactor.as_ref(),
                &mut messages,
                &model,
                CompactReason::Manual,
                instructions.as_deref(),
                &token,
                emit,
            )
            .await;
        };
        tokio::spawn(async move {
            // A panicking compactor still reports back; the balance closes its events.
            let _ = tokio::spawn(compaction).await;
            // Messages queued during the compaction run next (unless it was aborted).
            let _ = done.send(Internal::Finished { drained: true });
        });
        self.run = Some(ActiveRun { cancel });
        Ok(())
    }

    fn on_internal(&mut self, message: Internal) {
        match message {
            Internal::Event(event) => {
                self.balance.observe(&event);
                self.deliver(event);
            }
            // An aborted run gets nothing more: the queues wait for the next run.
            Internal::TakeSteering(reply) if self.run_cancelled() => {
                let _ = reply.send(Vec::new());
            }
            Internal::TakeFollowUp(reply) if self.run_cancelled() => {
                let _ = reply.send(Vec::new());
            }
            Internal::TakeSteering(reply) => {
                let taken = self.steering.take();
                self.reply_taken(reply, taken);
            }
            Internal::TakeFollowUp(reply) => {
                // Steering that arrived after the last steering poll goes first.
                let mut taken = self.steering.take();
                if taken.is_empty() {
                    taken = self.follow_up.take();
                }
                self.reply_taken(reply, taken);
            }
            Internal::Requeue(messages) => {
                if !messages.is_empty() {
                    self.steering.requeue(messages);
                    self.broadcast_queues();
                }
            }
            Internal::Finished { drained } => self.on_run_finished(drained),
        }
    }

    fn reply_taken(&mut self, reply: Reply<Vec<AgentMessage>>, taken: Vec<AgentMessage>) {
        let changed = !taken.is_empty();
        if let Err(taken) = reply.send(taken) {
            // The run is gone: nothing may be lost.
            self.steering.requeue(taken);
        }
        if changed {
            self.broadcast_queues();
        }
    }

    /// A message queued while no run is going (the sender's view of the run was stale) would
    /// otherwise wait for the next prompt: it starts a run instead.
    fn run_queued_if_idle(&mut self) {
        if self.run.is_some() || !self.handles_alive {
            return;
        }
        let mut next = self.steering.take();
        if next.is_empty() {
            next = self.follow_up.take();
        }
        if !next.is_empty() {
            self.broadcast_queues();
            self.start_run(next);
        }
    }

    fn run_cancelled(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.cancel.is_cancelled())
    }

    fn on_run_finished(&mut self, drained: bool) {
        let cancelled = self.run_cancelled();
        // Idle before `agent_end` goes out, so a reader can prompt as soon as it sees it.
        self.run = None;
        for event in self.balance.close(&self.messages) {
            self.deliver(event);
        }
        // Messages queued after the run's last poll would otherwise wait for the next prompt;
        // never after an abort, and never once nobody holds a handle to abort it.
        if drained && !cancelled {
            self.run_queued_if_idle();
            if self.run.is_some() {
                return;
            }
        }
        for waiter in self.idle_waiters.drain(..) {
            let _ = waiter.send(());
        }
    }

    fn start_run(&mut self, prompts: Vec<AgentMessage>) {
        let cancel = CancellationToken::new();
        let ctx = RunContext {
            messages: self.messages.clone(),
            model: self.model.clone(),
            thinking: self.thinking,
            system_prompt: self.system_prompt.clone(),
            tools: self.tools.clone(),
            provider: self.provider.clone(),
            hooks: self.hooks.clone(),
            stream_options: self.stream_options.clone(),
            compactor: self.compactor.clone(),
        };
        let io = LoopIo {
            tx: self.internal_tx.clone(),
            cancel: cancel.clone(),
        };
        let done = self.internal_tx.clone();
        tokio::spawn(async move {
            // A panic in the loop still reports back, so the sequence gets closed.
            let drained = tokio::spawn(run_loop(ctx, prompts, io))
                .await
                .unwrap_or(false);
            let _ = done.send(Internal::Finished { drained });
        });
        self.run = Some(ActiveRun { cancel });
    }

    /// Mirrors the history and hands the event to every subscriber.
    fn deliver(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageEnd { message } => self.messages.push(message.clone()),
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { summary, replaced },
                ..
            } => compaction::apply(&mut self.messages, summary, *replaced),
            _ => {}
        }
        self.subscribers.retain(|s| s.send(event.clone()).is_ok());
    }

    fn broadcast_queues(&mut self) {
        let event = AgentEvent::QueueUpdate {
            steering: self.steering.previews(),
            follow_up: self.follow_up.previews(),
        };
        self.deliver(event);
    }
}
