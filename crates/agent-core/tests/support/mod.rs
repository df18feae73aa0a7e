//! Test doubles for the loop: a scripted in-process provider and configurable tools.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_core::{
    Agent, AgentConfig, AgentEvent, AgentMessage, CompactReason, CompactionSummary, Compactor,
    Concurrency, Tool, ToolContext, ToolError, ToolOutput,
};
use async_trait::async_trait;
use llm::{
    Api, AssistantBuilder, Context, EventStream, Model, ModelCost, Provider, StopReason,
    StreamEvent, StreamOptions, ToolResultMessage,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub fn model(id: &str) -> Model {
    Model {
        id: id.to_string(),
        provider: "test".to_string(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".to_string(),
        context_window: 100_000,
        max_output: 4_096,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

/// Something a script or a tool does to the agent while it runs.
#[derive(Debug, Clone)]
pub enum Action {
    Steer(String),
    FollowUp(String),
    Abort,
}

/// The agent under test, reachable from providers and tools once spawned; remembers every
/// action performed on it.
#[derive(Clone, Default)]
pub struct AgentSlot(Arc<OnceLock<Agent>>, Arc<Mutex<Vec<Action>>>);

impl AgentSlot {
    pub fn performed(&self) -> Vec<Action> {
        self.1.lock().unwrap().clone()
    }

    pub fn act(&self, action: &Action) {
        self.1.lock().unwrap().push(action.clone());
        let agent = self.0.get().expect("agent spawned");
        match action {
            Action::Steer(text) => {
                agent.steer(AgentMessage::user(text));
            }
            Action::FollowUp(text) => {
                agent.follow_up(AgentMessage::user(text));
            }
            Action::Abort => agent.abort(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Step {
    Event(StreamEvent),
    Act(Action),
    /// Sends nothing more until cancelled.
    Hang,
    /// Ends the stream without `Done` or `Error` (a provider bug the loop must survive).
    Vanish,
}

/// Builds the steps of one scripted reply.
pub struct ReplyScript {
    builder: AssistantBuilder,
    steps: Vec<Step>,
}

impl ReplyScript {
    pub fn new() -> Self {
        Self {
            builder: AssistantBuilder::new("scripted", "test"),
            steps: vec![Step::Event(StreamEvent::Start)],
        }
    }

    pub fn text(mut self, text: &str) -> Self {
        let event = self.builder.text_delta(text);
        self.steps.push(Step::Event(event));
        self
    }

    pub fn thinking(mut self, text: &str) -> Self {
        let event = self.builder.thinking_delta(text);
        self.steps.push(Step::Event(event));
        self
    }

    /// A tool call whose arguments stream in two pieces and complete.
    pub fn call(mut self, id: &str, name: &str, args: &str) -> Self {
        self = self.partial_call(id, name, args);
        for event in self.builder.end_open_toolcalls() {
            self.steps.push(Step::Event(event));
        }
        self
    }

    /// A tool call whose arguments started streaming but never completed.
    pub fn partial_call(mut self, id: &str, name: &str, args: &str) -> Self {
        let (index, start) = self.builder.toolcall_start(id, name);
        self.steps.push(Step::Event(start));
        let mid = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for piece in [&args[..mid], &args[mid..]] {
            let event = self.builder.toolcall_delta(index, piece);
            self.steps.push(Step::Event(event));
        }
        self
    }

    pub fn act(mut self, action: Action) -> Self {
        self.steps.push(Step::Act(action));
        self
    }

    pub fn done(mut self, reason: StopReason) -> Vec<Step> {
        self.steps.push(Step::Event(self.builder.done(reason)));
        self.steps
    }

    pub fn error(mut self, reason: &str) -> Vec<Step> {
        self.steps
            .push(Step::Event(self.builder.failed(StopReason::Error, reason)));
        self.steps
    }

    pub fn hang(mut self) -> Vec<Step> {
        self.steps.push(Step::Hang);
        self.steps
    }

    pub fn vanish(mut self) -> Vec<Step> {
        self.steps.push(Step::Vanish);
        self.steps
    }
}

pub fn text_reply(text: &str) -> Vec<Step> {
    ReplyScript::new().text(text).done(StopReason::Stop)
}

pub fn call_reply(id: &str, name: &str, args: &str) -> Vec<Step> {
    ReplyScript::new()
        .call(id, name, args)
        .done(StopReason::ToolUse)
}

/// A provider that plays scripted replies in order and records every context it is sent.
pub struct ScriptedProvider {
    replies: Mutex<VecDeque<Vec<Step>>>,
    pub contexts: Mutex<Vec<Context>>,
    /// Model id of each call.
    pub models: Mutex<Vec<String>>,
    /// The options of each call.
    pub options: Mutex<Vec<StreamOptions>>,
    slot: AgentSlot,
    /// Streams whose task is still running.
    live: Arc<tokio::sync::watch::Sender<usize>>,
}

/// Counts a stream task down when it ends, however it ends.
struct LiveGuard(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl ScriptedProvider {
    /// Waits until every stream task has ended (they may outlive an aborted run briefly).
    pub async fn streams_done(&self) {
        let mut rx = self.live.subscribe();
        rx.wait_for(|&n| n == 0).await.unwrap();
    }

    pub fn contexts(&self) -> Vec<Context> {
        self.contexts.lock().unwrap().clone()
    }
}

impl Provider for ScriptedProvider {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
        cancel: CancellationToken,
    ) -> EventStream {
        self.contexts.lock().unwrap().push(context);
        self.options.lock().unwrap().push(options);
        self.models.lock().unwrap().push(model.id.clone());
        let steps = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| ReplyScript::new().error("script exhausted"));
        let slot = self.slot.clone();
        let (tx, mut rx) = mpsc::channel(8);
        self.live.send_modify(|n| *n += 1);
        let guard = LiveGuard(self.live.clone());
        tokio::spawn(async move {
            let _guard = guard;
            for step in steps {
                match step {
                    Step::Event(event) => {
                        tokio::select! {
                            _ = cancel.cancelled() => return aborted(&tx).await,
                            sent = tx.send(event) => if sent.is_err() { return },
                        }
                    }
                    // A cancelled request does nothing more.
                    Step::Act(_) if cancel.is_cancelled() || tx.is_closed() => return,
                    Step::Act(action) => slot.act(&action),
                    Step::Hang => {
                        cancel.cancelled().await;
                        return aborted(&tx).await;
                    }
                    Step::Vanish => return,
                }
                // Let the agent see each event before the next step, as a network would.
                tokio::task::yield_now().await;
            }
        });
        Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}

async fn aborted(tx: &mpsc::Sender<StreamEvent>) {
    let builder = AssistantBuilder::new("scripted", "test");
    let _ = tx
        .send(builder.failed(StopReason::Aborted, "Request was aborted"))
        .await;
}

#[derive(Clone)]
pub enum Behaviour {
    /// Returns its arguments as text.
    Echo,
    Fail(String),
    Panic,
    /// Waits until the run is aborted.
    WaitForAbort,
    /// Does something to the agent, then echoes.
    Act(Action),
    /// Echoes and asks the loop to stop after the batch.
    Terminate,
    /// Waits for `n` calls of this tool to be running at once (fails after 5 s).
    Rendezvous(Arc<tokio::sync::Barrier>),
    /// Streams two partial updates, then echoes.
    Updates,
    /// Sleeps, then echoes; stops early (with an error) when cancelled.
    Sleep(Duration),
}

/// A tool whose behaviour a test chooses; logs `start <id>` / `end <id>`.
pub struct TestTool {
    pub name: String,
    pub concurrency: Concurrency,
    pub interruptible: bool,
    pub behaviour: Behaviour,
    pub log: Arc<Mutex<Vec<String>>>,
    pub slot: AgentSlot,
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a test tool"
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "integer"}}})
    }

    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }

    fn interruptible(&self) -> bool {
        self.interruptible
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("start {}", ctx.tool_call_id));
        // Give other tasks a chance to interleave, so ordering bugs show.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let output = match &self.behaviour {
            Behaviour::Echo => Ok(ToolOutput::text(format!("{} {args}", self.name))),
            Behaviour::Fail(message) => Err(ToolError(message.clone())),
            Behaviour::Panic => panic!("tool exploded"),
            Behaviour::WaitForAbort => {
                ctx.cancel.cancelled().await;
                Err(ToolError("aborted".into()))
            }
            Behaviour::Act(action) => {
                self.slot.act(action);
                Ok(ToolOutput::text(format!("{} {args}", self.name)))
            }
            Behaviour::Terminate => Ok(ToolOutput {
                terminate: true,
                ..ToolOutput::text("done")
            }),
            Behaviour::Rendezvous(barrier) => {
                match tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await {
                    Ok(_) => Ok(ToolOutput::text("met")),
                    Err(_) => Err(ToolError("calls did not run concurrently".into())),
                }
            }
            Behaviour::Updates => {
                ctx.update(ToolOutput::text("partial 1"));
                ctx.update(ToolOutput::text("partial 2"));
                Ok(ToolOutput::text("final"))
            }
            Behaviour::Sleep(time) => {
                tokio::select! {
                    _ = tokio::time::sleep(*time) => Ok(ToolOutput::text(format!("slept {args}"))),
                    _ = ctx.cancel.cancelled() => Err(ToolError("stopped waiting".into())),
                }
            }
        };
        self.log
            .lock()
            .unwrap()
            .push(format!("end {}", ctx.tool_call_id));
        output
    }
}

