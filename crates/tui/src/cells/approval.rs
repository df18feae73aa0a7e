//! A question for the user: a tool call waiting for approval. It shows what would run (the
//! command, or the path and the diff of a write), why it needs an answer, the model's
//! justification, and the keys that answer it. Drawn above the editor while it waits; once
//! answered, a one-line record of the answer stays in the transcript.

use agent_core::{ApprovalDecision, ApprovalRequest};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::tool::diff_lines;
use crate::wrap::wrap;

/// Most diff lines shown in the question.
const DIFF_LINES: usize = 12;

fn dim() -> Style {
    crate::theme::palette().dim
}

/// The question as lines `width` columns wide.
pub fn question_lines(
    request: &ApprovalRequest,
    waiting: usize,
    width: usize,
) -> Vec<Line<'static>> {
    let accent = crate::theme::palette().warning;
    let mut out = wrap(
        &Line::from(vec![
            Span::styled("? ", accent.add_modifier(Modifier::BOLD)),
            Span::styled(
                match &request.subagent {
                    // A child's call: say which child asks.
                    Some(child) => format!("Allow {} (subagent {})?", request.tool_name, child.id),
                    None => format!("Allow {}?", request.tool_name),
                },
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!(" {}", request.reason), accent),
        ]),
        width,
        2,
    );
    for line in request.subject.lines().take(6) {
        out.extend(wrap(&Line::raw(format!("  {line}")), width, 4));
    }
    if let Some(why) = &request.justification {
        out.extend(wrap(
            &Line::styled(format!("  why: {why}"), crate::theme::palette().detail),
            width,
            4,
        ));
    }
    if let Some(diff) = &request.diff {
        let lines = diff_lines(diff);
        out.extend(lines.iter().take(DIFF_LINES).cloned());
        if lines.len() > DIFF_LINES {
            out.push(Line::styled(
                format!(
                    "     … +{}",
                    crate::words::count(lines.len() - DIFF_LINES, "line")
                ),
                dim(),
            ));
        }
    }
    let mut keys = vec![Span::styled("  y", accent), Span::raw(" run once · ")];
    if let Some(rule) = &request.rule {
        keys.push(Span::styled("a", accent));
        // A host for the fetch tool (its rule is `web: HOST`), or a command prefix.
        let what = match rule.last() {
            Some(host) if request.tool_name == "fetch" => {
                format!(" always allow {host} here · ")
            }
            _ => format!(" always allow `{}` here · ", rule.join(" ")),
        };
        keys.push(Span::raw(what));
    }
    keys.extend([
        Span::styled("n", accent),
        Span::raw(" deny · type and Enter: deny and tell it why · "),
        Span::styled("esc", accent),
        Span::raw(" stop"),
    ]);
    if waiting > 1 {
        keys.push(Span::styled(
            format!(" · {} more waiting", waiting - 1),
            dim(),
        ));
    }
    out.extend(wrap(&Line::from(keys).style(dim()), width, 2));
    out
}

/// The record an answered question leaves in the transcript.
pub fn answered(request: &ApprovalRequest, decision: &ApprovalDecision) -> String {
    let what = request.subject.lines().next().unwrap_or_default();
    match decision {
        ApprovalDecision::Approve => format!("Allowed {} once: {what}", request.tool_name),
        ApprovalDecision::ApproveAlways => format!(
            "Allowed {} and remembered `{}` for this project: {what}",
            request.tool_name,
            request.rule.as_deref().unwrap_or_default().join(" ")
        ),
        ApprovalDecision::Deny { reason } => format!(
            "Denied {}: {what}{}",
            request.tool_name,
            reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
    }
}
