//! Which rows of the transcript inline mode has put into the terminal for good, and which still
//! wait in the live region. The cells up to `app.printed` (and the first `app.printed_rows`
//! rows of that cell) are in the conversation above the live region; the rest is pending.
//!
//! The order is the one printing follows: each cell's rows, then a blank row after a finished
//! cell that showed anything. A cell's rows are final once the cell is done, or, while it
//! streams, up to its stable rows; a finished cell waits for an unfinished one before it.

use ratatui::text::Line;

use crate::app::App;
use crate::cells::View;

/// Finished rows laid out for one frame at most, in whole cells: a conversation printed again
/// whole (`/redraw` of a long session: hundreds of thousands of rows) goes out a frame at a
/// time, laid out only as it is printed, and the UI answers keys between frames.
pub(crate) const ROWS_A_FRAME: usize = 4_000;

/// The rows not in the conversation yet, top to bottom; the first `finished` of them are final.
/// `more`: there were more finished rows than a frame prints, and these are all final: the rest
/// (and the live region's) come with the next frames.
pub struct Pending {
    pub rows: Vec<Line<'static>>,
    pub finished: usize,
    pub more: bool,
}

pub fn pending(app: &mut App, view: View) -> Pending {
    let mut rows = Vec::new();
    let mut finished = 0;
    // Past the first unfinished cell nothing is final; its cells are set apart by blank rows.
    let mut open = false;
    let mut above_shows = false;
    for index in app.printed..app.cells.len() {
        let from = if index == app.printed {
            app.printed_rows
        } else {
            0
        };
        let cell = &mut app.cells[index];
        let done = cell.is_done();
        let cell_rows = cell.rows(view);
        if open {
            if !cell_rows.is_empty() {
                if above_shows {
                    rows.push(Line::default());
                }
                rows.extend(cell_rows.iter().cloned());
                above_shows = true;
            }
            continue;
        }
        let upto = if done {
            cell_rows.len()
        } else {
            cell_rows.stable.len()
        };
        rows.extend(
            cell_rows
                .from(from)
                .take(upto.saturating_sub(from))
                .cloned(),
        );
        if done {
            if !cell_rows.is_empty() {
                rows.push(Line::default());
            }
            finished = rows.len();
            if finished >= ROWS_A_FRAME && index + 1 < app.cells.len() {
                return Pending {
                    rows,
                    finished,
                    more: true,
                };
            }
        } else {
            finished = rows.len();
            rows.extend(cell_rows.from(upto.max(from)).cloned());
            open = true;
            above_shows = !cell_rows.is_empty();
        }
    }
    Pending {
        rows,
        finished,
        more: false,
    }
}

/// The first `count` pending rows are in the conversation now (printed, or left where the live
/// region showed them). They must be final ones.
pub fn commit(app: &mut App, view: View, mut count: usize) {
    while app.printed < app.cells.len() {
        let cell = &mut app.cells[app.printed];
        let done = cell.is_done();
        let rows = cell.rows(view);
        let upto = if done { rows.len() } else { rows.stable.len() };
        let taken = upto.saturating_sub(app.printed_rows).min(count);
        app.printed_rows += taken;
        count -= taken;
        if !done || app.printed_rows < upto {
            break;
        }
        // The blank row after it.
        if app.printed_rows > 0 {
            if count == 0 {
                break;
            }
            count -= 1;
        }
        cell.forget_rows();
        app.printed += 1;
        app.printed_rows = 0;
    }
    debug_assert_eq!(count, 0, "only final rows are committed");
}

/// The rows that became final since the last call, in order, counted as printed.
pub fn take_finished(app: &mut App, view: View) -> Vec<Line<'static>> {
    let mut taken = Vec::new();
    loop {
        let Pending {
            mut rows,
            finished,
            more,
        } = pending(app, view);
        rows.truncate(finished);
        commit(app, view, finished);
        taken.append(&mut rows);
        if !more {
            return taken;
        }
    }
}

/// The last `max` rows of what is printed already, laid out at `view` (after a resize). The
/// cell being printed counts as printed up to its finished rows at the new width.
/// The cells it takes them from keep their lines (a resize that keeps the width lays them out
/// again for nothing otherwise); those before drop theirs.
pub fn printed_tail(app: &mut App, view: View, max: usize) -> Vec<Line<'static>> {
    let rows = tail(app, view, max);
    if let Some(cell) = app.cells.get_mut(app.printed) {
        app.printed_rows = cell.rows(view).stable.len();
    }
    rows
}

