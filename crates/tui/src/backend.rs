//! The backend every frame goes through: crossterm's, writing into a 64 KB buffer, with the
//! screen's size remembered. Ratatui asks the backend for the size on each draw of the full
//! screen and each time the inline live region changes height, and crossterm answers by opening
//! `/dev/tty` and asking the kernel: three system calls, about 4% of the CPU of a streamed reply.
//! The size only changes with a resize event, which sets it here.
//!
//! Cells are written by hand rather than by crossterm's backend: it prints every cell through
//! `fmt` (a `queue!` per cell), which was most of the cost of printing a long reply into the
//! scrollback. Here a cell's text is copied straight into the buffer and escape sequences are
//! written only where the position or the style changes. A line of plain ASCII printed into
//! the scrollback skips the cells altogether: it is written a span at a time ([`Out::run`]).

use std::io::{BufWriter, Write};

use crossterm::cursor::{MoveTo, MoveToColumn};
use crossterm::queue;
use crossterm::style::{
    Attribute, SetAttribute, SetBackgroundColor, SetForegroundColor, SetUnderlineColor,
};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, IntoCrossterm, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier, Style};

/// Each modifier with the attribute that turns it on.
const ATTRIBUTES: [(Modifier, Attribute); 9] = [
    (Modifier::BOLD, Attribute::Bold),
    (Modifier::DIM, Attribute::Dim),
    (Modifier::ITALIC, Attribute::Italic),
    (Modifier::UNDERLINED, Attribute::Underlined),
    (Modifier::SLOW_BLINK, Attribute::SlowBlink),
    (Modifier::RAPID_BLINK, Attribute::RapidBlink),
    (Modifier::REVERSED, Attribute::Reverse),
    (Modifier::HIDDEN, Attribute::Hidden),
    (Modifier::CROSSED_OUT, Attribute::CrossedOut),
];

pub struct Out {
    inner: CrosstermBackend<BufWriter<Box<dyn Write + Send>>>,
    size: Size,
    /// Where ratatui last put the cursor: never asked of the terminal (the answer would come
    /// through crossterm's event reader, which the input thread holds while it waits for keys).
    cursor: Position,
}

impl Out {
    /// Writes to stdout; the screen is `size` now.
    pub fn new(size: Size) -> Self {
        Self::to(raw_stdout(), size)
    }

    /// Writes to `writer` (a terminal emulator, in tests).
    pub fn to(writer: Box<dyn Write + Send>, size: Size) -> Self {
        Self {
            inner: CrosstermBackend::new(BufWriter::with_capacity(1 << 16, writer)),
            size,
            cursor: Position::ORIGIN,
        }
    }

    /// Stdout at the terminal's current size.
    pub fn stdout() -> std::io::Result<Self> {
        let (width, height) = crossterm::terminal::size()?;
        Ok(Self::new(Size::new(width, height)))
    }

    /// The terminal was resized (a resize event).
    pub fn set_size(&mut self, width: u16, height: u16) {
        self.size = Size::new(width, height);
    }
}

/// Stdout without the standard library's line buffering where the system allows
/// (`platform::terminal::unbuffered_stdout`); frames are buffered here already.
fn raw_stdout() -> Box<dyn Write + Send> {
    platform::terminal::unbuffered_stdout()
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Write::flush(&mut self.inner)
    }
}

impl Out {
    /// Writes `text` (no control characters, one column a byte) from the cursor in `style`,
    /// with the escape sequences for what differs from the style `pen` left set.
    pub fn run(&mut self, pen: &mut Pen, text: &str, style: Style) -> std::io::Result<()> {
        let out = &mut self.inner;
        pen.set(
            out,
            style.fg.unwrap_or(Color::Reset),
            style.bg.unwrap_or(Color::Reset),
            style.underline_color.unwrap_or(Color::Reset),
            style.add_modifier - style.sub_modifier,
        )?;
        out.write_all(text.as_bytes())
    }

    /// Ends a sequence of [`Out::run`]s: the terminal is left with no style set.
    pub fn end_runs(&mut self, pen: Pen) -> std::io::Result<()> {
        pen.finish(&mut self.inner)
    }

