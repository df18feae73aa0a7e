//! What runs in a forked child between `fork` and `exec`: raw system calls on data the parent
//! prepared, and nothing else.
//!
//! The agent is multi-threaded. When it forks, the child holds a copy of every lock as it was
//! at that instant, possibly held by a thread that does not exist in the child, so anything
//! that may take a lock (the allocator, stdio, `std::env`) can deadlock there. POSIX allows
//! only async-signal-safe functions until `exec`. Each function here therefore only passes
//! pointers to memory prepared before the fork (C strings, byte buffers, a BPF program, a
//! file descriptor) to system calls, and reports failure as an `io::Error` built from
//! `errno`, which does not allocate.
//!
//! The same steps serve two callers: [`crate::confine`], from a command's `pre_exec`, and
//! [`crate::probe`], which tries them in a throw-away child ([`trial`]) so the agent's own
//! process is never changed.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
pub(crate) const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;

/// Bind-mount `path` onto itself, and remount it read-only unless `remount_flags` is
/// `None`. Even a writable bind is useful: a mount point cannot be renamed or removed, so
/// `.git` cannot be moved aside and replaced by a copy with hooks of the command's choosing.
#[derive(Debug)]
pub(crate) struct Bind {
    pub path: CString,
    /// Flags of the read-only remount: `MS_BIND | MS_REMOUNT | MS_RDONLY` plus the flags the
    /// mount already has (nosuid, nodev, noexec, atime). In a user namespace those are
    /// locked: a remount that would clear one fails with EPERM.
    pub remount_flags: Option<libc::c_ulong>,
}

/// A mount made read-only: `MS_BIND | MS_REMOUNT | MS_RDONLY` and the flags it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Remount {
    pub path: CString,
    pub flags: libc::c_ulong,
}

/// A path hidden from the command: an empty read-only file system over a directory,
/// `/dev/null` over a file (reads find nothing).
#[derive(Debug)]
pub(crate) struct Hide {
    pub path: CString,
    pub dir: bool,
}

/// How a command enters its own user namespace.
#[derive(Debug)]
pub(crate) enum UserNs {
    /// An unprivileged user maps only itself: the map contents (`"1000 1000 1\n"`) of
    /// `/proc/self/uid_map` and `gid_map`. The kernel lets a process write such a map for
    /// itself once it has given up `setgroups`.
    Own { uid_map: Vec<u8>, gid_map: Vec<u8> },
    /// Root maps every id to itself, so it keeps its rights over every file but holds its
    /// capabilities only inside the new namespace. Only a process privileged in the parent
    /// namespace may write such a map, so a helper forked before the `unshare` writes it.
    All,
}

/// The map that gives every id to itself.
const ALL_IDS: &[u8] = b"0 0 4294967295\n";

/// A new mount namespace (in a new user namespace if `user_ns` is set) with some paths made
/// read-only.
#[derive(Debug, Default)]
pub(crate) struct MountPlan {
    pub user_ns: Option<UserNs>,
    /// The writable roots, bound onto themselves (with what is mounted beneath) first, so
    /// they stay writable when the mounts holding them are made read-only.
    pub writable: Vec<CString>,
    /// In order: an enclosing directory's bind comes before those inside it.
    pub binds: Vec<Bind>,
    /// Made after the binds.
    pub hides: Vec<Hide>,
    /// Mount points remounted read-only last (with these flags): outside the writable roots
    /// not even a file's mode, owner or times can change.
    pub read_only: Vec<Remount>,
    /// The command's working directory (absolute), entered again after the mounts: a cwd
    /// inside a protected path would otherwise still point at the writable mount.
    pub cwd: Option<CString>,
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to the file at `path` in one `write`, as `/proc/self/*_map` require.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is a valid C string; open/write/close are async-signal-safe and the
    // buffer outlives the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written < 0 {
            return Err(error);
        }
        if written as usize != bytes.len() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
    }
    Ok(())
}

