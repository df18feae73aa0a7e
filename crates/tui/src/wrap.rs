//! Wrapping styled lines to a width, and cutting single lines to one: pure functions over
//! plain data.
//!
//! Lines break where Unicode allows (UAX #14 break opportunities, from `unicode-linebreak`:
//! after spaces, between CJK ideographs, after hyphens…), never inside a grapheme cluster (from
//! `unicode-segmentation`: a ZWJ emoji or a letter with its combining marks stays whole), and
//! are measured as the terminal draws them (`unicode-width`, per grapheme as ratatui does).
//! The only characters a wrap drops are the spaces at a break: the break stands for them.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_linebreak::BreakOpportunity;
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Tab stops every this many columns (a tab is drawn as the spaces to the next stop).
pub const TAB_WIDTH: usize = 4;

/// `text` wrapped to the terminal on standard error (80 columns when it is none), for what is
/// printed before the UI starts (the trust question): a word is never split between rows by
/// the terminal's own wrap.
pub fn for_terminal(text: &str) -> String {
    let width = crossterm::terminal::size()
        .map(|(cols, _)| usize::from(cols))
        .unwrap_or(80)
        .max(20);
    wrap_text(text, width)
}

/// Plain `text` wrapped to `width` columns, each row's indent kept on its continuations.
pub fn wrap_text(text: &str, width: usize) -> String {
    text.split('\n')
        .flat_map(|row| {
            let indent = row.len() - row.trim_start().len();
            wrap(&Line::raw(row.to_string()), width, indent)
        })
        .map(|line| {
            line.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wraps `line` to `width` columns at Unicode break opportunities, inside words only when one
/// is wider than a line. Continuation lines start with `indent` spaces (fewer when the width
/// leaves no room for text after them).
pub fn wrap(line: &Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    // At least two columns of text on every line, so a wide character fits after the indent.
    let indent = indent.min(width.saturating_sub(2));
    // Most lines are short printable ASCII: one column a byte, nothing to break.
    let printable = |s: &Span<'_>| s.content.bytes().all(|b| (b' '..=b'~').contains(&b));
    if line.spans.iter().all(printable)
        && line.spans.iter().map(|s| s.content.len()).sum::<usize>() <= width
    {
        return vec![line.clone()];
    }
    let text = Flat::new(line);
    let graphemes = text.graphemes();
    layout(&text.text, &graphemes, width, indent)
        .into_iter()
        .enumerate()
        .map(|(i, content)| text.to_line(i > 0, indent, &content, line.style))
        .collect()
}

/// Where each line starts (a byte offset in `text`) when `text` is wrapped to `width` as
/// [`wrap`] does without an indent: line `i` is `text[starts[i]..starts[i + 1]]`, the spaces a
/// break swallows included. For an editor, which must place a cursor on any of them. Tabs
/// are the caller's to expand.
pub fn line_starts(text: &str, width: usize) -> Vec<usize> {
    let graphemes: Vec<Grapheme> = text
        .grapheme_indices(true)
        .map(|(start, g)| Grapheme {
            start,
            end: start + g.len(),
            width: g.width(),
            space: is_space(g),
        })
        .collect();
    layout(text, &graphemes, width.max(1), 0)
        .iter()
        .map(|line| line.first().map_or(0, |g| g.start))
        .collect()
}

/// The graphemes of each line.
fn layout(text: &str, graphemes: &[Grapheme], width: usize, indent: usize) -> Vec<Vec<Grapheme>> {
    let mut layout = Layout {
        width,
        indent,
        lines: Vec::new(),
        current: Vec::new(),
        used: 0,
    };
    for segment in segments(text, graphemes) {
        layout.place(&graphemes[segment]);
    }
    layout.finish_last();
    layout.lines
}

/// `text` cut to at most `width` columns, ending in `…` when it did not fit; never splits a
/// grapheme. Tabs expand (ratatui draws no control characters).
pub fn truncate(text: &str, width: usize) -> String {
    if text.contains('\t') {
        return truncate(&expand_tabs(text, 0), width);
    }
    if text.width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = g.width();
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push_str(g);
    }
    out.push('…');
    out
}

/// Width of `text` as ratatui draws it: the sum of its graphemes' widths.
pub fn width(text: &str) -> usize {
    text.graphemes(true).map(UnicodeWidthStr::width).sum()
}

/// `text` with each tab replaced by the spaces to the next tab stop, counting columns from
/// `column`.
pub fn expand_tabs(text: &str, mut column: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\t' {
            let n = TAB_WIDTH - column % TAB_WIDTH;
            out.extend(std::iter::repeat_n(' ', n));
            column += n;
        } else {
            out.push(c);
            column += c.width().unwrap_or(0);
        }
    }
    out
}

