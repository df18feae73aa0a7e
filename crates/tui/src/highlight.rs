//! Syntax highlighting of fenced code blocks with syntect, a line at a time: the parser's state
//! carries from one line to the next, so a streaming block highlights each line once.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

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

/// Highlights the lines of one code block in order.
pub struct Highlighter {
    lines: HighlightLines<'static>,
}

impl Highlighter {
    /// `None` when the language is unknown (or not given).
    pub fn new(lang: &str) -> Option<Self> {
        let lang = lang.split([',', ' ']).next().unwrap_or_default().trim();
        if lang.is_empty() {
            return None;
        }
        let assets = assets();
        let syntax = assets
            .syntaxes
            .find_syntax_by_token(lang)
            .or_else(|| assets.syntaxes.find_syntax_by_extension(lang))?;
        Some(Self {
            lines: HighlightLines::new(syntax, &assets.theme),
        })
    }

    /// The next line of the block (with or without its newline); `None` if syntect fails.
    pub fn line(&mut self, line: &str) -> Option<Line<'static>> {
        // The syntaxes are loaded for newline-terminated input.
        let owned;
        let line = if line.ends_with('\n') {
            line
        } else {
            owned = format!("{line}\n");
            &owned
        };
        let ranges = self.lines.highlight_line(line, &assets().syntaxes).ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_string();
                Span::styled(text, convert(style))
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        Some(Line::from(spans))
    }
}

/// The code as highlighted lines, or `None` when the language is unknown.
#[cfg(test)]
pub fn highlight(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    let mut highlighter = Highlighter::new(lang)?;
    syntect::util::LinesWithEndings::from(code)
        .map(|line| highlighter.line(line))
        .collect()
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

    #[test]
    fn line_by_line_equals_the_whole_block() {
        // A block comment spans lines: only a carried state gets the second line right.
        let code = "/* one\n two */\nfn x() {}\n";
        let whole = highlight(code, "rust").unwrap();
        let mut h = Highlighter::new("rust").unwrap();
        let each: Vec<Line<'static>> = code.lines().map(|l| h.line(l).unwrap()).collect();
        assert_eq!(whole, each);
    }
}
