//! The Windows side: per-user ACLs instead of modes, `LockFileEx`, job objects, console
//! control events. No job control and no terminal hangup: those are Unix's.

use std::borrow::Cow;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::FileExt;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::sync::mpsc;
use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_LOCK_VIOLATION, GetLastError, HANDLE, INVALID_HANDLE_VALUE, STILL_ACTIVE,
};
use windows_sys::Win32::Storage::FileSystem::{
    LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::IO::OVERLAPPED;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, GetExitCodeProcess, OpenProcess, OpenThread,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SET_QUOTA, PROCESS_TERMINATE, ResumeThread,
    THREAD_SUSPEND_RESUME,
};

use crate::fs::{Share, Wait};
use crate::signals::Signal;

// ---- files
//
// The agent's home is in the user's profile, whose ACL every file and directory created
// there inherits (the user, SYSTEM, Administrators): private already, nothing to set.

pub(crate) fn make_private_dir(path: &Path) -> io::Result<()> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(err) => Err(err),
    }
}

pub(crate) fn restrict_dir(path: &Path) -> io::Result<bool> {
    std::fs::symlink_metadata(path).map(|_| false)
}

pub(crate) fn open_to_others(_meta: &Metadata) -> bool {
    false
}

pub(crate) fn writable_by_everyone(_meta: &Metadata) -> bool {
    false
}

pub(crate) fn private_options(_options: &mut OpenOptions) {}

pub(crate) fn make_private(_file: &File) -> io::Result<()> {
    Ok(())
}

pub(crate) fn no_follow(_options: &mut OpenOptions) {
    // `create_new` (CREATE_NEW) fails on an existing link rather than following it, and
    // std makes handles non-inheritable.
}

pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Where the lock byte is: far beyond the end of any real file, so that the lock, which
/// Windows enforces for the bytes it covers, never blocks a reader or writer of the content.
const LOCK_OFFSET: u64 = 0x7fff_ffff_ffff_fff0;

pub(crate) fn lock(file: &File, share: Share, wait: Wait) -> io::Result<bool> {
    let mut flags = 0;
    if share == Share::Exclusive {
        flags |= LOCKFILE_EXCLUSIVE_LOCK;
    }
    if wait == Wait::No {
        flags |= LOCKFILE_FAIL_IMMEDIATELY;
    }
    let mut overlapped = OVERLAPPED::default();
    overlapped.Anonymous.Anonymous.Offset = LOCK_OFFSET as u32;
    overlapped.Anonymous.Anonymous.OffsetHigh = (LOCK_OFFSET >> 32) as u32;
    // SAFETY: a handle the caller's file owns for the call, and an OVERLAPPED on our stack
    // (the file is not opened for overlapped I/O, so the call completes before returning).
    let locked = unsafe {
        LockFileEx(
            file.as_raw_handle() as HANDLE,
            flags,
            0,
            1,
            0,
            &mut overlapped,
        )
    };
    if locked != 0 {
        return Ok(true);
    }
    // SAFETY: reads the calling thread's last error.
    let code = unsafe { GetLastError() };
    if code == ERROR_LOCK_VIOLATION {
        Ok(false)
    } else {
        Err(io::Error::from_raw_os_error(code as i32))
    }
}

pub(crate) fn special_kind(_meta: &Metadata) -> &'static str {
    "not a regular file"
}

pub(crate) fn non_blocking(_options: &mut OpenOptions) {}

pub(crate) fn make_blocking(_file: &File) {}

pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

pub(crate) fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    file.seek_write(buf, offset)
}

pub(crate) fn disk_usage(meta: &Metadata) -> u64 {
    meta.len()
}

pub(crate) fn is_executable(_meta: &Metadata) -> bool {
    false
}

pub(crate) fn create_new_file(path: &Path, _executable: bool) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

pub(crate) fn copy_permissions(file: &File, like: &Metadata, _executable: bool) -> io::Result<()> {
    file.set_permissions(like.permissions())
}

pub(crate) fn symlink(target: &[u8], link: &Path) -> io::Result<()> {
    let target = path_from_bytes(target);
    std::os::windows::fs::symlink_file(&target, link).map_err(|err| {
        if err.kind() == io::ErrorKind::PermissionDenied || err.raw_os_error() == Some(1314) {
            // ERROR_PRIVILEGE_NOT_HELD
            io::Error::new(
                err.kind(),
                "making a symbolic link needs Windows' Developer Mode or the right to create \
                 links",
            )
        } else {
            err
        }
    })
}

pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

pub(crate) fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    match path.to_string_lossy() {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

// ---- processes

pub(crate) fn isolate(command: &mut std::process::Command) {
    // Suspended until it is in its job (see `Tree::adopt`); a process group of its own so a
    // Ctrl+C in the agent's console is not delivered to it as well.
    command.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
}

/// A handle the tree owns; closed once, when dropped.
#[derive(Debug)]
struct OwnedHandle(HANDLE);

// SAFETY: a kernel handle is usable from any thread; this one is only closed on drop.
unsafe impl Send for OwnedHandle {}
// SAFETY: the calls made through a shared reference (query, terminate) are thread-safe.
unsafe impl Sync for OwnedHandle {}

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        // SAFETY: the handle is ours and closed only here.
        unsafe { CloseHandle(self.0) };
    }
}

/// A job object holding a command and everything it starts, which the system kills when
/// the job's last handle closes: when the agent releases it unarmed, or dies.
#[derive(Debug)]
pub(crate) struct Tree {
    job: Option<OwnedHandle>,
    pid: u32,
}

