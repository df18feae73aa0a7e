//! The prompt editor: a multi-line text area with history and folded large pastes.

use crossterm::event::KeyEvent;
use ratatui::style::{Color, Style};
use tui_textarea::{CursorMove, TextArea, WrapMode};

/// Pastes bigger than this are shown as one placeholder line (and sent whole).
const FOLD_LINES: usize = 10;
const FOLD_CHARS: usize = 1_000;
/// Tallest the editor grows, in text lines.
const MAX_HEIGHT: u16 = 8;

pub struct Editor {
    pub area: TextArea<'static>,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh draft.
    browsing: Option<usize>,
    draft: String,
    /// Placeholder → pasted text.
    pastes: Vec<(String, String)>,
}

impl Default for Editor {
    fn default() -> Self {
        Self::new()
    }
}

impl Editor {
    pub fn new() -> Self {
        Self {
            area: fresh_area(),
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
            pastes: Vec::new(),
        }
    }

    /// The text as shown (placeholders folded).
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.lines().iter().all(String::is_empty)
    }

    pub fn height(&self) -> u16 {
        (self.area.lines().len() as u16).clamp(1, MAX_HEIGHT)
    }

    /// Takes the text to send (pastes unfolded), remembers it in history and clears.
    pub fn take(&mut self) -> String {
        let shown = self.text();
        let mut text = shown.clone();
        for (placeholder, pasted) in self.pastes.drain(..) {
            text = text.replacen(&placeholder, &pasted, 1);
        }
        // History keeps what was sent, so a recalled paste is sent whole again.
        if !shown.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.browsing = None;
        self.area = fresh_area();
        text
    }

    pub fn set_text(&mut self, text: &str) {
        self.area = fresh_area();
        self.area.insert_str(text);
    }

    pub fn clear(&mut self) {
        self.pastes.clear();
        self.area = fresh_area();
    }

    pub fn insert_newline(&mut self) {
        self.area.insert_newline();
    }

    /// Inserts pasted text; a large paste becomes a placeholder.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > FOLD_LINES || text.len() > FOLD_CHARS {
            let placeholder = format!("[Pasted text #{} +{lines} lines]", self.pastes.len() + 1);
            self.area.insert_str(&placeholder);
            self.pastes.push((placeholder, text));
        } else {
            self.area.insert_str(&text);
        }
    }

    pub fn input(&mut self, key: KeyEvent) {
        self.area.input(key);
    }

    /// Up at the first line: the previous history entry. False when the key is not for history.
    pub fn history_up(&mut self) -> bool {
        if self.area.cursor().0 != 0 || self.history.is_empty() {
            return false;
        }
        let next = match self.browsing {
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return true,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.set_text(&entry);
        true
    }

    /// Down at the last line: the next history entry, then the draft.
    pub fn history_down(&mut self) -> bool {
        let Some(i) = self.browsing else {
            return false;
        };
        if self.area.cursor().0 + 1 < self.area.lines().len() {
            return false;
        }
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.set_text(&entry);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
        self.area.move_cursor(CursorMove::Bottom);
        self.area.move_cursor(CursorMove::End);
        true
    }
}

fn fresh_area() -> TextArea<'static> {
    let mut area = TextArea::default();
    area.set_placeholder_text("Type a message · / for commands · @ for files");
    area.set_placeholder_style(Style::new().fg(Color::DarkGray));
    area.set_cursor_line_style(Style::default());
    area.set_wrap_mode(WrapMode::Glyph);
    area
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_pastes_fold_but_send_whole() {
        let mut editor = Editor::new();
        editor.area.insert_str("see: ");
        let big: String = (0..50).map(|i| format!("line {i}\n")).collect();
        editor.paste(&big);
        assert_eq!(editor.text(), "see: [Pasted text #1 +50 lines]");
        assert_eq!(editor.take(), format!("see: {big}"));
        assert!(editor.is_empty());
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut editor = Editor::new();
        for text in ["first", "second"] {
            editor.set_text(text);
            editor.take();
        }
        editor.set_text("draft");
        assert!(editor.history_up());
        assert_eq!(editor.text(), "second");
        assert!(editor.history_up());
        assert_eq!(editor.text(), "first");
        assert!(editor.history_down());
        assert!(editor.history_down());
        assert_eq!(editor.text(), "draft");
    }
}
