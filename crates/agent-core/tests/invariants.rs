//! Property tests: random provider scripts, tool behaviours, hooks, compaction and
//! steer/follow-up/abort/continue timings, checked against the loop's invariants.
//!
//! The oracle must be able to fail: the repair layer that closes what a dying run left open is
//! asserted idle (`repairs == 0`), so a loop that forgets to close something is caught instead
//! of being quietly patched. Each case runs on a current-thread runtime under a deadline, so a
//! hang fails the case instead of hanging CI; failing seeds are saved beside this file and
//! replayed first.

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentEvent, AgentMessage, CompactionOutcome, Concurrency, Hooks, QueueMode, ToolOutput,
};
use async_trait::async_trait;
use llm::{Message, StopReason, ToolCall};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use support::*;

#[derive(Debug, Clone)]
enum Item {
    Text,
    Thinking,
    /// `id` from a small pool, so a reply repeats ids now and then.
    Call {
        tool: usize,
        id: u8,
        args: Args,
    },
    Act(ActKind),
}

#[derive(Debug, Clone, Copy)]
enum Args {
    Good,
    /// Streaming stopped before the arguments completed.
    Unfinished,
    /// Complete but not JSON.
    Broken,
    /// JSON of the wrong type.
    Mistyped,
    /// `{"x": 13}`: the guard hook blocks it.
    Unlucky,
}

#[derive(Debug, Clone, Copy)]
enum ActKind {
    Steer,
    FollowUp,
    Abort,
    Continue,
}

#[derive(Debug, Clone)]
enum End {
    Done(StopReason),
    Error,
    Vanish,
    /// Only used when the reply also aborts, so the run cannot hang.
    Hang,
}

#[derive(Debug, Clone)]
struct Plan {
    replies: Vec<(Vec<Item>, End)>,
    /// (event count, action) the test performs while watching events.
    external: Vec<(usize, ActKind)>,
    one_at_a_time: bool,
    hooks: bool,
    /// Compact once the history holds this many messages.
    compact_at: Option<usize>,
}

/// Tools by index: behaviour and concurrency.
const TOOLS: [&str; 9] = [
    "echo", "write", "fail", "boom", "steerer", "queuer", "aborter", "slow", "wait",
];

fn act_kind() -> impl Strategy<Value = ActKind> {
    prop_oneof![
        3 => Just(ActKind::Steer),
        3 => Just(ActKind::FollowUp),
        2 => Just(ActKind::Abort),
        1 => Just(ActKind::Continue),
    ]
}

fn args() -> impl Strategy<Value = Args> {
    prop_oneof![
        12 => Just(Args::Good),
        2 => Just(Args::Unfinished),
        1 => Just(Args::Broken),
        1 => Just(Args::Mistyped),
        1 => Just(Args::Unlucky),
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => Just(Item::Text),
        1 => Just(Item::Thinking),
        // Index 9 is a tool the agent does not have.
        5 => (0usize..10, 0u8..4, args()).prop_map(|(tool, id, args)| Item::Call { tool, id, args }),
        1 => act_kind().prop_map(Item::Act),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        3 => Just(End::Done(StopReason::ToolUse)),
        3 => Just(End::Done(StopReason::Stop)),
        1 => Just(End::Done(StopReason::Length)),
        1 => Just(End::Error),
        1 => Just(End::Vanish),
        1 => Just(End::Hang),
    ]
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec((prop::collection::vec(item(), 0..6), end()), 1..6),
        prop::collection::vec((0usize..60, act_kind()), 0..5),
        any::<bool>(),
        any::<bool>(),
        prop::option::weighted(0.3, 3usize..12),
    )
        .prop_map(
            |(replies, external, one_at_a_time, hooks, compact_at)| Plan {
                replies,
                external,
                one_at_a_time,
                hooks,
                compact_at,
            },
        )
}

struct Texts(usize);

impl Texts {
    fn action(&mut self, kind: ActKind) -> Option<Action> {
        self.0 += 1;
        match kind {
            ActKind::Steer => Some(Action::Steer(format!("steer-{}", self.0))),
            ActKind::FollowUp => Some(Action::FollowUp(format!("follow-{}", self.0))),
            ActKind::Abort => Some(Action::Abort),
            ActKind::Continue => None,
        }
    }
}

