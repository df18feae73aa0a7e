//! Assistant text as markdown, built as it streams. Text up to the end of the last complete
//! block is laid out once and kept; a code fence is kept line by line (each line highlighted
//! once, the highlighter's state carried over); only the open block is rendered again, and only
//! when the text changed. Nothing here grows with the length of the reply per update.
//!
//! A delta only appends text and finds where blocks end; rendering and highlighting wait for
//! [`AssistantCell::rows`], that is for the next frame, which highlights the fence's new lines
//! in one go. syntect's per-line cost depends on its caches being warm: a line highlighted
//! after a 10 ms sleep took 1.5× as long as in a run of lines, and in the paced bench,
//! highlighting interleaved with applying each delta cost 1.3× what it costs batched.

use std::ops::Range;

use ratatui::text::Line;

use crate::highlight::Highlighter;
use crate::markdown;

#[derive(Default)]
pub struct AssistantCell {
    text: String,
    /// Where scanning for block boundaries resumes (complete lines only).
    scanned: usize,
    /// Inside a fence that is not laid out line by line (an indented one, in a list).
    in_nested_fence: bool,
    /// The finished pieces in order; the last may be a fence still open.
    segments: Vec<Segment>,
    /// The open fence (the last segment) and how it ends.
    fence: Option<OpenFence>,
    /// End of the text the segments cover.
    done: usize,
    layout: Option<Layout>,
    tail: Option<Tail>,
    /// Deltas are arriving: a table row not yet ended is held back.
    streaming: bool,
}

enum Segment {
    Markdown(Range<usize>),
    /// A fenced block: its language and the text of its complete lines; of those, the ones
    /// highlighted so far (`body.start..highlighted`, `lines` of them) and the highlighter's
    /// state after them, dropped once the block is closed and all of it highlighted.
    /// Highlighted lines are kept only as laid out: a new width highlights the text again.
    Code {
        lang: String,
        body: Range<usize>,
        highlighted: usize,
        lines: usize,
        highlighter: Option<Highlighter>,
    },
}

struct OpenFence {
    /// The fence characters that close it: at least this many of this character.
    marker: char,
    len: usize,
}

/// The segments' lines at one width.
struct Layout {
    width: u16,
    lines: Vec<Line<'static>>,
    /// Segments laid out whole; of the next (an open fence), the lines laid out so far and
    /// whether anything of it is (the blank line before a block comes with its first line).
    segments: usize,
    open_lines: usize,
    started: bool,
}

/// The open block's lines, for the text as it was.
struct Tail {
    width: u16,
    text_len: usize,
    lines: Vec<Line<'static>>,
}

impl AssistantCell {
    pub fn new(text: &str) -> Self {
        let mut cell = Self::default();
        cell.push(text);
        cell
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// A delta of a message still streaming.
    pub fn stream(&mut self, delta: &str) {
        self.streaming = true;
        self.push(delta);
    }

    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        while let Some(newline) = self.text[self.scanned..].find('\n') {
            let start = self.scanned;
            let end = start + newline + 1;
            self.scanned = end;
            self.scan_line(start, end);
        }
    }

    /// One complete line, `text[start..end]` (newline included).
    fn scan_line(&mut self, start: usize, end: usize) {
        let owned = self.text[start..end]
            .trim_end_matches(['\n', '\r'])
            .to_string();
        let line = owned.as_str();
        if let Some(fence) = &mut self.fence {
            if closes(line, fence.marker, fence.len) {
                self.fence = None;
                self.done = end;
            } else if let Some(Segment::Code { body, .. }) = self.segments.last_mut() {
                body.end = end;
                self.done = end;
            }
            return;
        }
        let trimmed = line.trim_start();
        let is_fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if is_fence && !self.in_nested_fence && trimmed.len() == line.len() {
            // A fence at the margin ends the paragraph or list before it: that text is done.
            self.finish_markdown(start);
            let marker = trimmed.chars().next().unwrap_or('`');
            let len = trimmed.chars().take_while(|&c| c == marker).count();
            let lang = trimmed[len..].trim().to_string();
            self.fence = Some(OpenFence { marker, len });
            self.segments.push(Segment::Code {
                highlighter: Highlighter::new(&lang),
                lang,
                body: end..end,
                highlighted: end,
                lines: 0,
            });
            self.done = end;
        } else if is_fence {
            self.in_nested_fence = !self.in_nested_fence;
        } else if !self.in_nested_fence && trimmed.is_empty() {
            self.finish_markdown(end);
        }
    }

    /// The markdown from `done` to `end` is complete blocks.
    fn finish_markdown(&mut self, end: usize) {
        if !self.text[self.done..end].trim().is_empty() {
            self.segments.push(Segment::Markdown(self.done..end));
        }
        self.done = end;
    }

