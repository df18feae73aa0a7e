//! Keeping transcripts to their owner (private directories and files: `platform::fs`), and
//! one writer per session file.

use std::fs::File;
use std::io;

use crate::Home;

pub(crate) use platform::fs::{create_private_dirs, create_private_file};

/// Whether this process now holds the exclusive lock of `file` (advisory, released when the
/// file is closed, also by a crash). `false`: another open file holds it.
pub(crate) fn try_lock(file: &File) -> io::Result<bool> {
    platform::fs::lock(file, platform::fs::Share::Exclusive, platform::fs::Wait::No)
}

impl Home {
    /// Makes an existing home, its `sessions/` and the directories in it private when they
    /// are open to others (sessions written by older versions, a home made by hand). Run at
    /// startup; returns one line per directory it could not fix.
    pub fn secure(&self) -> Vec<String> {
        let mut dirs = vec![self.root().to_path_buf(), self.sessions_dir()];
        if let Ok(entries) = std::fs::read_dir(self.sessions_dir()) {
            dirs.extend(entries.flatten().map(|e| e.path()));
        }
        dirs.iter()
            .filter_map(|dir| match platform::fs::restrict_dir(dir) {
                Ok(_) => None,
                Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                Err(err) => Some(format!("cannot make {} private: {err}", dir.display())),
            })
            .collect()
    }
}
