//! What a terminal program does with its terminal beyond drawing: job control (Ctrl+Z), a
//! terminal that hangs up, and input typed before the program started. Unix only: on
//! Windows there is no job control, the console closing is a signal ([`crate::signals`]), and
//! nothing is typed ahead that the console would not deliver as keys.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Whether the system has job control (a shell's `fg` and Ctrl+Z).
pub const JOB_CONTROL: bool = cfg!(unix);

/// Sets `flag` at every SIGCONT from now on. Does nothing on Windows.
pub fn note_continues(flag: Arc<AtomicBool>) -> std::io::Result<()> {
    crate::sys::note_continues(flag)
}

/// Stops this process and the parents in its process group (`cargo run`, a wrapper), so that
/// the shell, which waits on the outermost of them, sees the job stop; returns once
/// continued, or after a moment when nothing stopped it. Not the whole group: a child of the
/// agent's between its fork and its exec is in the group too, and stopped there it would
/// never let the thread that spawned it stop. Does nothing on Windows.
pub fn stop_job(continued: &AtomicBool) {
    crate::sys::stop_job(continued);
}

/// Makes the terminal interpret escape sequences (colours, cursor moves, scroll regions): on
/// Windows, turns on the console's virtual-terminal processing, which Windows Terminal has
/// on and the console host (conhost) since Windows 10 can take. False when the console
/// refuses (an older Windows); always true on Unix.
pub fn enable_escape_sequences() -> bool {
    crate::sys::enable_escape_sequences()
}

/// Bytes waiting to be read from the terminal on standard input (0 when it is not a
/// terminal, and on Windows).
pub fn pending_input() -> usize {
    crate::sys::pending_input()
}

/// Standard output without the standard library's line buffering, which splits every frame
/// into two writes (up to its last newline, then the rest) and so two system calls. Unix: a
/// duplicate of the descriptor, so dropping it leaves stdout open. Windows: std's stdout,
/// which writes UTF-16 to a console (raw bytes would need the console's code page to be
/// UTF-8).
pub fn unbuffered_stdout() -> Box<dyn std::io::Write + Send> {
    crate::sys::unbuffered_stdout()
}

/// Raises SIGHUP in this process when its terminal goes away. The kernel sends one itself
/// only to the terminal's session leader (and to the foreground group once that leader
/// exits): under a leader that ignores it and lives on (`trap '' HUP`), nothing else would
/// tell the agent, whose input reader would then spin. Watching costs a sleeping thread.
/// Does nothing on Windows, where closing the console is a signal of its own.
pub fn watch_hangup() {
    crate::sys::watch_hangup();
}
