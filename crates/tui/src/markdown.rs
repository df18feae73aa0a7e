//! Markdown to styled, wrapped lines: a pure function, unit-tested without a terminal.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use crate::highlight::Highlighter;
use crate::wrap::wrap;

fn code() -> Style {
    crate::theme::palette().code
}
fn dim() -> Style {
    crate::theme::palette().dim
}

/// Renders `text` to lines at most `width` columns wide.
pub fn render(text: &str, width: u16) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width: usize::from(width).max(8),
        ..Renderer::default()
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    if let Some((lang, code)) = r.code.take() {
        // An unclosed fence while streaming: show what there is.
        r.code_block(&lang, &code);
    }
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

/// The line above a fenced block naming its language (none for a bare fence).
pub fn code_header(lang: &str) -> Option<Line<'static>> {
    (!lang.is_empty()).then(|| Line::styled(format!("  {lang}"), dim()))
}

/// One line of a code block, highlighted when its language is known (plain otherwise).
pub fn code_body(highlighter: Option<&mut Highlighter>, line: &str) -> Line<'static> {
    let body = highlighter
        .and_then(|h| h.line(line))
        .unwrap_or_else(|| Line::styled(line.to_string(), code()));
    // Tab stops from the code's first column, not the screen's (the code gets a margin).
    crate::wrap::expand_tabs_in(body)
}

/// A code line indented and wrapped to `width`. Blocks render line by line this way whether
/// whole or streaming, so both agree.
pub fn code_wrap(body: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let mut spans = vec![Span::styled("  ", dim())];
    spans.extend(body.spans.iter().cloned());
    wrap(&Line::from(spans), width.max(8), 2)
}

