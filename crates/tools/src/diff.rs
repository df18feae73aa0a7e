//! Unified diffs of file changes, for the UI (the model gets a short summary).

use similar::{ChangeTag, TextDiff};

pub(crate) struct Diff {
    pub unified: String,
    pub added: usize,
    pub removed: usize,
}

pub(crate) fn diff(old: &str, new: &str, path: &str) -> Diff {
    let diff = TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    Diff {
        unified,
        added,
        removed,
    }
}
