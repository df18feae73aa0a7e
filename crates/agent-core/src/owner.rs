//! The task that owns the conversation.
//!
//! Commands from [`Agent`](crate::Agent) handles are applied in order by this one task, which
//! owns the history, the queues, the model and the subscribers. Each run of the loop is a task
//! of its own that reports back over a second channel; its events reach every subscriber
//! through here, which mirrors the history from `message_end` events. Every change made here is
//! announced as an event too, so subscribers never need to ask.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use llm::{Model, Provider, StreamOptions, ThinkingLevel};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::balance::Balance;
use crate::compaction::{self, compact_history};
use crate::io::{Internal, LoopIo};
use crate::protocol::{AgentConfig, AgentError, AgentSnapshot, Command, Deltas, Reply};
use crate::queue::Queue;
use crate::run::{RunContext, Start, run_loop};
use crate::{
    AgentEvent, AgentMessage, ApprovalDecision, ApprovalRequest, Checkpointer, CompactReason,
    CompactionOutcome, Compactor, Hooks, ModeSwitch, PlanMode, QueueKind, QueuedMessage, RunStop,
    Tool, ToolRequirement,
};

struct ActiveRun {
    cancel: CancellationToken,
    /// Set by the run (or its deadline) when it stopped itself.
    stopped_by: Arc<OnceLock<RunStop>>,
}

pub(crate) struct Owner {
    messages: Vec<AgentMessage>,
    steering: Queue,
    follow_up: Queue,
    /// How many steering messages wait; runs peek at it to cut a tool batch short.
    steering_len: watch::Sender<usize>,
    model: Model,
    thinking: ThinkingLevel,
    system_prompt: String,
    provider: Arc<dyn Provider>,
    tools: Arc<Vec<Arc<dyn Tool>>>,
    hooks: Arc<dyn Hooks>,
    stream_options: StreamOptions,
    subscribers: Vec<(mpsc::UnboundedSender<AgentEvent>, Deltas)>,
    run: Option<ActiveRun>,
    /// The number of the last turn any run started.
    turn: u64,
    /// Questions waiting for the user, and where their answers go.
    approvals: Vec<(ApprovalRequest, Reply<ApprovalDecision>)>,
    next_approval: u64,
    balance: Balance,
    idle_waiters: Vec<Reply<()>>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    internal_rx: Option<mpsc::UnboundedReceiver<Internal>>,
    /// False once every `Agent` handle is gone: finish the run, start no other.
    handles_alive: bool,
    /// The current run was stopped for good (`Agent::stop`): nothing starts after it.
    stopping: bool,
    compactor: Option<Arc<dyn Compactor>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    extra_tools: crate::ExtraTools,
    redactor: crate::redact::Redactor,
    /// Taken when the agent is made, so no change of the list goes unannounced.
    extra_rx: Option<watch::Receiver<crate::extra::List>>,
    /// The last `mcp_status`, told to each new subscriber.
    mcp_status: Option<crate::McpStatus>,
    mode: ModeSwitch,
    plan: Option<PlanMode>,
    /// What the next run must call; taken by it.
    requirement: Option<ToolRequirement>,
    deadline: Option<Duration>,
}

impl Owner {
    pub fn new(config: AgentConfig) -> Self {
        let (internal_tx, internal_rx) = mpsc::unbounded_channel();
        Self {
            steering: Queue {
                mode: config.steering_mode,
                ..Queue::default()
            },
            follow_up: Queue {
                mode: config.follow_up_mode,
                ..Queue::default()
            },
            steering_len: watch::channel(0).0,
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
            turn: 0,
            approvals: Vec::new(),
            next_approval: 1,
            balance: Balance::default(),
            idle_waiters: Vec::new(),
            internal_tx,
            internal_rx: Some(internal_rx),
            handles_alive: true,
            stopping: false,
            compactor: config.compactor,
            checkpointer: config.checkpointer,
            extra_rx: Some(config.extra_tools.subscribe()),
            extra_tools: config.extra_tools,
            redactor: config.redactor,
            mcp_status: None,
            mode: config.mode,
            plan: config.plan,
            requirement: None,
            deadline: config.deadline,
        }
    }

