//! The user's own decisions on disk, in `$CODING_AGENT_HOME`: a private directory, files
//! replaced whole or not at all (a temporary file in the same directory, renamed over the old
//! one), private whatever the umask (`platform::fs`), and one writer at a time: writers hold
//! an advisory lock on `<file>.lock` from reading the file to renaming the new one in, so two
//! agents that both add a rule keep both.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// A failure of one of the stores in the home directory.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not what the store wrote; it is left as it is for the user to
    /// fix or remove (nothing is dropped silently).
    #[error("{}:{line}:{column}: {message}", path.display())]
    Damaged {
        /// The damaged file.
        path: PathBuf,
        /// 1-based line of the damage.
        line: usize,
        /// 1-based column of the damage.
        column: usize,
        /// What is wrong there.
        message: String,
    },
    /// Reading or writing a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The project root cannot be resolved to a canonical path (it does not exist, or a
    /// component cannot be read).
    #[error("project root {}: {source}", path.display())]
    ProjectRoot {
        /// The root as given.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A prefix that no rule may hold.
    #[error("cannot allow `{prefix}`: {reason}")]
    InvalidPrefix {
        /// The prefix, its words joined by spaces.
        prefix: String,
        /// Why not.
        reason: &'static str,
    },
}

impl StoreError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A TOML error in `text` (the content of `path`), at the line and column of its span.
    pub(crate) fn damaged(path: &Path, text: &str, offset: Option<usize>, message: &str) -> Self {
        let offset = offset.unwrap_or(0).min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Self::Damaged {
            path: path.to_path_buf(),
            line,
            column,
            message: message.trim().to_string(),
        }
    }
}

/// The canonical form of a project root: the key both stores use, so `./x`, `x/` and a
/// symbolic link to `x` are one project.
pub(crate) fn canonical_root(root: &Path) -> Result<PathBuf, StoreError> {
    fs::canonicalize(root).map_err(|source| StoreError::ProjectRoot {
        path: root.to_path_buf(),
        source,
    })
}

/// The key of a project: its canonical root, as text.
pub(crate) fn root_key(project_root: &Path) -> Result<String, StoreError> {
    let root = canonical_root(project_root)?;
    root.to_str()
        .map(str::to_string)
        .ok_or_else(|| StoreError::ProjectRoot {
            path: project_root.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the path is not UTF-8, which the TOML store cannot hold",
            ),
        })
}

/// Creates `dir` (and its missing parents, with the system's defaults) as a private
/// directory, or makes an existing one private when it is open to others. A symbolic link is
/// left alone.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    platform::fs::ensure_private_dir(dir)
}

/// The file's text, or `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(StoreError::io(path)(err)),
    }
}

/// Replaces `path` with `text`: written to a private temporary file beside it, flushed to
/// disk, then renamed over it, so a reader sees the old file or the new one, never half.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), StoreError> {
    platform::fs::write_private_atomic(path, text.as_bytes()).map_err(StoreError::io(path))
}

/// An exclusive lock on `<path>.lock`, held until dropped (or the process dies).
pub(crate) struct WriteLock {
    _file: File,
}

/// Waits for the exclusive lock of the store `path`, creating the home directory (0700) and
/// the lock file (0600) as needed.
pub(crate) fn lock(path: &Path) -> Result<WriteLock, StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_private_dir(dir).map_err(StoreError::io(dir))?;
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = platform::fs::open_lock_file(&lock_path).map_err(StoreError::io(&lock_path))?;
    platform::fs::lock(
        &file,
        platform::fs::Share::Exclusive,
        platform::fs::Wait::Block,
    )
    .map_err(StoreError::io(&lock_path))?;
    Ok(WriteLock { _file: file })
}
