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
use ratatui::backend::Backend;
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Rect, Size};
use ratatui::style::Color;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use unicode_width::UnicodeWidthStr;

use crate::app::App;
use crate::backend::Out;
use crate::input::InputState;
use crate::printed::{self, Pending};
use crate::ui;

/// Begin and end of a synchronized update (DEC mode 2026): terminals that know it show the
/// frame at once, the others ignore it.
const SYNC_BEGIN: &str = "\x1b[?2026h";
const SYNC_END: &str = "\x1b[?2026l";

pub struct Inline {
    out: Out,
    width: u16,
    height: u16,
    /// Screen rows the printed conversation takes, from the top.
    content: u16,
    /// What the screen shows from row `content` to the bottom, as the last frame left it. Kept
    /// in step with every scroll, so a frame writes only the cells that changed, however the
    /// conversation moved.
    shown: Buffer,
    /// The frame being drawn, over the same rows (kept for its allocation).
    next: Buffer,
    /// The full-screen transcript, on the alternate screen, while it is open.
    overlay: Option<Terminal<Out>>,
    /// The terminal was resized while the overlay was open.
    resized: bool,
}

impl Inline {
    pub fn new() -> std::io::Result<Self> {
        let (width, height) = crossterm::terminal::size()?;
        Self::to(Out::new(Size::new(width, height)), width, height)
    }

    /// Drawing through `out`, on a screen of `width` × `height`.
    fn to(mut out: Out, width: u16, height: u16) -> std::io::Result<Self> {
        // Where the cursor is is unknown (asking costs a round trip that not every terminal
        // answers): scroll what the screen shows up into the scrollback and start at the top.
        write!(out, "\r{}", "\n".repeat(usize::from(height)))?;
        Write::flush(&mut out)?;
        let screen = Rect::new(0, 0, width, height);
        Ok(Self {
            out,
            width,
            height,
            content: 0,
            shown: Buffer::empty(screen),
            next: Buffer::empty(Rect::default()),
            overlay: None,
            resized: false,
        })
    }

    /// Draws one frame: what became final and does not fit the live region is printed, the
    /// live region is drawn (the cells that changed), and what is final at its top is left
    /// there as part of the conversation.
    pub fn frame(&mut self, app: &mut App, input: &mut InputState) -> std::io::Result<()> {
        if let Some(term) = &mut self.overlay {
            return term.draw(|f| ui::draw_overlay(f, app, input)).map(|_| ());
        }
        write!(self.out, "{SYNC_BEGIN}")?;
        let view = app.view(self.width);
        let bottom = ui::Bottom::new(app, input, self.width, self.height);
        let room = usize::from(self.height.saturating_sub(bottom.height()));
        let Pending {
            mut rows,
            mut finished,
        } = printed::pending(app, view);
        // More than the live region holds: its final top is printed first (the rest of an
        // open block that is taller than the room is cut at the top).
        let printing = rows.len().saturating_sub(room).min(finished);
        if printing > 0 {
            self.clear_live()?;
            let lines: Vec<Line<'static>> = rows.drain(..printing).collect();
            self.print(&lines)?;
            printed::commit(app, view, printing);
            finished -= printing;
        }
        let skip = rows.len().saturating_sub(room);
        let rows = &rows[skip..];
        let height =
            ((rows.len() as u16).max(bottom.popup_room(input)) + bottom.height()).min(self.height);
        // Room for the live region: scroll the conversation up.
        let over = (self.content + height).saturating_sub(self.height);
        if over > 0 {
            self.scroll(over)?;
        }
        let region = Rect::new(0, self.content, self.width, height);
        self.next.resize(self.shown.area);
        self.next.reset();
        let pad = ui::draw_live(&mut self.next, region, app, input, bottom, rows);
        self.write_changes()?;
        std::mem::swap(&mut self.shown, &mut self.next);
        // What is final now sits at the top of the live region exactly as printing it would
        // have put it: it stays there, as part of the conversation, and the region starts under
        // it from the next frame on. Not while a popup is open: it is drawn over the rows above
        // the editor, and would stay in the conversation with them.
        if skip == 0 && pad == 0 && finished > 0 && input.popup.is_none() {
            printed::commit(app, view, finished);
            self.advance(finished as u16);
        }
        // The cursor waits at the top of the live region: a terminal that shrinks drops the
        // rows under the cursor first (the live region, drawn again anyway) and pushes those
        // above it (the conversation) into the scrollback.
        queue!(self.out, MoveTo(0, self.content))?;
        write!(self.out, "{SYNC_END}")?;
        Write::flush(&mut self.out)
    }