/// An agent wired to a scripted provider, with helpers to run it and inspect the outcome.
pub struct Harness {
    pub agent: Agent,
    pub provider: Arc<ScriptedProvider>,
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Every event received so far.
    pub seen: Vec<AgentEvent>,
    pub log: Arc<Mutex<Vec<String>>>,
    pub slot: AgentSlot,
}

pub struct HarnessBuilder {
    replies: Vec<Vec<Step>>,
    tools: Vec<(String, Concurrency, Behaviour, bool)>,
    configure: Box<dyn FnOnce(&mut AgentConfig)>,
}

impl HarnessBuilder {
    pub fn tool(mut self, name: &str, concurrency: Concurrency, behaviour: Behaviour) -> Self {
        self.tools
            .push((name.to_string(), concurrency, behaviour, false));
        self
    }

    /// A tool that only waits: a steering message cuts it short.
    pub fn interruptible_tool(mut self, name: &str, behaviour: Behaviour) -> Self {
        self.tools
            .push((name.to_string(), Concurrency::Shared, behaviour, true));
        self
    }

    pub fn configure(mut self, f: impl FnOnce(&mut AgentConfig) + 'static) -> Self {
        self.configure = Box::new(f);
        self
    }

    pub fn spawn(self) -> Harness {
        let slot = AgentSlot::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let provider = Arc::new(ScriptedProvider {
            replies: Mutex::new(self.replies.into()),
            contexts: Mutex::new(Vec::new()),
            models: Mutex::new(Vec::new()),
            options: Mutex::new(Vec::new()),
            slot: slot.clone(),
            live: Arc::new(tokio::sync::watch::channel(0).0),
        });
        let mut config = AgentConfig::new(model("scripted"), provider.clone());
        config.system_prompt = "You are a test.".to_string();
        for (name, concurrency, behaviour, interruptible) in self.tools {
            config.tools.push(Arc::new(TestTool {
                name,
                concurrency,
                interruptible,
                behaviour,
                log: log.clone(),
                slot: slot.clone(),
            }));
        }
        (self.configure)(&mut config);
        let agent = Agent::spawn(config);
        let _ = slot.0.set(agent.clone());
        let events = agent.subscribe();
        Harness {
            agent,
            provider,
            events,
            seen: Vec::new(),
            log,
            slot,
        }
    }
}

