//! Inline mode: the conversation is printed into the terminal's normal scrollback as it becomes
//! final and never redrawn; only the live region under it (the open block of a streaming answer,
//! running tools, the editor, the status line, popups) is. The terminal's own scrollback,
//! search and selection keep working, and when the program ends the terminal holds everything.
//!
//! Layout on the screen: rows `0..content` hold the end of the printed conversation, the live
//! region starts at row `content` and never reaches past the bottom. Printing more lines than
//! fit scrolls the screen, which is what moves the top rows into the scrollback.

use std::io::Write;

use crossterm::cursor::MoveTo;
use crossterm::queue;
use crossterm::terminal::{Clear, ClearType};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui::{TerminalOptions, Viewport};

use crate::app::App;
use crate::backend::Out;
use crate::input::InputState;
use crate::ui;

/// Begin and end of a synchronized update (DEC mode 2026): terminals that know it show the
/// frame at once, the others ignore it.
const SYNC_BEGIN: &str = "\x1b[?2026h";
const SYNC_END: &str = "\x1b[?2026l";

pub struct Inline {
    term: Terminal<Out>,
    width: u16,
    height: u16,
    /// Screen rows the printed conversation takes, from the top.
    content: u16,
    /// Where the live region was drawn last.
    live: Rect,
    /// The full-screen transcript is open (on the alternate screen).
    overlay: bool,
}

impl Inline {
    pub fn new() -> std::io::Result<Self> {
        let (width, height) = crossterm::terminal::size()?;
        let mut out = std::io::stdout();
        // Where the cursor is is unknown (asking costs a round trip that not every terminal
        // answers): scroll what the screen shows up into the scrollback and start at the top.
        write!(out, "\r{}", "\n".repeat(usize::from(height)))?;
        out.flush()?;
        let term = live_terminal(width, height)?;
        Ok(Self {
            term,
            width,
            height,
            content: 0,
            live: Rect::default(),
            overlay: false,
        })
    }

    /// Draws one frame: prints what became final, then redraws the live region.
    pub fn frame(&mut self, app: &mut App, input: &mut InputState) -> std::io::Result<()> {
        if self.overlay {
            return self
                .term
                .draw(|f| ui::draw_overlay(f, app, input))
                .map(|_| ());
        }
        write!(self.term.backend_mut(), "{SYNC_BEGIN}")?;
        let view = app.view(self.width);
        let finished = take_finished(app, view);
        if !finished.is_empty() {
            self.clear_live()?;
            self.print(&finished)?;
        }
        let bottom = ui::Bottom::new(app, input, self.width, self.height);
        let room = self.height.saturating_sub(bottom.height());
        let transcript = live_rows(app, view, usize::from(room));
        let rows = (transcript.len() as u16).max(bottom.popup_room(input));
        let height = (rows + bottom.height()).min(self.height);
        // Room for the live region: scroll the conversation up.
        let over = (self.content + height).saturating_sub(self.height);
        if over > 0 {
            self.clear_live()?;
            self.scroll(over)?;
        }
        let area = Rect::new(0, self.content, self.width, height);
        if area != self.live {
            // Clears below too: a shorter region leaves nothing of the taller one behind.
            self.clear_live()?;
            self.live = area;
            self.term.resize(area)?;
        }
        self.term
            .draw(|f| ui::draw_live(f, app, input, bottom, transcript))?;
        // The cursor waits at the top of the live region: a terminal that shrinks drops the
        // rows under the cursor first (the live region, drawn again anyway) and pushes those
        // above it (the conversation) into the scrollback.
        let out = self.term.backend_mut();
        queue!(out, MoveTo(0, self.content))?;
        write!(out, "{SYNC_END}")?;
        Write::flush(self.term.backend_mut())
    }