    /// Writes the cells of the live region that differ from what the screen shows. A row's
    /// end that became blank is erased rather than written with spaces, so text copied from
    /// the terminal later has no trailing blanks.
    fn write_changes(&mut self) -> std::io::Result<()> {
        let top = self.content;
        let width = usize::from(self.width);
        let next = &self.next;
        // Where each row's text ends in the new frame, worked out once per changed row.
        let mut ends: Vec<Option<u16>> = vec![None; usize::from(next.area.height)];
        let mut end_of = |y: u16| -> u16 {
            let row = usize::from(y - top);
            *ends[row].get_or_insert_with(|| {
                let cells = &next.content[row * width..][..width];
                // A wide character ends where its second column does: erasing from that
                // column would take the character with it.
                cells
                    .iter()
                    .rposition(|c| !blank(c))
                    .map_or(0, |i| (i + cells[i].symbol().width().max(1)) as u16)
            })
        };
        let mut erase: Vec<(u16, u16)> = Vec::new();
        let changes: Vec<(u16, u16, &Cell)> = self
            .shown
            .diff(next)
            .into_iter()
            .filter(|&(x, y, _)| {
                let end = end_of(y);
                if x < end {
                    return true;
                }
                if erase.last().is_none_or(|&(_, row)| row != y) {
                    erase.push((end, y));
                }
                false
            })
            .collect();
        self.out.draw(changes.into_iter())?;
        for (x, y) in erase {
            queue!(self.out, MoveTo(x, y), Clear(ClearType::UntilNewLine))?;
        }
        Ok(())
    }

    /// The terminal changed size: what it shows is its own business (it may have reflowed or
    /// cut it), so the screen is cleared — never the scrollback — and the end of the
    /// conversation printed again at the new width above the live region.
    pub fn resize(&mut self, app: &mut App, width: u16, height: u16) -> std::io::Result<()> {
        self.width = width;
        self.height = height;
        self.out.set_size(width, height);
        if let Some(term) = &mut self.overlay {
            // The normal screen is laid out again when the overlay closes.
            self.resized = true;
            self.content = self.content.min(height);
            term.backend_mut().set_size(width, height);
            return term.resize(Rect::new(0, 0, width, height));
        }
        self.reprint(app)
    }

    /// Clears the screen and prints the end of the conversation at the current size.
    fn reprint(&mut self, app: &mut App) -> std::io::Result<()> {
        let (width, height) = (self.width, self.height);
        self.shown = Buffer::empty(Rect::new(0, 0, width, height));
        // A screenful: whatever of the conversation the terminal kept on the screen (its
        // last rows) is printed again, so clearing the screen loses none of it.
        let view = app.view(width);
        let rows = printed::printed_tail(app, view, usize::from(height));
        queue!(self.out, MoveTo(0, 0), Clear(ClearType::All))?;
        self.content = 0;
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
        Write::flush(&mut self.out)?;
        crate::terminal::enter_overlay()?;
        let screen = Rect::new(0, 0, self.width, self.height);
        let mut term = Terminal::with_options(
            Out::new(Size::new(self.width, self.height)),
            TerminalOptions {
                viewport: Viewport::Fixed(screen),
            },
        )?;
        // (Ratatui's own clear asks the terminal where the cursor is, and waits for the answer.)
        queue!(term.backend_mut(), Clear(ClearType::All))?;
        self.overlay = Some(term);
        Ok(())
    }

    pub fn close_overlay(&mut self, app: &mut App) -> std::io::Result<()> {
        if let Some(mut term) = self.overlay.take() {
            Write::flush(term.backend_mut())?;
        }
        crate::terminal::leave_overlay()?;
        if std::mem::take(&mut self.resized) {
            return self.reprint(app);
        }
        // The normal screen is back; the live region is drawn whole again, in case the
        // terminal did not keep it.
        self.clear_live()
    }

