//! What differs by operating system, in one place. Every other crate of the workspace is
//! written once for every system and calls this one where the systems differ.
//!
//! - [`clipboard`]: the clipboard of the display the agent runs on (`pbcopy`, `clip.exe`,
//!   `wl-copy`, `xclip`).
//! - [`fs`]: private directories and files (0700 and 0600 on Unix; on Windows the per-user
//!   ACL a file inherits in the user's profile), files replaced whole or not at all, advisory
//!   locks, special files (FIFOs, devices), executable bits, symbolic links, paths as bytes.
//! - [`ids`]: random ids from the system's randomness.
//! - [`process`]: a command's whole tree of processes (a process group on Unix, a job object
//!   on Windows), stopped as one, and taken down when the agent dies however it dies.
//! - [`shell`]: the shell commands run in (bash; Git Bash or PowerShell on Windows).
//! - [`signals`]: the requests to stop that reach a process (SIGINT, SIGTERM, SIGHUP on Unix;
//!   Ctrl+C, Ctrl+Break and closing the console on Windows).
//! - [`tls`]: whom HTTPS trusts (the system's verifier on macOS and Windows, the bundle file
//!   on Linux), loaded only when HTTPS is used.
//! - [`terminal`]: job control (Ctrl+Z), the terminal hanging up, input typed ahead; Unix
//!   only, nothing on Windows.
//!
//! The modules above are shared; what each system does is in `unix/` or `windows/`, the only
//! places that name `libc` or `windows-sys`. [`SYSTEM`] names the system for messages.

pub mod clipboard;
pub mod fs;
pub mod ids;
pub mod process;
pub mod shell;
pub mod signals;
pub mod terminal;
pub mod tls;

#[cfg(unix)]
#[path = "unix/mod.rs"]
mod sys;
#[cfg(windows)]
#[path = "windows/mod.rs"]
mod sys;

/// The system this build runs on, for messages: `Linux`, `macOS`, `Windows` or another Unix.
pub const SYSTEM: &str = if cfg!(target_os = "linux") {
    "Linux"
} else if cfg!(target_os = "macos") {
    "macOS"
} else if cfg!(windows) {
    "Windows"
} else {
    "Unix"
};
