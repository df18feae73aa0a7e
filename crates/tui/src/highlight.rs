//! Syntax highlighting of fenced code blocks with syntect.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

/// Loaded on the first code block, not at start-up.
fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_else(|| themes.themes.into_values().next().unwrap_or_default());
        Assets {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            theme,
        }
    })
}

/// The code as highlighted lines, or `None` when the language is unknown.
pub fn highlight(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    let lang = lang.split([',', ' ']).next().unwrap_or_default().trim();
    if lang.is_empty() {
        return None;
    }
    let assets = assets();
    let syntax = assets
        .syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| assets.syntaxes.find_syntax_by_extension(lang))?;
    let mut highlighter = HighlightLines::new(syntax, &assets.theme);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(line, &assets.syntaxes).ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_string();
                Span::styled(text, convert(style))
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        lines.push(Line::from(spans));
    }
    Some(lines)
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_known_languages_only() {
        let lines = highlight("fn main() {}\nlet x = 1;\n", "rust").unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].spans.len() > 1, "several colours: {:?}", lines[0]);
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("x", "").is_none());
    }
}
