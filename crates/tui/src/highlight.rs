//! Syntax highlighting of fenced code blocks with syntect, a line at a time: the parser's state
//! carries from one line to the next, so a streaming block highlights each line once.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter as Styler, Theme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

struct Assets {
    syntaxes: SyntaxSet,
    /// The theme's selectors, sorted once: building them for every block was a tenth of
    /// what highlighting a short block cost.
    styler: Styler<'static>,
    /// The syntax each language token named, found once (finding it is a walk over all the
    /// syntaxes' names and extensions).
    found: Mutex<HashMap<String, Option<&'static SyntaxReference>>>,
}

/// Loaded on the first code block, not at start-up.
fn assets() -> &'static Assets {
    static THEME: OnceLock<Theme> = OnceLock::new();
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let theme = THEME.get_or_init(|| {
            let mut themes = ThemeSet::load_defaults();
            // The palette's, made for the terminal's background (`theme`).
            let name = crate::theme::palette()
                .syntax
                .unwrap_or("base16-ocean.dark");
            themes
                .themes
                .remove(name)
                .unwrap_or_else(|| themes.themes.into_values().next().unwrap_or_default())
        });
        Assets {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            styler: Styler::new(theme),
            found: Mutex::new(HashMap::new()),
        }
    })
}

/// The syntax for a fence's language token, if syntect knows it.
fn syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let assets = assets();
    let mut found = assets.found.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = found.get(lang) {
        return *known;
    }
    let syntax = assets
        .syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| assets.syntaxes.find_syntax_by_extension(lang));
    // Tokens come from the model's fences: bounded, so a reply cannot grow the table forever.
    if found.len() < 256 {
        found.insert(lang.to_string(), syntax);
    }
    syntax
}

/// Highlights the lines of one code block in order.
pub struct Highlighter {
    parse: ParseState,
    styles: HighlightState,
}

impl Highlighter {
    /// `None` when the language is unknown (or not given).
    pub fn new(lang: &str) -> Option<Self> {
        let lang = lang.split([',', ' ']).next().unwrap_or_default().trim();
        // `NO_COLOR`: code is not coloured.
        if lang.is_empty() || crate::theme::palette().syntax.is_none() {
            return None;
        }
        let syntax = syntax(lang)?;
        Some(Self {
            parse: ParseState::new(syntax),
            styles: HighlightState::new(&assets().styler, ScopeStack::new()),
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
        let assets = assets();
        let ops = self.parse.parse_line(line, &assets.syntaxes).ok()?;
        let spans: Vec<Span<'static>> =
            HighlightIterator::new(&mut self.styles, &ops, line, &assets.styler)
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
    // The theme's colour, made readable on the terminal's background where it is not (a
    // theme's comments often are not).
    // A theme has a few dozen colours: each is worked out once.
    type Rgb = (u8, u8, u8);
    static DRAWN: OnceLock<Mutex<HashMap<Rgb, Rgb>>> = OnceLock::new();
    let theirs = (fg.r, fg.g, fg.b);
    let (r, g, b) = match crate::theme::palette().background {
        Some(background) => *DRAWN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(theirs)
            .or_insert_with(|| crate::theme::readable(theirs, background, 4.5)),
        None => theirs,
    };
    let mut out = Style::default().fg(Color::Rgb(r, g, b));
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
