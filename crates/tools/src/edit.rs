//! `edit`: exact replacements in one file, all or none.

use std::io::Read;
use std::path::PathBuf;

use agent_core::{Concurrency, Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::args::required_str;
use crate::diff::diff;
use crate::edit_match::{Found, Miss, Region, find, line_of};
use crate::line_endings::Text;
use crate::paths::{
    FileLocks, atomic_write, display, io_error, open_regular, refuse_special, resolve,
};

pub struct EditTool {
    cwd: PathBuf,
    locks: FileLocks,
}

impl EditTool {
    pub(crate) fn new(cwd: PathBuf, locks: FileLocks) -> Self {
        Self { cwd, locks }
    }
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn view(&self) -> ToolView {
        ToolView::Diff
    }

    fn description(&self) -> &str {
        "Edit a file by replacing text. Each `old_text` must occur exactly once in the file \
         (include enough surrounding lines to make it unique) and edits must not overlap; \
         either all edits apply or none. Copy `old_text` from a fresh `read`; small differences \
         in trailing spaces, tabs, quotes and dashes are tolerated. Line endings and a BOM are \
         kept."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit"},
                "edits": {
                    "type": "array",
                    "description": "Replacements, applied together",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_text": {"type": "string", "description": "Text to replace, exactly as in the file"},
                            "new_text": {"type": "string", "description": "Replacement text"}
                        },
                        "required": ["old_text", "new_text"]
                    }
                }
            },
            "required": ["path", "edits"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    /// Plan mode offers nothing that changes files (`Effect::Writes`).
    fn offered_in(&self, mode: agent_core::Mode) -> bool {
        mode != agent_core::Mode::Plan
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = resolve(&self.cwd, required_str(&args, "path")?);
        let shown = display(&self.cwd, &path);
        let edits: Vec<(String, String)> = args["edits"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|e| {
                        let text =
                            |k: &str| e[k].as_str().unwrap_or_default().replace("\r\n", "\n");
                        (text("old_text"), text("new_text"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if edits.is_empty() {
            return Err(ToolError("`edits` is empty: nothing to change.".into()));
        }
        let _guard = self.locks.lock(&path).await;
        refuse_special(&path, &shown, "edited").map_err(ToolError)?;
        let bytes = {
            let (path, shown) = (path.clone(), shown.clone());
            tokio::task::spawn_blocking(move || {
                let mut bytes = Vec::new();
                open_regular(&path, &shown, "edit")?
                    .read_to_end(&mut bytes)
                    .map_err(|e| io_error("edit", &shown, &e))?;
                Ok::<_, String>(bytes)
            })
            .await
            .map_err(|e| ToolError(format!("edit failed: {e}")))?
            .map_err(ToolError)?
        };
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError(format!(
                "{shown} is not valid UTF-8 text; it cannot be edited safely."
            ))
        })?;
        let edited = apply(&text, &edits, &shown)?;
        drop(text);
        let change = diff(&edited.before, &edited.after, &shown);
        let (tolerant, first_line) = (edited.tolerant.clone(), edited.first_line);
        let (target, bytes) = (path.clone(), edited.file_bytes());
        tokio::task::spawn_blocking(move || atomic_write(&target, &bytes))
            .await
            .map_err(|e| ToolError(format!("edit failed: {e}")))?
            .map_err(|e| ToolError(io_error("write", &shown, &e)))?;
        let mut summary = format!(
            "Edited {shown}: {} replacement{}, +{} -{} lines.",
            edits.len(),
            if edits.len() == 1 { "" } else { "s" },
            change.added,
            change.removed
        );
        if !tolerant.is_empty() {
            let which: Vec<String> = tolerant.iter().map(|i| (i + 1).to_string()).collect();
            summary.push_str(&format!(
                " Edit {} matched only after normalising whitespace, quotes or dashes.",
                which.join(", ")
            ));
        }
        Ok(ToolOutput {
            details: Some(json!({
                "path": shown, "diff": change.unified, "added": change.added,
                "removed": change.removed, "first_line": first_line,
            })),
            ..ToolOutput::text(summary)
        })
    }
}

struct Edited {
    /// Content without BOM, with LF endings, before and after: what the diff shows.
    before: String,
    after: String,
    /// The file as read, and what replaces what in its normalized text.
    text: Text,
    replacements: Vec<(std::ops::Range<usize>, String)>,
    /// Indexes of edits that needed the tolerant match.
    tolerant: Vec<usize>,
    first_line: usize,
}

impl Edited {
    /// What goes to disk: the BOM, and every line the edits did not touch byte for byte
    /// with its own ending; new lines with the file's usual ending (`line_endings`).
    fn file_bytes(self) -> Vec<u8> {
        let edits: Vec<(std::ops::Range<usize>, &str)> = self
            .replacements
            .iter()
            .map(|(range, new)| (range.clone(), new.as_str()))
            .collect();
        self.text.replace(&edits)
    }
}

/// Applies every edit to `original` or explains why none can be. `old_text` is matched with
/// LF endings whatever the file's are (a CRLF file, a mixed one).
fn apply(original: &str, edits: &[(String, String)], shown: &str) -> Result<Edited, String> {
    let text = Text::new(original);
    let content = text.normalized.clone();

    let mut ranges = Vec::with_capacity(edits.len());
    let mut tolerant = Vec::new();
    for (i, (old, new)) in edits.iter().enumerate() {
        let label = if edits.len() == 1 {
            String::new()
        } else {
            format!("Edit {}: ", i + 1)
        };
        if old.is_empty() {
            return Err(format!(
                "{label}`old_text` is empty; use `write` to create a file."
            ));
        }
        if old == new {
            return Err(format!(
                "{label}`old_text` and `new_text` are the same; nothing to change."
            ));
        }
        match find(&content, old) {
            Ok(found) => {
                if matches!(found, Found::Tolerant(_)) {
                    tolerant.push(i);
                }
                ranges.push((found.range(), i));
            }
            Err(Miss::Ambiguous(lines)) => {
                let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
                return Err(format!(
                    "{label}`old_text` occurs {} times in {shown} (at lines {}); include more \
                     surrounding lines to make it unique. No edit was applied.",
                    lines.len(),
                    lines.join(", ")
                ));
            }
            Err(Miss::NotFound(region)) => {
                let mut message =
                    format!("{label}`old_text` was not found in {shown}. No edit was applied.");
                match region {
                    Some(region) => message.push_str(&format!(
                        " The closest region is:\n{}\nCopy the text exactly from there.",
                        excerpt(&content, &region)
                    )),
                    None => {
                        message.push_str(" No line of it occurs in the file; read the file again.")
                    }
                }
                return Err(message);
            }
        }
    }
    ranges.sort_by_key(|(r, _)| r.start);
    for pair in ranges.windows(2) {
        let ((a, i), (b, j)) = (&pair[0], &pair[1]);
        if b.start < a.end {
            return Err(format!(
                "Edits {} and {} overlap in {shown}; merge them into one. No edit was applied.",
                i.min(j) + 1,
                i.max(j) + 1
            ));
        }
    }
    let first_line = line_of(&content, ranges[0].0.start);
    let mut after = content.clone();
    for (range, i) in ranges.iter().rev() {
        after.replace_range(range.clone(), &edits[*i].1);
    }
    let replacements = ranges
        .iter()
        .map(|(range, i)| (range.clone(), edits[*i].1.clone()))
        .collect();
    Ok(Edited {
        before: content,
        after,
        text,
        replacements,
        tolerant,
        first_line,
    })
}

/// The region with two lines of context, numbered like `read` numbers lines.
fn excerpt(content: &str, region: &Region) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let first = region.first.saturating_sub(2);
    let last = (region.last + 2).min(lines.len().saturating_sub(1));
    (first..=last)
        .map(|i| format!("{:>6}\t{}", i + 1, lines[i]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> (String, String) {
        (old.to_string(), new.to_string())
    }

    #[test]
    fn keeps_crlf_and_bom() {
        let original = "\u{feff}a\r\nb\r\nc\r\n";
        let done = apply(original, &[edit("b\n", "B\nB2\n")], "f").unwrap();
        assert_eq!(
            done.file_bytes(),
            "\u{feff}a\r\nB\r\nB2\r\nc\r\n".as_bytes()
        );
    }

    #[test]
    fn mixed_line_endings_are_left_alone() {
        let done = apply("a\r\nb\nc\n", &[edit("b", "B")], "f").unwrap();
        assert_eq!(done.file_bytes(), b"a\r\nB\nc\n");
        // LF `old_text` across a CRLF line of a mixed file matches, and each line keeps its
        // own ending.
        let done = apply("a\r\nb\r\nc\n", &[edit("a\nb", "A\nB")], "f").unwrap();
        assert_eq!(done.file_bytes(), b"A\r\nB\r\nc\n");
    }

    #[test]
    fn applies_several_edits_or_none() {
        let done = apply(
            "one two three",
            &[edit("one", "1"), edit("three", "3")],
            "f",
        )
        .unwrap();
        assert_eq!(done.file_bytes(), b"1 two 3");
        let err = apply("one two three", &[edit("one", "1"), edit("four", "4")], "f")
            .err()
            .unwrap();
        assert!(err.starts_with("Edit 2: `old_text` was not found"), "{err}");
    }

    #[test]
    fn rejects_overlaps_and_ambiguity() {
        let err = apply("abcdef", &[edit("abc", "x"), edit("cde", "y")], "f")
            .err()
            .unwrap();
        assert!(err.contains("overlap"), "{err}");
        let err = apply("x\nx\n", &[edit("x", "y")], "f").err().unwrap();
        assert!(
            err.contains("occurs 2 times") && err.contains("lines 1, 2"),
            "{err}"
        );
    }

    #[test]
    fn a_miss_shows_the_closest_region_with_line_numbers() {
        let content = "fn a() {}\nfn b() {\n    let x = 1;\n    x + 1\n}\nfn c() {}\n";
        let err = apply(
            content,
            &[edit("fn b() {\n    let x = 2;\n    x + 1\n}", "")],
            "f",
        )
        .err()
        .unwrap();
        assert!(err.contains("     3\t    let x = 1;"), "{err}");
        assert!(err.contains("     2\tfn b() {"), "{err}");
    }
}