/// What `printed_tail` would take at `view` to show the last `max` printed rows: those rows,
/// then the rows of the cell being printed that became final since they were printed (the
/// last frame's `view` must be given: `app.printed_rows` counts rows at its width).
pub fn shown_tail(app: &mut App, view: View, max: usize) -> Vec<Line<'static>> {
    let unshown = app.cells.get_mut(app.printed).map_or(0, |cell| {
        let stable = cell.rows(view).stable.len();
        stable.saturating_sub(app.printed_rows)
    });
    tail(app, view, max + unshown)
}

/// The last `max` printed rows, the cell being printed counted up to its stable rows.
fn tail(app: &mut App, view: View, max: usize) -> Vec<Line<'static>> {
    let mut rows: Vec<Line<'static>> = Vec::new();
    if let Some(cell) = app.cells.get_mut(app.printed) {
        let stable = cell.rows(view).stable;
        rows.extend(stable.iter().rev().take(max).cloned());
    }
    let mut first = app.printed.min(app.cells.len());
    for index in (0..first).rev() {
        if rows.len() >= max {
            break;
        }
        first = index;
        let cell = app.cells[index].rows(view);
        if !cell.is_empty() {
            rows.push(Line::default());
        }
        for line in cell.iter().rev() {
            if rows.len() >= max {
                break;
            }
            rows.push(line.clone());
        }
    }
    rows.reverse();
    for cell in &mut app.cells[..first] {
        cell.forget_rows();
    }
    rows
}

