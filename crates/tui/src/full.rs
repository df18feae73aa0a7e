//! Alternate-screen mode's frames: the whole screen drawn into a buffer and the cells that
//! changed written. When the transcript moved (output arriving while it follows the end, a
//! page scrolled) the terminal moves its rows first, within the transcript's rows only, so a
//! streaming answer writes its new rows rather than the whole screen each frame.

use std::io::Write;

use crossterm::cursor::Hide;
use crossterm::queue;
use crossterm::terminal::{Clear, ClearType};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Rect, Size};

use crate::app::App;
use crate::backend::Out;
use crate::inline::{SYNC_BEGIN, SYNC_END, write_changes};
use crate::input::InputState;
use crate::ui;

pub struct Full {
    out: Out,
    /// What the screen shows, as the last frame left it (and any move of its rows since).
    shown: Buffer,
    /// The frame being drawn (kept for its allocation).
    next: Buffer,
    /// Where the last frame drew the transcript.
    transcript: Rect,
    /// The screen is to be cleared first (it changed size).
    clear: bool,
}

impl Full {
    /// On the alternate screen, entered already and blank.
    pub fn new() -> std::io::Result<Self> {
        let (width, height) = crossterm::terminal::size()?;
        Self::to(Out::new(Size::new(width, height)), width, height)
    }

    /// Drawing through `out`, on a blank screen of `width` × `height`.
    pub(crate) fn to(mut out: Out, width: u16, height: u16) -> std::io::Result<Self> {
        queue!(out, Hide)?;
        Ok(Self {
            out,
            shown: Buffer::empty(Rect::new(0, 0, width, height)),
            next: Buffer::empty(Rect::default()),
            transcript: Rect::default(),
            clear: false,
        })
    }

    pub fn frame(&mut self, app: &mut App, input: &mut InputState) -> std::io::Result<()> {
        write!(self.out, "{SYNC_BEGIN}")?;
        if std::mem::take(&mut self.clear) {
            queue!(self.out, Clear(ClearType::All), Hide)?;
        }
        let area = self.shown.area;
        self.next.resize(area);
        self.next.reset();
        let transcript = ui::draw_screen(&mut self.next, area, app, input);
        if transcript == self.transcript {
            self.move_rows(transcript)?;
        }
        self.transcript = transcript;
        write_changes(&mut self.out, &self.shown, &self.next)?;
        std::mem::swap(&mut self.shown, &mut self.next);
        write!(self.out, "{SYNC_END}")?;
        Write::flush(&mut self.out)
    }

    /// The next frame clears the screen and draws all of it at the new size (what the
    /// terminal kept of the old one is unknown).
    pub fn resize(&mut self, width: u16, height: u16) -> std::io::Result<()> {
        self.out.set_size(width, height);
        self.shown = Buffer::empty(Rect::new(0, 0, width, height));
        self.transcript = Rect::default();
        self.clear = true;
        Ok(())
    }

    /// Ctrl+L: the next frame draws the whole screen again, for when something else wrote over
    /// it.
    pub fn repaint(&mut self) {
        self.shown = Buffer::empty(self.shown.area);
        self.transcript = Rect::default();
        self.clear = true;
    }

    /// If the transcript's rows in the new frame are the shown ones moved up or down, moves
    /// them on the terminal (a scroll region over the transcript's rows) and in `shown`.
    fn move_rows(&mut self, transcript: Rect) -> std::io::Result<()> {
        let Some(by) = moved_by(&self.shown, &self.next, transcript) else {
            return Ok(());
        };
        let width = usize::from(transcript.width);
        let start = usize::from(transcript.y) * width;
        let end = start + usize::from(transcript.height) * width;
        let lines = by.unsigned_abs();
        let cells = lines as usize * width;
        let blank = || std::iter::repeat_n(Cell::EMPTY, cells);
        let content = &mut self.shown.content;
        // The frame before left the terminal in the plain style: the rows that come in are
        // blank in it. Resetting the region puts the cursor home, which the next write moves.
        write!(
            self.out,
            "\x1b[{};{}r",
            transcript.y + 1,
            transcript.bottom()
        )?;
        // Rows leave at one end of the region and blank ones come in at the other: two
        // memmoves of the cells after them. `rotate_*` on the slice of cells took 7% of the
        // paced markdown stream's CPU; this takes under 1%.
        if by > 0 {
            write!(self.out, "\x1b[{lines}S")?;
            content.drain(start..start + cells);
            content.splice(end - cells..end - cells, blank());
        } else {
            write!(self.out, "\x1b[{lines}T")?;
            content.drain(end - cells..end);
            content.splice(start..start, blank());
        }
        write!(self.out, "\x1b[r")?;
        Ok(())
    }
}

/// How many rows the transcript moved up (positive) or down between `shown` and `next`: the
/// shift that lines up the new frame's first row with text on it, checked on a second row.
/// `None` when it did not move, or not by a shift short of its height.
fn moved_by(shown: &Buffer, next: &Buffer, area: Rect) -> Option<i32> {
    let height = i32::from(area.height);
    fn row(buf: &Buffer, area: Rect, y: i32) -> &[Cell] {
        let width = usize::from(area.width);
        let start = (usize::from(area.y) + y as usize) * width;
        &buf.content[start..][..width]
    }
    let blank = |cells: &[Cell]| cells.iter().all(|c| c == &Cell::EMPTY);
    let first = (0..height).find(|&y| !blank(row(next, area, y)))?;
    // A second row well below the first (or the last) confirms the shift.
    let check = (first + height / 2).min(height - 1);
    if row(next, area, first) == row(shown, area, first) {
        return None;
    }
    (1..height)
        .flat_map(|by| [by, -by])
        .filter(|by| (0..height).contains(&(first + by)) && (0..height).contains(&(check + by)))
        .find(|&by| {
            row(next, area, first) == row(shown, area, first + by)
                && row(next, area, check) == row(shown, area, check + by)
        })
}

#[cfg(test)]
#[path = "full_tests.rs"]
mod tests;