/// Enters a new mount namespace (inside a new user namespace if `plan.user_ns` is set),
/// detaches it from the parent's mount propagation, and makes each bind (read-only unless
/// said otherwise). A path
/// that disappeared since the parent looked is skipped: there is nothing left to protect.
pub(crate) fn enter_mount_namespace(plan: &MountPlan) -> io::Result<()> {
    match &plan.user_ns {
        Some(UserNs::Own { uid_map, gid_map }) => {
            // SAFETY: a raw system call with integer arguments.
            check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
            // An unprivileged process may write its gid_map only after giving up setgroups.
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", uid_map)?;
            write_file(c"/proc/self/gid_map", gid_map)?;
        }
        Some(UserNs::All) => unshare_mapping_all_ids()?,
        // SAFETY: a raw system call with integer arguments.
        None => check(unsafe { libc::unshare(libc::CLONE_NEWNS) })?,
    }
    // SAFETY (the rest): raw system calls whose pointer arguments are C strings owned by
    // `plan` or static; nothing allocates.
    unsafe {
        // Without this, with shared propagation (systemd's default), the read-only binds
        // below would appear in the agent's namespace too.
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        let null = std::ptr::null();
        for root in &plan.writable {
            let path = root.as_ptr();
            mount_unless_gone(path, path, null, libc::MS_BIND | libc::MS_REC, null.cast())?;
        }
        for bind in &plan.binds {
            let path = bind.path.as_ptr();
            if !mount_unless_gone(path, path, null, libc::MS_BIND, null.cast())? {
                continue;
            }
            if let Some(flags) = bind.remount_flags {
                check(libc::mount(
                    std::ptr::null(),
                    path,
                    std::ptr::null(),
                    flags,
                    std::ptr::null(),
                ))?;
            }
        }
        for hide in &plan.hides {
            let path = hide.path.as_ptr();
            if hide.dir {
                let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                let data = c"mode=0555,size=4k".as_ptr().cast();
                mount_unless_gone(c"tmpfs".as_ptr(), path, c"tmpfs".as_ptr(), flags, data)?;
            } else {
                let null_device = c"/dev/null".as_ptr();
                mount_unless_gone(null_device, path, null, libc::MS_BIND, null.cast())?;
            }
        }
        for remount in &plan.read_only {
            let made = libc::mount(
                std::ptr::null(),
                remount.path.as_ptr(),
                std::ptr::null(),
                remount.flags,
                std::ptr::null(),
            );
            if made < 0 {
                let error = io::Error::last_os_error();
                // Gone since the parent looked (ENOENT), or no longer a mount point (EINVAL).
                if matches!(error.raw_os_error(), Some(libc::ENOENT | libc::EINVAL)) {
                    continue;
                }
                return Err(error);
            }
        }
        if let Some(cwd) = &plan.cwd {
            check(libc::chdir(cwd.as_ptr()))?;
        }
    }
    Ok(())
}

/// `mount(2)`; `Ok(false)` when `target` is gone since the parent looked (ENOENT): there is
/// nothing left to bind, hide or protect there.
///
/// # Safety
///
/// Every pointer is null or a valid C string (`data`: null or what `fstype` reads).
unsafe fn mount_unless_gone(
    source: *const libc::c_char,
    target: *const libc::c_char,
    fstype: *const libc::c_char,
    flags: libc::c_ulong,
    data: *const libc::c_void,
) -> io::Result<bool> {
    // SAFETY: as the caller promised.
    if unsafe { libc::mount(source, target, fstype, flags, data) } == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ENOENT) {
        Ok(false)
    } else {
        Err(error)
    }
}

/// `unshare(CLONE_NEWUSER | CLONE_NEWNS)` with every id mapped to itself, for root.
///
/// The kernel takes the privileges of whoever *opened* a map file, and a map file opened
/// before the `unshare` still points at the old namespace. So a helper is forked first: it
/// keeps root's privileges in the parent namespace, waits on a pipe until this process has
/// unshared, writes `/proc/<this pid>/{uid,gid}_map` and exits with 0 or the errno.
fn unshare_mapping_all_ids() -> io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [read_end, write_end] = fds;
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    let uid_map = proc_path(pid, b"uid_map");
    let gid_map = proc_path(pid, b"gid_map");
    // SAFETY: this process is the single-threaded child of a fork; the helper only makes
    // raw system calls on the stack buffers above, then `_exit`s.
    let helper = unsafe { libc::fork() };
    if helper < 0 {
        let error = io::Error::last_os_error();
        // SAFETY: closing our own descriptors.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return Err(error);
    }
    if helper == 0 {
        // SAFETY: raw system calls on this function's buffers, then `_exit`.
        unsafe {
            libc::close(write_end);
            let mut byte = 0u8;
            if libc::read(read_end, (&mut byte as *mut u8).cast(), 1) != 1 {
                libc::_exit(libc::ECANCELED);
            }
            let code = match write_file(cstr(&uid_map), ALL_IDS)
                .and_then(|()| write_file(cstr(&gid_map), ALL_IDS))
            {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO).clamp(1, 255),
            };
            libc::_exit(code);
        }
    }
    // SAFETY: raw system calls on integers and a one-byte buffer.
    let unshared = unsafe {
        libc::close(read_end);
        let result = check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS));
        if result.is_ok() {
            libc::write(write_end, b"u".as_ptr().cast(), 1);
        }
        // Closing without a byte tells the helper to give up.
        libc::close(write_end);
        result
    };
    let mut status = 0;
    loop {
        // SAFETY: waits for our own helper; `status` is a valid out pointer.
        if unsafe { libc::waitpid(helper, &mut status, 0) } == helper {
            break;
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
    unshared?;
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFEXITED(status) {
        Err(io::Error::from_raw_os_error(libc::WEXITSTATUS(status)))
    } else {
        Err(io::Error::from_raw_os_error(libc::ECHILD))
    }
}

/// `/proc/<pid>/<name>` as a NUL-terminated string in a stack buffer (no allocation).
fn proc_path(pid: libc::pid_t, name: &[u8]) -> [u8; 48] {
    let mut path = [0u8; 48];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        for &b in bytes {
            if len < path.len() - 1 {
                path[len] = b;
                len += 1;
            }
        }
    };
    push(b"/proc/");
    let mut digits = [0u8; 12];
    let mut n = pid.unsigned_abs();
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    push(&digits[start..]);
    push(b"/");
    push(name);
    path
}