    pub fn overlay_open(&self) -> bool {
        self.overlay.is_some()
    }

    /// Prints what became final (the live region, under it, is drawn again by the next frame).
    pub fn print_finished(&mut self, app: &mut App) -> std::io::Result<()> {
        let finished = printed::take_finished(app, app.view(self.width));
        if !finished.is_empty() {
            self.clear_live()?;
            self.print(&finished)?;
        }
        Ok(())
    }

    /// Leaves the cursor under the conversation, the live region gone, for what the shell
    /// prints next (the overlay is closed).
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.clear_live()?;
        if self.content >= self.height {
            self.scroll(1)?;
        }
        queue!(self.out, MoveTo(0, self.content))?;
        Write::flush(&mut self.out)
    }

    /// Erases the live region (and anything under it).
    fn clear_live(&mut self) -> std::io::Result<()> {
        // A full screen has no live region on it (and the cursor would land on the last row
        // of the conversation).
        if self.content < self.height {
            queue!(
                self.out,
                MoveTo(0, self.content),
                Clear(ClearType::FromCursorDown)
            )?;
            self.shown.reset();
        }
        Ok(())
    }

    /// The conversation grew by `rows` under what it had (printed there, or left there by the
    /// live region): the live region starts lower.
    fn advance(&mut self, rows: u16) {
        let rows = rows.min(self.height - self.content);
        self.content += rows;
        let cells = usize::from(rows) * usize::from(self.width);
        self.shown
            .content
            .drain(..cells.min(self.shown.content.len()));
        self.shown.area = self.live_area();
    }

    /// From the top of the live region to the bottom of the screen.
    fn live_area(&self) -> Rect {
        Rect::new(0, self.content, self.width, self.height - self.content)
    }

    /// Scrolls the screen up by `rows`: the top rows go into the scrollback.
    fn scroll(&mut self, rows: u16) -> std::io::Result<()> {
        queue!(self.out, MoveTo(0, self.height.saturating_sub(1)))?;
        self.out.append_lines(rows)?;
        // What the screen shows moved up with it; the rows pushed off the top are the
        // scrollback's now, and blank rows came in at the bottom.
        let gone = rows.saturating_sub(self.content);
        let width = usize::from(self.width);
        let cells = usize::from(gone) * width;
        self.shown
            .content
            .drain(..cells.min(self.shown.content.len()));
        self.content = self.content.saturating_sub(rows);
        self.shown.area = self.live_area();
        let size = usize::from(self.shown.area.height) * width;
        self.shown.content.resize(size, Cell::EMPTY);
        Ok(())
    }

    /// Prints `lines` under the conversation (the live region is already cleared).
    fn print(&mut self, lines: &[Line<'static>]) -> std::io::Result<()> {
        let width = self.width;
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, 1));
        let empty = buffer.clone();
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
                .rposition(|cell| !blank(cell))
                .map_or(0, |i| i + 1);
            let row = self.content;
            // What differs from a blank row: the cell a wide character covers is left out (the
            // terminal moves past it; written, its blank would push the rest of the row right).
            let cells = empty
                .diff(&buffer)
                .into_iter()
                .filter(|(x, _, _)| usize::from(*x) < used)
                .map(|(x, _, cell)| (x, row, cell));
            queue!(self.out, MoveTo(0, row), Clear(ClearType::UntilNewLine))?;
            self.out.draw(cells)?;
            self.advance(1);
        }
        Ok(())
    }
}

