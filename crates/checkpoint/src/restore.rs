//! Writing paths back as a snapshot has them: content byte for byte, the executable bit,
//! symlinks as symlinks; paths the snapshot lacks are deleted, and directories that leaves
//! empty are removed. Only the given paths are touched, and one already as in the snapshot
//! is not written at all (its inode and times stay).
//!
//! Never through a symlink: a path with a symlink among its parents is refused (writing or
//! deleting there would act wherever the link points, possibly outside the workspace), and a
//! symlink being replaced is removed, not followed. A snapshot never holds entries under a
//! symlink, so a legitimate restore always reaches its paths through real directories once
//! the restore's own deletions (done first, deepest first) have run.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::git::BlobReader;
use crate::paths::{check_relative, from_bytes, split_nul};
use crate::store::Store;
use crate::types::TreeId;
use std::collections::HashMap;

/// A path a restore could not bring back, and why; the others were restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFailure {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// Why, for the user.
    pub reason: String,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files and symlinks written (created or replaced).
    pub written: Vec<PathBuf>,
    /// Paths deleted (absent in the snapshot).
    pub deleted: Vec<PathBuf>,
    /// Paths already as in the snapshot: not touched.
    pub unchanged: Vec<PathBuf>,
    /// Paths not restored.
    pub failed: Vec<PathFailure>,
}

/// A tree entry: git mode and blob id.
struct Entry {
    mode: u32,
    blob: String,
}

const SYMLINK: u32 = 0o120000;
const GITLINK: u32 = 0o160000;
const EXECUTABLE: u32 = 0o100755;

impl Store {
    /// Restores `paths` (relative to the workspace) as the snapshot `tree` has them. Every
    /// path is checked first ([`InvalidPath`](crate::CheckpointError::InvalidPath) for an absolute path, `..`,
    /// or a path inside a `.git`, before anything is touched); a path that cannot be
    /// restored (a symlinked parent, a non-empty directory in the way) is reported in
    /// [`Restored::failed`] and the rest go on.
    pub fn restore(&self, tree: &TreeId, paths: &[PathBuf]) -> Result<Restored> {
        for path in paths {
            check_relative(path)?;
        }
        let _lock = self.shared_lock()?;
        self.require(&[tree])?;
        let entries = self.tree_entries(tree, paths)?;
        let mut done = Restored::default();
        let (mut writes, mut deletes): (Vec<&PathBuf>, Vec<&PathBuf>) = (Vec::new(), Vec::new());
        for path in paths {
            if entries.contains_key(path) {
                writes.push(path);
            } else {
                deletes.push(path);
            }
        }
        // Deepest first, so a directory emptied by its children's removal goes too; then
        // writes shallowest first.
        deletes.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        writes.sort_by_key(|p| p.components().count());
        for path in deletes {
            match self.delete(path) {
                Ok(true) => done.deleted.push(path.clone()),
                Ok(false) => done.unchanged.push(path.clone()),
                Err(reason) => done.failed.push(PathFailure {
                    path: path.clone(),
                    reason,
                }),
            }
        }
        let mut blobs: Option<BlobReader> = None;
        for path in writes {
            let Some(entry) = entries.get(path) else {
                continue;
            };
            if entry.mode == GITLINK {
                done.failed.push(PathFailure {
                    path: path.clone(),
                    reason: "a nested repository is never restored".into(),
                });
                continue;
            }
            let reader = match &mut blobs {
                Some(reader) => reader,
                None => blobs.insert(self.git.blob_reader()?),
            };
            let content = reader.read(&entry.blob)?;
            match self.write(path, entry.mode, &content) {
                Ok(true) => done.written.push(path.clone()),
                Ok(false) => done.unchanged.push(path.clone()),
                Err(reason) => done.failed.push(PathFailure {
                    path: path.clone(),
                    reason,
                }),
            }
        }
        Ok(done)
    }

    /// The entries of `tree` at exactly `paths`.
    fn tree_entries(&self, tree: &TreeId, paths: &[PathBuf]) -> Result<HashMap<PathBuf, Entry>> {
        let mut entries = HashMap::new();
        // In chunks: a command line has a length limit.
        for chunk in paths.chunks(256) {
            let mut args: Vec<&std::ffi::OsStr> = ["ls-tree", "-r", "-z", "--full-tree"]
                .iter()
                .map(std::ffi::OsStr::new)
                .collect();
            args.push(std::ffi::OsStr::new(tree.as_str()));
            args.push(std::ffi::OsStr::new("--"));
            args.extend(chunk.iter().map(|p| p.as_os_str()));
            let out = self.git.run(args, None)?;
            for record in split_nul(&out) {
                let bad = || crate::git::parse_error("ls-tree", String::from_utf8_lossy(record));
                let tab = record.iter().position(|&b| b == b'\t').ok_or_else(bad)?;
                let meta = String::from_utf8_lossy(&record[..tab]);
                let path = from_bytes(&record[tab + 1..]);
                let fields: Vec<&str> = meta.split(' ').collect();
                let [mode, _, blob] = fields[..] else {
                    return Err(bad());
                };
                let mode = u32::from_str_radix(mode, 8).map_err(|_| bad())?;
                if chunk.contains(&path) {
                    let blob = blob.to_string();
                    entries.insert(path, Entry { mode, blob });
                }
            }
        }
        Ok(entries)
    }