/// `line` with its tabs expanded, counting columns from its start: for text that gets a
/// margin or a gutter in front of it (code, tool output, a diff's lines), whose tab stops are
/// the text's own, not the screen's.
pub fn expand_tabs_in(mut line: Line<'static>) -> Line<'static> {
    if !line.spans.iter().any(|s| s.content.contains('\t')) {
        return line;
    }
    let mut column = 0;
    for span in &mut line.spans {
        if span.content.contains('\t') {
            span.content = expand_tabs(&span.content, column).into();
        }
        column += span.content.width();
    }
    line
}

/// A line's text in one string (tabs expanded), with the style of each span's bytes.
struct Flat {
    text: String,
    /// (first byte, style) of each span, in order.
    styles: Vec<(usize, Style)>,
}

/// One grapheme cluster: its bytes in [`Flat::text`], its width and whether it is a space a
/// break may swallow.
#[derive(Clone, Debug, PartialEq)]
struct Grapheme {
    start: usize,
    end: usize,
    width: usize,
    space: bool,
}

impl Flat {
    fn new(line: &Line<'static>) -> Self {
        let mut text = String::new();
        let mut styles = Vec::with_capacity(line.spans.len());
        let mut column = 0;
        for span in &line.spans {
            let start = text.len();
            if span.content.contains('\t') {
                let expanded = expand_tabs(&span.content, column);
                column += expanded.width();
                text.push_str(&expanded);
            } else {
                column += span.content.width();
                text.push_str(&span.content);
            }
            styles.push((start, line.style.patch(span.style)));
        }
        Self { text, styles }
    }

    fn graphemes(&self) -> Vec<Grapheme> {
        // Printable ASCII (most text) needs no lookup in the segmentation tables.
        if self.text.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            ascii_graphemes(&self.text)
        } else {
            graphemes(&self.text)
        }
    }

    fn style_at(&self, byte: usize) -> Style {
        let i = self.styles.partition_point(|(start, _)| *start <= byte);
        self.styles
            .get(i.saturating_sub(1))
            .map_or_else(Style::default, |(_, s)| *s)
    }

    /// Groups runs of equal style back into spans.
    fn to_line(
        &self,
        continued: bool,
        indent: usize,
        content: &[Grapheme],
        line_style: Style,
    ) -> Line<'static> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        if continued && indent > 0 {
            spans.push(Span::raw(" ".repeat(indent)));
        }
        let mut run: Option<(usize, usize, Style)> = None;
        for g in content {
            let style = self.style_at(g.start);
            match &mut run {
                Some((_, end, s)) if *s == style && *end == g.start => *end = g.end,
                _ => {
                    if let Some((start, end, s)) = run.take() {
                        spans.push(Span::styled(self.text[start..end].to_string(), s));
                    }
                    run = Some((g.start, g.end, style));
                }
            }
        }
        if let Some((start, end, s)) = run {
            spans.push(Span::styled(self.text[start..end].to_string(), s));
        }
        Line::from(spans).style(line_style)
    }
}

/// Line-break characters inside a line are breaks the caller did not make; they are not drawn.
/// The graphemes of `text` but its newlines, as drawn.
fn graphemes(text: &str) -> Vec<Grapheme> {
    text.grapheme_indices(true)
        .filter(|(_, g)| !is_newline(g))
        .map(|(start, g)| Grapheme {
            start,
            end: start + g.len(),
            width: g.width(),
            space: is_space(g),
        })
        .collect()
}

/// [`graphemes`] of printable ASCII: a byte each, a column each.
fn ascii_graphemes(text: &str) -> Vec<Grapheme> {
    (text.bytes().enumerate())
        .map(|(start, byte)| Grapheme {
            start,
            end: start + 1,
            width: 1,
            space: byte == b' ',
        })
        .collect()
}