pub fn harness(replies: Vec<Vec<Step>>) -> HarnessBuilder {
    HarnessBuilder {
        replies,
        tools: Vec::new(),
        configure: Box::new(|_| {}),
    }
}

impl Harness {
    /// Prompts, waits for the agent to go idle, and returns every event seen so far.
    pub async fn run(&mut self, prompt: &str) -> Vec<AgentEvent> {
        self.agent.prompt(AgentMessage::user(prompt)).await.unwrap();
        self.settle().await
    }

    /// The next event (recorded in `seen`).
    pub async fn next_event(&mut self) -> AgentEvent {
        let event = tokio::time::timeout(Duration::from_secs(20), self.events.recv())
            .await
            .expect("an event within 20 s")
            .expect("the agent is alive");
        self.seen.push(event.clone());
        event
    }

    /// Waits for the agent to go idle and returns the events seen since the last call. Checks
    /// every event seen so far against the loop's invariants: sequences closed by the loop
    /// itself (no repair), every queued message delivered, returned or still queued.
    pub async fn settle(&mut self) -> Vec<AgentEvent> {
        tokio::time::timeout(Duration::from_secs(20), self.agent.wait_idle())
            .await
            .expect("agent went idle")
            .unwrap();
        let mut events = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            events.push(event);
        }
        self.seen.extend(events.iter().cloned());
        assert_balanced(&self.seen);
        assert_no_repairs(&self.seen);
        let snapshot = self.agent.snapshot().await.unwrap();
        let still: Vec<u64> = snapshot
            .steering
            .iter()
            .chain(&snapshot.follow_up)
            .map(|q| q.id)
            .collect();
        assert_queue_life(&self.seen, &still);
        events
    }

    /// The summaries of every finished run so far.
    pub fn summaries(&self) -> Vec<agent_core::RunSummary> {
        self.seen
            .iter()
            .filter_map(|e| match e {
                AgentEvent::AgentEnd { summary, .. } => Some(summary.clone()),
                _ => None,
            })
            .collect()
    }

    pub async fn messages(&self) -> Vec<AgentMessage> {
        self.agent.snapshot().await.unwrap().messages
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Event names without payloads, for sequence assertions.
pub fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                AgentEvent::MessageUpdate { .. }
                    | AgentEvent::Queued { .. }
                    | AgentEvent::QueueDelivered { .. }
                    | AgentEvent::QueueReturned { .. }
            )
        })
        .map(|e| {
            let value = serde_json::to_value(e).unwrap();
            let kind = value["type"].as_str().unwrap().to_string();
            match e {
                AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                    format!("{kind}:{}", role(message))
                }
                _ => kind,
            }
        })
        .collect()
}