/// The C string at the start of `buffer` (which holds a NUL).
fn cstr(buffer: &[u8]) -> &std::ffi::CStr {
    std::ffi::CStr::from_bytes_until_nul(buffer).unwrap_or(c"")
}

/// `prctl(PR_SET_NO_NEW_PRIVS)`: exec can no longer grant privileges (setuid binaries, file
/// capabilities). Landlock and seccomp require it of an unprivileged process, and it keeps a
/// confined command from escaping through `sudo`.
pub(crate) fn no_new_privs() -> io::Result<()> {
    // SAFETY: a raw prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })
}

/// `landlock_restrict_self(fd, 0)`: from now on this process and everything it starts is
/// held to the ruleset `fd`.
pub(crate) fn landlock_restrict_self(fd: RawFd) -> io::Result<()> {
    // SAFETY: a raw system call with integer arguments.
    let result = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    check(result as libc::c_int)
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, program)`: installs the BPF filter for this process
/// and everything it starts.
pub(crate) fn seccomp_set_filter(program: &[seccompiler::sock_filter]) -> io::Result<()> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let fprog = libc::sock_fprog {
        len,
        // seccompiler's `sock_filter` is `repr(C)` with the kernel's layout, like libc's.
        filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: the kernel copies the program out of `fprog`, which points into `program`,
    // alive for the whole call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &fprog as *const libc::sock_fprog,
        )
    };
    check(result as libc::c_int)
}

/// How a [`trial`] in a throw-away child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trial {
    /// Every step succeeded.
    Works,
    /// A step failed with this errno.
    Errno(i32),
    /// The child was killed by this signal.
    Signal(i32),
    /// Not tried (not relevant, or a previous step already failed).
    NotTried,
}

/// Runs `steps` in a forked child and reports how they ended; the calling process is left
/// as it was.
///
/// `steps` runs between fork and `_exit` in a copy of a possibly multi-threaded process: it
/// must only make raw system calls on data prepared before the call (the functions of this
/// module), never allocate, lock or panic.
pub(crate) fn trial(steps: impl FnOnce() -> io::Result<()>) -> Trial {
    // SAFETY: the child runs only `steps` (async-signal-safe by this function's contract)
    // and `_exit`, which skips atexit handlers and stdio flushing inherited from the parent.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Trial::Errno(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    if pid == 0 {
        let code = match steps() {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(libc::EIO).clamp(1, 255),
        };
        // SAFETY: ends the child without running anything of the parent's.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid out pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            break;
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Trial::Errno(error.raw_os_error().unwrap_or(0));
        }
    }
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Trial::Works,
            code => Trial::Errno(code),
        }
    } else if libc::WIFSIGNALED(status) {
        Trial::Signal(libc::WTERMSIG(status))
    } else {
        Trial::Errno(libc::ECHILD)
    }
}

/// The id map content that maps id `id` to itself: `"{id} {id} 1\n"`.
pub(crate) fn self_map(id: u32) -> Vec<u8> {
    format!("{id} {id} 1\n").into_bytes()
}

/// The effective uid and gid of this process.
pub(crate) fn effective_ids() -> (u32, u32) {
    // SAFETY: geteuid/getegid cannot fail.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

/// Whether the mount holding `path` is read-only already.
pub(crate) fn is_read_only(path: &CString) -> bool {
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is a valid C string and `stat` a writable statvfs.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: statvfs succeeded and filled `stat`.
    unsafe { stat.assume_init() }.f_flag & libc::ST_RDONLY != 0
}

/// The flags of the mount holding `path`, as `statvfs` reports them, reduced to those a
/// read-only remount must keep (`MS_*` and `ST_*` share these bit values). `None` if the
/// path cannot be looked up (it does not exist).
pub(crate) fn mount_flags(path: &CString) -> Option<libc::c_ulong> {
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is a valid C string and `stat` a writable statvfs.
    let result = unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) };
    if result != 0 {
        return None;
    }
    // SAFETY: statvfs succeeded and filled `stat`.
    let flags = unsafe { stat.assume_init() }.f_flag;
    let keep = libc::ST_NOSUID
        | libc::ST_NODEV
        | libc::ST_NOEXEC
        | libc::ST_NOATIME
        | libc::ST_NODIRATIME
        | libc::ST_RELATIME;
    Some(flags & keep)
}