    /// Replaces the text (the final message may differ from the deltas).
    pub fn set(&mut self, text: &str) {
        if std::mem::take(&mut self.streaming) {
            // A row held back shows now.
            self.tail = None;
        }
        if text == self.text {
            return;
        }
        match text.strip_prefix(self.text.as_str()) {
            Some(rest) => self.push(rest),
            None => *self = Self::new(text),
        }
    }

    /// Drops the laid-out lines; [`AssistantCell::rows`] lays the text out again (a fence is
    /// highlighted again from its text).
    pub fn forget_layout(&mut self) {
        self.layout = None;
        self.tail = None;
    }

    pub fn holds_layout(&self) -> bool {
        self.layout.is_some() || self.tail.is_some()
    }

    /// The lines at `width`: those that will not change, then those of the open block.
    pub fn rows(&mut self, width: u16) -> (&[Line<'static>], &[Line<'static>]) {
        self.lay_out(width);
        let stale =
            !matches!(&self.tail, Some(t) if t.width == width && t.text_len == self.text.len());
        if stale {
            self.tail = Some(Tail {
                width,
                text_len: self.text.len(),
                lines: self.render_open(width),
            });
        }
        let stable = self.layout.as_ref().map_or(&[][..], |l| l.lines.as_slice());
        let open = self.tail.as_ref().map_or(&[][..], |t| t.lines.as_slice());
        (stable, open)
    }

    /// Lays out what is finished and not laid out yet (everything again at a new width).
    fn lay_out(&mut self, width: u16) {
        let layout = match &mut self.layout {
            Some(layout) if layout.width == width => layout,
            _ => self.layout.insert(Layout {
                width,
                lines: Vec::new(),
                segments: 0,
                open_lines: 0,
                started: false,
            }),
        };
        let columns = usize::from(width);
        let whole = self.segments.len() - usize::from(self.fence.is_some());
        while layout.segments < self.segments.len() {
            let index = layout.segments;
            match &mut self.segments[index] {
                Segment::Markdown(range) => {
                    join(
                        &mut layout.lines,
                        markdown::render(&self.text[range.clone()], width),
                    );
                }
                Segment::Code {
                    lang,
                    body,
                    highlighted,
                    lines,
                    highlighter,
                } => {
                    let mut add = Vec::new();
                    if !layout.started {
                        add.extend(markdown::code_header(lang));
                    }
                    if layout.open_lines < *lines {
                        // Laid out before at another width: highlight those lines again.
                        let mut again = Highlighter::new(lang);
                        for line in self.text[body.start..*highlighted].split_inclusive('\n') {
                            add.extend(code_line(again.as_mut(), line, columns));
                        }
                    }
                    for line in self.text[*highlighted..body.end].split_inclusive('\n') {
                        add.extend(code_line(highlighter.as_mut(), line, columns));
                        *lines += 1;
                    }
                    *highlighted = body.end;
                    if index < whole {
                        *highlighter = None;
                    }
                    layout.open_lines = *lines;
                    if !add.is_empty() {
                        if !layout.started && !layout.lines.is_empty() {
                            layout.lines.push(Line::default());
                        }
                        layout.started = true;
                        layout.lines.extend(add);
                    }
                }
            }
            if index < whole {
                layout.segments += 1;
                layout.open_lines = 0;
                layout.started = false;
            } else {
                break;
            }
        }
    }

    /// The open block: the markdown after the finished segments, or the partial line of an
    /// open fence.
    fn render_open(&self, width: u16) -> Vec<Line<'static>> {
        let rest = &self.text[self.done..];
        let laid_out = self.layout.as_ref();
        if self.fence.is_some() {
            if rest.is_empty() {
                return Vec::new();
            }
            let body = markdown::code_body(None, rest);
            let mut lines = markdown::code_wrap(&body, usize::from(width));
            if laid_out.is_some_and(|l| !l.started && !l.lines.is_empty()) {
                lines.insert(0, Line::default());
            }
            return lines;
        }
        let rest = if self.streaming {
            held_back(rest)
        } else {
            rest
        };
        let mut lines = markdown::render(rest, width);
        if !lines.is_empty() && laid_out.is_some_and(|l| !l.lines.is_empty()) {
            lines.insert(0, Line::default());
        }
        lines
    }
}

/// The open block without the table rows still arriving: a row not ended yet, and a header
/// whose delimiter row has not come, would show as raw `| a | b` text until they do.
fn held_back(rest: &str) -> &str {
    let is_row = |line: &str| line.trim_start().starts_with('|');
    let ended = rest.rfind('\n').map_or(0, |i| i + 1);
    let mut shown = if is_row(&rest[ended..]) {
        &rest[..ended]
    } else {
        rest
    };
    // The rows at the end of what is shown: a table once its second row (the delimiter) is
    // there; a lone first row is held.
    let rows = shown
        .trim_end_matches('\n')
        .rsplit('\n')
        .take_while(|line| is_row(line))
        .count();
    if rows == 1 {
        let body = shown.trim_end_matches('\n');
        shown = &shown[..body.rfind('\n').map_or(0, |i| i + 1)];
    }
    shown
}