/// A cell that shows nothing: a space without a background or an attribute (a reversed space
/// is the editor's cursor).
fn blank(cell: &Cell) -> bool {
    cell.symbol() == " " && cell.bg == Color::Reset && cell.modifier.is_empty()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use agent_core::{AgentEvent, AgentMessage};
    use llm::{AssistantContent, AssistantMessage, StreamEvent};

    use super::*;
    use crate::status::Status;

    /// What the program wrote, for a terminal emulator to read.
    #[derive(Clone, Default)]
    struct Wire(Arc<Mutex<Vec<u8>>>);

    impl Write for Wire {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct Rig {
        wire: Wire,
        terminal: vt100::Parser,
        inline: Inline,
        app: App,
        input: InputState,
    }

    impl Rig {
        fn new(width: u16, height: u16) -> Self {
            let wire = Wire::default();
            let out = Out::to(Box::new(wire.clone()), Size::new(width, height));
            let mut app = App::new(Status::default());
            app.inline = true;
            Self {
                terminal: vt100::Parser::new(
                    height.try_into().unwrap(),
                    width.try_into().unwrap(),
                    100_000,
                ),
                inline: Inline::to(out, width, height).unwrap(),
                wire,
                app,
                input: InputState::default(),
            }
        }

        /// The terminal reads what was written.
        fn feed(&mut self) {
            let bytes = std::mem::take(&mut *self.wire.0.lock().unwrap());
            self.terminal.process(&bytes);
        }

        fn frame(&mut self) {
            self.inline.frame(&mut self.app, &mut self.input).unwrap();
            self.feed();
            self.same_as_the_terminal();
        }

        /// The oracle: every row under the conversation is what `shown` says it is.
        fn same_as_the_terminal(&self) {
            let screen = self.terminal.screen();
            let width = self.inline.width;
            let shown = &self.inline.shown;
            assert_eq!(shown.area, self.inline.live_area());
            let terminal_rows: Vec<String> = screen.rows(0, width).collect();
            for y in self.inline.content..self.inline.height {
                let mut text = String::new();
                let mut x = 0;
                while x < width {
                    let symbol = shown[(x, y)].symbol();
                    text.push_str(symbol);
                    x += symbol.width().max(1) as u16;
                }
                assert_eq!(
                    terminal_rows[usize::from(y)].trim_end(),
                    text.trim_end(),
                    "row {y} differs from what the live region thinks it shows:\n{}",
                    screen.contents()
                );
            }
        }

        /// Every row the terminal holds, scrollback first, trailing blanks and the blank rows
        /// at either end left out.
        fn history(&mut self) -> Vec<String> {
            let (rows, cols) = self.terminal.screen().size();
            let (rows, cols) = (rows.get(), cols.get());
            let kept = self.terminal.screen().scrollback_len();
            let mut lines = Vec::new();
            for offset in (1..=kept).rev() {
                self.terminal.screen_mut().set_scrollback(offset);
                let top = self
                    .terminal
                    .screen()
                    .rows(0, cols)
                    .next()
                    .unwrap_or_default();
                lines.push(top.trim_end().to_string());
            }
            self.terminal.screen_mut().set_scrollback(0);
            let screen = self.terminal.screen();
            lines.extend(
                screen
                    .rows(0, cols)
                    .take(usize::from(rows))
                    .map(|r| r.trim_end().to_string()),
            );
            let first = lines.iter().position(|l| !l.is_empty()).unwrap_or(0);
            let last = lines
                .iter()
                .rposition(|l| !l.is_empty())
                .map_or(0, |i| i + 1);
            lines[first..last].to_vec()
        }
    }

    fn answer() -> String {
        let mut text = String::new();
        for i in 1..=12 {
            text.push_str(&format!(
                "Paragraph {i} explains a step with **bold** words and `code`, long enough to wrap.\n\n"
            ));
            if i % 4 == 0 {
                text.push_str("```rust\nfn step() -> u32 {\n    1 + 2\n}\n```\n\n- one\n- two\n\n");
            }
        }
        text + "The end."
    }

    /// A conversation's events: a prompt, then the answer in deltas of `chunk` characters.
    fn events(chunk: usize) -> Vec<AgentEvent> {
        let text = answer();
        let mut events = vec![
            AgentEvent::AgentStart,
            AgentEvent::MessageEnd {
                message: AgentMessage::user("tell me"),
            },
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
            },
        ];
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(chunk) {
            events.push(AgentEvent::MessageUpdate {
                event: StreamEvent::TextDelta {
                    index: 0,
                    delta: piece.iter().collect(),
                },
            });
        }
        let mut message = AssistantMessage::empty("m", "p");
        message.content = vec![AssistantContent::Text { text }];
        events.push(AgentEvent::MessageEnd {
            message: AgentMessage::Assistant(message),
        });
        events
    }

    /// The conversation as printing it all at once puts it in the terminal.
    fn printed_at_once(width: u16) -> Vec<String> {
        let mut app = App::new(Status::default());
        for event in events(50) {
            app.on_event(&event);
        }
        for cell in &mut app.cells {
            cell.finish();
        }
        let view = app.view(width);
        let lines = printed::take_finished(&mut app, view);
        let mut rows: Vec<String> = lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect();
        while rows.last().is_some_and(|l| l.is_empty()) {
            rows.pop();
        }
        rows
    }

    /// Streamed in small deltas with a frame every few of them, the live region keeps its copy
    /// of the screen exact through every scroll and every row it leaves behind, and the
    /// terminal ends up holding the same conversation as printing it at once.
    #[test]
    fn the_screen_holds_what_printing_at_once_would() {
        for (chunk, every) in [(3, 1), (7, 3), (40, 1), (400, 2)] {
            let mut rig = Rig::new(60, 14);
            rig.frame();
            for (i, event) in events(chunk).iter().enumerate() {
                rig.app.on_event(event);
                if i % every == 0 {
                    rig.frame();
                }
            }
            rig.frame();
            // What the UI does on the way out.
            for cell in &mut rig.app.cells {
                cell.finish();
            }
            rig.app.editor.set_text("");
            rig.inline.print_finished(&mut rig.app).unwrap();
            rig.frame();
            rig.inline.finish().unwrap();
            rig.feed();
            assert_eq!(
                rig.history(),
                printed_at_once(60),
                "deltas of {chunk}, a frame every {every}"
            );
        }
    }

    /// The bottom of the live region changing mid-stream — a popup over the editor (room kept
    /// above it), a queued message, a prompt of several lines being typed — keeps the copy of
    /// the screen exact, and the conversation whole.
    #[test]
    fn the_bottom_changing_keeps_the_copy_of_the_screen_exact() {
        let mut rig = Rig::new(60, 16);
        for (i, event) in events(11).iter().enumerate() {
            rig.app.on_event(event);
            match i % 60 {
                5 => {
                    rig.input.popup = Some(crate::popup::Popup::Choice {
                        kind: crate::app::ChoiceKind::Session,
                        items: (1..=8)
                            .map(|n| (format!("choice {n}"), String::new()))
                            .collect(),
                        selected: 0,
                    })
                }
                20 => rig.input.popup = None,
                25 => rig.app.queue.push(crate::app::QueuedView {
                    id: i as u64,
                    kind: agent_core::QueueKind::FollowUp,
                    text: "and then this".into(),
                }),
                35 => rig.app.editor.set_text("a prompt\nof three\nlines"),
                45 => {
                    rig.app.queue.clear();
                    rig.app.editor.set_text("");
                }
                _ => {}
            }
            rig.frame();
        }
        for cell in &mut rig.app.cells {
            cell.finish();
        }
        rig.input.popup = None;
        rig.app.queue.clear();
        rig.app.editor.set_text("");
        rig.inline.print_finished(&mut rig.app).unwrap();
        rig.frame();
        rig.inline.finish().unwrap();
        rig.feed();
        assert_eq!(rig.history(), printed_at_once(60));
    }

    /// Through resizes mid-stream, the copy of the screen stays exact.
    #[test]
    fn resizing_keeps_the_copy_of_the_screen_exact() {
        let mut rig = Rig::new(60, 14);
        for (i, event) in events(9).iter().enumerate() {
            rig.app.on_event(event);
            if i % 25 == 10 {
                let (width, height) = if i % 50 == 10 { (45, 12) } else { (70, 18) };
                rig.terminal
                    .screen_mut()
                    .set_size(height.try_into().unwrap(), width.try_into().unwrap());
                rig.inline.resize(&mut rig.app, width, height).unwrap();
                rig.feed();
            }
            rig.frame();
        }
    }
}
