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
use ratatui::layout::{Position, Rect, Size};
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use unicode_width::UnicodeWidthStr;

use crate::app::App;
use crate::backend::{Out, Pen};
use crate::input::InputState;
use crate::printed::{self, Pending};
use crate::ui;

/// Begin and end of a synchronized update (DEC mode 2026): terminals that know it show the
/// frame at once, the others ignore it.
pub(crate) const SYNC_BEGIN: &str = "\x1b[?2026h";
pub(crate) const SYNC_END: &str = "\x1b[?2026l";

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
    /// The screen row where the rows under the transcript (spinner, queue, editor, status)
    /// start, and how many they are, as the last frame drew them. When the region above them
    /// grows or shrinks they are moved on the terminal (lines inserted or deleted above
    /// them) rather than written again: a streamed reply scrolls nearly every frame, and
    /// rewriting them each time was most of what a frame wrote.
    bottom: Option<(u16, u16)>,
    /// The full-screen transcript, on the alternate screen, while it is open.
    overlay: Option<Terminal<Out>>,
    /// The terminal was resized (or Ctrl+L pressed) since the last frame, which prints the
    /// conversation again at the new size (see [`Inline::resize`]); with the overlay open,
    /// since it opened, and closing it prints the normal screen again whole.
    pending: Option<Resized>,
    /// The last frame printed a frame's worth of final rows and more wait (see
    /// [`printed::pending`]): the next frame is due at once.
    backlog: bool,
    /// The last frame printed more rows than half the screen holds: a terminal resized while
    /// it still reads them reads them at the new size (see [`Inline::settle`]).
    burst: bool,
}