pub fn role(message: &AgentMessage) -> &'static str {
    match message {
        AgentMessage::User(_) => "user",
        AgentMessage::Assistant(_) => "assistant",
        AgentMessage::ToolResult(_) => "tool_result",
        AgentMessage::Notice(_) => "notice",
        AgentMessage::CompactionSummary(_) => "compaction_summary",
    }
}

pub fn tool_results(messages: &[AgentMessage]) -> Vec<ToolResultMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Checks the history invariant: every tool call is followed by exactly one result before the
/// next assistant message, and no result is orphaned.
pub fn assert_paired(messages: &[AgentMessage]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match message {
            AgentMessage::Assistant(a) => {
                assert!(open.is_empty(), "tool calls without results: {open:?}");
                open = a.tool_calls().map(|c| c.id.clone()).collect();
            }
            AgentMessage::ToolResult(r) => {
                let pos = open
                    .iter()
                    .position(|id| *id == r.tool_call_id)
                    .unwrap_or_else(|| panic!("result without call: {}", r.tool_call_id));
                open.remove(pos);
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "tool calls without results: {open:?}");
}

/// Checks that every start has its end and the run closed once.
pub fn assert_balanced(events: &[AgentEvent]) {
    let (mut agent, mut turn, mut message) = (0i32, 0i32, 0i32);
    let mut tools: Vec<String> = Vec::new();
    let mut questions: Vec<u64> = Vec::new();
    for event in events {
        match event {
            AgentEvent::AgentStart => {
                assert_eq!(agent, 0, "nested agent_start");
                agent += 1;
            }
            AgentEvent::AgentEnd { .. } => {
                assert_eq!(agent, 1, "agent_end without agent_start");
                assert_eq!(turn, 0, "agent_end inside a turn");
                assert_eq!(message, 0, "agent_end inside a message");
                assert!(tools.is_empty(), "agent_end with running tools {tools:?}");
                agent -= 1;
            }
            AgentEvent::TurnStart { .. } => {
                assert_eq!(turn, 0, "nested turn_start");
                turn += 1;
            }
            AgentEvent::TurnEnd { .. } => {
                assert_eq!(turn, 1, "turn_end without turn_start");
                turn -= 1;
            }
            AgentEvent::MessageStart { .. } => {
                assert_eq!(message, 0, "nested message_start");
                message += 1;
            }
            AgentEvent::MessageUpdate { .. } => assert_eq!(message, 1, "update outside a message"),
            AgentEvent::MessageEnd { .. } => {
                assert_eq!(message, 1, "message_end without message_start");
                message -= 1;
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => tools.push(tool_call_id.clone()),
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
                assert!(tools.contains(tool_call_id), "update of a tool not running")
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                let pos = tools
                    .iter()
                    .position(|t| t == tool_call_id)
                    .expect("end of a started tool");
                tools.remove(pos);
            }
            AgentEvent::CompactionStart { .. }
            | AgentEvent::CompactionEnd { .. }
            | AgentEvent::ModelChange { .. }
            | AgentEvent::ThinkingChange { .. }
            | AgentEvent::ModeChange { .. }
            | AgentEvent::Subagent { .. }
            | AgentEvent::HistoryReset { .. }
            | AgentEvent::Queued { .. }
            | AgentEvent::QueueDelivered { .. }
            | AgentEvent::QueueReturned { .. }
            | AgentEvent::CheckpointTaken { .. }
            | AgentEvent::CheckpointRestored { .. }
            | AgentEvent::Rewound { .. }
            | AgentEvent::HookRun { .. }
            | AgentEvent::ToolsChanged { .. }
            | AgentEvent::McpStatus { .. } => {}
            AgentEvent::ApprovalRequested { request } => {
                assert!(
                    tools.contains(&request.tool_call_id),
                    "a question about a call that is not running"
                );
                questions.push(request.id);
            }
            AgentEvent::ApprovalDecided { id, .. } => {
                let pos = questions
                    .iter()
                    .position(|q| q == id)
                    .expect("an answer to an open question");
                questions.remove(pos);
            }
        }
    }
    assert!(questions.is_empty(), "questions left open: {questions:?}");
    assert_eq!((agent, turn, message), (0, 0, 0), "sequence left open");
    assert!(tools.is_empty(), "tools left running: {tools:?}");
}

/// The repair layer stayed idle: every run closed what it opened by itself.
pub fn assert_no_repairs(events: &[AgentEvent]) {
    for event in events {
        if let AgentEvent::AgentEnd { summary, .. } = event {
            assert_eq!(
                summary.repairs, 0,
                "the agent had to repair a run: {summary:?}"
            );
        }
    }
}

/// Every queued message is queued once and then either delivered or returned once, or still
/// waits in `still_queued`; a delivered message is in the history right after its
/// `queue_delivered`.
pub fn assert_queue_life(events: &[AgentEvent], still_queued: &[u64]) {
    use std::collections::HashMap;
    #[derive(Debug, PartialEq)]
    enum Life {
        Queued,
        Delivered,
        Returned,
    }
    let mut life: HashMap<u64, Life> = HashMap::new();
    let mut texts: HashMap<u64, String> = HashMap::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            AgentEvent::Queued { id, message, .. } => {
                assert!(
                    life.insert(*id, Life::Queued).is_none(),
                    "{id} queued twice"
                );
                texts.insert(*id, message.preview());
            }
            AgentEvent::QueueDelivered { ids, .. } => {
                let following: Vec<String> = events[i + 1..]
                    .iter()
                    .filter_map(|e| match e {
                        AgentEvent::MessageEnd { message } => Some(message.preview()),
                        _ => None,
                    })
                    .take(ids.len())
                    .collect();
                for (n, id) in ids.iter().enumerate() {
                    assert_eq!(
                        life.get(id),
                        Some(&Life::Queued),
                        "{id} delivered when not queued"
                    );
                    life.insert(*id, Life::Delivered);
                    assert_eq!(
                        following.get(n),
                        texts.get(id),
                        "{id} not injected after delivery"
                    );
                }
            }
            AgentEvent::QueueReturned { messages } => {
                for m in messages {
                    assert_eq!(
                        life.get(&m.id),
                        Some(&Life::Queued),
                        "{} returned when not queued",
                        m.id
                    );
                    life.insert(m.id, Life::Returned);
                }
            }
            _ => {}
        }
    }
    for (id, state) in &life {
        if *state == Life::Queued {
            assert!(
                still_queued.contains(id),
                "message {id} vanished: neither delivered nor returned nor queued"
            );
        } else {
            assert!(
                !still_queued.contains(id),
                "message {id} ended and is still queued"
            );
        }
    }
}

