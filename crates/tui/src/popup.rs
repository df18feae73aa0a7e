//! Completion popups: slash commands, and `@` file mentions with fuzzy matching.

use crate::action::ChoiceKind;
use crate::commands;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Popup {
    /// Commands starting with the typed prefix: (name, description).
    Commands {
        matches: Vec<(String, String)>,
        selected: usize,
    },
    /// Files matching the word after `@`.
    Files {
        matches: Vec<String>,
        selected: usize,
    },
    /// A list to pick from: (label, description). Typing filters it.
    Choice {
        kind: ChoiceKind,
        items: Vec<(String, String)>,
        /// Index into `shown`.
        selected: usize,
        /// What was typed to narrow the list.
        filter: String,
        /// The indexes of `items` the filter keeps, best match first.
        shown: Vec<usize>,
    },
    /// An API key being typed or pasted for `provider` (never drawn, only its length), before
    /// switching to the model `/model` offered at `choice`.
    Key {
        ask: KeyAsk,
        choice: usize,
        typed: String,
        /// What the last check said (an error), or that one is under way.
        message: Option<String>,
    },
}

/// What the key popup says: whose key, the variable that would hold it, the file it goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAsk {
    pub provider: String,
    pub env: String,
    pub file: String,
}

impl Popup {
    /// The popup for the editor text (cursor at its end), if any.
    pub fn for_text(text: &str, files: &[String]) -> Option<Self> {
        Self::for_text_with(text, files, &[])
    }

