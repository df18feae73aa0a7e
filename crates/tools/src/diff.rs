//! Unified diffs of file changes, for the UI (the model gets a short summary).
//!
//! Only the changed middle is diffed: the common head and tail are skipped first, so a
//! one-line edit of a 10 MB file costs a few milliseconds, not a full line diff.

use std::fmt::Write;

use similar::{ChangeTag, TextDiff};

const CONTEXT: usize = 3;

pub(crate) struct Diff {
    pub unified: String,
    pub added: usize,
    pub removed: usize,
}

pub(crate) fn diff(old: &str, new: &str, path: &str) -> Diff {
    let (head_lines, old_mid, new_mid) = changed_middle(old, new);
    let diff = TextDiff::from_lines(old_mid, new_mid);
    let (mut added, mut removed) = (0, 0);
    let mut unified = String::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        if unified.is_empty() {
            let _ = writeln!(unified, "--- a/{path}\n+++ b/{path}");
        }
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            unified,
            "@@ -{},{} +{},{} @@",
            head_lines + old_range.start + 1,
            old_range.len(),
            head_lines + new_range.start + 1,
            new_range.len()
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Insert => {
                        added += 1;
                        '+'
                    }
                    ChangeTag::Delete => {
                        removed += 1;
                        '-'
                    }
                    ChangeTag::Equal => ' ',
                };
                let line = change.value();
                let _ = write!(unified, "{sign}{line}");
                if !line.ends_with('\n') {
                    unified.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    Diff {
        unified,
        added,
        removed,
    }
}

/// The unified diff of `old` → `new` for a file shown as `path` (what a write or edit would
/// change, for an approval question).
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    diff(old, new, path).unified
}

/// The parts of `old` and `new` between their common leading and trailing lines, keeping
/// `CONTEXT` lines of each; and how many lines precede them.
fn changed_middle<'a>(old: &'a str, new: &'a str) -> (usize, &'a str, &'a str) {
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) {
        prefix -= 1;
    }
    // Back to a line start, then CONTEXT more lines back.
    let mut start = old[..prefix].rfind('\n').map_or(0, |i| i + 1);
    for _ in 0..CONTEXT {
        if start == 0 {
            break;
        }
        start = old[..start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    let max_suffix = old.len().min(new.len()) - start;
    let suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // Forward to a line end, then CONTEXT more lines.
    let mut old_end = old.len() - suffix;
    let mut new_end = new.len() - suffix;
    // The common tail is the same bytes in both, so their char boundaries coincide.
    while !old.is_char_boundary(old_end) {
        old_end += 1;
        new_end += 1;
    }
    for _ in 0..=CONTEXT {
        match old[old_end..].find('\n') {
            Some(i) => {
                old_end += i + 1;
                new_end += i + 1;
            }
            None => {
                old_end = old.len();
                new_end = new.len();
                break;
            }
        }
    }
    let head_lines = old[..start].matches('\n').count();
    (head_lines, &old[start..old_end], &new[start..new_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_hunks_from_the_file_start() {
        let old: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let new = old.replace("50\n", "fifty\n");
        let d = diff(&old, &new, "f");
        assert_eq!((d.added, d.removed), (1, 1));
        assert_eq!(
            d.unified,
            "--- a/f\n+++ b/f\n@@ -47,7 +47,7 @@\n 47\n 48\n 49\n-50\n+fifty\n 51\n 52\n 53\n"
        );
    }

    #[test]
    fn multibyte_changes_cut_on_char_boundaries() {
        let d = diff("prix: 5€\nfin\n", "prix: 5£\nfin\n", "f");
        assert_eq!((d.added, d.removed), (1, 1));
        assert!(
            d.unified.contains("-prix: 5€\n+prix: 5£\n"),
            "{}",
            d.unified
        );
    }

    #[test]
    fn handles_new_files_and_missing_final_newlines() {
        let d = diff("", "a\nb", "f");
        assert_eq!(
            d.unified,
            "--- a/f\n+++ b/f\n@@ -1,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
        );
        assert_eq!(diff("same\n", "same\n", "f").unified, "");
    }
}