    /// The terminal changed size: what it shows is its own business (it may have reflowed or
    /// cut it), so the screen is cleared — never the scrollback — and the end of the
    /// conversation printed again at the new width above the live region.
    pub fn resize(&mut self, app: &mut App, width: u16, height: u16) -> std::io::Result<()> {
        if width != self.width {
            // Ratatui clears the whole screen when a viewport gets narrower: a new terminal
            // for the new width instead.
            Write::flush(self.term.backend_mut())?;
            self.term = live_terminal(width, height)?;
        }
        self.term.backend_mut().set_size(width, height);
        self.width = width;
        self.height = height;
        if self.overlay {
            return self.term.resize(Rect::new(0, 0, width, height));
        }
        // A screenful: whatever of the conversation the terminal kept on the screen (its
        // last rows) is printed again, so clearing the screen loses none of it.
        let view = app.view(width);
        let rows = printed_tail(app, view, usize::from(height));
        let out = self.term.backend_mut();
        queue!(out, MoveTo(0, 0), Clear(ClearType::All))?;
        self.content = 0;
        self.live = Rect::default();
        self.print(&rows)
    }

    /// Scrolls everything on the screen up into the scrollback (`/clear`): nothing is erased.
    pub fn clear_screen(&mut self) -> std::io::Result<()> {
        self.clear_live()?;
        let rows = self.content;
        self.scroll(rows)?;
        self.content = 0;
        Ok(())
    }

    pub fn open_overlay(&mut self) -> std::io::Result<()> {
        crate::terminal::enter_overlay()?;
        self.overlay = true;
        self.term.resize(Rect::new(0, 0, self.width, self.height))
    }

    pub fn close_overlay(&mut self) -> std::io::Result<()> {
        crate::terminal::leave_overlay()?;
        self.overlay = false;
        // The normal screen is back as it was: the next frame redraws the live region.
        self.live = Rect::default();
        Ok(())
    }

    pub fn overlay_open(&self) -> bool {
        self.overlay
    }

    /// Leaves the cursor under the conversation, the live region gone, for what the shell
    /// prints next.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if self.overlay {
            self.close_overlay()?;
        }
        self.clear_live()?;
        if self.content >= self.height {
            self.scroll(1)?;
        }
        let out = self.term.backend_mut();
        queue!(out, MoveTo(0, self.content))?;
        Write::flush(out)
    }

    /// Erases the live region (and anything under it).
    fn clear_live(&mut self) -> std::io::Result<()> {
        self.live = Rect::default();
        // A full screen has no live region on it (and the cursor would land on the last row
        // of the conversation).
        if self.content < self.height {
            let out = self.term.backend_mut();
            queue!(
                out,
                MoveTo(0, self.content),
                Clear(ClearType::FromCursorDown)
            )?;
        }
        Ok(())
    }

    /// Scrolls the screen up by `rows`: the top rows go into the scrollback.
    fn scroll(&mut self, rows: u16) -> std::io::Result<()> {
        let out = self.term.backend_mut();
        queue!(out, MoveTo(0, self.height.saturating_sub(1)))?;
        out.append_lines(rows)?;
        self.content = self.content.saturating_sub(rows);
        Ok(())
    }

    /// Prints `lines` under the conversation (the live region is already cleared).
    fn print(&mut self, lines: &[Line<'static>]) -> std::io::Result<()> {
        let width = self.width;
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, 1));
        let blank = buffer.clone();
        for line in lines {
            if self.content >= self.height {
                self.scroll(1)?;
            }
            buffer.reset();
            line.render(buffer.area, &mut buffer);
            // Trailing blanks are not written, so copying a line from the terminal does not
            // pick up a row of spaces.
            let used = buffer
                .content
                .iter()
                .rposition(|cell| cell.symbol() != " " || cell.bg != ratatui::style::Color::Reset)
                .map_or(0, |i| i + 1);
            let row = self.content;
            // What differs from a blank row: the cell a wide character covers is left out (the
            // terminal moves past it; written, its blank would push the rest of the row right).
            let cells = blank
                .diff(&buffer)
                .into_iter()
                .filter(|(x, _, _)| usize::from(*x) < used)
                .map(|(x, _, cell)| (x, row, cell));
            let out = self.term.backend_mut();
            queue!(out, MoveTo(0, row), Clear(ClearType::UntilNewLine))?;
            out.draw(cells)?;
            self.content += 1;
        }
        Ok(())
    }
}

