//! Spill directories: where a session's large tool outputs go, beside its file, and their
//! removal once the session file is gone.
//!
//! `sessions/<cwd>/<name>.jsonl` spills into `sessions/<cwd>/<name>.spill/`. This module is the
//! one place that decides that name.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::Home;

/// The spill directory of a session file: its path with `.jsonl` replaced by `.spill`.
pub fn spill_dir(session_file: &Path) -> PathBuf {
    session_file.with_extension("spill")
}

/// Creates the spill directory of `session_file` (private, like every directory under
/// `sessions/`) and returns its path. The session file's directory must exist.
pub fn create_spill_dir(session_file: &Path) -> io::Result<PathBuf> {
    let dir = spill_dir(session_file);
    let parent = dir.parent().unwrap_or(Path::new("."));
    platform::fs::create_private_dirs(parent, &dir)?;
    Ok(dir)
}

/// Removes the `*.spill` directories of `cwd`'s sessions whose session file no longer exists;
/// returns how many it removed. Only real directories are removed, and symbolic links inside
/// them are removed as links, never followed: nothing outside the sessions directory is
/// touched.
pub fn prune_orphan_spills(home: &Home, cwd: &Path) -> usize {
    let Ok(entries) = fs::read_dir(home.sessions_dir_for(cwd)) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let path = entry.path();
            path.extension().is_some_and(|e| e == "spill")
                // `file_type` does not follow a symbolic link: a link named *.spill is left.
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && fs::symlink_metadata(path.with_extension("jsonl")).is_err()
                // remove_dir_all removes links inside as links, without following them.
                && fs::remove_dir_all(&path).is_ok()
        })
        .count()
}
