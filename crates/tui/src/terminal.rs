//! Entering and leaving the terminal's UI mode, and restoring it whatever happens: normal exit,
//! an error, a panic.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;

use crate::backend::Out;

/// Buffered: a frame is many small escape sequences, written in one go when ratatui flushes
/// (stdout itself flushes at every newline and locks for every piece).
pub type Term = Terminal<Out>;

/// Restores the terminal when dropped; if dropped by a panic unwinding the UI, prints the
/// panic's message afterwards, on the normal screen. The panic hook the UI installed is
/// replaced by the one before it.
pub struct Guard {
    _hook: HookGuard,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
        if std::thread::panicking() {
            for message in panics().drain(..) {
                eprintln!("{message}");
            }
        }
    }
}

/// Panic messages held back while the UI owns the screen.
fn panics() -> std::sync::MutexGuard<'static, Vec<String>> {
    static PANICS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    PANICS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the UI draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Screen {
    /// In the terminal's normal screen: finished output goes into its scrollback, only the live
    /// region at the bottom is redrawn; the terminal's own scrolling, search and selection work.
    #[default]
    Inline,
    /// Full screen on the alternate screen, scrolled in the app (with the mouse wheel).
    Alternate,
}

/// Whether the alternate screen and mouse capture are on, so `restore` undoes exactly that.
static ALTERNATE: AtomicBool = AtomicBool::new(false);

/// How many bytes of the terminal's input were typed before raw mode went on, and not read
/// yet. The line discipline had already turned each Enter among them into a newline (ICRNL),
/// which raw mode reads as Ctrl+J: the input reader takes those for Enter.
pub(crate) static TYPED_AHEAD: AtomicUsize = AtomicUsize::new(0);

pub fn enter(screen: Screen) -> std::io::Result<Guard> {
    // Frames are escape sequences written as bytes (scroll regions, synchronized updates).
    if !platform::terminal::enable_escape_sequences() {
        return Err(std::io::Error::other(
            "this console does not interpret escape sequences: use Windows Terminal, or the \
             console of Windows 10 or later",
        ));
    }
    let hook = hold_panics();
    enable_raw_mode()?;
    // Counted after raw mode is on: before, a line not ended yet is not counted.
    TYPED_AHEAD.store(pending_input(), Ordering::SeqCst);
    let guard = Guard { _hook: hook };
    modes_on(screen)?;
    Ok(guard)
}

/// Set by every SIGCONT, from the moment the UI starts ([`watch_continues`]); [`suspend`]
/// takes the one that ends its own stop, so one left here ended a stop made elsewhere.
static CONTINUED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn continues() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(flag) = CONTINUED.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    platform::terminal::note_continues(flag.clone())?;
    Ok(CONTINUED.get_or_init(|| flag).clone())
}

/// Starts noting SIGCONTs, for [`continued_elsewhere`].
pub fn watch_continues() -> std::io::Result<()> {
    continues().map(|_| ())
}

/// Ctrl+Z, or a SIGTSTP from elsewhere (the UI catches it to come here): gives the terminal
/// back as it was and stops, as any program does, for the shell's job control (`fg`
/// continues it); then takes the terminal again. False when nothing stopped: a process group
/// with no shell to continue it (the agent started as a session's first program, say)
/// ignores the stop.
pub fn suspend(screen: Screen) -> std::io::Result<bool> {
    let continued = continues()?;
    continued.store(false, Ordering::SeqCst);
    restore();
    stop_job(&continued);
    let stopped = continued.swap(false, Ordering::SeqCst);
    enable_raw_mode()?;
    modes_on(screen)?;
    Ok(stopped)
}

/// Stops the agent as a job of the shell, until `fg` (`platform::terminal::stop_job`).
fn stop_job(continued: &AtomicBool) {
    platform::terminal::stop_job(continued);
}

/// True once after a SIGCONT that did not end a stop [`suspend`] made (a SIGSTOP from
/// elsewhere, which cannot be caught, and `fg`).
pub fn continued_elsewhere() -> bool {
    CONTINUED
        .get()
        .is_some_and(|flag| flag.swap(false, Ordering::SeqCst))
}

/// After a stop the agent did not make (SIGSTOP, which cannot be caught): the shell took the
/// terminal meanwhile and may have put its own modes back. The UI's modes go on again.
pub fn retake(screen: Screen) -> std::io::Result<()> {
    restore();
    enable_raw_mode()?;
    modes_on(screen)
}

/// The modes the UI runs in, raw mode aside.
fn modes_on(screen: Screen) -> std::io::Result<()> {
    let mut stdout = std::io::stdout();
    // The editor draws its own caret; the terminal's cursor would blink where the last frame
    // left it (inline: the top of the live region).
    execute!(stdout, EnableBracketedPaste, crossterm::cursor::Hide)?;
    if screen == Screen::Alternate {
        ALTERNATE.store(true, Ordering::SeqCst);
        execute!(stdout, EnterAlternateScreen, EnableMouseCapture)?;
    }
    // Lets Shift+Enter be told apart from Enter; terminals without the protocol ignore it.
    let _ = execute!(
        stdout,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    );
    Ok(())
}