    /// Removes `path` (a file or symlink, or an empty directory) and the directories that
    /// leaves empty. `Ok(false)` when there was nothing to remove.
    fn delete(&self, path: &Path) -> std::result::Result<bool, String> {
        if !self.parents_are_real(path, false)? {
            return Ok(false);
        }
        let full = self.workspace().join(path);
        let meta = match fs::symlink_metadata(&full) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e.to_string()),
        };
        if meta.is_dir() {
            fs::remove_dir(&full).map_err(|_| "a directory is in the way".to_string())?;
        } else {
            fs::remove_file(&full).map_err(|e| e.to_string())?;
        }
        let mut parent = path.parent();
        while let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty()) {
            if fs::remove_dir(self.workspace().join(dir)).is_err() {
                break; // not empty: done
            }
            parent = dir.parent();
        }
        Ok(true)
    }

    /// Writes `content` at `path` as a file of git `mode` or a symlink. `Ok(false)` when it
    /// is already there as it should be.
    fn write(&self, path: &Path, mode: u32, content: &[u8]) -> std::result::Result<bool, String> {
        self.parents_are_real(path, true)?;
        let full = self.workspace().join(path);
        let current = match fs::symlink_metadata(&full) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(meta) = &current {
            if already(&full, meta, mode, content) {
                return Ok(false);
            }
            if meta.is_dir() {
                fs::remove_dir(&full).map_err(|_| "a directory is in the way".to_string())?;
            }
        }
        let tmp = temp_name(&full);
        let result = if mode == SYMLINK {
            platform::fs::symlink(content, &tmp)
        } else {
            write_file(&tmp, content, mode == EXECUTABLE, current.as_ref())
        };
        // Renaming over the old entry replaces a symlink itself, never what it points to.
        if let Err(e) = result.and_then(|()| fs::rename(&tmp, &full)) {
            let _ = fs::remove_file(&tmp);
            return Err(e.to_string());
        }
        Ok(true)
    }

    /// Checks every parent of `path` is a real directory (not a symlink) inside the
    /// workspace; with `create`, makes the missing ones. `Ok(false)` (without `create`) when
    /// a parent is missing or not a directory: nothing can be at `path` then.
    fn parents_are_real(&self, path: &Path, create: bool) -> std::result::Result<bool, String> {
        let mut dir = self.workspace().to_path_buf();
        let Some(parent) = path.parent() else {
            return Ok(true);
        };
        for component in parent.components() {
            dir.push(component);
            match fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!(
                        "refused: {} is a symlink",
                        dir.strip_prefix(self.workspace()).unwrap_or(&dir).display()
                    ));
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) if create => {
                    return Err(format!(
                        "a file is in the way: {}",
                        dir.strip_prefix(self.workspace()).unwrap_or(&dir).display()
                    ));
                }
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == ErrorKind::NotFound && create => {
                    fs::create_dir(&dir).map_err(|e| e.to_string())?;
                }
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(true)
    }
}

/// Whether `full` already is what the snapshot has.
fn already(full: &Path, meta: &fs::Metadata, mode: u32, content: &[u8]) -> bool {
    if mode == SYMLINK {
        return meta.file_type().is_symlink()
            && fs::read_link(full).is_ok_and(|t| *platform::fs::path_bytes(&t) == *content);
    }
    let executable = platform::fs::is_executable(meta);
    meta.is_file()
        && meta.len() == content.len() as u64
        && executable == (mode == EXECUTABLE)
        && fs::read(full).is_ok_and(|old| old == content)
}

/// Writes a new file: the old file's permissions when there was one (with the executable
/// bits set or cleared as git would), else the usual 0666/0777 less the umask.
fn write_file(
    tmp: &Path,
    content: &[u8],
    executable: bool,
    current: Option<&fs::Metadata>,
) -> std::io::Result<()> {
    let mut file = platform::fs::create_new_file(tmp, executable)?;
    file.write_all(content)?;
    if let Some(old) = current.filter(|m| m.is_file()) {
        platform::fs::copy_permissions(&file, old, executable)?;
    }
    Ok(())
}

/// A name beside `full` for writing before the rename.
fn temp_name(full: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    full.with_file_name(format!(".{name}.ckpt-{}-{n}", std::process::id()))
}