    /// Writes a row's cells on the row the cursor is on, `x` counted from its first column:
    /// moves within the row are by column only, so the row is wherever the terminal put the
    /// cursor (see `Inline::print`).
    pub fn draw_row<'a>(
        &mut self,
        cells: impl Iterator<Item = (u16, &'a Cell)>,
    ) -> std::io::Result<()> {
        put_cells(&mut self.inner, cells.map(|(x, cell)| (x, 0, cell)), true)
    }
}

/// Writes `cells` at their positions, moving the cursor only where the next cell is not where
/// the last one left it; `in_row`: by column only, on the cursor's row (`y` is not used).
fn put_cells<'a>(
    out: &mut impl Write,
    cells: impl Iterator<Item = (u16, u16, &'a Cell)>,
    in_row: bool,
) -> std::io::Result<()> {
    let mut pen = Pen::default();
    // Where the terminal's cursor is after the last cell written.
    let mut at: Option<(u16, u16)> = None;
    for (x, y, cell) in cells {
        if at != Some((x, y)) {
            if in_row {
                queue!(out, MoveToColumn(x))?;
            } else {
                queue!(out, MoveTo(x, y))?;
            }
        }
        pen.set(out, cell.fg, cell.bg, cell.underline_color, cell.modifier)?;
        out.write_all(cell.symbol().as_bytes())?;
        // After a wide character the next cell is two columns on and gets a move of its own,
        // which puts the cursor right even where the terminal disagrees on the width.
        at = Some((x.saturating_add(1), y));
    }
    pen.finish(out)
}

/// The style the terminal was last told to write in, so that each cell or run of text sets
/// only what changed; starts plain.
#[derive(Default)]
pub struct Pen {
    fg: Color,
    bg: Color,
    underline: Color,
    modifier: Modifier,
    /// A style was set, to be reset at the end (a plain row needs no escape at all).
    styled: bool,
}

impl Pen {
    fn set(
        &mut self,
        out: &mut impl Write,
        fg: Color,
        bg: Color,
        underline: Color,
        modifier: Modifier,
    ) -> std::io::Result<()> {
        if modifier != self.modifier {
            // Taking an attribute away has no one code that works everywhere (bold and dim
            // share one): start from the plain style and add what the cell has.
            if !(self.modifier - modifier).is_empty() {
                queue!(out, SetAttribute(Attribute::Reset))?;
                (self.fg, self.bg, self.underline) = (Color::Reset, Color::Reset, Color::Reset);
                self.modifier = Modifier::empty();
            }
            for (flag, attribute) in ATTRIBUTES {
                if modifier.contains(flag) && !self.modifier.contains(flag) {
                    queue!(out, SetAttribute(attribute))?;
                    self.styled = true;
                }
            }
            self.modifier = modifier;
        }
        if fg != self.fg {
            queue!(out, SetForegroundColor(fg.into_crossterm()))?;
            self.fg = fg;
            self.styled = true;
        }
        if bg != self.bg {
            queue!(out, SetBackgroundColor(bg.into_crossterm()))?;
            self.bg = bg;
            self.styled = true;
        }
        if underline != self.underline {
            queue!(out, SetUnderlineColor(underline.into_crossterm()))?;
            self.underline = underline;
            self.styled = true;
        }
        Ok(())
    }

    fn finish(self, out: &mut impl Write) -> std::io::Result<()> {
        if self.styled {
            // Reset turns off the attributes and the colors.
            queue!(out, SetAttribute(Attribute::Reset))?;
        }
        Ok(())
    }
}

impl Backend for Out {
    type Error = std::io::Error;

