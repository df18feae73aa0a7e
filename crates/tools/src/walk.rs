//! The gitignore-aware walk `find` and `ls` share.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

/// Entries under `root` (not `root` itself), at most `max_depth` deep, skipping `.git`,
/// hidden entries and what .gitignore excludes; sorted by path. `keep` filters.
pub(crate) fn walk(
    root: &Path,
    max_depth: Option<usize>,
    cancel: &CancellationToken,
    mut keep: impl FnMut(&Path, bool) -> bool,
) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .max_depth(max_depth)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    let mut out = Vec::new();
    for entry in builder.build() {
        if cancel.is_cancelled() {
            return Err("Aborted.".into());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if keep(entry.path(), is_dir) {
            out.push((entry.into_path(), is_dir));
        }
    }
    Ok(out)
}
