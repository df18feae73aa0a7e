//! Colours: one palette per kind of terminal background, chosen once at start.
//!
//! The palettes use xterm's 256 colours above the first 16: unlike the first 16 (which every
//! terminal theme redefines — ANSI 7 is near white on a dark theme and on a light one alike),
//! their RGB values are fixed, so the contrast of every pair can be computed and is held above
//! 4.5:1 (3:1 for dimmed text) by a test. Code is highlighted with a syntect theme made for
//! the same background, each colour brought to readable contrast if the theme's is not.
//!
//! The background is what the config says (`theme = "dark" | "light"`), else what the
//! terminal answers to an OSC 11 query (`terminal-colorsaurus`, a short timeout; not while
//! typed-ahead keys wait), else `COLORFGBG`, else dark. `NO_COLOR` (any value) gives a palette without colours: attributes
//! only (bold, dim, reverse).

use std::sync::OnceLock;
use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};

/// What the text is drawn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    Dark,
    Light,
}

/// The config's `theme`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ThemeChoice {
    /// Ask the terminal, then `COLORFGBG`; dark when neither says.
    #[default]
    Auto,
    Dark,
    Light,
}

/// The styles the UI draws with, by what they mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Palette {
    /// Secondary text: hints, status line, details, thinking.
    pub dim: Style,
    /// Borders, titles, the selected marker, links to act on.
    pub accent: Style,
    pub error: Style,
    /// Something running, waiting or asking.
    pub warning: Style,
    pub success: Style,
    /// Follow-ups, links.
    pub info: Style,
    pub heading: Style,
    /// Inline code.
    pub code: Style,
    /// A tool call's command or path: read first, so brighter than `dim`.
    pub detail: Style,
    /// The selected row of a list.
    pub selected: Style,
    /// A banner line (scrolled up: how to get back).
    pub banner: Style,
    /// The syntect theme for code blocks; `None`: code is not coloured.
    pub syntax: Option<&'static str>,
    /// What the colours are chosen against; `None`: no colours.
    pub background: Option<Background>,
}

const fn fg(index: u8) -> Style {
    Style::new().fg(Color::Indexed(index))
}

/// On a dark background (black to #282c34).
pub const DARK: Palette = Palette {
    dim: fg(245),
    accent: fg(80),
    error: fg(210),
    warning: fg(221),
    success: fg(114),
    info: fg(111),
    heading: fg(213),
    code: fg(80),
    detail: fg(252),
    selected: Style::new().fg(Color::Indexed(16)).bg(Color::Indexed(80)),
    banner: Style::new().fg(Color::Indexed(16)).bg(Color::Indexed(221)),
    syntax: Some("base16-ocean.dark"),
    background: Some(Background::Dark),
};

/// On a light background (white to solarized's #fdf6e3).
pub const LIGHT: Palette = Palette {
    dim: fg(243),
    accent: fg(24),
    error: fg(124),
    warning: fg(94),
    success: fg(22),
    info: fg(25),
    heading: fg(90),
    code: fg(24),
    detail: fg(238),
    selected: Style::new().fg(Color::Indexed(231)).bg(Color::Indexed(24)),
    banner: Style::new().fg(Color::Indexed(16)).bg(Color::Indexed(221)),
    syntax: Some("InspiredGitHub"),
    background: Some(Background::Light),
};

/// `NO_COLOR`: attributes only.
pub const PLAIN: Palette = Palette {
    dim: Style::new().add_modifier(Modifier::DIM),
    accent: Style::new(),
    error: Style::new().add_modifier(Modifier::BOLD),
    warning: Style::new(),
    success: Style::new(),
    info: Style::new(),
    heading: Style::new().add_modifier(Modifier::BOLD),
    code: Style::new(),
    detail: Style::new(),
    selected: Style::new().add_modifier(Modifier::REVERSED),
    banner: Style::new().add_modifier(Modifier::REVERSED),
    syntax: None,
    background: None,
};

static CURRENT: OnceLock<&'static Palette> = OnceLock::new();

/// The palette in use: the one [`init`] chose, dark before (tests, snapshots).
pub fn palette() -> &'static Palette {
    CURRENT.get().copied().unwrap_or(&DARK)
}

/// How long the terminal may take to say its background: a terminal that cannot answer is
/// recognised at once (it answers the device-attributes query sent after it); this bounds a
/// slow link.
const QUERY_TIMEOUT: Duration = Duration::from_millis(400);

