//! History cells: one per thing shown in the transcript. Each caches its wrapped lines per
//! width and view flags, so redrawing a long session costs only the visible rows.

pub mod approval;
mod assistant;
mod thinking;
pub(crate) mod tool;
mod web_search;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

pub use assistant::AssistantCell;
pub use thinking::ThinkingCell;
pub use tool::ToolCell;

use crate::wrap::wrap;

/// What changes how a cell looks, besides its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub width: u16,
    /// Tool output shown whole (Ctrl+O) instead of its last lines.
    pub expand_tools: bool,
    /// Thinking shown (Ctrl+T) instead of a one-line marker.
    pub show_thinking: bool,
}

pub enum CellKind {
    User(String),
    Assistant(AssistantCell),
    Thinking(ThinkingCell),
    Tool(ToolCell),
    Notice(String),
    Error(String),
    /// A search the provider ran itself.
    WebSearch(llm::WebSearch),
}

pub struct Cell {
    pub kind: CellKind,
    /// Its content will not change any more: inline mode may print it into the scrollback.
    /// (A tool cell is also done when its result is in.)
    done: bool,
    version: u64,
    cache: Option<(View, u64, Vec<Line<'static>>)>,
    /// A done cell's height in a view, kept when its rows are dropped (scrolling a long
    /// transcript measures cells it does not show).
    measured: Option<(View, usize)>,
}

/// A cell's lines: those that will not change, then those that may (an answer's open block).
#[derive(Default)]
pub struct Rows<'a> {
    pub stable: &'a [Line<'static>],
    pub open: &'a [Line<'static>],
}

impl<'a> Rows<'a> {
    pub fn len(&self) -> usize {
        self.stable.len() + self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &'a Line<'static>> + 'a {
        self.stable.iter().chain(self.open.iter())
    }

    /// Rows `from..` as one list.
    pub fn from(&self, from: usize) -> impl DoubleEndedIterator<Item = &'a Line<'static>> + 'a {
        let stable = self.stable.get(from..).unwrap_or_default();
        let open = self
            .open
            .get(from.saturating_sub(self.stable.len())..)
            .unwrap_or_default();
        stable.iter().chain(open.iter())
    }
}

impl Cell {
    pub fn new(kind: CellKind) -> Self {
        let done = matches!(
            kind,
            CellKind::User(_) | CellKind::Notice(_) | CellKind::Error(_) | CellKind::WebSearch(_)
        );
        Self {
            kind,
            done,
            version: 0,
            cache: None,
            measured: None,
        }
    }

    /// Mutable access to the content; the cached lines are rebuilt on the next draw.
    pub fn edit(&mut self) -> &mut CellKind {
        self.version += 1;
        self.measured = None;
        &mut self.kind
    }

    /// Nothing will be added (its message ended, or the program does).
    pub fn finish(&mut self) {
        self.done = true;
        self.measured = None;
    }

    pub fn is_done(&self) -> bool {
        self.done || matches!(&self.kind, CellKind::Tool(tool) if tool.result.is_some())
    }

