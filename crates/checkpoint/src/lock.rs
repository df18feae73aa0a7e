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
    /// Exclusive, or `None` when another process holds it for longer than [`MOMENT`].
    TryExclusive,
}

/// How long `TryExclusive` waits for a lock held only for a moment. A process forked by any
/// thread of this one (a tool's command, git) holds copies of the open lock files until it
/// execs; a snapshot's lock released while a fork is between the two is still held, for
/// microseconds to milliseconds. Without the wait, pruning found its own store busy then.
pub(crate) const MOMENT: std::time::Duration = std::time::Duration::from_millis(250);

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
    let deadline = std::time::Instant::now() + MOMENT;
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
            io::ErrorKind::WouldBlock if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(CheckpointError::io(path)(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared lock held a moment longer by a copy of its file (as a forked child holds it
    /// until it execs) does not make pruning's lock fail; one held on does.
    #[test]
    fn try_exclusive_waits_out_a_lock_held_for_a_moment_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = lock(&path, Mode::Shared).unwrap().unwrap();
        let copy = held._file.try_clone().unwrap();
        drop(held);
        let (taken, take) = std::sync::mpsc::channel();
        let releaser = std::thread::spawn(move || {
            // Released once the other side is waiting for it.
            take.recv().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(copy);
        });
        taken.send(()).unwrap();
        assert!(lock(&path, Mode::TryExclusive).unwrap().is_some());
        releaser.join().unwrap();

        let _held = lock(&path, Mode::Shared).unwrap().unwrap();
        let asked = std::time::Instant::now();
        assert!(lock(&path, Mode::TryExclusive).unwrap().is_none());
        assert!(asked.elapsed() >= MOMENT);
    }
}