/// Whether `line` closes a fence of at least `len` `marker` characters.
fn closes(line: &str, marker: char, len: usize) -> bool {
    let trimmed = line.trim_start();
    let run = trimmed.chars().take_while(|&c| c == marker).count();
    line.len() - trimmed.len() < 4 && run >= len && trimmed[run..].trim().is_empty()
}

/// One line of a fence (its newline included or not), highlighted and wrapped.
fn code_line(
    highlighter: Option<&mut Highlighter>,
    line: &str,
    columns: usize,
) -> Vec<Line<'static>> {
    let line = markdown::code_body(highlighter, line.trim_end_matches(['\n', '\r']));
    markdown::code_wrap(&line, columns)
}

/// Appends a block's lines with one blank line between blocks.
fn join(lines: &mut Vec<Line<'static>>, more: Vec<Line<'static>>) {
    if more.is_empty() {
        return;
    }
    if !lines.is_empty() {
        lines.push(Line::default());
    }
    lines.extend(more);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn all(cell: &mut AssistantCell, width: u16) -> Vec<Line<'static>> {
        let (stable, open) = cell.rows(width);
        stable.iter().chain(open).cloned().collect()
    }

    const TEXT: &str = "# Plan\n\nFirst a paragraph\nthat wraps.\n```rust\nfn a() {}\n/* x\n\n y */\n```\nafter the fence\n\n- x\n- y\n  ```\n  nested\n\n  ```\n\n~~~~\nplain ``` inside\n~~~~\n| a | b |\n|---|---|\n| 1 | 2 |\n";

    #[test]
    fn streaming_renders_the_same_as_all_at_once() {
        for chunk in [1, 3, 7, 50] {
            let mut streamed = AssistantCell::default();
            let mut last = Vec::new();
            for piece in TEXT.as_bytes().chunks(chunk) {
                streamed.push(std::str::from_utf8(piece).unwrap());
                last = all(&mut streamed, 30);
            }
            assert_eq!(last, markdown::render(TEXT, 30), "chunks of {chunk}");
        }
    }

    /// A table as it streams never shows its markdown: a row shows once it ends, the header
    /// once the delimiter row makes it a table; the end of the message shows the rest.
    #[test]
    fn a_table_streaming_shows_no_raw_rows() {
        for chunk in [1, 2, 5, 9] {
            let mut cell = AssistantCell::default();
            for piece in TEXT.as_bytes().chunks(chunk) {
                cell.stream(std::str::from_utf8(piece).unwrap());
                let shown = plain(&all(&mut cell, 30)).join("\n");
                assert!(!shown.contains('|'), "chunks of {chunk}: {shown}");
            }
            let ended = TEXT.trim_end_matches('\n');
            let mut cell = AssistantCell::default();
            cell.stream(ended);
            assert!(!plain(&all(&mut cell, 30)).join("\n").contains("│ 1"));
            cell.set(ended);
            assert_eq!(all(&mut cell, 30), markdown::render(ended, 30));
        }
    }

    #[test]
    fn a_new_width_lays_everything_out_again() {
        let mut cell = AssistantCell::new(TEXT);
        let _ = cell.rows(30);
        assert_eq!(all(&mut cell, 50), markdown::render(TEXT, 50));
    }

    #[test]
    fn widths_changing_while_a_fence_streams_lose_nothing() {
        let mut cell = AssistantCell::default();
        for (i, piece) in TEXT.as_bytes().chunks(5).enumerate() {
            cell.push(std::str::from_utf8(piece).unwrap());
            let _ = cell.rows(if i % 7 < 4 { 30 } else { 50 });
        }
        assert_eq!(all(&mut cell, 50), markdown::render(TEXT, 50));
        assert_eq!(all(&mut cell, 30), markdown::render(TEXT, 30));
    }

    #[test]
    fn fence_lines_are_kept_as_they_complete() {
        let mut cell = AssistantCell::new("intro\n```rust\nfn a() {}\nfn b");
        let (stable, open) = cell.rows(40);
        assert_eq!(plain(stable), ["intro", "", "  rust", "  fn a() {}"]);
        assert_eq!(plain(open), ["  fn b"]);
        cell.push("() {}\n");
        let (stable, open) = cell.rows(40);
        assert_eq!(stable.len(), 5);
        assert!(open.is_empty());
    }

    #[test]
    fn blank_lines_inside_fences_are_not_boundaries() {
        let mut cell = AssistantCell::new("  ```\na\n\nb\n");
        assert!(cell.segments.is_empty());
        cell.push("  ```\n\nafter\n");
        assert_eq!(cell.segments.len(), 1);
    }

    #[test]
    fn a_final_text_that_differs_replaces_the_streamed_one() {
        let mut cell = AssistantCell::new("one\n\ntwo");
        let _ = cell.rows(20);
        cell.set("uno\n\ndos");
        assert_eq!(all(&mut cell, 20), markdown::render("uno\n\ndos", 20));
    }
}