    pub fn rows(&mut self, view: View) -> Rows<'_> {
        // Streamed text keeps its own layout: what is finished once, the rest per change.
        if matches!(self.kind, CellKind::Assistant(_) | CellKind::Thinking(_)) {
            let (stable, open) = match &mut self.kind {
                CellKind::Assistant(cell) => cell.rows(view.width),
                CellKind::Thinking(cell) => cell.rows(view),
                _ => (&[][..], &[][..]),
            };
            return Rows { stable, open };
        }
        let fresh =
            matches!(&self.cache, Some((v, version, _)) if *v == view && *version == self.version);
        if !fresh {
            let lines = render(&mut self.kind, view);
            self.cache = Some((view, self.version, lines));
        }
        let lines = self
            .cache
            .as_ref()
            .map_or(&[][..], |(_, _, lines)| lines.as_slice());
        if self.is_done() {
            Rows {
                stable: lines,
                open: &[],
            }
        } else {
            Rows {
                stable: &[],
                open: lines,
            }
        }
    }

    /// Drops the laid-out lines (they are laid out again if asked for): inline mode has put the
    /// cell into the terminal's scrollback, and keeping every printed answer's lines would make
    /// memory grow with the conversation (~25 bytes per byte of text).
    pub fn forget_rows(&mut self) {
        self.cache = None;
        match &mut self.kind {
            CellKind::Assistant(cell) => cell.forget_layout(),
            CellKind::Thinking(cell) => cell.forget_layout(),
            _ => {}
        }
    }

    /// Whether laid-out lines are kept.
    pub fn holds_rows(&self) -> bool {
        let own = match &self.kind {
            CellKind::Assistant(cell) => cell.holds_layout(),
            CellKind::Thinking(cell) => cell.holds_layout(),
            _ => false,
        };
        own || self.cache.is_some()
    }

    #[cfg(test)]
    pub fn is_measured(&self) -> bool {
        self.measured.is_some()
    }

    pub fn height(&mut self, view: View) -> usize {
        if let Some((seen, height)) = self.measured
            && seen == view
        {
            return height;
        }
        let height = self.rows(view).len();
        if self.is_done() {
            self.measured = Some((view, height));
        }
        height
    }
}

fn render(kind: &mut CellKind, view: View) -> Vec<Line<'static>> {
    let width = usize::from(view.width);
    match kind {
        CellKind::User(text) => prefixed(
            text,
            "› ",
            crate::theme::palette().accent.add_modifier(Modifier::BOLD),
            Style::default(),
            width,
        ),
        // Laid out by the cells themselves (see `Cell::rows`).
        CellKind::Assistant(_) | CellKind::Thinking(_) => Vec::new(),
        CellKind::Tool(cell) => cell.lines(view),
        CellKind::Notice(text) => prefixed(
            text,
            "· ",
            crate::theme::palette().dim,
            crate::theme::palette().dim,
            width,
        ),
        CellKind::Error(text) => prefixed(
            text,
            "✗ ",
            crate::theme::palette().error.add_modifier(Modifier::BOLD),
            crate::theme::palette().error,
            width,
        ),
        CellKind::WebSearch(search) => web_search::lines(search, width),
    }
}

/// Plain text with a marker on its first line, wrapped under the marker.
pub fn prefixed(
    text: &str,
    marker: &str,
    marker_style: Style,
    text_style: Style,
    width: usize,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        out.extend(prefixed_line(
            line,
            i == 0,
            marker,
            marker_style,
            text_style,
            width,
        ));
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled(marker.to_string(), marker_style)));
    }
    out
}

/// One source line of [`prefixed`]: after the marker if it is the first, else under it.
pub fn prefixed_line(
    line: &str,
    first: bool,
    marker: &str,
    marker_style: Style,
    text_style: Style,
    width: usize,
) -> Vec<Line<'static>> {
    let indent = unicode_width::UnicodeWidthStr::width(marker);
    let lead = if first {
        marker.to_string()
    } else {
        " ".repeat(indent)
    };
    let line = Line::from(vec![
        Span::styled(lead, marker_style),
        Span::styled(line.to_string(), text_style),
    ]);
    wrap(&line, width, indent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chinese_prompt_keeps_every_character_beside_its_marker() {
        // As reported at 60 columns: "…你的帮助和耐心的解答" lost a character at the wrap and
        // the text moved under the `›`.
        let text =
            "我想请你帮我看看这段代码为什么不能编译，谢谢你的帮助和耐心的解答，我会认真学习的。";
        let mut cell = Cell::new(CellKind::User(text.to_string()));
        let view = View {
            width: 60,
            expand_tools: false,
            show_thinking: false,
        };
        let rows: Vec<String> = cell
            .rows(view)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(rows[0].starts_with("› 我想请你"), "{rows:?}");
        assert!(rows[1..].iter().all(|r| r.starts_with("  ")), "{rows:?}");
        assert!(rows.iter().all(|r| crate::wrap::width(r) <= 60), "{rows:?}");
        let joined: String = rows
            .iter()
            .map(|r| r.trim_start_matches(['›', ' ']))
            .collect();
        assert_eq!(joined, text);
    }
}