pub fn text_of(message: &AgentMessage) -> String {
    message.preview()
}

/// Cuts before the last user message once the history holds `at_least` messages (any
/// non-threshold reason cuts whenever it can); summarises as told.
pub struct TestCompactor {
    at_least: usize,
    fail: bool,
    pub calls: Mutex<Vec<(usize, Option<String>)>>,
}

impl TestCompactor {
    pub fn new(at_least: usize, fail: bool) -> Arc<Self> {
        Arc::new(Self {
            at_least,
            fail,
            calls: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Compactor for TestCompactor {
    fn plan(&self, messages: &[AgentMessage], _: &Model, reason: CompactReason) -> Option<usize> {
        if reason == CompactReason::Threshold && messages.len() < self.at_least {
            return None;
        }
        messages
            .iter()
            .rposition(|m| matches!(m, AgentMessage::User(_)))
            .filter(|&i| i > 0)
    }

    async fn summarize(
        &self,
        _: &[AgentMessage],
        keep_from: usize,
        _: &Model,
        instructions: Option<&str>,
        _: CancellationToken,
    ) -> Result<CompactionSummary, agent_core::CompactionError> {
        // A summary takes a moment: an abort or a steer can come during it.
        tokio::task::yield_now().await;
        self.calls
            .lock()
            .unwrap()
            .push((keep_from, instructions.map(String::from)));
        if self.fail {
            return Err(agent_core::CompactionError::Request(
                "the provider said no".into(),
            ));
        }
        Ok(CompactionSummary {
            summary: format!("summary of {keep_from} messages"),
            tokens_before: 1234,
            timestamp: 7,
        })
    }
}

/// The roles of the messages a request sent, in order.
pub fn wire_roles(context: &llm::Context) -> Vec<&'static str> {
    context
        .messages
        .iter()
        .map(|m| match m {
            llm::Message::User(_) => "user",
            llm::Message::Assistant(_) => "assistant",
            llm::Message::ToolResult(_) => "tool_result",
        })
        .collect()
}

/// The text of the last user message a request sent.
pub fn last_user_text(context: &llm::Context) -> String {
    context
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            llm::Message::User(u) => Some(u.plain_text()),
            _ => None,
        })
        .unwrap()
}
