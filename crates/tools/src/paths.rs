//! Resolving the paths models send, and serialising writes per file.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// `path` relative to `cwd`, with a leading `~` expanded to the home directory.
pub(crate) fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let path = path.trim();
    let expanded = if path == "~" {
        home().unwrap_or_else(|| PathBuf::from(path))
    } else if let Some(rest) = path.strip_prefix("~/") {
        home().map_or_else(|| PathBuf::from(path), |h| h.join(rest))
    } else {
        PathBuf::from(path)
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

fn home() -> Option<PathBuf> {
    platform::fs::home_dir()
}

/// `path` as the model should see it: relative to `cwd` when inside it.
pub(crate) fn display(cwd: &Path, path: &Path) -> String {
    path.strip_prefix(cwd)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// One async lock per real file path, so two mutations of one file never interleave even when
/// they come from different runs or tools.
#[derive(Clone, Default)]
pub(crate) struct FileLocks(Arc<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>>);

impl FileLocks {
    pub async fn lock(&self, path: &Path) -> tokio::sync::OwnedMutexGuard<()> {
        // The file may not exist yet: canonicalise its parent instead.
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| {
            match (path.parent(), path.file_name()) {
                (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                    .map(|p| p.join(name))
                    .unwrap_or_else(|_| path.to_path_buf()),
                _ => path.to_path_buf(),
            }
        });
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key).or_default().clone()
        };
        lock.lock_owned().await
    }
}

/// A readable reason for an I/O error on `path`.
pub(crate) fn io_error(action: &str, shown: &str, err: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    let why = match err.kind() {
        NotFound => "no such file or directory".to_string(),
        PermissionDenied => "permission denied".to_string(),
        IsADirectory => "it is a directory".to_string(),
        NotADirectory => "a parent is not a directory".to_string(),
        StorageFull => "the disk is full".to_string(),
        ReadOnlyFilesystem => "the file system is read-only".to_string(),
        _ => err.to_string(),
    };
    format!("Cannot {action} {shown}: {why}.")
}

/// What a file that is not a regular file is, for messages; `None` for regular files and
/// directories.
pub(crate) fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    platform::fs::special_kind(meta)
}

/// The refusal for a special file: reading or writing one can block forever (a FIFO with no
/// writer) or never end (`/dev/zero`).
pub(crate) fn not_regular(shown: &str, kind: &str, action: &str) -> String {
    format!("{shown} is {kind}, not a regular file; it cannot be {action}.")
}

/// Refuses a path that exists and is neither a regular file nor a directory, before anything
/// opens it. Symlinks are followed (a link to a regular file is fine).
pub(crate) fn refuse_special(path: &Path, shown: &str, action: &str) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(meta) => match special_kind(&meta) {
            Some(kind) => Err(not_regular(shown, kind, action)),
            None => Ok(()),
        },
        Err(_) => Ok(()),
    }
}

/// Opens a regular file for reading without ever blocking on a special one: the open does
/// not wait for a FIFO's writer, and anything but a regular file is refused after it. This
/// closes the gap between a `metadata` check and the open.
pub(crate) fn open_regular(path: &Path, shown: &str, action: &str) -> Result<File, String> {
    let file = platform::fs::open_for_reading(path).map_err(|e| io_error(action, shown, &e))?;
    let meta = file.metadata().map_err(|e| io_error(action, shown, &e))?;
    if meta.is_dir() {
        return Err(format!("{shown} is a directory."));
    }
    if let Some(kind) = special_kind(&meta) {
        return Err(not_regular(shown, kind, action));
    }
    Ok(file)
}

/// Reads a whole regular file (see [`open_regular`]); `Ok(None)` when it does not exist.
pub(crate) fn read_regular(
    path: &Path,
    shown: &str,
    action: &str,
) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let mut file = match open_regular(path, shown, action) {
        Ok(file) => file,
        Err(_) if std::fs::symlink_metadata(path).is_err() => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(action, shown, &e))?;
    Ok(Some(bytes))
}

/// Replaces `path` with `bytes` without ever leaving it half-written: the bytes go to a
/// temporary file beside it, which is renamed over it. A full disk leaves the old file intact.
/// Symlinks are followed and the old file's permissions kept.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // Renaming over a device or a FIFO would replace it with a plain file.
    if std::fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        // No fsync: it costs ~50 ms on a 10 MB file, and the rename already guarantees the
        // file is either old or new; ext4 and xfs flush a renamed-over file's data first.
        file.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(&target) {
            std::fs::set_permissions(&temp, meta.permissions())?;
        }
        std::fs::rename(&temp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_well() {
        use std::io::{Error, ErrorKind};
        let full = Error::from(ErrorKind::StorageFull);
        assert_eq!(
            io_error("write", "a.txt", &full),
            "Cannot write a.txt: the disk is full."
        );
        let denied = Error::from(ErrorKind::PermissionDenied);
        assert_eq!(
            io_error("read", "a", &denied),
            "Cannot read a: permission denied."
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let err = atomic_write(Path::new("/dev/null"), b"x").unwrap_err();
        assert_eq!(err.to_string(), "it is not a regular file");
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn resolves_relative_absolute_and_home_paths() {
        let cwd = Path::new("/repo");
        assert_eq!(resolve(cwd, "src/a.rs"), Path::new("/repo/src/a.rs"));
        assert_eq!(resolve(cwd, "/etc/hosts"), Path::new("/etc/hosts"));
        if let Some(home) = home() {
            assert_eq!(resolve(cwd, "~/x"), home.join("x"));
        }
        assert_eq!(display(cwd, Path::new("/repo/src/a.rs")), "src/a.rs");
        assert_eq!(display(cwd, Path::new("/etc/hosts")), "/etc/hosts");
    }
}
