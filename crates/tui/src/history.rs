//! Taking things back in the UI: `/undo`, `/redo`, `/rewind` (and Esc twice on an empty
//! editor), `/tree`, with the question asked when files changed since the agent's checkpoint.
//!
//! Each goes the same way: the host does the work off the UI task and reports back; a
//! restore that would overwrite someone else's changes comes back as `Conflicts` with nothing
//! done, the user picks restore anyway / skip those files / cancel, and the same operation
//! runs again with that answer. What actually changed reaches the transcript through the
//! agent's events (`checkpoint_restored`, `rewound`), like every other change.

use crate::words::plural;
use std::sync::Arc;

use agent_core::{OnConflict, RestoreOutcome};

use crate::action::ChoiceKind;
use crate::app::App;
use crate::cells::CellKind;
use crate::host::{Host, RewindPoint, RewindScope, Rewinding, TreeRow};

/// An operation that restores files, the conversation or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restoring {
    Undo,
    Redo,
    /// To just before history index `.0`.
    Rewind(usize, RewindScope),
    /// To tree node `.0`, with its files when `.1`.
    Jump(String, bool),
}

/// Results of the host's work, back on the UI loop.
pub enum HistoryUi {
    Notice(String),
    Points(Vec<RewindPoint>),
    Tree(Vec<TreeRow>),
    Done(Restoring, Result<Rewinding, String>),
}

/// The lists behind the open history choices.
#[derive(Default)]
pub struct HistoryChoices {
    points: Vec<RewindPoint>,
    /// The rewind point picked, until its scope is.
    point: Option<usize>,
    rows: Vec<TreeRow>,
    /// The tree node picked, until whether to restore its files is.
    row: Option<String>,
    /// The operation waiting for the answer about conflicts.
    pending: Option<Restoring>,
}

/// Where results go (the UI loop's channel).
pub type Sender = Arc<dyn Fn(HistoryUi) + Send + Sync>;

/// Runs `op` on the host, reporting to `tx`.
pub fn start(host: Arc<dyn Host>, op: Restoring, on: OnConflict, tx: Sender) {
    tokio::spawn(async move {
        let result = match &op {
            Restoring::Undo => Ok(code_only(host.undo(on).await)),
            Restoring::Redo => Ok(code_only(host.redo(on).await)),
            Restoring::Rewind(index, scope) => host.rewind(*index, *scope, on).await,
            Restoring::Jump(id, code) => host.jump(id.clone(), *code, on).await,
        };
        tx(HistoryUi::Done(op, result));
    });
}

fn code_only(outcome: RestoreOutcome) -> Rewinding {
    Rewinding {
        code: Some(outcome),
        conversation: false,
        text: None,
    }
}

/// Asks the host for the rewind points (`/rewind`).
pub fn list_points(host: Arc<dyn Host>, tx: Sender) {
    tokio::spawn(async move {
        tx(HistoryUi::Points(host.rewind_points().await));
    });
}

/// Asks the host for the tree (`/tree`).
pub fn list_tree(host: Arc<dyn Host>, tx: Sender) {
    tokio::spawn(async move {
        tx(match host.tree().await {
            Ok(rows) => HistoryUi::Tree(rows),
            Err(err) => HistoryUi::Notice(format!("No tree to show: {err}")),
        });
    });
}

/// A choice list to open: its kind, its rows and the row selected first.
pub type Choice = (ChoiceKind, Vec<(String, String)>, usize);

/// Handles a result; returns the choice list to open, if any.
pub fn on_result(
    app: &mut App,
    choices: &mut HistoryChoices,
    message: HistoryUi,
) -> Option<Choice> {
    match message {
        HistoryUi::Notice(text) => {
            app.push_cell(CellKind::Notice(text));
            None
        }
        HistoryUi::Points(points) => {
            if points.is_empty() {
                // The conversation may have been rewound to its start while checkpoints of
                // files remain: say what is still possible.
                app.push_cell(CellKind::Notice(
                    "No message of yours in this conversation to rewind to. Files the agent \
                     changed can still be taken back with /undo; /tree shows every branch."
                        .into(),
                ));
                return None;
            }
            // Newest first: the usual target is a recent message.
            let items = points
                .iter()
                .rev()
                .map(|p| {
                    let what = match p.checkpoints {
                        0 => "no file changes after it".to_string(),
                        1 => "1 checkpoint after it".to_string(),
                        n => format!("{n} checkpoints after it"),
                    };
                    (one_line(&p.text, 60), what)
                })
                .collect();
            choices.points = points.into_iter().rev().collect();
            Some((ChoiceKind::Rewind, items, 0))
        }
        HistoryUi::Tree(rows) => {
            let selected = rows.iter().position(|r| r.current).unwrap_or(0);
            let items = rows.iter().map(tree_item).collect();
            choices.rows = rows;
            Some((ChoiceKind::Tree, items, selected))
        }
        HistoryUi::Done(op, Err(err)) => {
            app.push_cell(CellKind::Error(format!("{}: {err}", name(&op))));
            None
        }
        HistoryUi::Done(op, Ok(done)) => {
            if let Some(RestoreOutcome::Conflicts { paths }) = &done.code {
                let shown = some(paths);
                let items = vec![
                    (
                        "Restore anyway".to_string(),
                        format!("overwrite the changes made since to {shown}"),
                    ),
                    (
                        "Skip those files".to_string(),
                        "restore the rest, keep them as they are".to_string(),
                    ),
                    ("Cancel".to_string(), "change nothing".to_string()),
                ];
                app.push_cell(CellKind::Notice(format!(
                    "Changed since the agent's checkpoint (by you or another program): {shown}."
                )));
                choices.pending = Some(op);
                return Some((ChoiceKind::Conflict, items, 2));
            }
            if let Some(RestoreOutcome::Nothing { reason }) = &done.code {
                app.push_cell(CellKind::Notice(format!("{}: {reason}.", name(&op))));
            }
            if let Some(text) = done.text {
                // The message comes back to edit and send again; a draft stays after it.
                let draft = app.editor.text();
                let text = if draft.trim().is_empty() {
                    text
                } else {
                    format!("{text}\n{draft}")
                };
                app.editor.set_text(&text);
            }
            None
        }
    }
}

