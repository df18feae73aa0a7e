//! Property tests: random provider scripts, tool behaviours and steer/follow-up/abort timings,
//! checked against the loop's invariants.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use agent_core::{AgentEvent, AgentMessage, Concurrency, QueueMode};
use llm::{Message, StopReason};
use proptest::prelude::*;
use support::*;

#[derive(Debug, Clone)]
enum Item {
    Text,
    Thinking,
    Call { tool: usize, complete: bool },
    Act(ActKind),
}

#[derive(Debug, Clone, Copy)]
enum ActKind {
    Steer,
    FollowUp,
    Abort,
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
}

/// Tools by index: behaviour and concurrency.
const TOOLS: [(&str, Concurrency); 7] = [
    ("echo", Concurrency::Shared),
    ("write", Concurrency::Exclusive),
    ("fail", Concurrency::Shared),
    ("boom", Concurrency::Exclusive),
    ("steerer", Concurrency::Shared),
    ("queuer", Concurrency::Exclusive),
    ("aborter", Concurrency::Shared),
];

fn act_kind() -> impl Strategy<Value = ActKind> {
    prop_oneof![
        Just(ActKind::Steer),
        Just(ActKind::FollowUp),
        Just(ActKind::Abort)
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => Just(Item::Text),
        1 => Just(Item::Thinking),
        // Index 7 is a tool the agent does not have.
        4 => (0usize..8, prop::bool::weighted(0.85)).prop_map(|(tool, complete)| Item::Call { tool, complete }),
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
        prop::collection::vec((0usize..40, act_kind()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(replies, external, one_at_a_time)| Plan {
            replies,
            external,
            one_at_a_time,
        })
}

struct Texts(usize);

impl Texts {
    fn action(&mut self, kind: ActKind) -> Action {
        self.0 += 1;
        match kind {
            ActKind::Steer => Action::Steer(format!("steer-{}", self.0)),
            ActKind::FollowUp => Action::FollowUp(format!("follow-{}", self.0)),
            ActKind::Abort => Action::Abort,
        }
    }
}

fn script(items: &[Item], end: &End, n: usize, texts: &mut Texts) -> Vec<Step> {
    let mut reply = ReplyScript::new();
    let mut aborts = false;
    for (i, item) in items.iter().enumerate() {
        reply = match item {
            Item::Text => reply.text("some text "),
            Item::Thinking => reply.thinking("hmm "),
            Item::Call { tool, complete } => {
                let name = TOOLS.get(*tool).map_or("nonexistent", |t| t.0);
                let id = format!("r{n}c{i}");
                if *complete {
                    reply.call(&id, name, r#"{"x": 1}"#)
                } else {
                    reply.partial_call(&id, name, r#"{"x": 1}"#)
                }
            }
            Item::Act(kind) => {
                aborts |= matches!(kind, ActKind::Abort);
                reply.act(texts.action(*kind))
            }
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

fn queued_texts(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Steer(t) | Action::FollowUp(t) => Some(t.clone()),
            Action::Abort => None,
        })
        .collect()
}

/// Every request the provider got must be replayable: tool calls answered, nothing dangling.
fn assert_wire_paired(context: &llm::Context) {
    let mut open: Vec<String> = Vec::new();
    for message in &context.messages {
        match message {
            Message::Assistant(a) => {
                assert!(open.is_empty(), "request with unanswered calls {open:?}");
                open = a.tool_calls().map(|c| c.id.clone()).collect();
            }
            Message::ToolResult(r) => {
                let pos = open
                    .iter()
                    .position(|id| *id == r.tool_call_id)
                    .expect("result for a call");
                open.remove(pos);
            }
            Message::User(_) => {}
        }
    }
    assert!(open.is_empty(), "request with unanswered calls {open:?}");
    assert!(
        !matches!(context.messages.last(), Some(Message::Assistant(_))),
        "request ends with the model's turn"
    );
}

async fn check(plan: Plan) {
    let mut texts = Texts(0);
    let replies: Vec<Vec<Step>> = plan
        .replies
        .iter()
        .enumerate()
        .map(|(n, (items, end))| script(items, end, n, &mut texts))
        .collect();
    let steerer = texts.action(ActKind::Steer);
    let queuer = texts.action(ActKind::FollowUp);
    let mut builder = harness(replies);
    for (name, concurrency) in TOOLS {
        let behaviour = match name {
            "echo" | "write" => Behaviour::Echo,
            "fail" => Behaviour::Fail("no such file".into()),
            "boom" => Behaviour::Panic,
            "steerer" => Behaviour::Act(steerer.clone()),
            "queuer" => Behaviour::Act(queuer.clone()),
            _ => Behaviour::Act(Action::Abort),
        };
        builder = builder.tool(name, concurrency, behaviour);
    }
    if plan.one_at_a_time {
        builder = builder.configure(|c| {
            c.steering_mode = QueueMode::OneAtATime;
            c.follow_up_mode = QueueMode::OneAtATime;
        });
    }
    let mut h = builder.spawn();
    let external: Vec<(usize, Action)> = plan
        .external
        .iter()
        .map(|(at, k)| (*at, texts.action(*k)))
        .collect();

    h.agent.prompt(AgentMessage::user("start")).await.unwrap();
    let mut events: Vec<AgentEvent> = Vec::new();
    let mut pending_external = external;
    let idle = h.agent.wait_idle();
    tokio::pin!(idle);
    loop {
        pending_external.retain(|(at, action)| {
            let due = *at <= events.len();
            if due {
                h.slot.act(action);
            }
            !due
        });
        tokio::select! {
            event = h.events.recv() => events.push(event.unwrap()),
            _ = &mut idle => break,
        }
    }
    // Moments the run never reached: the user acts while the agent is idle.
    for (_, action) in &pending_external {
        h.slot.act(action);
    }
    tokio::time::timeout(Duration::from_secs(20), h.agent.wait_idle())
        .await
        .unwrap()
        .unwrap();
    while let Ok(event) = h.events.try_recv() {
        events.push(event);
    }

    // Event sequences balance, run by run, and every run ends once.
    let starts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentStart))
        .count();
    let ends = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentEnd { .. }))
        .count();
    assert_eq!(starts, ends, "agent_start/agent_end");
    assert!(starts >= 1);
    assert_balanced(&events);

    // The history: tool calls paired, and exactly what the events said.
    let snapshot = h.agent.snapshot().await.unwrap();
    assert!(!snapshot.running);
    assert_paired(&snapshot.messages);
    let from_events: Vec<AgentMessage> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(from_events, snapshot.messages, "events mirror the history");

    for context in h.provider.contexts() {
        assert_wire_paired(&context);
    }

    // No queued message is lost: each one is in the history or still queued, exactly once.
    let queued = queued_texts(&h.slot.performed());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for message in snapshot
        .messages
        .iter()
        .chain(&snapshot.steering)
        .chain(&snapshot.follow_up)
    {
        if let AgentMessage::User(u) = message {
            *seen.entry(u.plain_text()).or_default() += 1;
        }
    }
    for text in &queued {
        let count = seen.get(text).copied().unwrap_or(0);
        // A tool called twice queues the same text twice.
        assert!(count >= 1, "queued message {text} was lost; seen {seen:?}");
    }
    for (text, count) in &seen {
        let expected = queued.iter().filter(|q| *q == text).count().max(1);
        assert!(
            *count <= expected,
            "{text} delivered {count} times, queued {expected}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_loop_keeps_its_invariants(plan in plan()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(check(plan));
    }
}
