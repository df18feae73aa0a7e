//! The Unix side (Linux and macOS): modes, `flock`, process groups, signals, job control.

mod watchdog;

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{
    DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use crate::fs::{Share, Wait};
use crate::signals::Signal;

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

// ---- files

pub(crate) fn make_private_dir(path: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => std::fs::set_permissions(path, Permissions::from_mode(DIR_MODE)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => restrict_dir(path).map(|_| ()),
        Err(err) => Err(err),
    }
}

pub(crate) fn restrict_dir(path: &Path) -> io::Result<bool> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() || !open_to_others(&meta) {
        return Ok(false);
    }
    std::fs::set_permissions(path, Permissions::from_mode(DIR_MODE))?;
    Ok(true)
}

pub(crate) fn open_to_others(meta: &Metadata) -> bool {
    meta.permissions().mode() & 0o077 != 0
}

pub(crate) fn writable_by_everyone(meta: &Metadata) -> bool {
    meta.permissions().mode() & 0o002 != 0
}

pub(crate) fn private_options(options: &mut OpenOptions) {
    options.mode(FILE_MODE);
}

pub(crate) fn make_private(file: &File) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(FILE_MODE))
}

pub(crate) fn no_follow(options: &mut OpenOptions) {
    options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
}

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

pub(crate) fn lock(file: &File, share: Share, wait: Wait) -> io::Result<bool> {
    // std's locks are flock(2) on Linux and macOS: whole-file, advisory, held by the open
    // file description.
    match (share, wait) {
        (Share::Exclusive, Wait::Block) => file.lock().map(|()| true),
        (Share::Shared, Wait::Block) => file.lock_shared().map(|()| true),
        (Share::Exclusive, Wait::No) => try_lock(file.try_lock()),
        (Share::Shared, Wait::No) => try_lock(file.try_lock_shared()),
    }
}

fn try_lock(result: Result<(), std::fs::TryLockError>) -> io::Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(err)) => Err(err),
    }
}

pub(crate) fn special_kind(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

pub(crate) fn non_blocking(options: &mut OpenOptions) {
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
}

pub(crate) fn make_blocking(file: &File) {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns, with flags it just returned.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.read_at(buf, offset)
}

pub(crate) fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    file.write_at(buf, offset)
}

pub(crate) fn disk_usage(meta: &Metadata) -> u64 {
    meta.blocks() * 512
}

pub(crate) fn is_executable(meta: &Metadata) -> bool {
    meta.permissions().mode() & 0o111 != 0
}

pub(crate) fn create_new_file(path: &Path, executable: bool) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if executable { 0o777 } else { 0o666 })
        .open(path)
}

pub(crate) fn copy_permissions(file: &File, like: &Metadata, executable: bool) -> io::Result<()> {
    let bits = like.permissions().mode() & 0o7777;
    let bits = if executable {
        bits | ((bits & 0o444) >> 2)
    } else {
        bits & !0o111
    };
    file.set_permissions(Permissions::from_mode(bits))
}

pub(crate) fn symlink(target: &[u8], link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(OsStr::from_bytes(target), link)
}

pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

pub(crate) fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    Cow::Borrowed(path.as_os_str().as_bytes())
}

// ---- processes

pub(crate) fn isolate(command: &mut std::process::Command) {
    command.process_group(0);
}

/// A process group led by a command the agent started.
#[derive(Debug)]
pub(crate) struct Tree {
    pgid: u32,
    watched: Option<watchdog::Registration>,
}

impl Tree {
    pub(crate) fn adopt(pgid: u32) -> io::Result<Tree> {
        if pgid <= 1 || libc::pid_t::try_from(pgid).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{pgid} is not a command's process"),
            ));
        }
        Ok(Tree {
            pgid,
            watched: Some(watchdog::register(pgid)),
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.pgid
    }

    pub(crate) fn alive(&self) -> bool {
        group_alive(self.pgid)
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: killpg only sends a signal; the group is the command's own.
        unsafe { libc::killpg(self.pgid as libc::pid_t, signal) };
    }

    pub(crate) fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    pub(crate) fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    pub(crate) fn release(&mut self) {
        self.watched = None;
    }
}

/// Whether any process of group `pgid` is still running, zombies aside: on Linux from
/// `/proc/*/stat`; elsewhere the kernel is asked (`killpg(pgid, 0)`, which counts zombies).
pub(crate) fn group_alive(pgid: u32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks that the group exists.
        return unsafe { libc::killpg(pgid, 0) == 0 };
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        match proc_stat_fields(&stat) {
            Some((state, _ppid, pgrp)) => pgrp == pgid && state != "Z" && state != "X",
            None => false,
        }
    })
}

/// The state, parent and process group of a `/proc/PID/stat` line: "pid (comm) state ppid
/// pgrp …", where comm may hold spaces and parentheses.
fn proc_stat_fields(stat: &str) -> Option<(&str, libc::pid_t, libc::pid_t)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    // EPERM: it exists, as another user's.
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The parent of process `pid`: from `/proc/PID/stat` on Linux, `proc_pidinfo` on macOS.
#[cfg(target_os = "linux")]
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    proc_stat_fields(&stat).map(|(_, ppid, _)| ppid)
}

