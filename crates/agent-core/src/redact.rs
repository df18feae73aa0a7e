//! Keeps the values of the user's provider keys out of what tools return.
//!
//! A command can find a key where the agent keeps it (its own command line in `/proc`, a
//! config file, an inherited variable); once in a tool's output it would reach the model, the
//! screen and the session file. Every tool result and every partial update passes through
//! [`Redactor::output`] before anything else sees it, so a key value the agent knows is
//! replaced by [`REDACTED`] wherever it appears.

use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use llm::UserContent;
use serde_json::Value;

use crate::ToolOutput;

/// What a key is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not taken for keys: no provider issues one, and replacing them would
/// mangle ordinary output (a test key of "x" would redact every x).
const MIN_SECRET_LEN: usize = 8;

/// The key values to hide. Cheap to clone, and the clones share what they hide: a key the
/// user enters during the session ([`add`](Self::add)) is hidden by the agent's copy too.
#[derive(Clone, Default)]
pub struct Redactor {
    known: Arc<RwLock<Known>>,
}

#[derive(Default)]
struct Known {
    values: Vec<String>,
    matcher: Option<Arc<AhoCorasick>>,
}

impl Redactor {
    /// Hides each of `secrets` of at least eight characters (others are ignored).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let redactor = Self::default();
        redactor.extend(secrets);
        redactor
    }

    /// Hides `secret` from now on (ignored when shorter than eight characters).
    pub fn add(&self, secret: &str) {
        self.extend([secret]);
    }

    fn extend<I, S>(&self, secrets: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        let before = known.values.len();
        known.values.extend(
            secrets
                .into_iter()
                .map(|s| s.as_ref().trim().to_string())
                .filter(|s| s.len() >= MIN_SECRET_LEN),
        );
        known.values.sort();
        known.values.dedup();
        if known.values.len() == before {
            return;
        }
        // Leftmost-longest: a key that contains another is replaced whole.
        known.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&known.values)
            .ok()
            .map(Arc::new);
    }

    fn matcher(&self) -> Option<Arc<AhoCorasick>> {
        self.known
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .matcher
            .clone()
    }

    /// Whether there is anything to hide.
    pub fn is_empty(&self) -> bool {
        self.matcher().is_none()
    }

    /// `text` with every key replaced; `None` when it holds none (nothing to copy).
    pub fn text(&self, text: &str) -> Option<String> {
        let matcher = self.matcher()?;
        if !matcher.is_match(text) {
            return None;
        }
        let replacements = vec![REDACTED; matcher.patterns_len()];
        Some(matcher.replace_all(text, &replacements))
    }

    /// Replaces every key in the output's text and in the strings of its details (the UI
    /// shows those: a command's output, a diff). Returns how many pieces it changed.
    pub fn output(&self, output: &mut ToolOutput) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut changed = 0;
        for content in &mut output.content {
            if let UserContent::Text { text } = content
                && let Some(clean) = self.text(text)
            {
                *text = clean;
                changed += 1;
            }
        }
        if let Some(details) = &mut output.details {
            changed += self.value(details);
        }
        changed
    }

    /// Replaces every key in the strings of `value`; returns how many it changed.
    pub fn json(&self, value: &mut Value) -> usize {
        if self.is_empty() {
            return 0;
        }
        self.value(value)
    }

    fn value(&self, value: &mut Value) -> usize {
        match value {
            Value::String(s) => match self.text(s) {
                Some(clean) => {
                    *s = clean;
                    1
                }
                None => 0,
            },
            Value::Array(items) => items.iter_mut().map(|v| self.value(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.value(v)).sum(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_known_key_is_replaced_in_text_and_details() {
        let redactor = Redactor::new(["sk-live-0123456789", "other-secret-value"]);
        let mut output = ToolOutput::text("a sk-live-0123456789 b other-secret-value");
        output.details = Some(json!({"stdout": ["x sk-live-0123456789"], "code": 0}));
        assert_eq!(redactor.output(&mut output), 2);
        assert_eq!(output.plain_text(), "a [redacted] b [redacted]");
        assert_eq!(
            output.details,
            Some(json!({"stdout": ["x [redacted]"], "code": 0}))
        );
    }

    #[test]
    fn a_key_added_later_is_hidden_by_every_clone() {
        let redactor = Redactor::default();
        let agent_s_copy = redactor.clone();
        assert!(agent_s_copy.is_empty());
        redactor.add("sk-entered-in-the-session");
        assert_eq!(
            agent_s_copy
                .text("key=sk-entered-in-the-session")
                .as_deref(),
            Some("key=[redacted]")
        );
    }

    #[test]
    fn short_values_and_clean_output_are_left_alone() {
        let redactor = Redactor::new(["x", "  "]);
        assert!(redactor.is_empty());
        let redactor = Redactor::new(["sk-live-0123456789"]);
        let mut output = ToolOutput::text("nothing secret here");
        assert_eq!(redactor.output(&mut output), 0);
        assert_eq!(output.plain_text(), "nothing secret here");
    }

    #[test]
    fn a_key_containing_another_is_replaced_whole() {
        let redactor = Redactor::new(["abcdefgh", "abcdefgh-longer-key"]);
        assert_eq!(
            redactor.text("abcdefgh-longer-key").as_deref(),
            Some("[redacted]")
        );
    }
}
