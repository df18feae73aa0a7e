//! The user's own decisions on disk, in `$CODING_AGENT_HOME`: a private directory (0700),
//! files replaced whole or not at all (a temporary file in the same directory, renamed over
//! the old one), mode 0600 whatever the umask, and one writer at a time.
//!
//! Modes are set explicitly after creating: a umask only takes bits away from the mode asked
//! for, and an odd one such as 0777 would take the owner's too. Writers hold an advisory lock
//! on `<file>.lock` from reading the file to renaming the new one in, so two agents that
//! both add a rule keep both.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

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

/// Creates `dir` (and its missing parents, with the system's defaults) as 0700, or makes an
/// existing one 0700 when it is open to group or others. A symbolic link is left alone.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(dir)?;
            if meta.is_dir() && meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
            }
            Ok(())
        }
        Err(err) => Err(err),
    }
}

/// The file's text, or `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(StoreError::io(path)(err)),
    }
}

/// Replaces `path` with `text`: written to a temporary file beside it (0600), flushed to
/// disk, then renamed over it, so a reader sees the old file or the new one, never half.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or("store".into(), |n| n.to_string_lossy());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)
        .map_err(StoreError::io(dir))?;
    let temp_path = temp.path().to_path_buf();
    temp.as_file()
        .set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(StoreError::io(&temp_path))?;
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(StoreError::io(&temp_path))?;
    temp.persist(path)
        .map_err(|err| StoreError::io(path)(err.error))?;
    // The rename itself is only durable once the directory is.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io(dir))
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
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(FILE_MODE)
        .open(&lock_path)
        .map_err(StoreError::io(&lock_path))?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(StoreError::io(&lock_path))?;
    loop {
        // SAFETY: flock on a descriptor `file` owns and keeps open for the call; no memory
        // is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(WriteLock { _file: file });
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(StoreError::io(&lock_path)(err));
        }
    }
}
