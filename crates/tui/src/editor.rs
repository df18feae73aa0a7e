//! The prompt editor: a multi-line text area with history and folded large pastes. The text
//! soft-wraps as cells do (`wrap`), the editor grows with it up to [`MAX_HEIGHT`] rows, then
//! scrolls to keep the cursor in sight.

use crossterm::event::KeyEvent;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tui_textarea::{CursorMove, TextArea, WrapMode};

use crate::wrap;

/// Pastes bigger than this are shown as one placeholder line (and sent whole).
const FOLD_LINES: usize = 10;
const FOLD_CHARS: usize = 1_000;
/// Tallest the editor grows, in rows of wrapped text; then it scrolls.
pub const MAX_HEIGHT: u16 = 10;
/// Most prompts a resumed conversation puts into the history, and most bytes of them.
pub const SEEDED: usize = 1_000;
pub const SEEDED_BYTES: usize = 1 << 20;
const PLACEHOLDER: &str = "Type a message · / for commands · @ for files";

/// A message as the user sends it: its text and the images attached to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    pub text: String,
    pub images: Vec<llm::ImageContent>,
}

impl From<String> for Draft {
    fn from(text: String) -> Self {
        Self {
            text,
            images: Vec::new(),
        }
    }
}

impl From<&str> for Draft {
    fn from(text: &str) -> Self {
        text.to_string().into()
    }
}

pub struct Editor {
    pub area: TextArea<'static>,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh draft.
    browsing: Option<usize>,
    draft: String,
    /// Placeholder → pasted text.
    pastes: Vec<(String, String)>,
    /// The images attached, each with its chip as it stands in the text.
    images: Vec<(String, llm::ImageContent)>,
    /// Images attached since the start: the next chip's number.
    attached: usize,
    /// The first row of wrapped text on screen (kept between frames so the view scrolls only
    /// when the cursor leaves it).
    top: usize,
    /// Columns of text at the last draw, for moving the cursor by rows.
    width: usize,
}

/// What the editor shows in a given size: its rows, and where the cursor is among them.
pub struct EditorView {
    pub lines: Vec<Line<'static>>,
    /// (column, row) in the view.
    pub cursor: (u16, u16),
}

/// One row of wrapped text: a line of the text (tabs expanded) and the bytes of it shown.
struct Row {
    line: usize,
    start: usize,
    end: usize,
}

