//! The working mode and the plans, as the TUI shows them: what a mode switch says, the choice
//! a submitted plan opens, and the checklist pinned above the editor.

use agent_core::Mode;
use ratatui::text::{Line, Span};
use tools::{Checklist, StepStatus};

/// Most rows the pinned checklist takes (its heading included).
pub const MAX_CHECKLIST_ROWS: usize = 5;

/// What a mode switch says in the transcript.
pub fn announce(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "Default mode: the approval policy as configured (Shift+Tab cycles).",
        Mode::AutoEdit => {
            "Auto-edit mode: edits and writes in the workspace run without asking; commands \
             follow the policy (Shift+Tab cycles)."
        }
        Mode::Plan => {
            "Plan mode: the agent investigates and proposes, changing nothing — no edits, \
             commands read-only (Shift+Tab cycles)."
        }
    }
}

/// What can be done with a submitted plan, in the order of the choice list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanChoice {
    Implement,
    KeepPlanning,
    Discard,
}

pub const PLAN_CHOICES: [PlanChoice; 3] = [
    PlanChoice::Implement,
    PlanChoice::KeepPlanning,
    PlanChoice::Discard,
];

/// The choice list's rows.
pub fn plan_items() -> Vec<(String, String)> {
    PLAN_CHOICES
        .iter()
        .map(|choice| {
            let (name, what) = match choice {
                PlanChoice::Implement => (
                    "Implement it",
                    "back to default mode; the plan is sent as the next message",
                ),
                PlanChoice::KeepPlanning => {
                    ("Keep planning", "stay in plan mode and type what to change")
                }
                PlanChoice::Discard => ("Discard it", "stay in plan mode; nothing is sent"),
            };
            (name.to_string(), what.to_string())
        })
        .collect()
}

/// The message that implements an accepted plan.
pub fn implement_message(plan: &str) -> String {
    format!("Implement this plan:\n\n{plan}")
}

/// The checklist's rows above the editor: a heading and the steps around the current one;
/// none once every step is done.
pub fn checklist_lines(list: &Checklist, width: usize) -> Vec<Line<'static>> {
    if list.plan.is_empty() || list.is_complete() {
        return Vec::new();
    }
    let palette = crate::theme::palette();
    let steps = MAX_CHECKLIST_ROWS - 1;
    let current = list
        .plan
        .iter()
        .position(|s| s.status != StepStatus::Completed)
        .unwrap_or(0);
    // The current step and what follows it; done steps only when there is room.
    let start = current
        .saturating_sub(1)
        .min(list.plan.len().saturating_sub(steps));
    let mut lines = vec![Line::from(Span::styled(
        format!("Plan · {} of {} done", list.done(), list.plan.len()),
        palette.dim,
    ))];
    for step in list.plan.iter().skip(start).take(steps) {
        let (mark, style) = match step.status {
            StepStatus::Completed => ("✓ ", palette.dim),
            StepStatus::InProgress => ("▸ ", palette.warning),
            StepStatus::Pending => ("□ ", ratatui::style::Style::default()),
        };
        let text = crate::wrap::truncate(step.step.trim(), width.saturating_sub(4));
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(mark, style),
            Span::styled(text, style),
        ]));
    }
    lines
}

/// The checklist as printed once into the transcript (when it is done or replaced).
pub fn checklist_text(list: &Checklist, done: bool) -> String {
    let mut text = if done {
        format!("Plan done ({} steps):", list.plan.len())
    } else {
        format!(
            "Plan replaced ({} of {} done):",
            list.done(),
            list.plan.len()
        )
    };
    for step in &list.plan {
        let mark = match step.status {
            StepStatus::Completed => "✓",
            StepStatus::InProgress => "▸",
            StepStatus::Pending => "□",
        };
        text.push_str(&format!("\n  {mark} {}", step.step.trim()));
    }
    text
}

#[cfg(test)]
mod tests {
    use tools::PlanStep;

    use super::*;

    fn list(statuses: &[StepStatus]) -> Checklist {
        Checklist {
            explanation: None,
            plan: statuses
                .iter()
                .enumerate()
                .map(|(i, s)| PlanStep {
                    step: format!("step {i}"),
                    status: *s,
                })
                .collect(),
        }
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_pinned_checklist_follows_the_current_step_and_folds_when_done() {
        use StepStatus::*;
        let long = list(&[
            Completed, Completed, Completed, InProgress, Pending, Pending, Pending,
        ]);
        let shown = text(&checklist_lines(&long, 80));
        assert_eq!(shown.len(), MAX_CHECKLIST_ROWS);
        assert_eq!(shown[0], "Plan · 3 of 7 done");
        assert_eq!(shown[1], "  ✓ step 2", "one done step for context");
        assert_eq!(shown[2], "  ▸ step 3");
        assert!(checklist_lines(&list(&[Completed, Completed]), 80).is_empty());
        let fresh = text(&checklist_lines(&list(&[Pending, Pending]), 80));
        assert_eq!(fresh, ["Plan · 0 of 2 done", "  □ step 0", "  □ step 1"]);
        assert!(checklist_text(&long, false).starts_with("Plan replaced (3 of 7 done):"));
    }
}