fn script(items: &[Item], end: &End, n: usize, texts: &mut Texts) -> Vec<Step> {
    let mut reply = ReplyScript::new();
    let mut aborts = false;
    for item in items {
        reply = match item {
            Item::Text => reply.text("some text "),
            Item::Thinking => reply.thinking("hmm "),
            Item::Call { tool, id, args } => {
                let name = TOOLS.get(*tool).copied().unwrap_or("nonexistent");
                let id = format!("r{n}c{id}");
                match args {
                    Args::Good => reply.call(&id, name, r#"{"x": 1}"#),
                    Args::Unfinished => reply.partial_call(&id, name, r#"{"x": 1}"#),
                    Args::Broken => reply.call(&id, name, r#"{"x": "#),
                    Args::Mistyped => reply.call(&id, name, r#"{"x": "many"}"#),
                    Args::Unlucky => reply.call(&id, name, r#"{"x": 13}"#),
                }
            }
            Item::Act(kind) => match texts.action(*kind) {
                Some(action) => {
                    aborts |= matches!(action, Action::Abort);
                    reply.act(action)
                }
                None => reply,
            },
        };
    }
    match end {
        End::Done(reason) => reply.done(*reason),
        End::Error => reply.error("server exploded"),
        End::Vanish => reply.vanish(),
        End::Hang if aborts => reply.hang(),
        End::Hang => reply.done(StopReason::Stop),
    }
}

/// Blocks unlucky calls and marks every result it sees.
struct Guard;

#[async_trait]
impl Hooks for Guard {
    async fn before_tool_call(
        &self,
        call: &ToolCall,
        approvals: &agent_core::Approvals<'_>,
    ) -> Result<(), String> {
        if call.arguments["x"] == 13 {
            return Err("13 is unlucky".into());
        }
        // Writes ask the user (the test answers every question as it appears).
        if call.name == "write" {
            let question = agent_core::Question {
                subject: call.arguments.to_string(),
                reason: "a write".into(),
                ..Default::default()
            };
            if !approvals.ask(question).await.approved() {
                return Err("denied by the user".into());
            }
        }
        Ok(())
    }

    async fn after_tool_call(&self, _call: &ToolCall, mut output: ToolOutput) -> ToolOutput {
        output.content.push(llm::UserContent::Text {
            text: "[seen by the guard]".into(),
        });
        output
    }
}

/// Tool calls are answered before anything else happens: no user message (or anything else)
/// between a call and its result, and no result without a call.
fn assert_strictly_paired<'a>(messages: impl Iterator<Item = (&'a str, Vec<String>)>) {
    let mut open: Vec<String> = Vec::new();
    for (role, ids) in messages {
        match role {
            "tool_result" => {
                let pos = open
                    .iter()
                    .position(|id| *id == ids[0])
                    .unwrap_or_else(|| panic!("result without a call: {}", ids[0]));
                open.remove(pos);
            }
            _ => {
                assert!(
                    open.is_empty(),
                    "a {role} message between calls {open:?} and their results"
                );
                if role == "assistant" {
                    open = ids;
                }
            }
        }
    }
    assert!(open.is_empty(), "calls without results: {open:?}");
}

fn agent_shape(message: &AgentMessage) -> (&'static str, Vec<String>) {
    match message {
        AgentMessage::Assistant(a) => ("assistant", a.tool_calls().map(|c| c.id.clone()).collect()),
        AgentMessage::ToolResult(r) => ("tool_result", vec![r.tool_call_id.clone()]),
        AgentMessage::User(_) => ("user", Vec::new()),
        AgentMessage::Notice(_) => ("notice", Vec::new()),
        AgentMessage::CompactionSummary(_) => ("summary", Vec::new()),
    }
}

fn wire_shape(message: &Message) -> (&'static str, Vec<String>) {
    match message {
        Message::Assistant(a) => ("assistant", a.tool_calls().map(|c| c.id.clone()).collect()),
        Message::ToolResult(r) => ("tool_result", vec![r.tool_call_id.clone()]),
        Message::User(_) => ("user", Vec::new()),
    }
}

/// The history a reader rebuilds from the events alone.
fn rebuild(initial: &[AgentMessage], events: &[AgentEvent]) -> Vec<AgentMessage> {
    let mut history = initial.to_vec();
    for event in events {
        match event {
            AgentEvent::MessageEnd { message } => history.push(message.clone()),
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { summary, replaced },
                ..
            } => {
                history.splice(
                    ..(*replaced).min(history.len()),
                    [AgentMessage::CompactionSummary(summary.clone())],
                );
            }
            AgentEvent::HistoryReset { messages, .. } | AgentEvent::Rewound { messages, .. } => {
                history = messages.to_vec()
            }
            _ => {}
        }
    }
    history
}

async fn check(plan: Plan) {
    let mut texts = Texts(0);
    let replies: Vec<Vec<Step>> = plan
        .replies
        .iter()
        .enumerate()
        .map(|(n, (items, end))| script(items, end, n, &mut texts))
        .collect();
    let steerer = texts.action(ActKind::Steer).expect("an action");
    let queuer = texts.action(ActKind::FollowUp).expect("an action");
    let mut builder = harness(replies);
    for name in TOOLS {
        builder = match name {
            "echo" => builder.tool(name, Concurrency::Shared, Behaviour::Echo),
            "write" => builder.tool(name, Concurrency::Exclusive, Behaviour::Echo),
            "fail" => builder.tool(
                name,
                Concurrency::Shared,
                Behaviour::Fail("no such file".into()),
            ),
            "boom" => builder.tool(name, Concurrency::Exclusive, Behaviour::Panic),
            "steerer" => builder.tool(name, Concurrency::Shared, Behaviour::Act(steerer.clone())),
            "queuer" => builder.tool(name, Concurrency::Exclusive, Behaviour::Act(queuer.clone())),
            "aborter" => builder.tool(name, Concurrency::Shared, Behaviour::Act(Action::Abort)),
            "slow" => builder.tool(
                name,
                Concurrency::Exclusive,
                Behaviour::Sleep(Duration::from_millis(3)),
            ),
            _ => builder.interruptible_tool(name, Behaviour::Sleep(Duration::from_millis(40))),
        };
    }
    let (one_at_a_time, hooks, compact_at) = (plan.one_at_a_time, plan.hooks, plan.compact_at);
    builder = builder.configure(move |c| {
        if one_at_a_time {
            c.steering_mode = QueueMode::OneAtATime;
            c.follow_up_mode = QueueMode::OneAtATime;
        }
        if hooks {
            c.hooks = Arc::new(Guard);
        }
        if let Some(at) = compact_at {
            c.compactor = Some(TestCompactor::new(at, false));
        }
    });
    let mut h = builder.spawn();
    let external: Vec<(usize, Option<Action>)> = plan
        .external
        .iter()
        .map(|(at, k)| (*at, texts.action(*k)))
        .collect();

    h.agent.prompt(AgentMessage::user("start")).await.unwrap();
    let agent = h.agent.clone();
    let mut pending_external = external;
    while !pending_external.is_empty() {
        let seen = h.seen.len();
        let (due, later): (Vec<_>, Vec<_>) = pending_external
            .into_iter()
            .partition(|(at, _)| *at <= seen);
        pending_external = later;
        for (_, action) in due {
            perform(&h, action).await;
        }
        tokio::select! {
            event = h.next_event() => answer(&h, &event),
            // Idle with actions left: the user acts while the agent waits.
            _ = agent.wait_idle() => {
                for (_, action) in pending_external.drain(..) {
                    perform(&h, action).await;
                }
            }
        }
    }
    // Questions may still come until the agent is idle: answer them as they do.
    loop {
        tokio::select! {
            event = h.next_event() => answer(&h, &event),
            _ = agent.wait_idle() => break,
        }
    }
    // `settle` checks balance, zero repairs, questions answered and every queued message's
    // life.
    h.settle().await;
    let events = h.seen.clone();

    let starts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentStart))
        .count();
    assert!(starts >= 1);

    // An idle agent holds no queued message: each was delivered or handed back.
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(!snapshot.running);
    assert!(
        snapshot.steering.is_empty() && snapshot.follow_up.is_empty(),
        "idle with queued messages: {:?} {:?}",
        snapshot.steering,
        snapshot.follow_up
    );

    // The history: tool calls answered at once, and exactly what the events say.
    assert_strictly_paired(snapshot.messages.iter().map(agent_shape));
    assert_eq!(
        rebuild(&[], &events),
        snapshot.messages,
        "events mirror the history"
    );
    for context in h.provider.contexts() {
        assert_strictly_paired(context.messages.iter().map(wire_shape));
        assert!(
            !matches!(context.messages.last(), Some(Message::Assistant(_))),
            "request ends with the model's turn"
        );
    }

    // Every queued text reached the history as often as it was delivered, and no more.
    let mut delivered: HashMap<u64, String> = HashMap::new();
    let mut queued: HashMap<u64, String> = HashMap::new();
    for event in &events {
        match event {
            AgentEvent::Queued { id, message, .. } => {
                queued.insert(*id, message.preview());
            }
            AgentEvent::QueueDelivered { ids, .. } => {
                for id in ids {
                    delivered.insert(*id, queued[id].clone());
                }
            }
            _ => {}
        }
    }
    let mut in_history: HashMap<String, usize> = HashMap::new();
    for message in &events {
        if let AgentEvent::MessageEnd {
            message: AgentMessage::User(u),
        } = message
        {
            *in_history.entry(u.plain_text()).or_default() += 1;
        }
    }
    for text in delivered.values() {
        let expected = delivered.values().filter(|t| *t == text).count();
        assert_eq!(
            in_history.get(text).copied().unwrap_or(0),
            expected,
            "{text} delivered {expected} times"
        );
    }
}

/// The user answers a question as soon as it appears: yes to odd ids, no to even ones.
fn answer(h: &Harness, event: &AgentEvent) {
    if let AgentEvent::ApprovalRequested { request } = event {
        let decision = if request.id % 2 == 1 {
            agent_core::ApprovalDecision::Approve
        } else {
            agent_core::ApprovalDecision::Deny { reason: None }
        };
        h.agent.decide(request.id, decision);
    }
}

/// What the user does from outside; the result of a `continue` depends on the moment and is
/// not checked here.
async fn perform(h: &Harness, action: Option<Action>) {
    match action {
        Some(action) => h.slot.act(&action),
        None => {
            let _ = h.agent.continue_run().await;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_loop_keeps_its_invariants(plan in plan()) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), check(plan))
                .await
                .expect("the case finished within 30 s (a hang is a failure)");
        });
    }
}
