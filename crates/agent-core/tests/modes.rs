//! The working mode, the soft tool requirement (seeds §5.4) and the run deadline (§6.1),
//! against the scripted provider.

mod support;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentEvent, AgentMessage, Concurrency, MAX_ESCALATIONS, Mode, ModeSwitch, PlanMode,
    RequireWhen, RunStop, Tool, ToolContext, ToolError, ToolOutcome, ToolOutput, ToolRequirement,
};
use async_trait::async_trait;
use llm::{StopReason, ToolChoice};
use serde_json::{Value, json};
use support::*;

/// A tool offered only in some modes; echoes.
struct ModalTool {
    name: &'static str,
    offered: fn(Mode) -> bool,
    terminate: bool,
}

#[async_trait]
impl Tool for ModalTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "modal"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn offered_in(&self, mode: Mode) -> bool {
        (self.offered)(mode)
    }
    async fn execute(&self, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            terminate: self.terminate,
            ..ToolOutput::text(format!("{} ran", self.name))
        })
    }
}

fn requirement(when: RequireWhen) -> ToolRequirement {
    ToolRequirement {
        tool: "submit_plan".into(),
        reminder: "Present your plan with submit_plan.".into(),
        when,
    }
}

fn plan_tools(config: &mut agent_core::AgentConfig) {
    config.tools.push(Arc::new(ModalTool {
        name: "write",
        offered: |m| m != Mode::Plan,
        terminate: false,
    }));
    config.tools.push(Arc::new(ModalTool {
        name: "submit_plan",
        offered: |m| m == Mode::Plan,
        terminate: true,
    }));
}

/// The general mechanism: a tool offered in every mode.
fn any_mode_tool(config: &mut agent_core::AgentConfig) {
    config.tools.push(Arc::new(ModalTool {
        name: "submit_plan",
        offered: |_| true,
        terminate: true,
    }));
}

fn offered(h: &Harness, call: usize) -> Vec<String> {
    h.provider.contexts()[call]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

fn choices(h: &Harness) -> Vec<Option<ToolChoice>> {
    let options = h.provider.options.lock().unwrap();
    options.iter().map(|o| o.tool_choice.clone()).collect()
}

fn user_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| matches!(m, AgentMessage::User(_)))
        .map(AgentMessage::preview)
        .collect()
}

/// A model that complies gets one reminder and never a forced `tool_choice`: the provider's
/// cache survives.
#[tokio::test]
async fn a_required_tool_costs_one_reminder_when_the_model_complies() {
    let mut h = harness(vec![
        call_reply("c1", "submit_plan", "{}"),
        text_reply("done"),
    ])
    .configure(any_mode_tool)
    .spawn();
    h.agent.require_tool(Some(requirement(RequireWhen::Now)));
    h.run("go").await;
    let messages = h.messages().await;
    assert_eq!(
        user_texts(&messages),
        ["go", "Present your plan with submit_plan."]
    );
    assert_eq!(choices(&h), [None], "nothing forced");
    assert_paired(&messages);
    // Taken by that run: the next one is free.
    h.run("again").await;
    assert_eq!(user_texts(&h.messages().await).len(), 3);
}

/// A model that calls other tools instead: they are not run (skipped results keep every
/// call paired), the next request forces the tool, and after three escalations the run ends
/// with an error that says why.
#[tokio::test]
async fn a_detour_is_skipped_then_forced_then_the_run_gives_up() {
    let mut replies = Vec::new();
    for i in 0..=MAX_ESCALATIONS {
        replies.push(call_reply(&format!("c{i}"), "echo", "{}"));
    }
    let mut h = harness(replies)
        .tool("echo", Concurrency::Shared, Behaviour::Echo)
        .configure(any_mode_tool)
        .spawn();
    h.agent.require_tool(Some(requirement(RequireWhen::Now)));
    let events = h.run("go").await;
    assert!(h.log().is_empty(), "no detour ran: {:?}", h.log());
    let forced = Some(ToolChoice::Tool("submit_plan".into()));
    assert_eq!(
        choices(&h),
        [None, forced.clone(), forced.clone(), forced],
        "auto first, then forced"
    );
    let summary = h.summaries().pop().unwrap();
    assert_eq!(summary.count(ToolOutcome::Skipped), 4);
    assert_eq!(summary.stopped_by, Some(RunStop::RequirementUnmet));
    let messages = h.messages().await;
    assert_paired(&messages);
    let notice = messages.last().unwrap().preview();
    assert!(notice.contains("forced 3 times"), "{notice}");
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { .. })));
}

/// The model that answers in text instead of calling is nudged (a user message, so the
/// forced request does not end with the model's own turn), and complies when forced.
#[tokio::test]
async fn a_text_answer_instead_of_the_call_is_nudged_and_forced() {
    let mut h = harness(vec![
        text_reply("here is my plan in prose"),
        call_reply("c1", "submit_plan", "{}"),
    ])
    .configure(any_mode_tool)
    .spawn();
    h.agent.require_tool(Some(requirement(RequireWhen::Now)));
    h.run("go").await;
    assert_eq!(
        choices(&h),
        [None, Some(ToolChoice::Tool("submit_plan".into()))]
    );
    let messages = h.messages().await;
    assert_eq!(
        user_texts(&messages).last().unwrap(),
        "Call `submit_plan` now."
    );
    assert_eq!(h.summaries()[0].stopped_by, None);
}