#[cfg(target_os = "macos")]
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: `info` is a writable proc_bsdinfo of the size passed.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        )
    };
    if got != size {
        return None;
    }
    // SAFETY: proc_pidinfo filled the whole struct.
    let info = unsafe { info.assume_init() };
    libc::pid_t::try_from(info.pbi_ppid).ok()
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn parent_of(_pid: libc::pid_t) -> Option<libc::pid_t> {
    None
}

pub(crate) fn remove_at_exit(dir: &Path) {
    watchdog::remove_at_exit(dir);
}

// ---- signals

pub(crate) fn listen(tx: mpsc::UnboundedSender<Signal>, job_control: bool) -> io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut kinds = vec![
        (SignalKind::interrupt(), Signal::Stop),
        (SignalKind::terminate(), Signal::Stop),
        (SignalKind::hangup(), Signal::Stop),
    ];
    if job_control {
        kinds.push((SignalKind::from_raw(libc::SIGTSTP), Signal::Suspend));
        kinds.push((SignalKind::from_raw(libc::SIGCONT), Signal::Continue));
    }
    for (kind, meaning) in kinds {
        // Registered here, before returning, so that no signal is missed meanwhile.
        let mut stream = signal(kind)?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(meaning).is_err() {
                    break;
                }
            }
        });
    }
    Ok(())
}

// ---- the terminal

pub(crate) fn note_continues(flag: Arc<AtomicBool>) -> io::Result<()> {
    signal_hook::flag::register(libc::SIGCONT, flag).map(|_| ())
}

pub(crate) fn stop_job(continued: &AtomicBool) {
    // SAFETY: getpgrp, getppid, getpid, getpgid and kill take no pointers.
    let (group, me) = unsafe { (libc::getpgrp(), libc::getpid()) };
    let mut parent = unsafe { libc::getppid() };
    for _ in 0..8 {
        // SAFETY: as above.
        if parent <= 1 || unsafe { libc::getpgid(parent) } != group {
            break;
        }
        // SAFETY: as above.
        unsafe { libc::kill(parent, libc::SIGTSTP) };
        match parent_of(parent) {
            Some(next) => parent = next,
            None => break,
        }
    }
    // The UI catches SIGTSTP (one from elsewhere comes here): the default action, the stop,
    // is put back for this one signal.
    // SAFETY: both sigaction structs are valid for the calls; SIG_DFL takes no handler, and
    // the action saved is put back unchanged (signal-hook's, which tokio's signal streams
    // use).
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let mut saved: libc::sigaction = std::mem::zeroed();
        let swapped = libc::sigaction(libc::SIGTSTP, &default, &mut saved) == 0;
        libc::kill(me, libc::SIGTSTP);
        // The stop comes before kill returns; SIGCONT's handler may run on another thread
        // just after it.
        let waited = std::time::Instant::now();
        while !continued.load(Ordering::SeqCst)
            && waited.elapsed() < std::time::Duration::from_millis(100)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if swapped {
            libc::sigaction(libc::SIGTSTP, &saved, std::ptr::null_mut());
        }
    }
}

pub(crate) fn unbuffered_stdout() -> Box<dyn io::Write + Send> {
    use std::os::fd::AsFd;
    match io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(File::from(fd)),
        Err(_) => Box::new(io::stdout()),
    }
}

pub(crate) fn enable_escape_sequences() -> bool {
    true
}

pub(crate) fn pending_input() -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD stores one int at the pointer, which is valid for the call.
    let asked = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut count) };
    if asked == 0 {
        usize::try_from(count).unwrap_or(0)
    } else {
        0
    }
}

pub(crate) fn watch_hangup() {
    // SAFETY: isatty takes no pointers; open gets a NUL-terminated path.
    let fd = unsafe {
        if libc::isatty(libc::STDIN_FILENO) == 1 {
            libc::STDIN_FILENO
        } else {
            // crossterm reads the controlling terminal then.
            libc::open(c"/dev/tty".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
        }
    };
    if fd < 0 {
        return;
    }
    // poll(2) asked for no events sleeps until the terminal hangs up (POLLHUP is reported
    // whatever is asked).
    let watch = move || {
        loop {
            let mut watched = libc::pollfd {
                fd,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the call.
            let ready = unsafe { libc::poll(&mut watched, 1, -1) };
            if ready < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if watched.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                // SAFETY: kill takes no pointers.
                unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
                return;
            }
        }
    };
    let _ = std::thread::Builder::new()
        .name("terminal-hangup".into())
        .spawn(watch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_parentheses_and_spaces() {
        let line = "4242 (odd) name (x)) S 17 4242 4242 0 -1 4194560";
        assert_eq!(proc_stat_fields(line), Some(("S", 17, 4242)));
        assert_eq!(proc_stat_fields("garbage"), None);
    }

    #[test]
    fn a_parent_is_found() {
        // SAFETY: getpid and getppid take no pointers.
        let (me, parent) = unsafe { (libc::getpid(), libc::getppid()) };
        assert_eq!(parent_of(me), Some(parent));
        assert_eq!(parent_of(-1), None);
    }
}
