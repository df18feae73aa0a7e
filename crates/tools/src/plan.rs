//! The two plan tools. `update_plan` keeps a short checklist the user sees pinned above the
//! editor; `submit_plan` is how the model ends a run in plan mode: it presents the plan, and
//! the user decides what happens next. Neither changes anything outside the conversation.

use agent_core::{Mode, Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The tool's name (hosts match results and requirements on it).
pub const SUBMIT_PLAN: &str = "submit_plan";
pub const UPDATE_PLAN: &str = "update_plan";

/// How many steps one plan may have: it is pinned on screen, not a document.
const MAX_STEPS: usize = 20;

/// Where a step of the checklist stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// The checklist as `update_plan` last set it (its result's `details`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checklist {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    pub plan: Vec<PlanStep>,
}

impl Checklist {
    /// The checklist an `update_plan` result carries, if it is one.
    pub fn from_details(details: Option<&Value>) -> Option<Self> {
        serde_json::from_value(details?.clone()).ok()
    }

    pub fn done(&self) -> usize {
        self.plan
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count()
    }

    pub fn is_complete(&self) -> bool {
        !self.plan.is_empty() && self.done() == self.plan.len()
    }
}

pub struct UpdatePlanTool;

#[async_trait]
impl Tool for UpdatePlanTool {
    fn name(&self) -> &str {
        UPDATE_PLAN
    }

    fn view(&self) -> ToolView {
        ToolView::Plan
    }

    fn description(&self) -> &str {
        "Keep the user's checklist of the steps of a task with several steps: the whole list \
         each time, each step pending, in_progress (at most one) or completed. Call it when \
         you start such a task and as each step is done. Not for one-step tasks."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "description": "Optional: one line on why the plan changed"},
                "plan": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"]
                    }
                }
            },
            "required": ["plan"]
        })
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let checklist: Checklist = serde_json::from_value(args).map_err(|e| {
            ToolError(format!(
                "The plan could not be read ({e}): give `plan` as a list of {{step, status}}."
            ))
        })?;
        if checklist.plan.is_empty() || checklist.plan.len() > MAX_STEPS {
            return Err(ToolError(format!(
                "A plan has 1 to {MAX_STEPS} steps; this one has {}.",
                checklist.plan.len()
            )));
        }
        if checklist.plan.iter().any(|s| s.step.trim().is_empty()) {
            return Err(ToolError("Every step needs its text.".into()));
        }
        let running = checklist
            .plan
            .iter()
            .filter(|s| s.status == StepStatus::InProgress)
            .count();
        if running > 1 {
            return Err(ToolError(format!(
                "{running} steps are in_progress; at most one is."
            )));
        }
        let text = format!(
            "Plan updated: {} of {} steps done.",
            checklist.done(),
            checklist.plan.len()
        );
        Ok(ToolOutput {
            details: serde_json::to_value(&checklist).ok(),
            ..ToolOutput::text(text)
        })
    }
}

pub struct SubmitPlanTool;

#[async_trait]
impl Tool for SubmitPlanTool {
    fn name(&self) -> &str {
        SUBMIT_PLAN
    }

    fn view(&self) -> ToolView {
        ToolView::Plan
    }

    fn description(&self) -> &str {
        "Plan mode: present your finished plan to the user, who will accept it, ask for \
         changes or drop it. Call it once you have investigated enough to propose concrete \
         steps; nothing else ends a planning turn. The plan in markdown: the goal, the files to \
         change and how, the risks, how to check the result."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The plan, in markdown"}
            },
            "required": ["plan"]
        })
    }

    fn offered_in(&self, mode: Mode) -> bool {
        mode == Mode::Plan
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let plan = args["plan"].as_str().unwrap_or_default().trim();
        if plan.is_empty() {
            return Err(ToolError("The plan is empty: write it in `plan`.".into()));
        }
        Ok(ToolOutput {
            details: Some(json!({ "plan": plan })),
            // The user decides what comes next: the run ends here.
            terminate: true,
            ..ToolOutput::text(
                "The plan was shown to the user, who decides what happens next. Stop here.",
            )
        })
    }
}

/// The plan a `submit_plan` result carries.
pub fn submitted_plan(details: Option<&Value>) -> Option<String> {
    details?["plan"].as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    fn ctx() -> ToolContext {
        ToolContext::new("c1", CancellationToken::new(), |_| {})
    }

    #[tokio::test]
    async fn a_checklist_is_checked_and_kept_in_the_details() {
        let ok = UpdatePlanTool
            .execute(
                json!({"plan": [
                    {"step": "read", "status": "completed"},
                    {"step": "fix", "status": "in_progress"},
                    {"step": "test", "status": "pending"}
                ]}),
                ctx(),
            )
            .await
            .unwrap();
        assert_eq!(ok.plain_text(), "Plan updated: 1 of 3 steps done.");
        let list = Checklist::from_details(ok.details.as_ref()).unwrap();
        assert_eq!(list.plan[1].status, StepStatus::InProgress);
        assert!(!list.is_complete());
        let two = json!({"plan": [
            {"step": "a", "status": "in_progress"},
            {"step": "b", "status": "in_progress"}
        ]});
        let err = UpdatePlanTool.execute(two, ctx()).await.unwrap_err();
        assert!(err.0.contains("at most one"), "{err}");
        let bad = json!({"plan": [{"step": "a", "status": "started"}]});
        assert!(UpdatePlanTool.execute(bad, ctx()).await.is_err());
        assert!(
            UpdatePlanTool
                .execute(json!({"plan": []}), ctx())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_submitted_plan_ends_the_run_and_is_offered_only_in_plan_mode() {
        let out = SubmitPlanTool
            .execute(json!({"plan": "1. fix"}), ctx())
            .await
            .unwrap();
        assert!(out.terminate);
        assert_eq!(
            submitted_plan(out.details.as_ref()).as_deref(),
            Some("1. fix")
        );
        assert!(
            SubmitPlanTool
                .execute(json!({"plan": " "}), ctx())
                .await
                .is_err()
        );
        assert!(SubmitPlanTool.offered_in(Mode::Plan));
        assert!(!SubmitPlanTool.offered_in(Mode::Default));
        assert!(!SubmitPlanTool.offered_in(Mode::AutoEdit));
    }
}
