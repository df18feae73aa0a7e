//! Files the agent keeps for its user alone, files replaced whole, locks, and the file-system
//! facts that differ by system.
//!
//! Private means: on Unix, directories 0700 and files 0600, set explicitly after creating
//! (a umask only takes bits away from the mode asked for, and an odd one such as 0777 would
//! take the owner's too); on Windows, what a file inherits in the user's profile (the
//! default per-user ACL: the user, SYSTEM and Administrators), which is where the agent's
//! home is.

use std::borrow::Cow;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::sys;

/// Creates `dir` as a private directory, its missing parents with the system's defaults; an
/// existing `dir` is made private when it is open to others. A symbolic link is left alone.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    sys::make_private_dir(dir)
}

/// Creates `dir` and its missing parents: those from `root` down are private (and made so
/// when they exist and are open to others), those above `root` get the system's defaults.
pub fn create_private_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    if let Some(above) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(above)?;
    }
    let below = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut path = root.to_path_buf();
    sys::make_private_dir(&path)?;
    for part in below.components() {
        path.push(part);
        sys::make_private_dir(&path)?;
    }
    Ok(())
}

/// Takes the group's and others' access off an existing directory; true when it changed
/// anything. Symbolic links are left alone. Nothing to do on Windows (see the module).
pub fn restrict_dir(dir: &Path) -> io::Result<bool> {
    sys::restrict_dir(dir)
}

/// Whether a file or directory is open to users other than its owner (Unix: any group or
/// other bit). Always false on Windows, where the profile's ACL decides.
pub fn open_to_others(meta: &Metadata) -> bool {
    sys::open_to_others(meta)
}

/// Whether everyone may create files in a directory (Unix: the `o+w` bit, as on `/tmp`),
/// so that another user could plant a file there. False on Windows, where the shared
/// directories (the temporary one) are per user.
pub fn writable_by_everyone(meta: &Metadata) -> bool {
    sys::writable_by_everyone(meta)
}

/// The user's home directory: `$HOME` on Unix, `%USERPROFILE%` on Windows (`$HOME` first when
/// it is set there, as Git Bash sets it). `None` when unset or empty.
pub fn home_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = if cfg!(windows) {
        var("HOME").or_else(|| var("USERPROFILE"))
    } else {
        var("HOME")
    };
    home.map(PathBuf::from)
}

/// Makes `options` create files private (on Unix, mode 0600 before the umask; call
/// [`make_private`] on the file too).
pub fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    sys::private_options(options);
    options
}

/// Makes `file` private whatever the umask did to its mode.
pub fn make_private(file: &File) -> io::Result<()> {
    sys::make_private(file)
}

/// Makes `options` refuse to open a symbolic link at the path itself, and keeps the
/// descriptor from commands the agent starts (`O_NOFOLLOW | O_CLOEXEC` on Unix; on Windows
/// a new file never opens through a link, and handles are not inherited by default).
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    sys::no_follow(options);
    options
}

/// A new private file at `path`, which must not exist yet, opened for appending (and
/// reading: Windows locks only a file open for reading or writing, and appending is
/// neither there).
pub fn create_private_file(path: &Path) -> io::Result<File> {
    let file = private(OpenOptions::new().create_new(true).read(true).append(true)).open(path)?;
    make_private(&file)?;
    Ok(file)
}

/// Replaces `path` with `bytes`, privately: written to a temporary file beside it (private
/// from its creation), flushed to disk, then renamed over it, so a reader sees the old file
/// or the new one, never half; the rename is made durable too where the system allows.
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)?;
    make_private(temp.as_file())?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|err| err.error)?;
    sync_dir(dir)
}

/// Makes a rename or a creation in `dir` durable (Unix: fsync of the directory). Nothing
/// to do on Windows, where a directory cannot be opened as a file and the rename is
/// journaled by NTFS.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    sys::sync_dir(dir)
}

/// How long to wait for a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Until it is free.
    Block,
    /// Not at all: report that another holder has it.
    No,
}

/// Whether a lock is shared (many holders) or exclusive (one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    Shared,
    Exclusive,
}

/// Opens the lock file at `path` for [`lock`], creating it private if it is missing (its
/// content is never read or written).
pub fn open_lock_file(path: &Path) -> io::Result<File> {
    let file = private(
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true),
    )
    .open(path)?;
    make_private(&file)?;
    Ok(file)
}

/// Takes an advisory lock on `file` (open for writing), released when the file is closed,
/// also by a crash. `Ok(false)`: another open file holds it and `wait` was [`Wait::No`].
///
/// Unix: `flock(2)` (whole-file; a forked child holds a copy until it execs). Windows:
/// `LockFileEx` on one byte far beyond any file's end, so the lock never keeps another
/// process from reading or writing the file's content (Windows' locks are mandatory for
/// the range they cover).
pub fn lock(file: &File, share: Share, wait: Wait) -> io::Result<bool> {
    loop {
        match sys::lock(file, share, wait) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// What a file that is neither a regular file nor a directory is, for messages; `None` for
/// regular files and directories.
pub fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() {
        None
    } else {
        Some(sys::special_kind(meta))
    }
}

/// Opens `path` for reading without ever waiting on a special file: on Unix the open does
/// not block on a FIFO without a writer nor take the file as a controlling terminal, and the
/// file is blocking again once open. The caller checks what it opened ([`special_kind`]).
pub fn open_for_reading(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    sys::non_blocking(&mut options);
    let file = options.open(path)?;
    sys::make_blocking(&file);
    Ok(file)
}

/// Reads into `buf` from `offset` of `file`; the count read (0 at the end). Positioned on
/// Unix (`pread`); on Windows the file's cursor moves too.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    sys::read_at(file, buf, offset)
}

