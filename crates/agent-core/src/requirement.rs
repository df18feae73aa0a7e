//! The soft tool requirement (seeds §5.4): the host wants the model to call one tool next
//! without paying for a forced `tool_choice` up front (forcing a tool makes providers drop
//! their prompt cache).
//!
//! 1. When the requirement starts, one reminder goes to the model as a user message and
//!    `tool_choice` stays as it was: a model that complies costs nothing.
//! 2. A reply that calls other tools instead (or none) is an escalation: those calls are not
//!    run (they get `skipped` results, so every call stays paired) and the next request forces
//!    the tool.
//! 3. After [`MAX_ESCALATIONS`] the run ends with an error: a forced choice should have made
//!    the call, so the model or server is not behaving.
//!
//! A hard `tool_choice` from the host that rules the tool out (`none`, another tool) wins: the
//! requirement then does nothing.

use llm::{AssistantMessage, ToolCall, ToolChoice};
use serde::{Deserialize, Serialize};

use crate::AgentMessage;

/// How many times the tool is forced before the run gives up.
pub const MAX_ESCALATIONS: u32 = 3;

/// A tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRequirement {
    pub tool: String,
    /// Told to the model once, when the requirement starts.
    pub reminder: String,
    /// When it starts.
    pub when: RequireWhen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequireWhen {
    /// From the next model call.
    Now,
    /// When the model would end the run without having called the tool in it.
    BeforeStop,
}

/// What the gate says about one reply.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// No requirement is in force: run the calls.
    Free,
    /// The tool was called: run it; the other calls of the reply are not run.
    Met { others: Vec<ToolCall> },
    /// The tool was not called: none of the calls run, and the next request forces it.
    Escalate { calls: Vec<ToolCall> },
    /// Forced too often: the run ends with this error.
    GiveUp(String),
}

/// The requirement's state within one run.
#[derive(Debug, Default)]
pub(crate) struct SoftGate {
    required: Option<ToolRequirement>,
    reminded: bool,
    escalations: u32,
    /// The tool was called in this run (a `before_stop` requirement is then met).
    called: bool,
}

impl SoftGate {
    pub fn new(requirement: Option<ToolRequirement>) -> Self {
        Self {
            required: requirement,
            ..Self::default()
        }
    }

    /// Keeps a standing requirement (plan mode's) in force while `active`, and drops it when
    /// not; a tool already called in this run is not required again.
    pub fn stand(&mut self, standing: Option<&ToolRequirement>, active: bool) {
        let Some(standing) = standing else {
            return;
        };
        let held = self
            .required
            .as_ref()
            .is_some_and(|r| r.tool == standing.tool);
        if active && self.required.is_none() && !self.called {
            self.required = Some(standing.clone());
            self.reminded = false;
            self.escalations = 0;
        } else if !active && held {
            self.required = None;
        }
    }

    /// The tool required now, if any.
    pub fn tool(&self) -> Option<String> {
        self.required.as_ref().map(|r| r.tool.clone())
    }

    fn in_force(&self) -> Option<&ToolRequirement> {
        self.required
            .as_ref()
            .filter(|r| r.when == RequireWhen::Now)
    }

    /// Whether the host's own `tool_choice` rules the tool out (then the gate stands aside).
    fn overruled(&self, hard: Option<&ToolChoice>, tool: &str) -> bool {
        hard.is_some_and(|choice| !choice.allows(tool))
    }

    /// The reminder to inject before the next model call, once per requirement.
    pub fn reminder(&mut self, hard: Option<&ToolChoice>) -> Option<AgentMessage> {
        let required = self.in_force()?;
        if self.reminded || self.overruled(hard, &required.tool) {
            return None;
        }
        let text = required.reminder.clone();
        self.reminded = true;
        Some(AgentMessage::user(text))
    }

    /// The `tool_choice` of the next request: forced after an escalation, else the host's.
    pub fn tool_choice(&self, hard: Option<&ToolChoice>) -> Option<ToolChoice> {
        match self.in_force() {
            Some(r) if self.escalations > 0 && !self.overruled(hard, &r.tool) => {
                Some(ToolChoice::Tool(r.tool.clone()))
            }
            _ => hard.cloned(),
        }
    }

    /// Judges a reply that ended normally.
    pub fn judge(&mut self, reply: &AssistantMessage, hard: Option<&ToolChoice>) -> Verdict {
        let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
        let Some(required) = self.in_force().cloned() else {
            self.called |= self
                .required
                .as_ref()
                .is_some_and(|r| calls.iter().any(|c| c.name == r.tool));
            return Verdict::Free;
        };
        if self.overruled(hard, &required.tool) {
            return Verdict::Free;
        }
        if calls.iter().any(|c| c.name == required.tool) {
            self.required = None;
            self.called = true;
            let others = calls
                .into_iter()
                .filter(|c| c.name != required.tool)
                .collect();
            return Verdict::Met { others };
        }
        if self.escalations >= MAX_ESCALATIONS {
            return Verdict::GiveUp(format!(
                "the model did not call `{}` although it was required and forced {} times; \
                 the run was stopped",
                required.tool, MAX_ESCALATIONS
            ));
        }
        self.escalations += 1;
        Verdict::Escalate { calls }
    }

