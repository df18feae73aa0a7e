//! Keeping transcripts to their owner: 0700 directories, 0600 files, whatever the umask, and
//! one writer per session file.
//!
//! Modes are set explicitly after creating (a umask can only take bits away from the mode
//! asked for, and an odd one such as 0777 would take the owner's too).

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::Home;

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents. Those from the home root down are made 0700 (and
/// made so when they exist and are open to others); above the root, the system's defaults.
pub(crate) fn create_private_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    if let Some(above) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(above)?;
    }
    let below = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut path = root.to_path_buf();
    make_private_dir(&path)?;
    for part in below.components() {
        path.push(part);
        make_private_dir(&path)?;
    }
    Ok(())
}

fn make_private_dir(path: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => fs::set_permissions(path, Permissions::from_mode(DIR_MODE)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => restrict(path).map(|_| ()),
        Err(err) => Err(err),
    }
}

/// Takes group and other bits off an existing directory; true when it changed it. Symbolic
/// links are left alone (their mode is not the target's to change from here).
fn restrict(path: &Path) -> io::Result<bool> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() || meta.permissions().mode() & 0o077 == 0 {
        return Ok(false);
    }
    fs::set_permissions(path, Permissions::from_mode(DIR_MODE))?;
    Ok(true)
}

/// A new file, 0600, that must not exist yet.
pub(crate) fn create_private_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Whether this process now holds the exclusive lock of `file` (an advisory `flock`, released
/// when the file is closed, also by a crash). `false`: another open file holds it.
pub(crate) fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor `file` owns and keeps open for the call; no memory is
    // passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}

impl Home {
    /// Makes an existing home, its `sessions/` and the directories in it 0700 when they are
    /// open to others (sessions written by older versions, a home made by hand). Run at
    /// startup; returns one line per directory it could not fix.
    pub fn secure(&self) -> Vec<String> {
        let mut dirs = vec![self.root().to_path_buf(), self.sessions_dir()];
        if let Ok(entries) = fs::read_dir(self.sessions_dir()) {
            dirs.extend(entries.flatten().map(|e| e.path()));
        }
        dirs.iter()
            .filter_map(|dir| match restrict(dir) {
                Ok(_) => None,
                Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                Err(err) => Some(format!("cannot make {} private: {err}", dir.display())),
            })
            .collect()
    }
}