/// Drops the laid-out lines of every cell in the conversation already (after a reprint or the
/// transcript overlay laid them out again).
pub fn forget_printed(app: &mut App) {
    let printed = app.printed.min(app.cells.len());
    for cell in &mut app.cells[..printed] {
        cell.forget_rows();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use agent_core::{AgentEvent, AgentMessage};
    use llm::{AssistantMessage, StreamEvent, ToolResultMessage, UserContent};

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect()
    }

    fn delta(app: &mut App, index: usize, text: &str) {
        app.on_event(&AgentEvent::MessageUpdate {
            event: StreamEvent::TextDelta {
                index,
                delta: text.into(),
            },
        });
    }

    fn result(id: &str) -> AgentEvent {
        bash_end(id, format!("output of {id}"))
    }

    /// A bash call `id` that finished with `output`.
    pub(crate) fn bash_end(id: &str, output: String) -> AgentEvent {
        AgentEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            result: ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "bash".into(),
                content: vec![UserContent::Text { text: output }],
                details: None,
                is_error: false,
                timestamp: 0,
            },
            outcome: agent_core::ToolOutcome::Ok,
        }
    }

    fn waiting(app: &mut App, view: View) -> Vec<String> {
        let Pending { rows, finished, .. } = pending(app, view);
        plain(&rows[finished..])
    }

    #[test]
    fn only_what_is_final_is_printed_and_in_order() {
        let mut app = App::new(crate::status::Status::default());
        let view = app.view(60);
        app.on_event(&AgentEvent::MessageEnd {
            message: AgentMessage::user("hi"),
        });
        app.on_event(&AgentEvent::MessageStart {
            message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
        });
        delta(&mut app, 0, "First paragraph.\n\nSecond is stre");
        assert_eq!(
            plain(&take_finished(&mut app, view)),
            ["› hi", "", "First paragraph."]
        );
        assert_eq!(waiting(&mut app, view), ["", "Second is stre"]);
        delta(&mut app, 0, "aming.\n\n");
        assert_eq!(
            plain(&take_finished(&mut app, view)),
            ["", "Second is streaming."]
        );
        assert!(take_finished(&mut app, view).is_empty(), "printed once");

        // The answer ends; two tools: the second finishes first, and waits for the first.
        app.cells[1].finish();
        assert!(take_finished(&mut app, view).is_empty() || app.printed == 2);
        for id in ["a", "b"] {
            app.on_event(&AgentEvent::ToolExecutionStart {
                tool_call_id: id.into(),
                tool_name: "bash".into(),
                arguments: serde_json::json!({"command": format!("run {id}")}),
            });
        }
        app.on_event(&result("b"));
        let cells = app.cells.len();
        assert!(take_finished(&mut app, view).is_empty(), "b waits for a");
        assert_eq!(app.printed, cells - 2);
        assert!(!waiting(&mut app, view).is_empty());
        app.on_event(&result("a"));
        assert!(!take_finished(&mut app, view).is_empty());
        assert_eq!(app.printed, cells, "both printed once a is done");
    }

    /// A cell in the scrollback keeps no laid-out lines (memory would grow with the
    /// conversation); laid out again (a resize's reprint), it gives the same rows.
    #[test]
    fn printed_cells_keep_no_lines_and_lay_out_again_the_same() {
        let mut app = App::new(crate::status::Status::default());
        let view = app.view(50);
        let mut printed = Vec::new();
        for turn in 0..3 {
            app.on_event(&AgentEvent::MessageEnd {
                message: AgentMessage::user(format!("question {turn}")),
            });
            app.on_event(&AgentEvent::MessageStart {
                message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
            });
            delta(
                &mut app,
                0,
                "A paragraph long enough to wrap at fifty columns, twice over.\n\n",
            );
            delta(
                &mut app,
                0,
                "```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n- one\n- two\n",
            );
            printed.extend(take_finished(&mut app, view));
            let index = app.cells.len() - 1;
            assert!(
                app.cells[index].holds_rows(),
                "streaming: its lines are kept"
            );
            app.cells[index].finish();
            printed.extend(take_finished(&mut app, view));
            assert_eq!(app.printed, app.cells.len());
        }
        for cell in &app.cells {
            assert!(!cell.holds_rows(), "a printed cell keeps no lines");
        }
        // The rows of the last answer (and the blank row after it), as a resize reprints: the
        // answer keeps its lines for the next resize, the cells before it are not laid out.
        let max = app.cells.last_mut().unwrap().rows(view).len() + 1;
        let tail = printed_tail(&mut app, view, max);
        assert_eq!(plain(&tail), plain(&printed[printed.len() - max..]));
        let (last, before) = app.cells.split_last().unwrap();
        assert!(last.holds_rows());
        for cell in before {
            assert!(!cell.holds_rows(), "not needed for the reprint");
        }
        // All of it, laid out again, is what was printed.
        let all = printed_tail(&mut app, view, printed.len());
        assert_eq!(plain(&all), plain(&printed));
    }

    /// Committing the pending rows a few at a time (as frames leave them where the live region
    /// showed them) puts the same rows into the conversation as printing them all at once.
    #[test]
    fn committing_in_steps_equals_printing() {
        let script = |app: &mut App, step: usize| match step {
            0 => {
                app.on_event(&AgentEvent::MessageEnd {
                    message: AgentMessage::user("hi"),
                });
            }
            1 => {
                app.on_event(&AgentEvent::MessageStart {
                    message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
                });
            }
            2 => delta(app, 0, "One.\n\nTwo two two.\n\n```rust\nfn a() {}\n"),
            3 => delta(app, 0, "fn b() {}\n```\n\nThree.\n\n- a\n- b\n\n"),
            _ => app.cells[1].finish(),
        };
        let view = View {
            width: 40,
            expand_tools: false,
            show_thinking: false,
        };
        let mut whole = App::new(crate::status::Status::default());
        let mut printed_whole = Vec::new();
        let mut steps = App::new(crate::status::Status::default());
        let mut committed = Vec::new();
        for step in 0..5 {
            script(&mut whole, step);
            printed_whole.extend(take_finished(&mut whole, view));
            script(&mut steps, step);
            // A row at a time, as if each frame had room for one more.
            loop {
                let Pending { rows, finished, .. } = pending(&mut steps, view);
                if finished == 0 {
                    break;
                }
                committed.push(rows[0].clone());
                commit(&mut steps, view, 1);
            }
        }
        assert_eq!(plain(&committed), plain(&printed_whole));
        assert_eq!(steps.printed, whole.printed);
        assert_eq!(steps.printed_rows, whole.printed_rows);
        assert!(plain(&printed_whole).contains(&"Three.".to_string()));
    }

    #[test]
    fn a_tall_table_waits_for_its_end() {
        let mut app = App::new(crate::status::Status::default());
        app.on_event(&AgentEvent::MessageStart {
            message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
        });
        let table: String = (1..=50).map(|i| format!("| {i} | x |\n")).collect();
        delta(&mut app, 0, &format!("| n | v |\n|---|---|\n{table}"));
        let view = app.view(40);
        assert!(
            take_finished(&mut app, view).is_empty(),
            "a table waits for its end"
        );
        let rows = waiting(&mut app, view);
        assert!(rows.len() > 50, "all of it waits: {rows:?}");
        assert!(
            rows.iter().rev().take(3).any(|l| l.contains("50")),
            "{rows:?}"
        );
    }
}
