//! A tool call: a header with the call, then what the tool shows — live output for bash, a
//! coloured diff for edit and write, a one-line result for the rest.

use std::time::Duration;

use agent_core::ToolView;
use llm::ToolResultMessage;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::View;
use crate::wrap::wrap;

/// Lines of bash output shown while collapsed.
const TAIL_LINES: usize = 5;
/// Diff lines shown while collapsed.
const DIFF_LINES: usize = 20;
/// Most bytes of streaming arguments parsed for the header.
const STREAMED_ARGS: usize = 4 * 1024;

fn dim() -> Style {
    crate::theme::palette().dim
}

pub struct ToolCell {
    pub id: String,
    pub name: String,
    /// How the tool asked to be shown.
    pub view: ToolView,
    pub args: Value,
    /// Latest partial output (bash).
    pub partial: String,
    pub result: Option<ToolResultMessage>,
    pub duration: Option<Duration>,
    /// The start of the arguments while they stream (see [`ToolCell::stream_arguments`]).
    streamed: String,
}

impl ToolCell {
    pub fn new(id: &str, name: &str, view: ToolView, args: Value) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_string(),
            view,
            args,
            partial: String::new(),
            result: None,
            duration: None,
            streamed: String::new(),
        }
    }

    /// More of the arguments arrived: show what can be parsed so far. Only the start is kept
    /// and parsed — the fields a header shows (path, command, pattern) come first, while the
    /// content of a large write could be megabytes — so each delta costs a bounded amount.
    pub fn stream_arguments(&mut self, delta: &str) {
        if self.streamed.len() >= STREAMED_ARGS {
            return;
        }
        let room = STREAMED_ARGS - self.streamed.len();
        let mut cut = delta.len().min(room);
        while !delta.is_char_boundary(cut) {
            cut -= 1;
        }
        self.streamed.push_str(&delta[..cut]);
        if let Some(value) = llm::parse_partial_json(&self.streamed) {
            self.args = value;
        }
    }

    pub fn lines(&self, view: View) -> Vec<Line<'static>> {
        let width = usize::from(view.width);
        let mut out = wrap(&self.header(), width, 2);
        let body = match &self.result {
            Some(result) if result.is_error && self.view != ToolView::Shell => error_body(result),
            _ => match self.view {
                ToolView::Shell => self.bash_body(view.expand_tools),
                ToolView::Diff => self.diff_body(view.expand_tools),
                ToolView::Plan => self.plan_body(),
                ToolView::Task => self.task_body(),
                _ => self.summary_body(),
            },
        };
        for (i, line) in body.into_iter().enumerate() {
            let lead = if i == 0 { "  ⎿ " } else { "    " };
            // The output's tab stops are its own, not the screen's.
            let line = crate::wrap::expand_tabs_in(line);
            let mut spans = vec![Span::styled(lead, dim())];
            spans.extend(line.spans);
            out.extend(wrap(&Line::from(spans).style(line.style), width, 4));
        }
        out
    }

    fn header(&self) -> Line<'static> {
        let palette = crate::theme::palette();
        let (glyph, style) = match &self.result {
            None => ("●", palette.warning),
            Some(r) if r.is_error => ("●", palette.error),
            Some(_) => ("●", palette.success),
        };
        let arg = |k: &str| {
            self.args
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let detail = match self.view {
            ToolView::Shell => format!("$ {}", arg("command").lines().next().unwrap_or_default()),
            ToolView::Read => {
                let path = arg("path");
                match (
                    self.args.get("offset").and_then(Value::as_u64),
                    self.args.get("limit").and_then(Value::as_u64),
                ) {
                    (Some(o), Some(l)) => {
                        format!("{path}:{o}-{}", o.saturating_add(l).saturating_sub(1))
                    }
                    (Some(o), None) => format!("{path}:{o}-"),
                    _ => path,
                }
            }
            ToolView::Diff => arg("path"),
            ToolView::Search => {
                let mut d = format!("\"{}\" in {}", arg("pattern"), or_dot(arg("path")));
                if let Some(glob) = self.args.get("glob").and_then(Value::as_str) {
                    d.push_str(&format!(" ({glob})"));
                }
                d
            }
            ToolView::Find => format!("{} in {}", arg("pattern"), or_dot(arg("path"))),
            ToolView::List => or_dot(arg("path")),
            ToolView::Plan => arg("explanation"),
            ToolView::Task => match arg("agent") {
                agent if agent.is_empty() => arg("description"),
                agent => format!("{agent}: {}", arg("description")),
            },
            ToolView::Plain => self.args.to_string(),
        };
        Line::from(vec![
            Span::styled(format!("{glyph} "), style),
            Span::styled(self.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(" "),
            Span::styled(detail, crate::theme::palette().detail),
        ])
    }

    fn bash_body(&self, expand: bool) -> Vec<Line<'static>> {
        let details = self.result.as_ref().and_then(|r| r.details.as_ref());
        let text = match &self.result {
            Some(result) => without_model_notes(result.text(), details),
            None => self.partial.clone(),
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        let shown = if expand {
            lines.len()
        } else {
            TAIL_LINES.min(lines.len())
        };
        if lines.len() > shown {
            out.push(Line::styled(
                format!(
                    "… +{} (ctrl+o shows all)",
                    crate::words::count(lines.len() - shown, "line")
                ),
                dim(),
            ));
        }
        let style = match &self.result {
            Some(r) if r.is_error => crate::theme::palette().error,
            _ => Style::default(),
        };
        out.extend(
            lines[lines.len() - shown..]
                .iter()
                .map(|l| Line::styled(l.to_string(), style)),
        );
        if details
            .and_then(|d| d.get("sandbox_refused"))
            .and_then(Value::as_bool)
            == Some(true)
        {
            out.push(Line::styled(
                "The sandbox may have refused this; the model was told what it allows and how \
                 to ask you to run a command outside it.",
                crate::theme::palette().warning,
            ));
        }
        if let Some(result) = &self.result {
            let code = result
                .details
                .as_ref()
                .and_then(|d| d.get("exit_code"))
                .and_then(Value::as_i64);
            let mut footer = match code {
                Some(code) => format!("exit {code}"),
                None if result.is_error => "stopped".to_string(),
                None => "done".to_string(),
            };
            if let Some(d) = self.duration {
                footer.push_str(&format!(" · {:.1}s", d.as_secs_f64()));
            }
            out.push(Line::styled(footer, dim()));
        }
        out
    }

    fn diff_body(&self, expand: bool) -> Vec<Line<'static>> {
        let Some(result) = &self.result else {
            return Vec::new();
        };
        let details = result.details.as_ref();
        let diff = details
            .and_then(|d| d.get("diff"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut out = vec![Line::styled(first_line(&result.text()), dim())];
        let lines = diff_lines(diff);
        let shown = if expand {
            lines.len()
        } else {
            DIFF_LINES.min(lines.len())
        };
        out.extend(lines.iter().take(shown).cloned());
        if lines.len() > shown {
            out.push(Line::styled(
                format!(
                    "… +{} (ctrl+o shows all)",
                    crate::words::count(lines.len() - shown, "line")
                ),
                dim(),
            ));
        }
        out
    }

    /// A subagent's job: while it runs, what it does now (its id, tool, time, tokens); then
    /// the first line of its answer and what it cost.
    fn task_body(&self) -> Vec<Line<'static>> {
        let Some(result) = &self.result else {
            return match self.partial.lines().next() {
                Some(line) => vec![Line::styled(
                    line.to_string(),
                    crate::theme::palette().warning,
                )],
                None => vec![Line::styled("starting…", dim())],
            };
        };
        let details = result.details.clone().unwrap_or(Value::Null);
        let mut out = vec![Line::styled(first_line(&result.text()), dim())];
        if let Some(id) = details["subagent"]["id"].as_str() {
            let usage = &details["usage"];
            let n = |v: &Value| v.as_u64().unwrap_or(0);
            out.push(Line::styled(
                format!(
                    "{id} · {} tool calls · ↑{} ↓{} · ${:.4}",
                    n(&details["tool_calls"]),
                    n(&usage["input"]) + n(&usage["cache_read"]),
                    n(&usage["output"]),
                    usage["cost"].as_f64().unwrap_or(0.0)
                ),
                dim(),
            ));
        }
        out
    }

    /// The plan itself: its markdown's lines, or the checklist's steps with their marks.
    fn plan_body(&self) -> Vec<Line<'static>> {
        match self.args.get("plan") {
            Some(Value::String(plan)) => plan.lines().map(|l| Line::raw(l.to_string())).collect(),
            Some(Value::Array(steps)) => steps
                .iter()
                .map(|step| {
                    let mark = match step["status"].as_str() {
                        Some("completed") => "✓",
                        Some("in_progress") => "▸",
                        _ => "□",
                    };
                    let text = step["step"].as_str().unwrap_or_default();
                    Line::raw(format!("{mark} {text}"))
                })
                .collect(),
            _ => self.summary_body(),
        }
    }

    fn summary_body(&self) -> Vec<Line<'static>> {
        let Some(result) = &self.result else {
            return Vec::new();
        };
        let details = result.details.clone().unwrap_or(Value::Null);
        let n = |k: &str| details.get(k).and_then(Value::as_u64).unwrap_or(0);
        let text = match self.view {
            ToolView::Read if details.get("image").is_some() => "image".to_string(),
            ToolView::Read => format!("lines {}-{}", n("first_line"), n("last_line")),
            ToolView::Search if n("matches") == 0 => "no matches".to_string(),
            ToolView::Search => format!("{} matches in {} files", n("matches"), n("files")),
            ToolView::Find => format!("{} results", n("results")),
            ToolView::List => format!("{} entries", n("entries")),
            ToolView::Shell
            | ToolView::Diff
            | ToolView::Plain
            | ToolView::Plan
            | ToolView::Task => first_line(&result.text()),
        };
        vec![Line::styled(text, dim())]
    }
}

