//! Wrapping styled lines to a width: pure functions over plain data.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` to `width` columns at spaces where possible (hard breaks inside words longer
/// than the width). Continuation lines start with `indent` spaces.
pub fn wrap(line: &Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(indent + 4).max(1);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut current: Vec<(char, Style)> = Vec::new();
    let mut current_width = 0usize;
    // Index in `current` after the last space, where a break may happen.
    let mut break_at: Option<usize> = None;
    let chars = line.spans.iter().flat_map(|span| {
        span.content
            .chars()
            .map(move |c| (c, line.style.patch(span.style)))
    });
    for (c, style) in chars {
        let w = c.width().unwrap_or(0);
        if current_width + w > width && !current.is_empty() {
            // A space that overflows is itself the break.
            let cut = if c == ' ' {
                current.len()
            } else {
                break_at
                    .filter(|&b| b > indent_len(&out, indent))
                    .unwrap_or(current.len())
            };
            let rest: Vec<(char, Style)> = current.split_off(cut);
            out.push(to_line(trim_end(current), line.style));
            current = std::iter::repeat_n((' ', Style::default()), indent).collect();
            current.extend(rest.into_iter().skip_while(|(c, _)| *c == ' '));
            current_width = current.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
            break_at = None;
            if c == ' ' && current.len() == indent {
                continue;
            }
        }
        current.push((c, style));
        current_width += w;
        if c == ' ' {
            break_at = Some(current.len());
        }
    }
    out.push(to_line(current, line.style));
    out
}

/// Where a continuation line's text starts (breaking inside the indent would loop).
fn indent_len(out: &[Line<'static>], indent: usize) -> usize {
    if out.is_empty() { 0 } else { indent }
}

fn trim_end(mut chars: Vec<(char, Style)>) -> Vec<(char, Style)> {
    while chars.last().is_some_and(|(c, _)| *c == ' ') {
        chars.pop();
    }
    chars
}

/// Groups runs of equal style back into spans.
fn to_line(chars: Vec<(char, Style)>, line_style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for (c, s) in chars {
        if style.is_some_and(|st| st != s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        text.push(c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans).style(line_style)
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
    fn wraps_at_spaces_with_an_indent() {
        let line = Line::from("- one two three four five");
        assert_eq!(
            plain(&wrap(&line, 12, 2)),
            ["- one two", "  three four", "  five"]
        );
    }

    #[test]
    fn breaks_long_words_hard() {
        let line = Line::from("abcdefghij");
        assert_eq!(plain(&wrap(&line, 4, 0)), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn keeps_styles_across_breaks() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = Line::from(vec![Span::raw("aa "), Span::styled("bbbb cc", bold)]);
        let wrapped = wrap(&line, 7, 0);
        assert_eq!(plain(&wrapped), ["aa bbbb", "cc"]);
        assert_eq!(wrapped[1].spans[0].style, bold);
    }

    #[test]
    fn counts_wide_characters() {
        let line = Line::from("日本語のテキスト");
        let wrapped = wrap(&line, 6, 0);
        assert!(
            wrapped.iter().all(|l| l.width() <= 6),
            "{:?}",
            plain(&wrapped)
        );
    }
}
