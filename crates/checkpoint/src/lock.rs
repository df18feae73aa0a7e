//! The store's lock file: snapshots and restores of every session hold it shared, pruning
//! holds it exclusive. Pruning collects garbage with `--prune=now`, which is only safe while
//! no other process is between writing objects and referencing them.

use std::fs::File;
use std::path::Path;

use platform::fs::{Share, Wait};

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

/// Takes the lock on `path` (created private if missing).
pub(crate) fn lock(path: &Path, mode: Mode) -> Result<Option<Held>> {
    let file = platform::fs::open_lock_file(path).map_err(CheckpointError::io(path))?;
    let (share, wait) = match mode {
        Mode::Shared => (Share::Shared, Wait::Block),
        Mode::Exclusive => (Share::Exclusive, Wait::Block),
        Mode::TryExclusive => (Share::Exclusive, Wait::No),
    };
    let deadline = std::time::Instant::now() + MOMENT;
    loop {
        match platform::fs::lock(&file, share, wait) {
            Ok(true) => return Ok(Some(Held { _file: file })),
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Ok(false) => return Ok(None),
            Err(err) => return Err(CheckpointError::io(path)(err)),
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