    pub async fn serve(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let Some(mut internal) = self.internal_rx.take() else {
            return;
        };
        let Some(mut extra) = self.extra_rx.take() else {
            return;
        };
        loop {
            // Unbiased: a run streaming fast must not starve an abort.
            tokio::select! {
                Some(message) = internal.recv() => self.on_internal(message),
                Ok(()) = extra.changed() => {
                    let tools = extra.borrow_and_update().iter().map(|t| t.name().to_string()).collect();
                    self.deliver(AgentEvent::ToolsChanged { tools });
                }
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
            Command::Prompt(messages, deadline, reply) => {
                let result = if self.run.is_some() {
                    Err(AgentError::Busy)
                } else {
                    let start = Start {
                        messages,
                        delivered: Vec::new(),
                    };
                    self.start_run_within(start, deadline.or(self.deadline));
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
            Command::Queue(queued) => {
                self.deliver(AgentEvent::Queued {
                    id: queued.id,
                    kind: queued.kind,
                    message: queued.message.clone(),
                });
                match queued.kind {
                    QueueKind::Steer => self.steering.messages.push_back(queued),
                    QueueKind::FollowUp => self.follow_up.messages.push_back(queued),
                }
                self.sync_steering();
                self.run_queued_if_idle();
            }
            Command::Decide(id, decision) => self.decide(id, decision),
            Command::Abort => {
                if let Some(run) = &self.run {
                    run.cancel.cancel();
                }
                self.withdraw_questions("the run was aborted");
            }
            Command::Stop => {
                if let Some(run) = &self.run {
                    self.stopping = true;
                    run.cancel.cancel();
                }
                self.withdraw_questions("the agent is stopping");
            }
            Command::SetModel(model) => {
                if model != self.model {
                    self.model = model.clone();
                    self.deliver(AgentEvent::ModelChange { model });
                }
            }
            Command::SetMode(mode) => {
                if self.mode.set(mode) {
                    self.deliver(AgentEvent::ModeChange { mode });
                }
            }
            Command::Require(requirement) => self.requirement = requirement,
            Command::SetDeadline(deadline) => self.deadline = deadline,
            Command::SetThinking(level) => {
                if level != self.thinking {
                    self.thinking = level;
                    self.deliver(AgentEvent::ThinkingChange { level });
                }
            }
            Command::Reset {
                messages,
                reason,
                session,
                reply,
            } => {
                let result = if self.run.is_some() {
                    Err(AgentError::Busy)
                } else {
                    let shared: Arc<[AgentMessage]> = messages.into();
                    self.messages = shared.to_vec();
                    self.deliver(AgentEvent::HistoryReset {
                        messages: shared,
                        reason,
                        session,
                    });
                    Ok(())
                };
                let _ = reply.send(result);
            }
            Command::Rewind {
                messages,
                leaf,
                reply,
            } => {
                let result = if self.run.is_some() {
                    Err(AgentError::Busy)
                } else {
                    let shared: Arc<[AgentMessage]> = messages.into();
                    self.messages = shared.to_vec();
                    self.deliver(AgentEvent::Rewound {
                        messages: shared,
                        leaf,
                    });
                    Ok(())
                };
                let _ = reply.send(result);
            }
            Command::Announce(event) => self.deliver(event),
            Command::Ask(mut request, reply) => {
                request.id = self.next_approval;
                self.next_approval += 1;
                self.deliver(AgentEvent::ApprovalRequested {
                    request: (*request).clone(),
                });
                self.approvals.push((*request, reply));
            }
            Command::Withdraw(id) => {
                let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.approvals)
                    .into_iter()
                    .partition(|(r, _)| r.subagent.as_ref().is_some_and(|s| s.id == id));
                self.approvals = kept;
                for (request, reply) in gone {
                    let decision = ApprovalDecision::Deny {
                        reason: Some("the subagent stopped".into()),
                    };
                    let _ = reply.send(decision.clone());
                    self.deliver(AgentEvent::ApprovalDecided {
                        id: request.id,
                        decision,
                    });
                }
            }
            Command::SetQueueModes(steering, follow_up) => {
                self.steering.mode = steering;
                self.follow_up.mode = follow_up;
            }
            Command::TakeQueued(reply) => {
                let mut taken = self.steering.take_all();
                taken.extend(self.follow_up.take_all());
                self.sync_steering();
                self.hand_back(taken.clone());
                let _ = reply.send(taken);
            }
            Command::Inspect(look) => look(&self.messages),
            Command::Model(reply) => {
                let _ = reply.send(self.model.clone());
            }
            Command::Running(reply) => {
                let _ = reply.send(self.run.is_some());
            }
            Command::Snapshot(reply) => {
                let _ = reply.send(AgentSnapshot {
                    messages: self.messages.clone(),
                    model: self.model.clone(),
                    thinking: self.thinking,
                    mode: self.mode.get(),
                    running: self.run.is_some(),
                    steering: self.steering.messages.iter().cloned().collect(),
                    follow_up: self.follow_up.messages.iter().cloned().collect(),
                    approvals: self.approvals.iter().map(|(r, _)| r.clone()).collect(),
                });
            }
            Command::Subscribe(tx, deltas) => {
                // A reader that comes late still learns how the MCP servers are doing.
                if let Some(status) = &self.mcp_status {
                    let _ = tx.send(AgentEvent::McpStatus {
                        status: status.clone(),
                    });
                }
                self.subscribers.push((tx, deltas));
            }
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
        let queued = self.steering.take_all();
        if !queued.is_empty() {
            self.sync_steering();
            self.start_run(Start::from_queue(queued));
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
        self.start_run(Start {
            messages: Vec::new(),
            delivered: Vec::new(),
        });
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
        let hooks = self.hooks.clone();
        let compaction = async move {
            let emit = |event| {
                let _ = tx.send(Internal::Event(event));
            };
            compact_history(
                compactor.as_ref(),
                hooks.as_ref(),
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
        self.run = Some(ActiveRun {
            cancel,
            stopped_by: Arc::default(),
        });
        Ok(())
    }

    fn on_internal(&mut self, message: Internal) {
        match message {
            Internal::Event(event) => {
                self.balance.observe(&event);
                self.deliver(event);
            }
            // An aborted run gets nothing more: the queues wait for what follows the abort.
            Internal::TakeSteering(reply) | Internal::TakeFollowUp(reply)
                if self.run_cancelled() =>
            {
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
            Internal::Requeue(messages) => self.requeue(messages),
            Internal::Ask(mut request, reply) => {
                request.id = self.next_approval;
                self.next_approval += 1;
                self.deliver(AgentEvent::ApprovalRequested {
                    request: (*request).clone(),
                });
                self.approvals.push((*request, reply));
            }
            Internal::Finished { drained } => self.on_run_finished(drained),
        }
    }

    fn reply_taken(&mut self, reply: Reply<Vec<QueuedMessage>>, taken: Vec<QueuedMessage>) {
        self.sync_steering();
        if let Err(taken) = reply.send(taken) {
            // The run is gone: nothing may be lost.
            self.requeue(taken);
        }
    }

    /// Puts undelivered messages back into the queue each came from.
    fn requeue(&mut self, messages: Vec<QueuedMessage>) {
        let (steering, follow_up): (Vec<_>, Vec<_>) = messages
            .into_iter()
            .partition(|m| m.kind == QueueKind::Steer);
        self.steering.requeue(steering);
        self.follow_up.requeue(follow_up);
        self.sync_steering();
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
            self.sync_steering();
            self.start_run(Start::from_queue(next));
        }
    }

    fn run_cancelled(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.cancel.is_cancelled())
    }

    fn on_run_finished(&mut self, drained: bool) {
        self.withdraw_questions("the run ended");
        let cancelled = self.run_cancelled();
        // Idle before `agent_end` goes out, so a reader can prompt as soon as it sees it.
        if let Some(run) = self.run.take() {
            if let Some(stop) = run.stopped_by.get() {
                self.balance.stopped_by(*stop);
            }
            // Its deadline's timer, and anything still holding its token, stop with it.
            run.cancel.cancel();
        }
        for event in self.balance.close(&self.messages) {
            self.deliver(event);
        }
        let stopping = std::mem::take(&mut self.stopping);
        if !self.handles_alive {
            // Nobody is left to deliver to or hand back to.
        } else if drained && !cancelled {
            // Messages queued after the run's last poll would otherwise wait for the next
            // prompt.
            self.run_queued_if_idle();
        } else if cancelled && !stopping {
            self.after_abort();
        } else {
            // The run failed, a hook ended it, or the host is shutting down: nothing queued
            // may sit unseen in an idle agent, so the user gets it back to decide.
            let mut queued = self.steering.take_all();
            queued.extend(self.follow_up.take_all());
            self.sync_steering();
            self.hand_back(queued);
        }
        if self.run.is_some() {
            return;
        }
        for waiter in self.idle_waiters.drain(..) {
            let _ = waiter.send(());
        }
    }

    /// The user stopped the run: what they queued to steer it starts the next run (it was
    /// meant for the model, and nothing may be lost); follow-ups go back to them, since the
    /// work they were to follow was cut off.
    fn after_abort(&mut self) {
        let follow_ups = self.follow_up.take_all();
        self.hand_back(follow_ups);
        let steering = self.steering.take_all();
        self.sync_steering();
        if !steering.is_empty() {
            self.start_run(Start::from_queue(steering));
        }
    }

    /// The user's answer to question `id`, to the hook that asked.
    fn decide(&mut self, id: u64, decision: ApprovalDecision) {
        let Some(i) = self.approvals.iter().position(|(r, _)| r.id == id) else {
            return;
        };
        let (_, reply) = self.approvals.remove(i);
        let _ = reply.send(decision.clone());
        self.deliver(AgentEvent::ApprovalDecided { id, decision });
    }

    /// Answers every open question with a denial: nobody may be left waiting for an answer
    /// that will not come, and every reader learns the question is gone.
    fn withdraw_questions(&mut self, why: &str) {
        for (request, reply) in std::mem::take(&mut self.approvals) {
            let decision = ApprovalDecision::Deny {
                reason: Some(why.to_string()),
            };
            let _ = reply.send(decision.clone());
            self.deliver(AgentEvent::ApprovalDecided {
                id: request.id,
                decision,
            });
        }
    }

    fn hand_back(&mut self, messages: Vec<QueuedMessage>) {
        if !messages.is_empty() {
            self.deliver(AgentEvent::QueueReturned { messages });
        }
    }

    fn start_run(&mut self, start: Start) {
        self.start_run_within(start, self.deadline);
    }

    fn start_run_within(&mut self, start: Start, deadline: Option<Duration>) {
        let cancel = CancellationToken::new();
        let stopped_by: Arc<OnceLock<RunStop>> = Arc::default();
        if let Some(deadline) = deadline {
            // The deadline stops the run the way an abort does, saying why.
            let (cancel, stopped_by) = (cancel.clone(), stopped_by.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(deadline) => {
                        let _ = stopped_by.set(RunStop::Deadline);
                        cancel.cancel();
                    }
                    _ = cancel.cancelled() => {}
                }
            });
        }
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
            checkpointer: self.checkpointer.clone(),
            extra_tools: self.extra_tools.clone(),
            redactor: self.redactor.clone(),
            turn: self.turn,
            mode: self.mode.clone(),
            plan: self.plan.clone(),
            requirement: self.requirement.take(),
        };
        let io = LoopIo {
            tx: self.internal_tx.clone(),
            cancel: cancel.clone(),
            steering: self.steering_len.subscribe(),
            stopped_by: stopped_by.clone(),
        };
        let done = self.internal_tx.clone();
        tokio::spawn(async move {
            // A panic in the loop still reports back, so the sequence gets closed.
            let drained = tokio::spawn(run_loop(ctx, start, io))
                .await
                .unwrap_or(false);
            let _ = done.send(Internal::Finished { drained });
        });
        self.run = Some(ActiveRun { cancel, stopped_by });
    }

    fn sync_steering(&self) {
        let len = self.steering.len();
        self.steering_len.send_if_modified(|current| {
            let changed = *current != len;
            *current = len;
            changed
        });
    }

    /// Mirrors the history and hands the event to every subscriber.
    fn deliver(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageEnd { message } => self.messages.push(message.clone()),
            AgentEvent::TurnStart { turn } => self.turn = self.turn.max(*turn),
            AgentEvent::McpStatus { status } => self.mcp_status = Some(status.clone()),
            AgentEvent::Subagent { .. } => {
                // Its subagents' calls too: they come wrapped twice.
                if let (
                    AgentEvent::MessageEnd {
                        message: AgentMessage::Assistant(answer),
                    },
                    _,
                ) = event.unwrapped()
                {
                    self.balance.subagent_usage(&answer.usage);
                }
            }
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { summary, replaced },
                ..
            } => compaction::apply(&mut self.messages, summary, *replaced),
            _ => {}
        }
        let delta = event.is_delta();
        self.subscribers.retain(|(tx, deltas)| {
            (delta && *deltas == Deltas::Skipped) || tx.send(event.clone()).is_ok()
        });
    }
}