    fn draw<'a, I>(&mut self, content: I) -> std::io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        put_cells(&mut self.inner, content, false)
    }

    /// Without the flush crossterm's backend does after it: a frame is written in one go.
    fn append_lines(&mut self, n: u16) -> std::io::Result<()> {
        for _ in 0..n {
            self.write_all(b"\n")?;
        }
        Ok(())
    }

    fn hide_cursor(&mut self) -> std::io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> std::io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> std::io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> std::io::Result<()> {
        self.cursor = position.into();
        self.inner.set_cursor_position(self.cursor)
    }

    fn clear(&mut self) -> std::io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> std::io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> std::io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> std::io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    use super::*;

    /// Asking where the cursor is writes no query to the terminal (whose answer the input
    /// thread would hold) and answers where it was last put.
    #[test]
    fn the_cursor_position_is_remembered_not_asked() {
        let wire = Wire::default();
        let mut out = Out::to(Box::new(wire.clone()), Size::new(80, 24));
        assert_eq!(out.get_cursor_position().unwrap(), Position::ORIGIN);
        out.set_cursor_position((7, 3)).unwrap();
        Backend::flush(&mut out).unwrap();
        let written = wire.0.lock().unwrap().len();
        assert_eq!(out.get_cursor_position().unwrap(), Position::new(7, 3));
        Backend::flush(&mut out).unwrap();
        assert_eq!(wire.0.lock().unwrap().len(), written, "nothing asked");
    }

    /// What the program wrote, for a terminal emulator to read.
    #[derive(Clone, Default)]
    pub(crate) struct Wire(pub(crate) Arc<Mutex<Vec<u8>>>);

    impl Write for Wire {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn vt_color(color: Color) -> vt100::Color {
        match color {
            Color::Reset => vt100::Color::Default,
            Color::Indexed(i) => vt100::Color::Idx(i),
            Color::Rgb(r, g, b) => vt100::Color::Rgb(r, g, b),
            Color::Red => vt100::Color::Idx(1),
            Color::Green => vt100::Color::Idx(2),
            Color::Blue => vt100::Color::Idx(4),
            other => panic!("no mapping for {other:?} in this test"),
        }
    }

    /// Every style change (attributes added, taken away one at a time and all at once, colors
    /// set and reset, wide characters, gaps) reaches a terminal as the buffer has it.
    #[test]
    fn cells_reach_the_terminal_with_their_styles() {
        let styles = [
            Style::new().bold(),
            Style::new().dim().italic(),
            Style::new().dim(),
            Style::new(),
            Style::new().italic().underlined().fg(Color::Red),
            Style::new().italic().bg(Color::Rgb(10, 20, 30)),
            Style::new().reversed(),
            Style::new().fg(Color::Indexed(200)).bold(),
            Style::new().fg(Color::Green).bg(Color::Blue),
            Style::new(),
        ];
        let area = Rect::new(0, 0, 40, 3);
        let mut buffer = Buffer::empty(area);
        let mut x = 0;
        for (i, style) in styles.iter().enumerate() {
            let text = if i % 3 == 1 { "中a" } else { "ab" };
            x = buffer.set_stringn(x, 0, text, 10, *style).0 + 1;
            buffer.set_stringn(i as u16 * 3, 2, "xy", 10, *style);
        }
        let wire = Wire::default();
        let mut out = Out::to(Box::new(wire.clone()), Size::new(40, 3));
        let blank = Buffer::empty(area);
        let cells = blank.diff(&buffer);
        out.draw(cells.into_iter()).unwrap();
        Write::flush(&mut out).unwrap();
        let mut terminal = vt100::Parser::new(3.try_into().unwrap(), 40.try_into().unwrap(), 0);
        terminal.process(&wire.0.lock().unwrap());
        let screen = terminal.screen();
        for y in 0..3 {
            for x in 0..40 {
                let want = &buffer[(x, y)];
                let got = screen.cell(y, x).unwrap();
                if got.is_wide_continuation() {
                    continue;
                }
                let at = format!("cell ({x}, {y}) {:?}", want.symbol());
                assert_eq!(got.contents(), want.symbol().trim(), "{at}");
                assert_eq!(got.bold(), want.modifier.contains(Modifier::BOLD), "{at}");
                assert_eq!(got.dim(), want.modifier.contains(Modifier::DIM), "{at}");
                assert_eq!(
                    got.italic(),
                    want.modifier.contains(Modifier::ITALIC),
                    "{at}"
                );
                let underlined = want.modifier.contains(Modifier::UNDERLINED);
                assert_eq!(got.underline(), underlined, "{at}");
                let reversed = want.modifier.contains(Modifier::REVERSED);
                assert_eq!(got.inverse(), reversed, "{at}");
                assert_eq!(got.fgcolor(), vt_color(want.fg), "{at}");
                assert_eq!(got.bgcolor(), vt_color(want.bg), "{at}");
            }
        }
        // The terminal is left with no style set, for whatever is written next.
        terminal.process(b"\x1b[3;40Hz");
        let last = terminal.screen().cell(2, 39).unwrap().clone();
        assert!(!last.bold() && !last.inverse() && last.fgcolor() == vt100::Color::Default);
    }
}