    /// The run would end: a `before_stop` requirement not yet met starts now (true: go on).
    pub fn before_stop(&mut self, hard: Option<&ToolChoice>) -> bool {
        let waiting = !self.called
            && self.required.as_ref().is_some_and(|r| {
                r.when == RequireWhen::BeforeStop && !self.overruled(hard, &r.tool)
            });
        let Some(required) = self.required.as_mut().filter(|_| waiting) else {
            return false;
        };
        required.when = RequireWhen::Now;
        self.reminded = false;
        self.escalations = 0;
        true
    }

    /// What to tell the model after a reply that called no tool at all, so the forced
    /// request does not end with the model's own turn.
    pub fn nudge(&self) -> Option<AgentMessage> {
        self.in_force()
            .map(|r| AgentMessage::user(format!("Call `{}` now.", r.tool)))
    }
}

#[cfg(test)]
mod tests {
    use llm::AssistantContent;

    use super::*;

    fn reply(tools: &[&str]) -> AssistantMessage {
        let mut message = AssistantMessage::empty("m", "p");
        for (i, name) in tools.iter().enumerate() {
            message
                .content
                .push(AssistantContent::ToolCall(ToolCall::from_raw(
                    format!("c{i}"),
                    name.to_string(),
                    "{}",
                )));
        }
        message
    }

    fn required(when: RequireWhen) -> ToolRequirement {
        ToolRequirement {
            tool: "submit_plan".into(),
            reminder: "present the plan".into(),
            when,
        }
    }

    #[test]
    fn a_compliant_model_costs_one_reminder_and_no_forced_choice() {
        let mut gate = SoftGate::new(Some(required(RequireWhen::Now)));
        assert!(gate.reminder(None).is_some());
        assert!(gate.reminder(None).is_none(), "told once");
        assert_eq!(gate.tool_choice(None), None);
        let verdict = gate.judge(&reply(&["submit_plan", "read"]), None);
        assert!(matches!(verdict, Verdict::Met { others } if others.len() == 1));
        assert_eq!(gate.judge(&reply(&["read"]), None), Verdict::Free);
    }

    #[test]
    fn a_detour_escalates_to_a_forced_choice_and_then_gives_up() {
        let mut gate = SoftGate::new(Some(required(RequireWhen::Now)));
        gate.reminder(None);
        for n in 1..=MAX_ESCALATIONS {
            assert!(matches!(
                gate.judge(&reply(&["bash"]), None),
                Verdict::Escalate { .. }
            ));
            assert_eq!(
                gate.tool_choice(None),
                Some(ToolChoice::Tool("submit_plan".into())),
                "escalation {n}"
            );
        }
        assert!(
            matches!(gate.judge(&reply(&[]), None), Verdict::GiveUp(e) if e.contains("forced 3 times"))
        );
    }

    #[test]
    fn a_hard_choice_that_rules_the_tool_out_wins() {
        let none = Some(ToolChoice::None);
        let mut gate = SoftGate::new(Some(required(RequireWhen::Now)));
        assert!(gate.reminder(none.as_ref()).is_none());
        assert_eq!(gate.judge(&reply(&[]), none.as_ref()), Verdict::Free);
        assert_eq!(gate.tool_choice(none.as_ref()), Some(ToolChoice::None));
        let other = Some(ToolChoice::Tool("read".into()));
        assert_eq!(gate.judge(&reply(&["read"]), other.as_ref()), Verdict::Free);
        // `required` still allows the tool: the gate works under it.
        let any = Some(ToolChoice::Required);
        assert!(matches!(
            gate.judge(&reply(&["read"]), any.as_ref()),
            Verdict::Escalate { .. }
        ));
        assert_eq!(
            gate.tool_choice(any.as_ref()),
            Some(ToolChoice::Tool("submit_plan".into()))
        );
    }

    #[test]
    fn a_before_stop_requirement_waits_for_the_end_and_is_met_by_an_earlier_call() {
        let mut gate = SoftGate::new(Some(required(RequireWhen::BeforeStop)));
        assert!(gate.reminder(None).is_none());
        assert_eq!(gate.judge(&reply(&["read"]), None), Verdict::Free);
        assert!(gate.before_stop(None), "not called yet: it starts");
        assert!(gate.reminder(None).is_some());
        let mut met = SoftGate::new(Some(required(RequireWhen::BeforeStop)));
        assert_eq!(met.judge(&reply(&["submit_plan"]), None), Verdict::Free);
        assert!(!met.before_stop(None), "called during the run");
    }
}
