//! Assistant text as markdown. While it streams only the open block is re-rendered: text up
//! to the last blank line outside a code fence is rendered once and kept.

use ratatui::text::Line;

use crate::markdown;

#[derive(Default)]
pub struct AssistantCell {
    text: String,
    /// Where scanning for block boundaries resumes, and whether it is inside a fence there.
    scanned: usize,
    in_fence: bool,
    /// End of the last complete block (after a blank line outside a fence).
    boundary: usize,
    /// Lines of `text[..rendered]` at `width`.
    stable: Option<Stable>,
}

struct Stable {
    width: u16,
    rendered: usize,
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

    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        // Scan complete lines only; the last partial line is looked at again next time.
        while let Some(newline) = self.text[self.scanned..].find('\n') {
            let line = &self.text[self.scanned..self.scanned + newline];
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                self.in_fence = !self.in_fence;
            } else if !self.in_fence && trimmed.is_empty() {
                self.boundary = self.scanned + newline + 1;
            }
            self.scanned += newline + 1;
        }
    }

    /// Replaces the text (the final message may differ from the deltas).
    pub fn set(&mut self, text: &str) {
        if text != self.text {
            *self = Self::new(text);
        }
    }

    pub fn lines(&mut self, width: u16) -> Vec<Line<'static>> {
        let stable = match &mut self.stable {
            Some(stable) if stable.width == width => stable,
            _ => self.stable.insert(Stable {
                width,
                rendered: 0,
                lines: Vec::new(),
            }),
        };
        if self.boundary > stable.rendered {
            let chunk = markdown::render(&self.text[stable.rendered..self.boundary], width);
            join(&mut stable.lines, chunk);
            stable.rendered = self.boundary;
        }
        let mut lines = stable.lines.clone();
        let tail = markdown::render(&self.text[stable.rendered..], width);
        join(&mut lines, tail);
        lines
    }
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

    #[test]
    fn streaming_renders_the_same_as_all_at_once() {
        let text = "# Plan\n\nFirst a paragraph\nthat wraps.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n- x\n- y\n";
        let mut streamed = AssistantCell::default();
        let mut last = Vec::new();
        for piece in text.as_bytes().chunks(3) {
            streamed.push(std::str::from_utf8(piece).unwrap());
            last = streamed.lines(30);
        }
        assert_eq!(plain(&last), plain(&markdown::render(text, 30)));
    }

    #[test]
    fn blank_lines_inside_fences_are_not_boundaries() {
        let mut cell = AssistantCell::new("```\na\n\nb\n");
        assert_eq!(cell.boundary, 0);
        cell.push("```\n\nafter\n");
        assert!(cell.boundary > 0);
    }
}