fn or_dot(path: String) -> String {
    if path.is_empty() {
        ".".to_string()
    } else {
        path
    }
}

/// A command's output without the lines the tool added for the model alone (details'
/// `for_model`: the exit code the footer shows, the sandbox's instructions to the model),
/// which the cell says its own way.
fn without_model_notes(text: String, details: Option<&Value>) -> String {
    let notes: Vec<&str> = details
        .and_then(|d| d.get("for_model"))
        .and_then(Value::as_array)
        .map(|notes| notes.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if notes.is_empty() {
        return text;
    }
    let mut kept = text;
    for note in notes {
        // Each was appended on a line of its own.
        let line = format!("\n{note}");
        if let Some(at) = kept.rfind(&line) {
            kept.replace_range(at..at + line.len(), "");
        } else if kept.starts_with(note) {
            kept.replace_range(..note.len(), "");
        }
    }
    kept
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

fn error_body(result: &ToolResultMessage) -> Vec<Line<'static>> {
    result
        .text()
        .lines()
        .take(8)
        .map(|l| Line::styled(l.to_string(), crate::theme::palette().error))
        .collect()
}

/// A unified diff as coloured lines with old/new line numbers.
pub fn diff_lines(diff: &str) -> Vec<Line<'static>> {
    let (mut old, mut new) = (0usize, 0usize);
    let mut out = Vec::new();
    for line in diff.lines() {
        if line.starts_with("---") || line.starts_with("+++") {
            continue;
        }
        if let Some(header) = line.strip_prefix("@@ ") {
            // "-47,7 +47,7 @@"
            let mut parts = header.split_whitespace();
            let start = |p: Option<&str>| {
                p.and_then(|p| p[1..].split(',').next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(1)
            };
            old = start(parts.next());
            new = start(parts.next());
            if !out.is_empty() {
                out.push(Line::styled("     ⋮", dim()));
            }
            continue;
        }
        let (number, sign, style) = match line.chars().next() {
            Some('+') => {
                new += 1;
                (new - 1, "+", crate::theme::palette().success)
            }
            Some('-') => {
                old += 1;
                (old - 1, "-", crate::theme::palette().error)
            }
            Some('\\') => continue,
            _ => {
                old += 1;
                new += 1;
                (new - 1, " ", Style::default())
            }
        };
        out.push(Line::from(vec![
            Span::styled(format!("{number:>5} "), dim()),
            Span::styled(
                // Tab stops from the first column of the file's line, after the sign.
                format!(
                    "{sign}{}",
                    crate::wrap::expand_tabs(line.get(1..).unwrap_or_default(), 0)
                ),
                style,
            ),
        ]));
    }
    out
}
