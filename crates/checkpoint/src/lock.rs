//! The store's lock file: snapshots and restores of every session hold it shared, pruning
//! holds it exclusive. Pruning collects garbage with `--prune=now`, which is only safe while
//! no other process is between writing objects and referencing them.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::{CheckpointError, Result};

/// A held lock; dropping it (closing the file) releases it.
#[derive(Debug)]
pub(crate) struct Held {
    _file: File,
}

/// How to take the lock.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    Shared,
    Exclusive,
    /// Exclusive, or `None` at once when another process holds it.
    TryExclusive,
}

/// Takes the lock on `path` (created 0600 if missing).
pub(crate) fn lock(path: &Path, mode: Mode) -> Result<Option<Held>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(CheckpointError::io(path))?;
    let operation = match mode {
        Mode::Shared => libc::LOCK_SH,
        Mode::Exclusive => libc::LOCK_EX,
        Mode::TryExclusive => libc::LOCK_EX | libc::LOCK_NB,
    };
    loop {
        // SAFETY: flock on a descriptor `file` owns and keeps open for the call; no memory
        // is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(Some(Held { _file: file }));
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(CheckpointError::io(path)(err)),
        }
    }
}