/// Chooses the palette for this run, before the UI draws (later calls change nothing).
pub fn init(choice: ThemeChoice) -> &'static Palette {
    if let Some(chosen) = CURRENT.get() {
        return chosen;
    }
    let palette = choose(
        choice,
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        std::env::var("COLORFGBG").ok().as_deref(),
        ask_terminal,
    );
    CURRENT.get_or_init(|| palette)
}

/// The palette for `choice`, `NO_COLOR`, `COLORFGBG` and the terminal's answer (asked only
/// when needed).
fn choose(
    choice: ThemeChoice,
    no_color: bool,
    colorfgbg: Option<&str>,
    ask: impl FnOnce() -> Option<Background>,
) -> &'static Palette {
    if no_color {
        return &PLAIN;
    }
    let background = match choice {
        ThemeChoice::Dark => Background::Dark,
        ThemeChoice::Light => Background::Light,
        ThemeChoice::Auto => ask()
            .or_else(|| colorfgbg.and_then(from_colorfgbg))
            .unwrap_or(Background::Dark),
    };
    match background {
        Background::Dark => &DARK,
        Background::Light => &LIGHT,
    }
}

/// `COLORFGBG` (`fg;bg`, set by rxvt, Konsole and others): the background's ANSI index; 7
/// and 15 (white) and 9-14 bright colours are light backgrounds.
fn from_colorfgbg(value: &str) -> Option<Background> {
    let bg: u8 = value.rsplit(';').next()?.trim().parse().ok()?;
    Some(match bg {
        7 | 9..=15 => Background::Light,
        _ => Background::Dark,
    })
}

/// The terminal's own answer to an OSC 11 query, if it gives one in time. Not asked while
/// keys typed before start-up wait to be read: the query reads the terminal until its answer
/// and would take them (they are the user's first prompt).
fn ask_terminal() -> Option<Background> {
    if platform::terminal::pending_input() > 0 {
        return None;
    }
    let mut options = terminal_colorsaurus::QueryOptions::default();
    options.timeout = QUERY_TIMEOUT;
    match terminal_colorsaurus::theme_mode(options).ok()? {
        terminal_colorsaurus::ThemeMode::Dark => Some(Background::Dark),
        terminal_colorsaurus::ThemeMode::Light => Some(Background::Light),
    }
}

/// The RGB of an xterm-256 colour (16-255: fixed by the standard palette); `None` for the
/// first 16, which each terminal theme defines.
pub fn xterm_rgb(index: u8) -> Option<(u8, u8, u8)> {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    match index {
        0..=15 => None,
        16..=231 => {
            let i = index - 16;
            Some((
                LEVELS[usize::from(i / 36)],
                LEVELS[usize::from(i / 6 % 6)],
                LEVELS[usize::from(i % 6)],
            ))
        }
        232..=255 => {
            let v = 8 + 10 * (index - 232);
            Some((v, v, v))
        }
    }
}

/// WCAG relative luminance.
fn luminance((r, g, b): (u8, u8, u8)) -> f64 {
    let channel = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The backgrounds a palette is chosen for: the darkest and lightest of the usual terminal
/// themes of that kind.
pub fn backgrounds(background: Background) -> &'static [(u8, u8, u8)] {
    match background {
        Background::Dark => &[(0, 0, 0), (0x1e, 0x1e, 0x1e), (0x28, 0x2c, 0x34)],
        Background::Light => &[(0xff, 0xff, 0xff), (0xfd, 0xf6, 0xe3), (0xf5, 0xf5, 0xf5)],
    }
}

