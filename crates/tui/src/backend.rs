//! The backend every frame goes through: crossterm's, writing into a 64 KB buffer, with the
//! screen's size remembered. Ratatui asks the backend for the size on each draw of the full
//! screen and each time the inline live region changes height, and crossterm answers by opening
//! `/dev/tty` and asking the kernel: three system calls, about 4% of the CPU of a streamed reply.
//! The size only changes with a resize event, which sets it here.

use std::io::{BufWriter, Write};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};

pub struct Out {
    inner: CrosstermBackend<BufWriter<Box<dyn Write + Send>>>,
    size: Size,
}

impl Out {
    /// Writes to stdout; the screen is `size` now.
    pub fn new(size: Size) -> Self {
        Self::to(Box::new(std::io::stdout()), size)
    }

    /// Writes to `writer` (a terminal emulator, in tests).
    pub fn to(writer: Box<dyn Write + Send>, size: Size) -> Self {
        Self {
            inner: CrosstermBackend::new(BufWriter::with_capacity(1 << 16, writer)),
            size,
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

impl Backend for Out {
    type Error = std::io::Error;

    fn draw<'a, I>(&mut self, content: I) -> std::io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
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
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> std::io::Result<()> {
        self.inner.set_cursor_position(position)
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