    /// Like [`for_text`](Self::for_text), offering `extra` commands (prompt templates,
    /// skills: name and description) after the built-in ones.
    pub fn for_text_with(text: &str, files: &[String], extra: &[(String, String)]) -> Option<Self> {
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let matches = commands::matching(text, extra);
            return (!matches.is_empty()).then_some(Popup::Commands {
                matches,
                selected: 0,
            });
        }
        let word = text.rsplit(char::is_whitespace).next().unwrap_or_default();
        let query = word.strip_prefix('@')?;
        let matches = fuzzy(query, files, 8);
        (!matches.is_empty()).then_some(Popup::Files {
            matches,
            selected: 0,
        })
    }

    /// A list to pick from, everything shown, `selected` (an index of `items`) selected.
    pub fn choice(kind: ChoiceKind, items: Vec<(String, String)>, selected: usize) -> Self {
        let shown = (0..items.len()).collect();
        Popup::Choice {
            kind,
            selected: selected.min(items.len().saturating_sub(1)),
            items,
            filter: String::new(),
            shown,
        }
    }

    /// The index in `items` of the selected choice (`None`: the filter keeps nothing).
    pub fn chosen(&self) -> Option<usize> {
        match self {
            Popup::Choice {
                shown, selected, ..
            } => shown.get(*selected).copied(),
            _ => None,
        }
    }

    /// Narrows a choice list to the items matching `filter` (fuzzy, like the `@` picker),
    /// keeping the selected item selected while it still matches.
    pub fn set_filter(&mut self, text: String) {
        let Popup::Choice {
            items,
            selected,
            filter,
            shown,
            ..
        } = self
        else {
            return;
        };
        let before = shown.get(*selected).copied();
        let query: Vec<char> = text.to_lowercase().chars().collect();
        let mut scored: Vec<(i64, usize)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, (label, what))| {
                score(&query, label)
                    .or_else(|| score(&query, &format!("{label} {what}")).map(|s| s - 100))
                    .map(|s| (s, i))
            })
            .collect();
        // An empty filter keeps the list's own order; otherwise the best match first, the
        // list's order between equals.
        if !query.is_empty() {
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        *shown = scored.into_iter().map(|(_, i)| i).collect();
        *selected = before
            .and_then(|b| shown.iter().position(|&i| i == b))
            .filter(|_| query.is_empty())
            .unwrap_or(0);
        *filter = text;
    }

    /// What was typed into a choice list or a key popup; `None` for other popups.
    pub fn typed(&self) -> Option<&str> {
        match self {
            Popup::Choice { filter, .. } => Some(filter),
            Popup::Key { typed, .. } => Some(typed),
            _ => None,
        }
    }

    /// Edits what is typed into a choice list (its filter) or a key popup (the key):
    /// `Some(c)` adds a character, `None` takes the last one back.
    pub fn edit_typed(&mut self, c: Option<char>) {
        match self {
            Popup::Choice { filter, .. } => {
                let mut text = filter.clone();
                match c {
                    Some(c) => text.push(c),
                    None => {
                        text.pop();
                    }
                }
                self.set_filter(text);
            }
            Popup::Key { typed, message, .. } => {
                match c {
                    Some(c) => typed.push(c),
                    None => {
                        typed.pop();
                    }
                }
                *message = None;
            }
            _ => {}
        }
    }

    /// The line on the popup's top border: what is being asked, and what Enter does.
    pub fn title(&self) -> Option<String> {
        match self {
            Popup::Choice { kind, filter, .. } => {
                let base = choice_title(*kind);
                Some(if filter.is_empty() {
                    base.to_string()
                } else {
                    // What was typed, right after the question (the hint to type goes).
                    let (question, keys) = base.split_once(" · ").unwrap_or((base, ""));
                    let keys = keys.replace("type to filter · ", "");
                    format!("{question} · filter: {filter} · {keys}")
                })
            }
            Popup::Key { ask, .. } => Some(format!(
                " {} needs an API key · paste it, Enter checks and saves it · Esc cancels ",
                ask.provider
            )),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Popup::Commands { matches, .. } => matches.len(),
            Popup::Files { matches, .. } => matches.len(),
            Popup::Choice { shown, .. } => shown.len(),
            Popup::Key { .. } => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn selected(&self) -> usize {
        match self {
            Popup::Commands { selected, .. }
            | Popup::Files { selected, .. }
            | Popup::Choice { selected, .. } => *selected,
            Popup::Key { .. } => 0,
        }
    }

    pub fn move_by(&mut self, delta: isize) {
        let len = self.len() as isize;
        let (Popup::Commands { selected, .. }
        | Popup::Files { selected, .. }
        | Popup::Choice { selected, .. }) = self
        else {
            return;
        };
        *selected = ((*selected as isize + delta).rem_euclid(len.max(1))) as usize;
    }

    /// Moves by a page, stopping at either end.
    pub fn page_by(&mut self, delta: isize) {
        let last = self.len().saturating_sub(1) as isize;
        let (Popup::Commands { selected, .. }
        | Popup::Files { selected, .. }
        | Popup::Choice { selected, .. }) = self
        else {
            return;
        };
        *selected = (*selected as isize + delta).clamp(0, last) as usize;
    }

    /// The editor text after accepting the selection (a choice leaves it as it is).
    pub fn accept(&self, text: &str) -> String {
        match self {
            Popup::Choice { .. } | Popup::Key { .. } => text.to_string(),
            // A space after it: what follows are the arguments.
            Popup::Commands { matches, selected } => format!("{} ", matches[*selected].0),
            Popup::Files { matches, selected } => {
                let cut = text.rfind('@').unwrap_or(text.len());
                format!("{}@{} ", &text[..cut], matches[*selected])
            }
        }
    }

    /// Rows to show: (label, description).
    pub fn rows(&self) -> Vec<(String, String)> {
        match self {
            Popup::Commands { matches, .. } => matches.clone(),
            Popup::Files { matches, .. } => {
                matches.iter().map(|f| (f.clone(), String::new())).collect()
            }
            Popup::Choice {
                items,
                shown,
                filter,
                ..
            } => {
                if shown.is_empty() {
                    return vec![(
                        format!("nothing matches “{filter}”"),
                        "Backspace widens the list".into(),
                    )];
                }
                shown.iter().map(|&i| items[i].clone()).collect()
            }
            Popup::Key {
                ask,
                typed,
                message,
                ..
            } => {
                let shown = match typed.chars().count() {
                    0 => "key: (nothing yet)".to_string(),
                    n => format!("key: {n} characters (not shown)"),
                };
                let mut rows = vec![
                    (shown, String::new()),
                    (
                        format!(
                            "It is saved in {} (mode 0600); {} in the environment works too.",
                            ask.file, ask.env
                        ),
                        String::new(),
                    ),
                ];
                if let Some(message) = message {
                    rows.push((message.clone(), String::new()));
                }
                rows
            }
        }
    }
}

/// What a choice list asks, and what Enter does (typing filters every list).
fn choice_title(kind: ChoiceKind) -> &'static str {
    match kind {
        ChoiceKind::Model => {
            " Switch to which model? · type to filter · Enter switches · Esc keeps this one "
        }
        ChoiceKind::Thinking => " How much thinking? · Enter sets it ",
        ChoiceKind::Session => " Resume which session? · type to filter · Enter opens it ",
        ChoiceKind::Rule => " Remembered rules · Enter revokes the one selected ",
        ChoiceKind::Rewind => " Rewind to just before which message? · Enter picks ",
        ChoiceKind::RewindScope | ChoiceKind::TreeScope => " What to restore? · Enter does it ",
        ChoiceKind::Tree => " The session tree · Enter goes to the selected node ",
        ChoiceKind::Conflict => {
            " Files changed since the agent's checkpoint: restore them anyway? "
        }
        ChoiceKind::Plan => " The plan is ready: what now? · Enter picks · Esc keeps planning ",
    }
}