/// Bytes waiting to be read from the terminal on stdin (0 when stdin is not a terminal).
fn pending_input() -> usize {
    platform::terminal::pending_input()
}

/// A full-screen terminal on the alternate screen (entered by [`enter`]).
pub fn fullscreen() -> std::io::Result<Term> {
    Terminal::new(Out::stdout()?)
}

/// Switches to the alternate screen for a full-screen view over the inline UI (the transcript
/// overlay); the normal screen and its scrollback come back as they were on [`leave_overlay`].
pub fn enter_overlay() -> std::io::Result<()> {
    ALTERNATE.store(true, Ordering::SeqCst);
    execute!(std::io::stdout(), EnterAlternateScreen)
}

pub fn leave_overlay() -> std::io::Result<()> {
    ALTERNATE.store(false, Ordering::SeqCst);
    execute!(std::io::stdout(), LeaveAlternateScreen)
}

/// Puts the terminal back as it was; safe to call more than once.
pub fn restore() {
    let mut stdout = std::io::stdout();
    let _ = execute!(stdout, PopKeyboardEnhancementFlags, DisableBracketedPaste);
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        let _ = execute!(stdout, DisableMouseCapture, LeaveAlternateScreen);
    }
    let _ = execute!(stdout, crossterm::cursor::Show);
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}

type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Puts the panic hook that was there before [`hold_panics`] back when dropped.
pub struct HookGuard {
    previous: Option<Hook>,
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        // Setting a hook from a panicking thread aborts the process; a panic that unwinds
        // the UI ends it anyway.
        if let Some(previous) = self.previous.take()
            && !std::thread::panicking()
        {
            std::panic::set_hook(previous);
        }
    }
}

/// Holds panic messages instead of printing them into the UI, until the guard is dropped. A
/// tool that panics is caught and shown as an error result, so a panic must not tear the
/// terminal down by itself; one that unwinds the UI drops the [`Guard`], which restores the
/// screen and prints it.
pub fn hold_panics() -> HookGuard {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let backtrace = std::backtrace::Backtrace::capture();
        panics().push(format!("{info}\n{backtrace}"));
    }));
    HookGuard {
        previous: Some(previous),
    }
}

/// Puts `text` on the clipboard of the display the agent runs on when it has one (its own
/// tool says whether it took it); else sends it through the terminal (OSC 52, which also
/// works over SSH) and, inside tmux, into tmux's paste buffer too. Returns what was done, in
/// words that do not claim more than that: no terminal says whether it took an OSC 52.
pub fn copy_to_clipboard(text: &str) -> std::io::Result<String> {
    use base64::Engine;
    let count = crate::words::count(text.chars().count(), "character");
    if let Ok(tool) = platform::clipboard::copy(text) {
        return Ok(format!("Copied {count} to the clipboard ({tool})."));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut stdout = std::io::stdout();
    write!(stdout, "\x1b]52;c;{encoded}\x07")?;
    stdout.flush()?;
    if std::env::var_os("TMUX").is_none() {
        return Ok(format!(
            "Sent {count} to the terminal's clipboard (OSC 52); a terminal without OSC 52 \
             support copies nothing."
        ));
    }
    let buffered = tmux_load_buffer(text);
    Ok(format!(
        "Sent {count} to the clipboard through tmux (OSC 52: tmux passes it on only with \
         `set -g set-clipboard on`){}",
        if buffered {
            "; it is also in tmux's paste buffer (prefix ] pastes it)."
        } else {
            "."
        }
    ))
}

/// Puts `text` in tmux's paste buffer (`tmux load-buffer -`); false if that failed.
fn tmux_load_buffer(text: &str) -> bool {
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("tmux")
        .args(["load-buffer", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
    child.wait().is_ok_and(|status| status.success()) && written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_previous_panic_hook_is_back_once_the_ui_is_gone() {
        static SEEN: AtomicUsize = AtomicUsize::new(0);
        std::panic::set_hook(Box::new(|_| {
            SEEN.fetch_add(1, Ordering::SeqCst);
        }));
        let held = hold_panics();
        let _ = std::panic::catch_unwind(|| panic!("inside the UI"));
        assert_eq!(SEEN.load(Ordering::SeqCst), 0, "held while the UI runs");
        assert_eq!(panics().drain(..).count(), 1);
        drop(held);
        let _ = std::panic::catch_unwind(|| panic!("after the UI"));
        assert_eq!(
            SEEN.load(Ordering::SeqCst),
            1,
            "the old hook sees panics again"
        );
        let _ = std::panic::take_hook();
    }
}