/// Writes all of `buf` at `offset` of `file` (see [`read_at`]).
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match sys::write_at(file, buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// The space a file takes on disk: its allocated blocks on Unix (a sparse or compressed file
/// takes less than its length), its length on Windows.
pub fn disk_usage(meta: &Metadata) -> u64 {
    sys::disk_usage(meta)
}

/// Whether a file's executable bit is set for anyone. Always false on Windows, which has no
/// such bit (git there records files as not executable too).
pub fn is_executable(meta: &Metadata) -> bool {
    sys::is_executable(meta)
}

/// A new file at `path` (which must not exist) for a restore: on Unix mode 0777 or 0666 less
/// the umask, as git checks files out.
pub fn create_new_file(path: &Path, executable: bool) -> io::Result<File> {
    sys::create_new_file(path, executable)
}

/// Gives `file` the permissions `like` has (the file it replaces), with the executable bits
/// set or cleared as git would: set where the read bits are, or cleared. Windows: the
/// read-only attribute is kept; there is no executable bit.
pub fn copy_permissions(file: &File, like: &Metadata, executable: bool) -> io::Result<()> {
    sys::copy_permissions(file, like, executable)
}

/// Makes a symbolic link at `link` to `target` (the link's text, as git stores it). On
/// Windows this needs Developer Mode or the right to create links; without it the error
/// says so.
pub fn symlink(target: &[u8], link: &Path) -> io::Result<()> {
    sys::symlink(target, link)
}

/// A path from the bytes a program printed (git's file names): exact on Unix; on Windows,
/// where git prints UTF-8, decoded as such (an invalid sequence becomes U+FFFD).
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    sys::path_from_bytes(bytes)
}

/// The bytes of a path as a program reads them on its command line or standard input:
/// exact on Unix; UTF-8 on Windows.
pub fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    sys::path_bytes(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.toml");
        write_private_atomic(&path, b"one").unwrap();
        write_private_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["store.toml"]);
    }

    #[test]
    fn a_second_exclusive_lock_is_refused_until_the_first_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap()
        };
        let first = open();
        assert!(lock(&first, Share::Exclusive, Wait::No).unwrap());
        let second = open();
        assert!(!lock(&second, Share::Exclusive, Wait::No).unwrap());
        assert!(!lock(&second, Share::Shared, Wait::No).unwrap());
        drop(first);
        assert!(lock(&second, Share::Shared, Wait::No).unwrap());
        let third = open();
        assert!(lock(&third, Share::Shared, Wait::No).unwrap());
        assert!(!lock(&open(), Share::Exclusive, Wait::No).unwrap());
    }

    /// Windows' locks are mandatory for the bytes they cover: the lock is taken where no
    /// content is, so the locked file stays readable and writable by anyone else.
    #[test]
    fn a_locked_file_can_still_be_read_and_appended_by_another_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let held = create_private_file(&path).unwrap();
        assert!(lock(&held, Share::Exclusive, Wait::No).unwrap());
        (&held).write_all(b"line one\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"line one\n");
    }

    #[test]
    fn paths_go_to_bytes_and_back() {
        let path = Path::new("dir/naïve file.txt");
        assert_eq!(path_from_bytes(&path_bytes(path)), path);
    }

    #[cfg(unix)]
    #[test]
    fn private_files_and_directories_are_the_owners_alone_whatever_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let sessions = home.join("sessions").join("project");
        create_private_dirs(&home, &sessions).unwrap();
        for d in [&home, &home.join("sessions"), &sessions] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", d.display());
        }
        let file = sessions.join("s.jsonl");
        create_private_file(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(create_private_file(&file).is_err(), "it must not exist yet");
        write_private_atomic(&home.join("auth.toml"), b"k").unwrap();
        let mode = std::fs::metadata(home.join("auth.toml"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(open_to_others(&std::fs::metadata(&sessions).unwrap()));
        assert!(restrict_dir(&sessions).unwrap());
        assert!(!restrict_dir(&sessions).unwrap(), "already private");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_opens_at_once_and_says_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Without the non-blocking open this waits for a writer forever.
        let file = open_for_reading(&fifo).unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(special_kind(&meta), Some("a FIFO (named pipe)"));
        let dev_null = std::fs::metadata("/dev/null").unwrap();
        assert_eq!(special_kind(&dev_null), Some("a character device"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_not_followed_when_a_file_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        let link = dir.path().join("link");
        symlink(target.as_os_str().as_encoded_bytes(), &link).unwrap();
        let opened = no_follow(OpenOptions::new().write(true).create_new(true)).open(&link);
        assert!(opened.is_err());
        assert!(!target.exists(), "the link's target was created");
    }
}