#[derive(Default)]
struct Renderer {
    width: usize,
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Open lists: the next number, or `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Marker for the first line of the current list item.
    marker: Option<String>,
    quote: usize,
    code: Option<(String, String)>,
    link: Option<String>,
    table: Option<Table>,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn push(&mut self, text: impl Into<String>, style: Style) {
        let span = Span::styled(text.into(), self.style().patch(style));
        match &mut self.table {
            Some(table) => {
                if let Some(cell) = table.rows.last_mut().and_then(|r| r.last_mut()) {
                    cell.push(span);
                }
            }
            None => self.spans.push(span),
        }
    }

    fn blank(&mut self) {
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    /// The indent of list items and quotes around the current block.
    fn prefix(&mut self) -> (Vec<Span<'static>>, usize) {
        let mut spans = Vec::new();
        for _ in 0..self.quote {
            spans.push(Span::styled("│ ", dim()));
        }
        let depth = self.lists.len().saturating_sub(1);
        let indent = "  ".repeat(depth);
        let continuation = if self.lists.is_empty() { 0 } else { 2 };
        match self.marker.take() {
            Some(marker) => {
                let width = marker.width();
                spans.push(Span::raw(format!("{indent}{marker}")));
                let total = self.quote * 2 + indent.len() + width;
                (spans, total)
            }
            None => {
                spans.push(Span::raw(format!("{indent}{}", " ".repeat(continuation))));
                let total = self.quote * 2 + indent.len() + continuation;
                (spans, total)
            }
        }
    }

    fn flush(&mut self) {
        if self.spans.is_empty() && self.marker.is_none() {
            return;
        }
        let (mut line, indent) = self.prefix();
        line.append(&mut self.spans);
        self.lines
            .extend(wrap(&Line::from(line), self.width, indent));
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(text) => return code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {}
                _ => return,
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.push(text.into_string(), Style::default()),
            Event::Code(text) => self.push(text.into_string(), code()),
            Event::SoftBreak => self.push(" ", Style::default()),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.blank();
                self.lines
                    .push(Line::styled("─".repeat(self.width.min(40)), dim()));
                self.blank();
            }
            Event::TaskListMarker(done) => self.push(if done { "[x] " } else { "[ ] " }, dim()),
            Event::Html(html) | Event::InlineHtml(html) => {
                self.push(html.trim_end().to_string(), dim())
            }
            Event::FootnoteReference(name) => self.push(format!("[{name}]"), dim()),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.push(m.into_string(), code()),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                let style = match level {
                    HeadingLevel::H1 => crate::theme::palette()
                        .heading
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => {
                        crate::theme::palette().heading.add_modifier(Modifier::BOLD)
                    }
                    _ => Style::new().add_modifier(Modifier::BOLD),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_string(),
                };
                self.marker = Some(marker);
            }
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.styles.push(
                    crate::theme::palette()
                        .info
                        .add_modifier(Modifier::UNDERLINED),
                );
                self.link = Some(dest_url.into_string());
            }
            Tag::Table(_) => {
                self.flush();
                self.blank();
                self.table = Some(Table::default());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self.spans.iter().map(|s| s.content.as_ref()).collect();
                    if !url.is_empty() && !shown.ends_with(&url) {
                        self.push(format!(" ({url})"), dim());
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.render_table(table);
                    self.blank();
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let mut highlighter = Highlighter::new(lang);
        self.lines.extend(code_header(lang));
        for line in code.lines() {
            let body = code_body(highlighter.as_mut(), line);
            self.lines.extend(code_wrap(&body, self.width));
        }
        self.blank();
    }

    fn render_table(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let text =
            |cell: &Vec<Span<'static>>| cell.iter().map(|s| s.content.as_ref()).collect::<String>();
        let mut widths = vec![1usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(crate::wrap::width(&text(cell)));
            }
        }
        // Shrink the widest columns until the table fits: "│ " + " │ " between + " │".
        let budget = self.width.saturating_sub(3 * columns + 1).max(columns);
        while widths.iter().sum::<usize>() > budget {
            let widest = (0..columns).max_by_key(|&i| widths[i]).unwrap_or(0);
            if widths[widest] <= 1 {
                break;
            }
            widths[widest] -= 1;
        }
        let border = |left: &str, mid: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            Line::styled(format!("{left}{}{right}", parts.join(mid)), dim())
        };
        self.lines.push(border("┌", "┬", "┐"));
        for (r, row) in table.rows.iter().enumerate() {
            let mut spans = vec![Span::styled("│", dim())];
            for (i, width) in widths.iter().enumerate() {
                let cell = row.get(i).map(text).unwrap_or_default();
                let fitted = fit(&cell, *width);
                let style = if r < table.header_rows {
                    Style::new().add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                };
                spans.push(Span::styled(format!(" {fitted} "), style));
                spans.push(Span::styled("│", dim()));
            }
            self.lines.push(Line::from(spans));
            if r + 1 == table.header_rows {
                self.lines.push(border("├", "┼", "┤"));
            }
        }
        self.lines.push(border("└", "┴", "┘"));
    }
}

/// `text` padded or cut (with …) to exactly `width` columns.
fn fit(text: &str, width: usize) -> String {
    let fitted = crate::wrap::truncate(text, width);
    let used = crate::wrap::width(&fitted);
    format!("{fitted}{}", " ".repeat(width.saturating_sub(used)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: u16) -> Vec<String> {
        render(text, width)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn paragraphs_headings_and_lists() {
        let out = plain(
            "# Title\n\nSome *text* here.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n",
            40,
        );
        assert_eq!(
            out,
            [
                "Title",
                "",
                "Some text here.",
                "",
                "• one",
                "• two",
                "  • nested",
                "",
                "1. first",
                "2. second"
            ]
        );
    }

    #[test]
    fn styles_emphasis_and_inline_code() {
        let lines = render("a **b** `c`", 40);
        let spans = &lines[0].spans;
        assert!(
            spans
                .iter()
                .any(|s| s.content == "b" && s.style.add_modifier.contains(Modifier::BOLD))
        );
        assert!(
            spans
                .iter()
                .any(|s| s.content == "c" && s.style.fg == crate::theme::palette().code.fg)
        );
    }

    #[test]
    fn code_blocks_are_highlighted_and_indented() {
        let out = plain("```rust\nfn main() {}\n```\n", 40);
        assert_eq!(out, ["  rust", "  fn main() {}"]);
        let lines = render("```rust\nfn main() {}\n```\n", 40);
        assert!(lines[1].spans.len() > 2, "highlighted: {:?}", lines[1]);
    }

    /// Tab stops count from the code's first column, not the screen's: each level of a
    /// tab-indented block is four columns further in, highlighted or not, and so is each
    /// level of a diff's line after its sign.
    #[test]
    fn tabs_in_code_and_diffs_stop_every_four_columns_of_the_code() {
        let code = "func main() {\n\tif x {\n\t\treturn\n\t}\n}\n";
        for lang in ["go", "text"] {
            let out = plain(&format!("```{lang}\n{code}```\n"), 40);
            assert_eq!(
                out[1..],
                [
                    "  func main() {",
                    "      if x {",
                    "          return",
                    "      }",
                    "  }"
                ],
                "{lang}"
            );
        }
        let diff = "@@ -1,2 +1,2 @@\n-\tif x {\n+\t\treturn\n";
        let lines: Vec<String> = crate::cells::tool::diff_lines(diff)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(lines, ["    1 -    if x {", "    1 +        return"]);
    }

    #[test]
    fn an_unclosed_fence_renders_while_streaming() {
        assert_eq!(plain("```\nlet x", 40), ["  let x"]);
    }

    #[test]
    fn tables_fit_the_width() {
        let out = plain("| a | b |\n|---|---|\n| 1 | long cell text |\n", 20);
        assert_eq!(out[0], "┌───┬──────────────┐");
        assert_eq!(out[2], "├───┼──────────────┤");
        assert!(out[3].starts_with("│ 1 │ long cell t"), "{out:?}");
        assert!(out.iter().all(|l| l.width() <= 20), "{out:?}");
    }

    #[test]
    fn wide_table_cells_are_cut_with_an_ellipsis_and_rows_line_up() {
        let out = plain(
            "| 名前 | 説明 |\n|---|---|\n| 東京 | 日本の首都で人口が最も多い都市 🗼 |\n",
            24,
        );
        let widths: Vec<usize> = out.iter().map(|l| crate::wrap::width(l)).collect();
        assert!(widths.iter().all(|&w| w == widths[0] && w <= 24), "{out:?}");
        assert!(out[3].starts_with("│ 東京 │ 日本の首都"), "{out:?}");
        assert!(out[3].contains('…'), "{out:?}");
    }

    #[test]
    fn cjk_paragraphs_wrap_between_characters() {
        let text = "换行的位置由换行算法决定，汉字之间都可以断开，什么都不会丢。";
        let out = plain(text, 20);
        assert!(
            out.len() > 1 && out.iter().all(|l| crate::wrap::width(l) <= 20),
            "{out:?}"
        );
        assert_eq!(out.concat(), text);
    }

    #[test]
    fn long_lines_wrap_under_their_list_marker() {
        let out = plain("- alpha beta gamma delta", 14);
        assert_eq!(out, ["• alpha beta", "  gamma delta"]);
    }

    #[test]
    fn links_show_their_target() {
        assert_eq!(plain("[docs](https://x.dev)", 60), ["docs (https://x.dev)"]);
        assert_eq!(plain("<https://x.dev>", 60), ["https://x.dev"]);
    }

    #[test]
    fn quotes_get_a_bar() {
        assert_eq!(plain("> quoted", 40), ["│ quoted"]);
    }
}
