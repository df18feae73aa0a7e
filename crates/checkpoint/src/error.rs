//! What can go wrong, as values the host can match: "git is missing" must become a visible
//! "checkpoints are off" notice, never a crash, and every other failure a readable message.

use std::io;
use std::path::{Path, PathBuf};

/// A failure of the checkpoint store.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The `git` program could not be started: checkpoints are off for this run.
    #[error("checkpoints are off: git not found ({})", program.display())]
    GitNotFound {
        /// The program that was tried.
        program: PathBuf,
    },
    /// The installed git lacks what the store needs (`GIT_CONFIG_GLOBAL`, 2.32).
    #[error("checkpoints are off: git {found} is too old (2.32 or newer is needed)")]
    GitTooOld {
        /// The version git reported.
        found: String,
    },
    /// A git command failed.
    #[error("git {command} failed ({status}): {stderr}")]
    Git {
        /// The subcommand and its leading arguments.
        command: String,
        /// The exit status, as the system describes it.
        status: String,
        /// The last lines git wrote to its error stream.
        stderr: String,
    },
    /// A git command printed something the store cannot read.
    #[error("git {command}: unexpected output: {detail}")]
    Parse {
        /// The subcommand.
        command: String,
        /// What was wrong.
        detail: String,
    },
    /// Reading or writing a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A session id that cannot name a ref or a file (letters, digits, `-`, `_`, `.`).
    #[error("invalid session id {0:?}: use letters, digits, '-', '_' and '.'")]
    InvalidSession(String),
    /// A path the store will not touch.
    #[error("{}: {reason}", path.display())]
    InvalidPath {
        /// The path as given.
        path: PathBuf,
        /// Why not.
        reason: &'static str,
    },
    /// The snapshot is no longer in the store (pruned, or the store was removed).
    #[error("checkpoint {tree} is no longer in the store (pruned)")]
    Missing {
        /// The tree id.
        tree: String,
    },
    /// A tree id that is not hexadecimal of a git object id's length.
    #[error("invalid tree id {0:?}")]
    InvalidTreeId(String),
    /// More new or changed content than one snapshot may take (the agent was started in a
    /// home directory, say): this snapshot was not taken.
    #[error(
        "checkpoint skipped: {files} new or changed files, {bytes} bytes (limits: {max_files} files, {max_bytes} bytes)"
    )]
    TooLarge {
        /// New or changed files found.
        files: usize,
        /// Their total size.
        bytes: u64,
        /// The file limit.
        max_files: usize,
        /// The byte limit.
        max_bytes: u64,
    },
}

impl CheckpointError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// True when checkpoints cannot work at all on this machine (no usable git): the host
    /// shows the message once and stops trying.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::GitNotFound { .. } | Self::GitTooOld { .. })
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, CheckpointError>;