fn is_newline(g: &str) -> bool {
    matches!(g, "\n" | "\r" | "\r\n" | "\u{85}" | "\u{2028}" | "\u{2029}")
}

/// Whitespace that may vanish at a break (no-break spaces do not).
fn is_space(g: &str) -> bool {
    g.chars()
        .all(|c| c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}'))
}

/// The graphemes between break opportunities, as index ranges into `graphemes`. A mandatory
/// break (a newline inside the text) ends a segment that must end its line; it is returned as
/// an empty range.
fn segments(text: &str, graphemes: &[Grapheme]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut breaks = unicode_linebreak::linebreaks(text)
        .filter(|&(at, _)| !inside_path_name(text, at))
        .peekable();
    let mut start = 0;
    for (i, g) in graphemes.iter().enumerate() {
        // Opportunities inside a grapheme (rare with UAX #14, but possible) are skipped.
        while breaks.next_if(|(at, _)| *at <= g.start).is_some() {}
        let Some(&(at, kind)) = breaks.peek() else {
            continue;
        };
        if at == g.end || (at > g.end && graphemes.get(i + 1).is_none_or(|n| n.start >= at)) {
            out.push(start..i + 1);
            if kind == BreakOpportunity::Mandatory && i + 1 < graphemes.len() {
                out.push(i + 1..i + 1);
            }
            start = i + 1;
        }
    }
    if start < graphemes.len() {
        out.push(start..graphemes.len());
    }
    out
}

/// Whether a break at byte `at` would come after a hyphen inside a path (`~/.coding-agent/…`):
/// a path breaks at its `/`, never inside one of its names.
fn inside_path_name(text: &str, at: usize) -> bool {
    if !text[..at].ends_with('-') {
        return false;
    }
    let start = text[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let end = text[at..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| at + i);
    text[start..end].contains('/')
}

/// Greedy line filling.
struct Layout {
    width: usize,
    indent: usize,
    lines: Vec<Vec<Grapheme>>,
    current: Vec<Grapheme>,
    /// Columns taken on the current line, trailing spaces included.
    used: usize,
}

impl Layout {
    /// Columns for text on the current line.
    fn room(&self) -> usize {
        if self.lines.is_empty() {
            self.width
        } else {
            self.width - self.indent
        }
    }

    fn place(&mut self, segment: &[Grapheme]) {
        if segment.is_empty() {
            // A mandatory break.
            self.break_line();
            return;
        }
        let trailing = segment.iter().rev().take_while(|g| g.space).count();
        let word = &segment[..segment.len() - trailing];
        let word_width: usize = word.iter().map(|g| g.width).sum();
        if self.current.iter().all(|g| g.space) {
            // Indentation wider than the room: it shrinks to leave room for the word (a word
            // cut anyway starts at the margin), rather than stand alone on a blank line.
            let need = word_width.min(self.room());
            while self.used + need > self.room() {
                let Some(g) = self.current.pop() else { break };
                self.used -= g.width;
            }
        }
        if self.used + word_width > self.room() && !self.current.is_empty() {
            // A word too long for any line is cut anyway: it starts here rather than leave
            // this line short (and a marker such as `› ` alone on its line).
            if word_width <= self.width - self.indent {
                self.break_line();
            }
        }
        for g in word {
            if self.used + g.width > self.room() && !self.current.is_empty() {
                self.break_line();
            }
            self.push(g);
        }
        // Spaces hang past the end of a line; a break removes them.
        for g in &segment[segment.len() - trailing..] {
            self.push(g);
        }
    }

    fn push(&mut self, g: &Grapheme) {
        self.used += g.width;
        self.current.push(g.clone());
    }

    fn break_line(&mut self) {
        while self.current.last().is_some_and(|g| g.space) {
            self.current.pop();
        }
        self.lines.push(std::mem::take(&mut self.current));
        self.used = 0;
    }

    /// The last line keeps its trailing spaces, as many as fit.
    fn finish_last(&mut self) {
        while self.used > self.room() {
            match self.current.last() {
                Some(g) if g.space => self.used -= g.width,
                _ => break,
            }
            self.current.pop();
        }
        self.lines.push(std::mem::take(&mut self.current));
    }
}

#[cfg(test)]
#[path = "wrap_tests.rs"]
mod tests;