/// A hard `tool_choice` of the host that rules the tool out wins: no reminder, nothing
/// skipped, nothing forced.
#[tokio::test]
async fn the_hosts_hard_tool_choice_wins_over_the_requirement() {
    let mut h = harness(vec![text_reply("no tools for me")])
        .configure(|config| {
            any_mode_tool(config);
            config.stream_options.tool_choice = Some(ToolChoice::None);
        })
        .spawn();
    h.agent.require_tool(Some(requirement(RequireWhen::Now)));
    h.run("go").await;
    assert_eq!(user_texts(&h.messages().await), ["go"]);
    assert_eq!(choices(&h), [Some(ToolChoice::None)]);
}

/// Plan mode: nothing that changes files is offered, the system prompt carries the plan
/// instructions, and a run that would end without a plan is reminded to present one.
#[tokio::test]
async fn plan_mode_withholds_writers_and_asks_for_the_plan_before_the_end() {
    let mode = ModeSwitch::new(Mode::Default);
    let shared = mode.clone();
    let mut h = harness(vec![
        call_reply("c1", "echo", "{}"),
        text_reply("I looked around."),
        call_reply("c2", "submit_plan", r#"{"plan": "1. do it"}"#),
        text_reply("default again"),
    ])
    .tool("echo", Concurrency::Shared, Behaviour::Echo)
    .configure(move |config| {
        plan_tools(config);
        config.mode = shared;
        config.plan = Some(PlanMode {
            instructions: "PLAN MODE: investigate and propose.".into(),
            submit: requirement(RequireWhen::BeforeStop),
        });
    })
    .spawn();
    h.agent.set_mode(Mode::Plan);
    let events = h.run("plan it").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ModeChange { mode: Mode::Plan }))
    );
    assert_eq!(mode.get(), Mode::Plan);
    for call in 0..3 {
        assert_eq!(offered(&h, call), ["echo", "submit_plan"], "call {call}");
        let system = &h.provider.contexts()[call].system_prompt;
        assert!(
            system.ends_with("PLAN MODE: investigate and propose."),
            "{system}"
        );
    }
    let messages = h.messages().await;
    assert_eq!(
        user_texts(&messages),
        ["plan it", "Present your plan with submit_plan."]
    );
    assert_eq!(
        choices(&h),
        [None, None, None],
        "the model complied: nothing forced"
    );
    assert_eq!(h.agent.snapshot().await.unwrap().mode, Mode::Plan);
    // Back in default mode the writers are offered and no plan is required.
    h.agent.set_mode(Mode::Default);
    h.run("do it").await;
    assert_eq!(offered(&h, 3), ["echo", "write"]);
    assert!(!h.provider.contexts()[3].system_prompt.contains("PLAN MODE"));
}

/// A deadline stops the run as an abort does — the running tool is stopped, every call is
/// paired — and the run's summary says the deadline stopped it.
#[tokio::test]
async fn a_deadline_ends_the_run_like_an_abort_and_says_so() {
    let mut h = harness(vec![
        ReplyScript::new()
            .call("c1", "wait", "{}")
            .call("c2", "wait", "{}")
            .done(StopReason::ToolUse),
    ])
    .tool("wait", Concurrency::Shared, Behaviour::WaitForAbort)
    .spawn();
    h.agent
        .prompt_within(AgentMessage::user("go"), Duration::from_millis(300))
        .await
        .unwrap();
    h.settle().await;
    let summary = h.summaries().pop().unwrap();
    assert_eq!(summary.stopped_by, Some(RunStop::Deadline));
    assert_eq!(
        summary.count(ToolOutcome::Aborted) + summary.count(ToolOutcome::Error),
        2
    );
    assert_paired(&h.messages().await);
    // The next run has no deadline of its own.
    let mut h2 = harness(vec![ReplyScript::new().hang()])
        .configure(|config| config.deadline = Some(Duration::from_millis(200)))
        .spawn();
    h2.run("go").await;
    let summary = h2.summaries().pop().unwrap();
    assert_eq!(summary.stopped_by, Some(RunStop::Deadline));
    let messages = h2.messages().await;
    let AgentMessage::Assistant(last) = messages.last().unwrap() else {
        panic!("{messages:?}")
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(
        last.error_message.as_deref(),
        Some("The run's deadline passed")
    );
}

/// A subagent's question asked through its parent is the parent's own, and is withdrawn
/// (denied, announced) once that subagent stops.
#[tokio::test]
async fn a_relayed_question_is_withdrawn_when_its_subagent_stops() {
    let mut h = harness(vec![]).spawn();
    let request = agent_core::ApprovalRequest {
        id: 0,
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        subject: "rm -rf build".into(),
        reason: "runs outside the sandbox".into(),
        justification: None,
        diff: None,
        rule: None,
        subagent: Some(agent_core::SubagentRef {
            id: "worker-1".into(),
            name: "worker".into(),
        }),
    };
    let agent = h.agent.clone();
    let asked = tokio::spawn(async move { agent.ask_user(request).await });
    let AgentEvent::ApprovalRequested { request } = h.next_event().await else {
        panic!("{:?}", h.seen)
    };
    assert_eq!(request.subagent.as_ref().unwrap().id, "worker-1");
    assert_eq!(h.agent.snapshot().await.unwrap().approvals.len(), 1);
    h.agent.withdraw_questions_of("worker-2");
    h.agent.withdraw_questions_of("worker-1");
    let decision = asked.await.unwrap();
    assert!(!decision.approved(), "{decision:?}");
    assert!(h.agent.snapshot().await.unwrap().approvals.is_empty());
    assert!(matches!(
        h.next_event().await,
        AgentEvent::ApprovalDecided { id, .. } if id == request.id
    ));
}