impl Tree {
    pub(crate) fn adopt(pid: u32) -> io::Result<Tree> {
        let job = new_job().and_then(|job| {
            // SAFETY: opens the (suspended, unreaped, so not reused) child for assigning it to
            // a job; closed at once.
            let process = unsafe { OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, 0, pid) };
            if process.is_null() {
                return Err(io::Error::last_os_error());
            }
            let process = OwnedHandle(process);
            // SAFETY: both handles are valid: the job just made, the child's process.
            if unsafe { AssignProcessToJobObject(job.0, process.0) } == 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(job)
            }
        });
        // Resumed whatever happened: a process left suspended would hang the call.
        let resumed = resume(pid);
        let job = job?;
        resumed?;
        Ok(Tree {
            job: Some(job),
            pid,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// How many processes of the job are running.
    pub(crate) fn active_processes(&self) -> u32 {
        let Some(job) = &self.job else { return 0 };
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: `info` is a writable struct of the size passed; the job handle is ours.
        let ok = unsafe {
            QueryInformationJobObject(
                job.0,
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }

    pub(crate) fn alive(&self) -> bool {
        self.active_processes() > 0
    }

    pub(crate) fn terminate(&self) {
        self.kill();
    }

    pub(crate) fn kill(&self) {
        if let Some(job) = &self.job {
            // SAFETY: the job handle is ours.
            unsafe { TerminateJobObject(job.0, 1) };
        }
    }

    pub(crate) fn release(&mut self) {
        if let Some(job) = self.job.take() {
            // No longer killed when the handle closes: what still runs is left running.
            let _ = set_kill_on_close(&job, false);
        }
    }
}

fn new_job() -> io::Result<OwnedHandle> {
    // SAFETY: no security attributes and no name: an anonymous job.
    let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if job.is_null() {
        return Err(io::Error::last_os_error());
    }
    let job = OwnedHandle(job);
    set_kill_on_close(&job, true)?;
    Ok(job)
}

fn set_kill_on_close(job: &OwnedHandle, kill: bool) -> io::Result<()> {
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    if kill {
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    }
    // SAFETY: `limits` is a struct of the size passed; the job handle is ours.
    let ok = unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Resumes the threads of process `pid`, started suspended (its one main thread). std gives
/// no handle to that thread, so it is found among the system's threads (Toolhelp, the
/// documented way).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of every thread; closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let snapshot = OwnedHandle(snapshot);
    let mut entry = THREADENTRY32 {
        dwSize: std::mem::size_of::<THREADENTRY32>() as u32,
        ..THREADENTRY32::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is a THREADENTRY32 with its size set, as the calls require.
    let mut more = unsafe { Thread32First(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opens a thread by id for resuming; closed at once.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                let thread = OwnedHandle(thread);
                // SAFETY: a thread handle with the right to resume.
                if unsafe { ResumeThread(thread.0) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot.0, &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!(
            "the command (pid {pid}) started suspended and could not be resumed"
        )));
    }
    Ok(())
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    // SAFETY: opens the process for a query only; closed at once.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        // Access denied: it exists, as another user's.
        return io::Error::last_os_error().raw_os_error() == Some(5);
    }
    let process = OwnedHandle(process);
    let mut code = 0u32;
    // SAFETY: a process handle with the query right, and a u32 to write.
    let ok = unsafe { GetExitCodeProcess(process.0, &mut code) } != 0;
    ok && code == STILL_ACTIVE as u32
}

pub(crate) fn remove_at_exit(_dir: &Path) {
    // Nothing outlives the agent to do it; see `crate::process::remove_at_exit`.
}

// ---- signals

pub(crate) fn listen(tx: mpsc::UnboundedSender<Signal>, _job_control: bool) -> io::Result<()> {
    use tokio::signal::windows;
    macro_rules! forward {
        ($make:expr) => {{
            let mut stream = $make?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(Signal::Stop).is_err() {
                        break;
                    }
                }
            });
        }};
    }
    forward!(windows::ctrl_c());
    forward!(windows::ctrl_break());
    forward!(windows::ctrl_close());
    forward!(windows::ctrl_logoff());
    forward!(windows::ctrl_shutdown());
    Ok(())
}

// ---- the terminal: no job control, nothing typed ahead, no hangup.

pub(crate) fn note_continues(_flag: Arc<AtomicBool>) -> io::Result<()> {
    Ok(())
}

pub(crate) fn stop_job(_continued: &AtomicBool) {}

pub(crate) fn unbuffered_stdout() -> Box<dyn io::Write + Send> {
    Box::new(io::stdout())
}

pub(crate) fn enable_escape_sequences() -> bool {
    use windows_sys::Win32::System::Console::{
        ENABLE_VIRTUAL_TERMINAL_PROCESSING, GetConsoleMode, GetStdHandle, STD_OUTPUT_HANDLE,
        SetConsoleMode,
    };
    // SAFETY: the process's standard output handle (not owned: never closed here), and a
    // mode to read into.
    unsafe {
        let out = GetStdHandle(STD_OUTPUT_HANDLE);
        let mut mode = 0;
        if GetConsoleMode(out, &mut mode) == 0 {
            // Not a console (a pipe, a terminal emulator's pty such as mintty's): nothing
            // to turn on, and the escape sequences go through as bytes.
            return true;
        }
        mode & ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0
            || SetConsoleMode(out, mode | ENABLE_VIRTUAL_TERMINAL_PROCESSING) != 0
    }
}

pub(crate) fn pending_input() -> usize {
    0
}

pub(crate) fn watch_hangup() {}
