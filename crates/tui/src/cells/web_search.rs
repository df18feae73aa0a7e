//! A search the provider ran itself (`--search`): its query, then the pages it found or the
//! answer cited, a line each.

use ratatui::style::Modifier;
use ratatui::text::Line;

use super::prefixed;

/// Most pages listed; the rest are counted.
const SHOWN: usize = 8;

pub fn lines(search: &llm::WebSearch, width: usize) -> Vec<Line<'static>> {
    let palette = crate::theme::palette();
    let count = crate::words::count(search.sources.len(), "page");
    let head = match (&search.error, search.query.is_empty()) {
        (Some(error), _) => format!("Web search \"{}\" failed: {error}", search.query),
        (None, true) => format!("Sources cited ({count})"),
        (None, false) => format!("Searched the web: \"{}\" ({count})", search.query),
    };
    let mut out = prefixed(
        &head,
        "⌕ ",
        palette.accent.add_modifier(Modifier::BOLD),
        palette.accent,
        width,
    );
    for source in search.sources.iter().take(SHOWN) {
        let line = if source.title.is_empty() {
            source.url.clone()
        } else {
            format!("{} — {}", source.title, source.url)
        };
        out.extend(prefixed(&line, "  · ", palette.dim, palette.dim, width));
    }
    if search.sources.len() > SHOWN {
        let more = format!("{} more", search.sources.len() - SHOWN);
        out.extend(prefixed(&more, "  … ", palette.dim, palette.dim, width));
    }
    out
}
