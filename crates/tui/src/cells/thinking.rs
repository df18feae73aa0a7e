//! The model's thinking, built as it streams: each complete line is wrapped once and kept; only
//! the line still arriving is wrapped again. Hidden (Ctrl+T) it is one line.

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use super::{View, prefixed_line};

const MARKER: &str = "∴ ";
/// Dimmed and italic: the model's working, not its answer.
fn style() -> Style {
    crate::theme::palette().dim.add_modifier(Modifier::ITALIC)
}

#[derive(Default)]
pub struct ThinkingCell {
    text: String,
    /// End of the last complete line.
    complete: usize,
    /// Complete lines wrapped at a width: (width, bytes covered, lines).
    laid: Option<(u16, usize, Vec<Line<'static>>)>,
    /// The line still arriving, or the one-line marker: (view, text length, lines).
    open: Option<(View, usize, Vec<Line<'static>>)>,
    /// Words in `text[..counted]` (counted up to a line end, so no word is split).
    words: usize,
    counted: usize,
}

impl ThinkingCell {
    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        if let Some(newline) = self.text.rfind('\n') {
            self.complete = self.complete.max(newline + 1);
        }
    }

    /// Replaces the text (the final message may differ from the deltas).
    pub fn set(&mut self, text: &str) {
        match text.strip_prefix(self.text.as_str()) {
            Some(rest) => self.push(rest),
            None => {
                *self = Self::default();
                self.push(text);
            }
        }
    }

    /// Drops the laid-out lines; [`ThinkingCell::rows`] lays the text out again.
    pub fn forget_layout(&mut self) {
        self.laid = None;
        self.open = None;
    }

    pub fn holds_layout(&self) -> bool {
        self.laid.is_some() || self.open.is_some()
    }

    pub fn rows(&mut self, view: View) -> (&[Line<'static>], &[Line<'static>]) {
        if !view.show_thinking {
            let stale =
                !matches!(&self.open, Some((v, len, _)) if *v == view && *len == self.text.len());
            if stale {
                self.words += self.text[self.counted..self.complete]
                    .split_whitespace()
                    .count();
                self.counted = self.complete;
                let words = self.words + self.text[self.complete..].split_whitespace().count();
                let line = Line::styled(
                    format!("{MARKER}Thought for {words} words (ctrl+t to show)"),
                    style(),
                );
                self.open = Some((view, self.text.len(), vec![line]));
            }
            return (&[], self.open.as_ref().map_or(&[][..], |(_, _, l)| l));
        }
        let width = usize::from(view.width);
        let laid = match &mut self.laid {
            Some(laid) if laid.0 == view.width => laid,
            _ => self.laid.insert((view.width, 0, Vec::new())),
        };
        if laid.1 < self.complete {
            for line in self.text[laid.1..self.complete].lines() {
                let first = laid.2.is_empty();
                laid.2
                    .extend(prefixed_line(line, first, MARKER, style(), style(), width));
            }
            laid.1 = self.complete;
        }
        let stale =
            !matches!(&self.open, Some((v, len, _)) if *v == view && *len == self.text.len());
        if stale {
            let rest = &self.text[self.complete..];
            let first = laid.2.is_empty();
            let lines = if rest.is_empty() && !first {
                Vec::new()
            } else {
                prefixed_line(rest, first, MARKER, style(), style(), width)
            };
            self.open = Some((view, self.text.len(), lines));
        }
        let stable = self.laid.as_ref().map_or(&[][..], |(_, _, l)| l.as_slice());
        let open = self.open.as_ref().map_or(&[][..], |(_, _, l)| l.as_slice());
        (stable, open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(show_thinking: bool) -> View {
        View {
            width: 30,
            expand_tools: false,
            show_thinking,
        }
    }

    #[test]
    fn streaming_lays_out_the_same_as_all_at_once() {
        let text =
            "First I read the file.\n\nThen a much longer line that has to wrap across rows.\nlast";
        let mut streamed = ThinkingCell::default();
        for piece in text.as_bytes().chunks(5) {
            streamed.push(std::str::from_utf8(piece).unwrap());
            let _ = streamed.rows(view(true));
        }
        let (stable, open) = streamed.rows(view(true));
        let got: Vec<Line<'static>> = stable.iter().chain(open).cloned().collect();
        let want = super::super::prefixed(text, MARKER, style(), style(), 30);
        assert_eq!(got, want);
    }

    #[test]
    fn hidden_it_is_one_line() {
        let mut cell = ThinkingCell::default();
        cell.push("one two three");
        let (stable, open) = cell.rows(view(false));
        assert!(stable.is_empty());
        assert_eq!(open.len(), 1);
        assert!(open[0].to_string().contains("3 words"));
    }
}