/// An item of an open history choice was picked: the next step, if any.
pub enum Next {
    Run(Restoring, OnConflict),
    Open(Choice),
    Nothing,
}

pub fn on_chose(
    app: &mut App,
    choices: &mut HistoryChoices,
    kind: ChoiceKind,
    index: usize,
) -> Next {
    match kind {
        ChoiceKind::Rewind => {
            let Some(point) = choices.points.get(index) else {
                return Next::Nothing;
            };
            choices.point = Some(point.index);
            let files = match point.checkpoints {
                0 => "no files to restore".to_string(),
                n => format!("restore the files of {n} checkpoint{}", plural(n)),
            };
            let items = vec![
                (
                    "Code and conversation".to_string(),
                    format!("{files}; go back to before this message"),
                ),
                (
                    "Conversation only".to_string(),
                    "go back to before this message; the files stay as they are".to_string(),
                ),
                (
                    "Code only".to_string(),
                    format!("{files}; the conversation stays"),
                ),
            ];
            Next::Open((ChoiceKind::RewindScope, items, 0))
        }
        ChoiceKind::RewindScope => {
            let Some(point) = choices.point.take() else {
                return Next::Nothing;
            };
            let scope = match index {
                0 => RewindScope::Both,
                1 => RewindScope::Conversation,
                _ => RewindScope::Code,
            };
            Next::Run(Restoring::Rewind(point, scope), OnConflict::Ask)
        }
        ChoiceKind::Tree => {
            let Some(row) = choices.rows.get(index) else {
                return Next::Nothing;
            };
            choices.row = Some(row.id.clone());
            let items = vec![
                (
                    "Go there".to_string(),
                    "the conversation goes on from there; the files stay as they are".to_string(),
                ),
                (
                    "Go there with its files".to_string(),
                    "and the files the agent changed go back to how they were there".to_string(),
                ),
            ];
            Next::Open((ChoiceKind::TreeScope, items, 0))
        }
        ChoiceKind::TreeScope => match choices.row.take() {
            Some(id) => Next::Run(Restoring::Jump(id, index == 1), OnConflict::Ask),
            None => Next::Nothing,
        },
        ChoiceKind::Conflict => {
            let Some(op) = choices.pending.take() else {
                return Next::Nothing;
            };
            match index {
                0 => Next::Run(op, OnConflict::Overwrite),
                1 => Next::Run(op, OnConflict::Keep),
                _ => {
                    app.push_cell(CellKind::Notice(format!(
                        "{}: cancelled; nothing changed.",
                        name(&op)
                    )));
                    Next::Nothing
                }
            }
        }
        _ => Next::Nothing,
    }
}

fn name(op: &Restoring) -> &'static str {
    match op {
        Restoring::Undo => "Undo",
        Restoring::Redo => "Redo",
        Restoring::Rewind(..) => "Rewind",
        Restoring::Jump(..) => "Tree",
    }
}

fn tree_item(row: &TreeRow) -> (String, String) {
    let marker = if row.current {
        "●"
    } else if row.on_path {
        "•"
    } else {
        "○"
    };
    let who = if row.user { "you" } else { "ai" };
    let label = format!(
        "{}{marker} {who}: {}",
        "  ".repeat(row.depth),
        one_line(&row.text, 56)
    );
    let mut what = Vec::new();
    if let Some(name) = &row.label {
        what.push(format!("[{name}]"));
    }
    if row.checkpoints > 0 {
        what.push(format!(
            "{} checkpoint{}",
            row.checkpoints,
            plural(row.checkpoints)
        ));
    }
    if !row.subagents.is_empty() {
        what.push(format!("subagents: {}", row.subagents.join(", ")));
    }
    if row.current {
        what.push("you are here".into());
    }
    (label, what.join(" · "))
}

fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

fn some(paths: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}