/// `rgb`, moved toward white (dark background) or black (light) until it reads on every
/// background of that kind with at least `ratio`: code themes have colours (comments, above
/// all) that do not.
pub fn readable(rgb: (u8, u8, u8), background: Background, ratio: f64) -> (u8, u8, u8) {
    let target: f64 = match background {
        Background::Dark => 255.0,
        Background::Light => 0.0,
    };
    let worst = |c: (u8, u8, u8)| {
        backgrounds(background)
            .iter()
            .map(|bg| contrast(c, *bg))
            .fold(f64::INFINITY, f64::min)
    };
    let mut color = rgb;
    for step in 1..=20 {
        if worst(color) >= ratio {
            break;
        }
        let mix = |c: u8| (f64::from(c) + (target - f64::from(c)) * f64::from(step) / 20.0) as u8;
        color = (mix(rgb.0), mix(rgb.1), mix(rgb.2));
    }
    color
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rgb(color: Option<Color>) -> Option<(u8, u8, u8)> {
        match color? {
            Color::Indexed(i) => xterm_rgb(i),
            Color::Rgb(r, g, b) => Some((r, g, b)),
            other => panic!("{other:?}: a colour whose RGB the terminal decides"),
        }
    }

    /// Every foreground of both palettes, on every background of its kind (or on its own
    /// background, for a style that sets one), reads at 4.5:1, dimmed text at 3:1.
    #[test]
    fn every_colour_pair_of_both_palettes_is_readable() {
        for palette in [&DARK, &LIGHT] {
            let background = palette.background.unwrap();
            let styles = [
                ("dim", palette.dim, 3.0),
                ("accent", palette.accent, 4.5),
                ("error", palette.error, 4.5),
                ("warning", palette.warning, 4.5),
                ("success", palette.success, 4.5),
                ("info", palette.info, 4.5),
                ("heading", palette.heading, 4.5),
                ("code", palette.code, 4.5),
                ("detail", palette.detail, 4.5),
                ("selected", palette.selected, 4.5),
                ("banner", palette.banner, 4.5),
            ];
            for (name, style, least) in styles {
                let fg = rgb(style.fg).unwrap_or_else(|| panic!("{name} has no colour"));
                let on: Vec<(u8, u8, u8)> = match rgb(style.bg) {
                    Some(bg) => vec![bg],
                    None => backgrounds(background).to_vec(),
                };
                for bg in on {
                    let ratio = contrast(fg, bg);
                    assert!(
                        ratio >= least,
                        "{background:?} {name}: {fg:?} on {bg:?} is {ratio:.2}:1, below {least}:1"
                    );
                }
            }
        }
    }

    /// Code: every colour of each palette's syntect theme, as drawn (after [`readable`]).
    #[test]
    fn every_code_colour_of_both_themes_is_readable() {
        let themes = syntect::highlighting::ThemeSet::load_defaults();
        for palette in [&DARK, &LIGHT] {
            let background = palette.background.unwrap();
            let theme = &themes.themes[palette.syntax.unwrap()];
            let colours = theme
                .settings
                .foreground
                .into_iter()
                .chain(theme.scopes.iter().filter_map(|s| s.style.foreground));
            let mut checked = 0;
            for c in colours {
                let drawn = readable((c.r, c.g, c.b), background, 4.5);
                for bg in backgrounds(background) {
                    assert!(
                        contrast(drawn, *bg) >= 4.5,
                        "{background:?}: {drawn:?} on {bg:?}"
                    );
                }
                checked += 1;
            }
            assert!(checked > 10, "{checked} colours");
        }
        // The issue this fixes: the dark theme's plain code on white was about 1.7:1.
        let plain = themes.themes["base16-ocean.dark"]
            .settings
            .foreground
            .unwrap();
        assert!(contrast((plain.r, plain.g, plain.b), (255, 255, 255)) < 2.0);
    }

    #[test]
    fn the_palette_follows_no_color_the_config_the_terminal_then_colorfgbg() {
        let never = || -> Option<Background> { panic!("the terminal is not asked") };
        assert_eq!(choose(ThemeChoice::Light, true, None, never), &PLAIN);
        assert_eq!(
            choose(ThemeChoice::Light, false, Some("15;0"), never),
            &LIGHT
        );
        assert_eq!(choose(ThemeChoice::Dark, false, Some("0;15"), never), &DARK);
        let light = || Some(Background::Light);
        assert_eq!(
            choose(ThemeChoice::Auto, false, Some("15;0"), light),
            &LIGHT
        );
        let silent = || None;
        assert_eq!(
            choose(ThemeChoice::Auto, false, Some("0;15"), silent),
            &LIGHT
        );
        assert_eq!(
            choose(ThemeChoice::Auto, false, Some("15;default;0"), silent),
            &DARK
        );
        assert_eq!(choose(ThemeChoice::Auto, false, None, silent), &DARK);
        assert_eq!(
            choose(ThemeChoice::Auto, false, Some("junk"), silent),
            &DARK
        );
    }

    #[test]
    fn xterm_colours_are_the_standard_ones() {
        assert_eq!(xterm_rgb(16), Some((0, 0, 0)));
        assert_eq!(xterm_rgb(80), Some((95, 215, 215)));
        assert_eq!(xterm_rgb(231), Some((255, 255, 255)));
        assert_eq!(xterm_rgb(232), Some((8, 8, 8)));
        assert_eq!(xterm_rgb(255), Some((238, 238, 238)));
        assert_eq!(xterm_rgb(7), None);
    }
}