/// The text wrapped to a width.
struct Wrapped {
    /// Each line of the text with its tabs expanded.
    lines: Vec<String>,
    rows: Vec<Row>,
    /// (row, column) of the cursor.
    cursor: (usize, usize),
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
            images: Vec::new(),
            attached: 0,
            top: 0,
            width: 0,
        }
    }

    /// The text as shown (placeholders folded).
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.lines().iter().all(String::is_empty)
    }

    /// Rows the text takes wrapped to `width` columns (the editor's inside), at most
    /// [`MAX_HEIGHT`].
    pub fn height(&self, width: u16) -> u16 {
        let rows = self.wrapped(usize::from(width)).rows.len();
        (rows.min(usize::from(MAX_HEIGHT)) as u16).max(1)
    }

    /// The rows to draw in `width` × `height`, scrolled so the cursor is on them.
    pub fn view(&mut self, width: u16, height: u16) -> EditorView {
        let width = usize::from(width).max(1);
        let height = usize::from(height).max(1);
        self.width = width;
        // (Empty lines typed are text: the cursor goes where they are.)
        if self.area.is_empty() {
            self.top = 0;
            let hint = wrap::truncate(PLACEHOLDER, width.saturating_sub(1));
            return EditorView {
                lines: vec![Line::from(vec![
                    Span::raw(" "),
                    Span::styled(hint, crate::theme::palette().dim),
                ])],
                cursor: (0, 0),
            };
        }
        let wrapped = self.wrapped(width);
        let (row, column) = wrapped.cursor;
        if row < self.top {
            self.top = row;
        } else if row >= self.top + height {
            self.top = row + 1 - height;
        }
        self.top = self.top.min(wrapped.rows.len().saturating_sub(height));
        let selected = self.selected(&wrapped);
        let selection_style = self.area.selection_style();
        let lines = wrapped.rows[self.top..]
            .iter()
            .take(height)
            .map(|r| {
                let line = &wrapped.lines[r.line];
                let end = r.start + line[r.start..r.end].trim_end_matches(' ').len();
                match selected.get(r.line).copied().flatten() {
                    // The selected part of the row, shown in the selection's style.
                    Some((from, to)) if from < end && to > r.start => {
                        let (from, to) = (from.max(r.start), to.min(end));
                        Line::from(vec![
                            Span::raw(line[r.start..from].to_string()),
                            Span::styled(line[from..to].to_string(), selection_style),
                            Span::raw(line[to..end].to_string()),
                        ])
                    }
                    _ => Line::raw(line[r.start..end].to_string()),
                }
            })
            .collect();
        EditorView {
            lines,
            cursor: (column as u16, (row - self.top) as u16),
        }
    }

    /// The selected bytes of each line (tabs expanded), if any.
    fn selected(&self, wrapped: &Wrapped) -> Vec<Option<(usize, usize)>> {
        let Some(((r0, c0), (r1, c1))) = self.area.selection_range() else {
            return Vec::new();
        };
        let offset = |line: usize, chars: usize| {
            let before: String = self.area.lines()[line].chars().take(chars).collect();
            wrap::expand_tabs(&before, 0).len()
        };
        (0..wrapped.lines.len())
            .map(|l| {
                (r0..=r1).contains(&l).then(|| {
                    let from = if l == r0 { offset(l, c0) } else { 0 };
                    let to = if l == r1 {
                        offset(l, c1)
                    } else {
                        wrapped.lines[l].len()
                    };
                    (from, to)
                })
            })
            .collect()
    }

    /// Moves the cursor a row of wrapped text up or down (as drawn last), keeping its column
    /// where the row is long enough. False at the first or last row.
    pub fn move_by_row(&mut self, down: bool) -> bool {
        if self.width == 0 {
            return false;
        }
        let wrapped = self.wrapped(self.width);
        let (row, column) = wrapped.cursor;
        let target = if down {
            row + 1
        } else if let Some(up) = row.checked_sub(1) {
            up
        } else {
            return false;
        };
        let Some(to) = wrapped.rows.get(target) else {
            return false;
        };
        // The grapheme under the column, or the end of the row.
        let shown = &wrapped.lines[to.line][to.start..to.end];
        let mut at = to.start + shown.trim_end_matches(' ').len();
        let mut used = 0;
        for (i, g) in unicode_segmentation::UnicodeSegmentation::grapheme_indices(shown, true) {
            if used >= column {
                at = to.start + i;
                break;
            }
            used += wrap::width(g);
        }
        // The last row of a line ends at the line's end; others before their last grapheme
        // (placing the cursor past it would put it on the next row).
        let last_of_line = wrapped
            .rows
            .get(target + 1)
            .is_none_or(|r| r.line != to.line);
        if !last_of_line && at >= to.end {
            at = to.start
                + unicode_segmentation::UnicodeSegmentation::grapheme_indices(shown, true)
                    .next_back()
                    .map_or(0, |(i, _)| i);
        }
        let col = char_at(&self.area.lines()[to.line], at);
        self.area
            .move_cursor(CursorMove::Jump(to.line as u16, col as u16));
        true
    }

    /// On the first (`top`) or last row of wrapped text, where Up and Down leave the text.
    fn on_edge_row(&self, top: bool) -> bool {
        if self.width == 0 {
            // Not drawn yet: lines of text stand for rows.
            let row = self.area.cursor().0;
            return if top {
                row == 0
            } else {
                row + 1 >= self.area.lines().len()
            };
        }
        let wrapped = self.wrapped(self.width);
        if top {
            wrapped.cursor.0 == 0
        } else {
            wrapped.cursor.0 + 1 >= wrapped.rows.len()
        }
    }

    fn wrapped(&self, width: usize) -> Wrapped {
        let width = width.max(1);
        let (cursor_line, cursor_char) = (self.area.cursor().0, self.area.cursor().1);
        let mut lines = Vec::with_capacity(self.area.lines().len());
        let mut rows = Vec::new();
        let mut cursor = (0, 0);
        for (i, text) in self.area.lines().iter().enumerate() {
            let expanded = wrap::expand_tabs(text, 0);
            let starts = wrap::line_starts(&expanded, width);
            let first = rows.len();
            for (j, &start) in starts.iter().enumerate() {
                let end = starts.get(j + 1).copied().unwrap_or(expanded.len());
                rows.push(Row {
                    line: i,
                    start,
                    end,
                });
            }
            if i == cursor_line {
                let before: String = text.chars().take(cursor_char).collect();
                let at = wrap::expand_tabs(&before, 0).len();
                let k = starts.iter().rposition(|&s| s <= at).unwrap_or(0);
                let column = wrap::width(&expanded[starts[k]..at]);
                cursor = (first + k, column);
                if column >= width {
                    if k + 1 == starts.len() {
                        // At the end of a full row: the next character starts a new one.
                        rows.push(Row {
                            line: i,
                            start: expanded.len(),
                            end: expanded.len(),
                        });
                        cursor = (first + k + 1, 0);
                    } else {
                        cursor.1 = width - 1;
                    }
                }
            }
            lines.push(expanded);
        }
        Wrapped {
            lines,
            rows,
            cursor,
        }
    }

    /// Takes the message to send (pastes unfolded, the images whose chips are still in the
    /// text taken out of it), remembers its text in history and clears.
    pub fn take(&mut self) -> Draft {
        let shown = self.text();
        let mut text = shown.clone();
        for (placeholder, pasted) in self.pastes.drain(..) {
            text = text.replacen(&placeholder, &pasted, 1);
        }
        let mut images = Vec::new();
        for (chip, image) in self.images.drain(..) {
            if let Some(at) = text.find(&chip) {
                // The chip and the space typed after it.
                let end = at + chip.len();
                let end = if text[end..].starts_with(' ') {
                    end + 1
                } else {
                    end
                };
                text.replace_range(at..end, "");
                images.push(image);
            }
        }
        if !images.is_empty() {
            text = text.trim().to_string();
        }
        // History keeps what was sent, so a recalled paste is sent whole again.
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.browsing = None;
        self.area = fresh_area();
        Draft { text, images }
    }

    /// Adds an image at the cursor, shown as its chip.
    pub fn attach(&mut self, attachment: attach::Attachment) {
        self.attached += 1;
        let chip = attachment.chip(self.attached);
        self.area.insert_str(&chip);
        self.area.insert_str(" ");
        self.images.push((chip, attachment.image));
    }

    /// Whether an image is attached (its chip still in the text).
    pub fn has_images(&self) -> bool {
        let text = self.text();
        self.images.iter().any(|(chip, _)| text.contains(chip))
    }

    /// Backspace right after a chip removes the whole chip, and its image.
    fn backspace_chip(&mut self) -> bool {
        let (row, column) = (self.area.cursor().0, self.area.cursor().1);
        let Some(line) = self.area.lines().get(row) else {
            return false;
        };
        let before: String = line.chars().take(column).collect();
        let Some(index) = self
            .images
            .iter()
            .position(|(chip, _)| before.ends_with(chip.as_str()))
        else {
            return false;
        };
        let (chip, _) = self.images.remove(index);
        for _ in 0..chip.chars().count() {
            self.area.delete_char();
        }
        true
    }

    pub fn set_text(&mut self, text: &str) {
        self.area = fresh_area();
        self.area.insert_str(text);
    }

    pub fn clear(&mut self) {
        self.pastes.clear();
        self.images.clear();
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
            let number = self.pastes.len() + 1;
            // One long line has no lines to count: its length says what was pasted.
            let placeholder = if lines > 1 {
                format!(
                    "[Pasted text #{number} +{}]",
                    crate::words::count(lines, "line")
                )
            } else {
                format!("[Pasted text #{number} {} chars]", text.chars().count())
            };
            self.area.insert_str(&placeholder);
            self.pastes.push((placeholder, text));
        } else {
            self.area.insert_str(&text);
        }
    }

    pub fn input(&mut self, key: KeyEvent) {
        if key.code == crossterm::event::KeyCode::Backspace
            && key.modifiers.is_empty()
            && self.backspace_chip()
        {
            return;
        }
        self.area.input(key);
    }

    /// A resumed conversation's prompts, oldest first, for Up to walk back through (its last
    /// ones, see [`SEEDED`]). Only into an empty history: what was typed in this process
    /// stays, and `prompts` is not called for then.
    pub fn seed_history(&mut self, prompts: impl FnOnce() -> Vec<String>) {
        if self.history.is_empty() {
            self.history = prompts();
            self.browsing = None;
        }
    }

    /// Up at the first row: the previous history entry. False when the key is not for history.
    pub fn history_up(&mut self) -> bool {
        if !self.on_edge_row(true) || self.history.is_empty() {
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

    /// Down at the last row: the next history entry, then the draft.
    pub fn history_down(&mut self) -> bool {
        let Some(i) = self.browsing else {
            return false;
        };
        if !self.on_edge_row(false) {
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

/// The char index in `line` of byte `at` of its tab-expanded form.
fn char_at(line: &str, at: usize) -> usize {
    let mut expanded = 0;
    let mut column = 0;
    for (i, c) in line.chars().enumerate() {
        if expanded >= at {
            return i;
        }
        if c == '\t' {
            let n = wrap::TAB_WIDTH - column % wrap::TAB_WIDTH;
            expanded += n;
            column += n;
        } else {
            expanded += c.len_utf8();
            column += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        }
    }
    line.chars().count()
}

fn fresh_area() -> TextArea<'static> {
    let mut area = TextArea::default();
    area.set_cursor_line_style(Style::default());
    // Drawn by `Editor::view`, which wraps: the text area only edits, and moves the cursor by
    // lines of text (rows are `move_by_row`'s).
    area.set_wrap_mode(WrapMode::None);
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
        assert_eq!(editor.take().text, format!("see: {big}"));
        assert!(editor.is_empty());
        // One long line, counted in characters (not bytes: 1,200 of them here are 3,600 bytes).
        let line = "字".repeat(1_200);
        editor.paste(&line);
        assert_eq!(editor.text(), "[Pasted text #1 1200 chars]");
        assert_eq!(editor.take().text, line);
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

    #[test]
    fn a_resumed_history_fills_only_an_empty_one() {
        let mut editor = Editor::new();
        editor.seed_history(|| vec!["old first".into(), "old second".into()]);
        assert!(editor.history_up());
        assert_eq!(editor.text(), "old second");
        assert!(editor.history_up());
        assert_eq!(editor.text(), "old first");
        let mut typed = Editor::new();
        typed.set_text("typed here");
        typed.take();
        typed.seed_history(|| vec!["old".into()]);
        assert!(typed.history_up());
        assert_eq!(typed.text(), "typed here");
        typed.history_up();
        assert_eq!(typed.text(), "typed here");
    }

    fn rows(view: &EditorView) -> Vec<String> {
        view.lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn long_text_wraps_and_the_editor_grows_to_its_limit() {
        let mut editor = Editor::new();
        assert_eq!(editor.height(20), 1);
        editor
            .area
            .insert_str("the quick brown fox jumps over the lazy dog");
        assert_eq!(editor.height(20), 3);
        let view = editor.view(20, 3);
        assert_eq!(
            rows(&view),
            ["the quick brown fox", "jumps over the lazy", "dog"]
        );
        assert_eq!(view.cursor, (3, 2));
        editor.area.insert_str(" more words".repeat(30));
        assert_eq!(editor.height(20), MAX_HEIGHT);
    }

    #[test]
    fn cjk_wraps_between_characters_and_the_cursor_counts_columns() {
        let mut editor = Editor::new();
        editor.area.insert_str("你好世界你好世界你好");
        let view = editor.view(8, 4);
        assert_eq!(rows(&view), ["你好世界", "你好世界", "你好"]);
        assert_eq!(view.cursor, (4, 2));
        editor.area.move_cursor(CursorMove::Head);
        assert_eq!(editor.view(8, 4).cursor, (0, 0));
    }

    #[test]
    fn a_full_row_puts_the_cursor_on_the_next() {
        let mut editor = Editor::new();
        editor.area.insert_str("abcd");
        assert_eq!(editor.height(4), 2);
        let view = editor.view(4, 2);
        assert_eq!(rows(&view), ["abcd", ""]);
        assert_eq!(view.cursor, (0, 1));
    }

    #[test]
    fn scrolls_to_keep_the_cursor_in_sight() {
        let mut editor = Editor::new();
        let text: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        editor.area.insert_str(text.join("\n"));
        let view = editor.view(20, 10);
        assert_eq!(rows(&view).first().map(String::as_str), Some("line 20"));
        assert_eq!(view.cursor, (7, 9));
        editor.area.move_cursor(CursorMove::Jump(0, 0));
        let view = editor.view(20, 10);
        assert_eq!(rows(&view).first().map(String::as_str), Some("line 0"));
        assert_eq!(view.cursor, (0, 0));
        // Moving inside the view does not scroll it.
        editor.area.move_cursor(CursorMove::Jump(5, 0));
        assert_eq!(rows(&editor.view(20, 10))[0], "line 0");
    }

    #[test]
    fn up_and_down_move_by_rows_then_through_history() {
        let mut editor = Editor::new();
        editor.set_text("earlier");
        editor.take();
        editor.area.insert_str("aaaa bbbb cccc");
        editor.view(5, 5);
        // Rows: "aaaa " "bbbb " "cccc"; the cursor at the end of the last.
        assert!(!editor.history_down());
        assert!(!editor.history_up(), "not on the first row yet");
        assert!(editor.move_by_row(false));
        assert_eq!(editor.view(5, 5).cursor, (4, 1));
        assert!(editor.move_by_row(false));
        assert_eq!(editor.view(5, 5).cursor, (4, 0));
        assert!(!editor.move_by_row(false));
        assert!(editor.history_up());
        assert_eq!(editor.text(), "earlier");
    }

    #[test]
    fn tabs_expand_in_the_view() {
        let mut editor = Editor::new();
        editor.area.insert_str("a\tb");
        let view = editor.view(20, 1);
        assert_eq!(rows(&view), ["a   b"]);
        assert_eq!(view.cursor, (5, 0));
    }

    #[test]
    fn a_selection_is_shown_across_rows() {
        let mut editor = Editor::new();
        editor.area.insert_str("aaaa bbbb cccc");
        editor.area.move_cursor(CursorMove::Jump(0, 2));
        editor.area.start_selection();
        editor.area.move_cursor(CursorMove::Jump(0, 7));
        let view = editor.view(5, 5);
        let style = editor.area.selection_style();
        let selected: Vec<String> = view
            .lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .filter(|s| s.style == style)
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(selected, ["aa", "bb"]);
        assert_eq!(rows(&view), ["aaaa", "bbbb", "cccc"]);
    }

    #[test]
    fn empty_lines_typed_show_the_cursor_on_them_not_the_placeholder() {
        let mut editor = Editor::new();
        assert!(rows(&editor.view(40, 1))[0].contains("Type a message"));
        editor.insert_newline();
        editor.insert_newline();
        assert_eq!(editor.height(40), 3);
        let view = editor.view(40, 3);
        assert_eq!(rows(&view), ["", "", ""]);
        assert_eq!(view.cursor, (0, 2));
    }
}