/// Resizes not yet printed for: the width the screen's rows were laid out at, and whether
/// any of them changed the height.
#[derive(Clone, Copy)]
struct Resized {
    width: u16,
    height_changed: bool,
    /// How far the height moved from the one the last frame was drawn for, at most.
    spread: u16,
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
            bottom: None,
            overlay: None,
            pending: None,
            backlog: false,
            burst: false,
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
        self.settle(app)?;
        let view = app.view(self.width);
        let bottom = ui::Bottom::new(app, input, self.width, self.height);
        let under = bottom.height();
        let room = usize::from(self.height.saturating_sub(under));
        let Pending {
            mut rows,
            mut finished,
            more,
        } = printed::pending(app, view);
        self.backlog = more;
        // More than the live region holds: its final top is printed first (the rest of an
        // open block that is taller than the room is cut at the top). Part of a backlog: all
        // of it, none being the end.
        let printing = if more {
            finished
        } else {
            rows.len().saturating_sub(room).min(finished)
        };
        self.burst = printing > usize::from(self.height / 2);
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
        let under = under.min(height);
        let under_at = self.content + height - under;
        self.move_bottom(under_at, under)?;
        let region = Rect::new(0, self.content, self.width, height);
        self.next.resize(self.shown.area);
        self.next.reset();
        let (pad, caret) = ui::draw_live(&mut self.next, region, app, input, bottom, rows);
        write_changes(&mut self.out, &self.shown, &self.next)?;
        std::mem::swap(&mut self.shown, &mut self.next);
        self.bottom = Some((under_at, under));
        // What is final now sits at the top of the live region exactly as printing it would
        // have put it: it stays there, as part of the conversation, and the region starts under
        // it from the next frame on. Not while a popup is open: it is drawn over the rows above
        // the editor, and would stay in the conversation with them.
        if skip == 0 && pad == 0 && finished > 0 && input.popup.is_none() {
            printed::commit(app, view, finished);
            self.advance(finished as u16);
        }
        // The cursor, hidden, waits at the top of the live region while the agent works: a
        // terminal that shrinks drops the rows under the cursor first (the live region, drawn
        // again anyway) and pushes those above it (the conversation) into the scrollback, so
        // no half-streamed block is left there. Idle, only the editor and the status line are
        // under the conversation and the cursor waits at the caret: an input method opens its
        // window where the text goes (Chinese, Japanese), not on the editor's corner.
        let park = match caret {
            Some(caret) if !app.running && input.popup.is_none() => caret,
            _ => Position::new(0, self.content),
        };
        queue!(self.out, MoveTo(park.x, park.y))?;
        write!(self.out, "{SYNC_END}")?;
        Write::flush(&mut self.out)
    }

    /// Moves the rows under the transcript, drawn by the last frame, to `to` on the terminal
    /// and in `shown` (when there are as many of them as the frame about to be drawn has):
    /// lines inserted above them push them down, lines deleted above them pull them up. The
    /// rows this takes off the bottom of the screen, or brings in there, are the live
    /// region's, drawn again by the frame anyway.
    fn move_bottom(&mut self, to: u16, rows: u16) -> std::io::Result<()> {
        let Some((from, drawn)) = self.bottom.take() else {
            return Ok(());
        };
        if drawn != rows || from == to || from.min(to) < self.content {
            return Ok(());
        }
        if from.max(to) + rows > self.height {
            return Ok(());
        }
        let width = usize::from(self.width);
        let at = from.min(to);
        let lines = from.abs_diff(to);
        let start = usize::from(at - self.content) * width;
        let cells = usize::from(lines) * width;
        let len = self.shown.content.len();
        queue!(self.out, MoveTo(0, at))?;
        if to > from {
            // Insert Line (IL): the rows from the cursor down move down, the last ones off the
            // screen (never into the scrollback); the new rows are blank in the plain style,
            // which the last frame's cells were left in.
            write!(self.out, "\x1b[{lines}L")?;
            self.shown
                .content
                .splice(start..start, std::iter::repeat_n(Cell::EMPTY, cells));
            self.shown.content.truncate(len);
        } else {
            // Delete Line (DL): the rows under them move up, blank rows come in at the bottom.
            write!(self.out, "\x1b[{lines}M")?;
            self.shown.content.drain(start..start + cells);
            self.shown.content.resize(len, Cell::EMPTY);
        }
        Ok(())
    }

    /// The terminal changed size: what it shows is its own business (it may have reflowed or
    /// cut it), so the next frame clears the screen — never the scrollback — and prints the
    /// part of the conversation it showed again at the new width above the live region.
    /// Waiting for the frame puts that inside its synchronized update, and a window being
    /// dragged, which sends many sizes between two frames, is printed for once, at the last.
    pub fn resize(&mut self, width: u16, height: u16) -> std::io::Result<()> {
        let (old_width, old_height) = (self.width, self.height);
        self.width = width;
        self.height = height;
        self.out.set_size(width, height);
        if let Some(term) = &mut self.overlay {
            // The normal screen is printed again, whole, when the overlay closes.
            self.pending
                .get_or_insert(Resized {
                    width: old_width,
                    height_changed: true,
                    spread: 0,
                })
                .height_changed = true;
            self.content = self.content.min(height);
            term.backend_mut().set_size(width, height);
            return term.resize(Rect::new(0, 0, width, height));
        }
        let pending = self.pending.get_or_insert(Resized {
            width: old_width,
            height_changed: false,
            spread: 0,
        });
        pending.height_changed |= height != old_height;
        pending.spread = pending.spread.saturating_add(height.abs_diff(old_height));
        Ok(())
    }

    /// Ctrl+L: the next frame clears the screen (never the scrollback) and prints again the
    /// rows of the conversation it showed and the live region, for when something else wrote
    /// over them. The overlay is drawn whole each frame anyway.
    pub fn repaint(&mut self) {
        if self.overlay.is_none() {
            self.pending.get_or_insert(Resized {
                width: self.width,
                height_changed: false,
                spread: 0,
            });
        }
    }

    /// Prints the conversation again for the resizes since the last frame, if any: the rows
    /// the screen may show now, laid out at the new width. Those are the rows it showed when
    /// only the width changed (the rows above them are in the scrollback already). When the
    /// height changed too, whether the terminal moved rows between the screen and the
    /// scrollback (most take rows back onto a taller screen, some push them out of a shorter
    /// one), and whether frames drawn for the old size scrolled it, is unknown: a screenful of
    /// them at the old width, or all it showed if that is more. After a frame that printed
    /// many rows (a `/redraw`, a burst of output), which the terminal may still have been
    /// reading when it changed size, as many rows again as the height moved: that frame's
    /// live region, drawn for the old height and read at the new one, is that much off, over
    /// rows of the conversation. Some rows may then be in the scrollback twice; none is lost.
    fn settle(&mut self, app: &mut App) -> std::io::Result<()> {
        let Some(resized) = self.pending.take() else {
            return Ok(());
        };
        let rows = if resized.height_changed {
            let off = if self.burst { resized.spread } else { 0 };
            self.content.max(self.height).saturating_add(off)
        } else {
            self.content
        };
        let view = app.view(resized.width);
        let shown = printed::shown_tail(app, view, usize::from(rows));
        self.reprint(app, resized.width, &shown)
    }

    /// Clears the screen and prints the end of the conversation at the current size: the text
    /// of `shown` (rows of the conversation and those that became final since, laid out at
    /// `old_width`).
    fn reprint(
        &mut self,
        app: &mut App,
        old_width: u16,
        shown: &[Line<'static>],
    ) -> std::io::Result<()> {
        let (width, height) = (self.width, self.height);
        self.shown = Buffer::empty(Rect::new(0, 0, width, height));
        self.bottom = None;
        let view = app.view(width);
        // Enough rows at the new width for the same text, however much narrower.
        let most = shown
            .len()
            .saturating_mul(usize::from(old_width.div_ceil(width.max(1))) * 2 + 1);
        let mut rows = printed::printed_tail(app, view, most);
        rows.drain(..same_text_from(&rows, shown));
        erase_from(&mut self.out, 0, height)?;
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
        // A resize not printed for yet: the normal screen is printed again, whole, when it
        // returns.
        if let Some(pending) = &mut self.pending {
            pending.height_changed = true;
        }
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
        // The overlay laid out the whole conversation; what is printed need not stay laid out.
        printed::forget_printed(app);
        if self.pending.is_some() {
            return self.settle(app);
        }
        // The normal screen is back; the live region is drawn whole again, in case the
        // terminal did not keep it.
        self.clear_live()
    }

    /// Final rows still wait to be printed, after those the last frame printed, and the next
    /// frame will print them: not while the overlay is open (the frames draw only it; closing
    /// it asks for a frame).
    pub fn backlog(&self) -> bool {
        self.backlog && self.overlay.is_none()
    }

    pub fn overlay_open(&self) -> bool {
        self.overlay.is_some()
    }

    /// Prints what became final (the live region, under it, is drawn again by the next frame).
    pub fn print_finished(&mut self, app: &mut App) -> std::io::Result<()> {
        self.settle(app)?;
        let finished = printed::take_finished(app, app.view(self.width));
        if !finished.is_empty() {
            self.clear_live()?;
            self.print(&finished)?;
        }
        Ok(())
    }

    /// Back from a stop: the shell wrote on the screen meanwhile, and the terminal may have
    /// another size. What the screen shows goes up into the scrollback (down to the cursor,
    /// under what the shell wrote; or, `whole`, down to the bottom, when where the cursor is
    /// is unknown), and the next frame prints the end of the conversation again under it.
    pub fn resumed(&mut self, width: u16, height: u16, whole: bool) -> std::io::Result<()> {
        self.width = width;
        self.height = height;
        self.out.set_size(width, height);
        if whole {
            queue!(self.out, MoveTo(0, height.saturating_sub(1)))?;
        }
        write!(self.out, "\r{}", "\n".repeat(usize::from(height)))?;
        self.content = 0;
        self.shown = Buffer::empty(Rect::new(0, 0, width, height));
        self.bottom = None;
        self.pending = Some(Resized {
            width,
            height_changed: true,
            spread: 0,
        });
        Ok(())
    }

    /// Leaves the cursor under the conversation, the live region gone, for what the shell
    /// prints next (the overlay is closed).
    pub fn finish(&mut self, app: &mut App) -> std::io::Result<()> {
        self.settle(app)?;
        self.clear_live()?;
        if self.content >= self.height {
            self.scroll(1)?;
        }
        queue!(self.out, MoveTo(0, self.content))?;
        Write::flush(&mut self.out)
    }

    /// Erases the live region (and anything under it).
    fn clear_live(&mut self) -> std::io::Result<()> {
        self.bottom = None;
        // A full screen has no live region on it (and the cursor would land on the last row
        // of the conversation).
        if self.content < self.height {
            erase_from(&mut self.out, self.content, self.height)?;
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
        self.bottom = self
            .bottom
            .and_then(|(row, n)| Some((row.checked_sub(rows)?, n)));
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

    /// Prints `lines` under the conversation (the live region is already cleared), each on
    /// the row under the one before, by a line feed: a terminal resized while it still reads
    /// them (a `/redraw` backlog is thousands of rows) puts each under the last and scrolls
    /// at its own bottom. Placed at the rows of the old size instead, those a taller screen
    /// no longer scrolled away were written over and lost.
    fn print(&mut self, lines: &[Line<'static>]) -> std::io::Result<()> {
        // Rows are written over the live region's: the rows under it get drawn again.
        self.bottom = None;
        if lines.is_empty() {
            return Ok(());
        }
        let mut buffer = Buffer::empty(Rect::new(0, 0, self.width, 1));
        if self.content < self.height {
            queue!(self.out, MoveTo(0, self.content))?;
        } else {
            // The screen is all conversation: the first row goes under its last.
            queue!(self.out, MoveTo(0, self.height - 1))?;
            self.out.write_all(b"\n")?;
        }
        for (index, line) in lines.iter().enumerate() {
            if index > 0 {
                self.out.write_all(b"\r\n")?;
            }
            queue!(self.out, Clear(ClearType::UntilNewLine))?;
            if !write_runs(&mut self.out, line, self.width)? {
                write_cells(&mut self.out, &mut buffer, line)?;
            }
        }
        // The rows past the bottom scrolled the screen: the conversation fills it.
        let room = usize::from(self.height - self.content);
        self.advance(lines.len().min(room) as u16);
        Ok(())
    }
}

/// Where in `rows` (the end of the conversation at a new width) the text of `shown` (rows the
/// screen showed at the old width) starts: found by counting letters and digits from the end,
/// which a new width moves between rows but neither adds nor drops (blank rows, indentation,
/// bullets and bars repeated on each row do not count).
fn same_text_from(rows: &[Line<'_>], shown: &[Line<'_>]) -> usize {
    fn letters(line: &Line<'_>) -> usize {
        let spans = line.spans.iter();
        spans
            .map(|s| s.content.chars().filter(|c| c.is_alphanumeric()).count())
            .sum()
    }
    let wanted: usize = shown.iter().map(letters).sum();
    if wanted == 0 {
        return rows.len().saturating_sub(shown.len());
    }
    let mut found = 0;
    for (index, row) in rows.iter().enumerate().rev() {
        found += letters(row);
        if found >= wanted {
            return index;
        }
    }
    0
}

/// Erases the screen from `row` to the bottom, never into the scrollback. From the top row
/// it erases that row on its own, then the rest from the second: tmux (`scroll-on-clear`, on
/// by default) takes an erase of the whole screen, or of everything from its top-left
/// corner, for a "clear" and moves what the screen showed into the scrollback first, where
/// the live region would stay as a stale copy (VTE does the same for the whole screen).
fn erase_from(out: &mut Out, row: u16, height: u16) -> std::io::Result<()> {
    if row > 0 {
        return queue!(out, MoveTo(0, row), Clear(ClearType::FromCursorDown));
    }
    queue!(out, MoveTo(0, 0), Clear(ClearType::CurrentLine))?;
    if height > 1 {
        queue!(out, MoveTo(0, 1), Clear(ClearType::FromCursorDown))?;
    }
    Ok(())
}

/// Writes `line` on the cursor's row (erased, the cursor at its start) through `buffer`, a
/// row of cells as wide as the screen.
fn write_cells(out: &mut Out, buffer: &mut Buffer, line: &Line<'_>) -> std::io::Result<()> {
    buffer.reset();
    line.render(buffer.area, buffer);
    // Trailing blanks are not written, so copying a line from the terminal does not pick up a
    // row of spaces.
    let used = text_end(&buffer.content);
    out.draw_row(row_cells(&buffer.content[..used]))
}

/// Writes `line` from the cursor (at the start of an erased row) as runs of text, a span
/// each, instead of through a row of cells: most lines printed into the scrollback are plain
/// (printable ASCII, box drawing, bullets: [`ui::plain`]), and a reply printed in one burst
/// or a resumed conversation is thousands of them. What reaches the terminal is what drawing
/// the line into cells and writing those would give, trailing blanks left out as there.
/// `false`, with nothing written, for a line this does not cover: any other character
/// (graphemes, wide and control characters are the cells' business), a line style with a
/// background or attributes (it colours the whole row), an alignment, a line wider than the
/// screen.
fn write_runs(out: &mut Out, line: &Line<'_>, width: u16) -> std::io::Result<bool> {
    // Each character is one cell: columns are counted in characters.
    let columns = |text: &str| text.chars().count();
    if !ui::plain(line)
        || space_shows(
            line.style.bg.unwrap_or(Color::Reset),
            line.style.add_modifier,
        )
        || line
            .spans
            .iter()
            .map(|s| columns(&s.content))
            .sum::<usize>()
            > usize::from(width)
    {
        return Ok(false);
    }
    let style = |span: &Span<'_>| line.style.patch(span.style);
    let mut end = 0;
    let mut column = 0;
    for span in &line.spans {
        let style = style(span);
        let text = if space_shows(
            style.bg.unwrap_or(Color::Reset),
            style.add_modifier - style.sub_modifier,
        ) {
            &span.content[..]
        } else {
            span.content.trim_end_matches(' ')
        };
        if !text.is_empty() {
            end = column + columns(text);
        }
        column += columns(&span.content);
    }
    let mut pen = Pen::default();
    let mut column = 0;
    for span in &line.spans {
        if column >= end {
            break;
        }
        let take = span
            .content
            .char_indices()
            .nth(end - column)
            .map_or(span.content.len(), |(at, _)| at);
        out.run(&mut pen, &span.content[..take], style(span))?;
        column += columns(&span.content);
    }
    out.end_runs(pen)?;
    Ok(true)
}

/// The cells of a row to write, with their columns: the cell a wide character covers is left
/// out (the terminal moves past it; written, its blank would push the rest of the row right).
fn row_cells(cells: &[Cell]) -> impl Iterator<Item = (u16, &Cell)> {
    let mut covered = 0;
    (0u16..).zip(cells).filter_map(move |(x, cell)| {
        if covered > 0 {
            covered -= 1;
            return None;
        }
        covered = cell.symbol().width().saturating_sub(1);
        Some((x, cell))
    })
}

/// Writes the cells of `next` that differ from `shown` (what the screen shows over the same
/// area). A row's end that became blank is erased rather than written with spaces, so text
/// copied from the terminal later has no trailing blanks.
pub(crate) fn write_changes(out: &mut Out, shown: &Buffer, next: &Buffer) -> std::io::Result<()> {
    let top = next.area.y;
    let width = usize::from(next.area.width);
    // Where each row's text ends in the new frame, worked out once per changed row.
    let mut ends: Vec<Option<u16>> = vec![None; usize::from(next.area.height)];
    let mut end_of = |y: u16| -> u16 {
        let row = usize::from(y - top);
        *ends[row].get_or_insert_with(|| text_end(&next.content[row * width..][..width]) as u16)
    };
    let mut erase: Vec<(u16, u16)> = Vec::new();
    // Drawn as found: no list of the frame's changes is built.
    let changes = shown.diff_iter(next).filter(|&(x, y, _)| {
        let end = end_of(y);
        if x < end {
            return true;
        }
        if erase.last().is_none_or(|&(_, row)| row != y) {
            erase.push((end, y));
        }
        false
    });
    out.draw(changes)?;
    for (x, y) in erase {
        queue!(out, MoveTo(x, y), Clear(ClearType::UntilNewLine))?;
    }
    Ok(())
}

/// The column after the last one of `row` that shows something. A wide character ends where
/// its second column does: erasing from that column would take the character with it.
fn text_end(row: &[Cell]) -> usize {
    row.iter()
        .rposition(|c| !blank(c))
        .map_or(0, |i| i + row[i].symbol().width().max(1))
}

/// A cell that shows nothing: a space without a background or an attribute (a reversed space
/// is the editor's cursor).
fn blank(cell: &Cell) -> bool {
    cell.symbol() == " " && !space_shows(cell.bg, cell.modifier)
}

/// Whether a space in this background and with these attributes shows on the screen.
fn space_shows(bg: Color, modifier: Modifier) -> bool {
    bg != Color::Reset || !modifier.is_empty()
}

#[cfg(test)]
#[path = "inline_tests.rs"]
pub(crate) mod tests;