/// The ratatui terminal that draws the live region, on a screen of `width` × `height`.
fn live_terminal(width: u16, height: u16) -> std::io::Result<Terminal<Out>> {
    Terminal::with_options(
        Out::new(ratatui::layout::Size::new(width, height)),
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, width, 1)),
        },
    )
}

/// Lines of the transcript that became final since the last call, in order: whole cells that
/// are done, and the finished blocks of the one still streaming. Cells are printed in order,
/// so a finished cell waits for an unfinished one before it.
pub fn take_finished(app: &mut App, view: crate::cells::View) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    while app.printed < app.cells.len() {
        let cell = &mut app.cells[app.printed];
        let done = cell.is_done();
        let rows = cell.rows(view);
        let upto = if done { rows.len() } else { rows.stable.len() };
        if upto > app.printed_rows {
            out.extend(
                rows.from(app.printed_rows)
                    .take(upto - app.printed_rows)
                    .cloned(),
            );
            app.printed_rows = upto;
        }
        if !done {
            break;
        }
        // A blank line sets each cell apart (none for a cell with nothing to show).
        if app.printed_rows > 0 {
            out.push(Line::default());
        }
        app.printed += 1;
        app.printed_rows = 0;
    }
    out
}

/// The last `max` rows of what is not printed yet.
pub fn live_rows(app: &mut App, view: crate::cells::View, max: usize) -> Vec<Line<'static>> {
    let mut rows: Vec<Line<'static>> = Vec::new();
    for index in (app.printed..app.cells.len()).rev() {
        if rows.len() >= max {
            break;
        }
        let from = if index == app.printed {
            app.printed_rows
        } else {
            0
        };
        let cell = app.cells[index].rows(view);
        if cell.len() > from && !rows.is_empty() {
            rows.push(Line::default());
        }
        for line in cell.from(from).rev() {
            if rows.len() >= max {
                break;
            }
            rows.push(line.clone());
        }
    }
    rows.reverse();
    rows
}

/// The last `max` rows of what is printed already, laid out at `view` (after a resize). The
/// cell being printed counts as printed up to its finished rows at the new width.
fn printed_tail(app: &mut App, view: crate::cells::View, max: usize) -> Vec<Line<'static>> {
    let mut rows: Vec<Line<'static>> = Vec::new();
    if let Some(cell) = app.cells.get_mut(app.printed) {
        let stable = cell.rows(view).stable;
        app.printed_rows = stable.len();
        rows.extend(stable.iter().rev().take(max).cloned());
    }
    for index in (0..app.printed.min(app.cells.len())).rev() {
        if rows.len() >= max {
            break;
        }
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
    rows
}

#[cfg(test)]
mod tests {
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
        AgentEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            result: ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "bash".into(),
                content: vec![UserContent::Text {
                    text: format!("output of {id}"),
                }],
                details: None,
                is_error: false,
                timestamp: 0,
            },
            outcome: agent_core::ToolOutcome::Ok,
        }
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
        assert_eq!(
            plain(&live_rows(&mut app, view, 10)),
            ["", "Second is stre"]
        );
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
        assert!(!live_rows(&mut app, view, 20).is_empty());
        app.on_event(&result("a"));
        assert!(!take_finished(&mut app, view).is_empty());
        assert_eq!(app.printed, cells, "both printed once a is done");
    }

    #[test]
    fn the_live_rows_are_the_last_ones() {
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
        let rows = plain(&live_rows(&mut app, view, 5));
        assert_eq!(rows.len(), 5);
        assert!(rows.iter().any(|l| l.contains("50")), "{rows:?}");
    }
}