/// The best `limit` paths containing the query's characters in order; consecutive runs and
/// matches in the file name score higher, shorter paths break ties.
pub fn fuzzy(query: &str, files: &[String], limit: usize) -> Vec<String> {
    let query: Vec<char> = query.to_lowercase().chars().collect();
    let mut scored: Vec<(i64, &String)> = files
        .iter()
        .filter_map(|file| score(&query, file).map(|s| (s, file)))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(_, f)| f.clone())
        .collect()
}

fn score(query: &[char], path: &str) -> Option<i64> {
    let lower: Vec<char> = path.to_lowercase().chars().collect();
    let name_start = lower.iter().rposition(|&c| c == '/').map_or(0, |i| i + 1);
    let (mut qi, mut score, mut previous) = (0usize, 0i64, None::<usize>);
    for (i, c) in lower.iter().enumerate() {
        if qi < query.len() && *c == query[qi] {
            score += 1;
            if previous == Some(i.wrapping_sub(1)) {
                score += 5;
            }
            if i >= name_start {
                score += 3;
            }
            previous = Some(i);
            qi += 1;
        }
    }
    (qi == query.len()).then_some(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_filter_by_prefix() {
        let popup = Popup::for_text("/c", &[]).unwrap();
        assert_eq!(
            popup
                .rows()
                .iter()
                .map(|r| r.0.as_str())
                .collect::<Vec<_>>(),
            ["/compact", "/copy", "/clear"]
        );
        assert_eq!(popup.accept("/c"), "/compact ");
        assert!(Popup::for_text("/copy now", &[]).is_none());
        assert!(Popup::for_text("/zzz", &[]).is_none());
    }

    #[test]
    fn files_match_fuzzily_and_complete_the_word() {
        let files: Vec<String> = ["src/main.rs", "crates/tui/src/markdown.rs", "README.md"]
            .map(String::from)
            .to_vec();
        let popup = Popup::for_text("look at @mark", &files).unwrap();
        assert_eq!(popup.rows()[0].0, "crates/tui/src/markdown.rs");
        assert_eq!(
            popup.accept("look at @mark"),
            "look at @crates/tui/src/markdown.rs "
        );
        assert_eq!(fuzzy("main", &files, 5), ["src/main.rs"]);
    }
}
