//! The terminal's input, read by one thread for the whole process and lent to whichever screen
//! is showing (the first-run setup screen, then the session's UI).
//!
//! Why one reader: dropping a crossterm `EventStream` wakes the shared poller, and the next
//! stream's poll can see that stale wake-up together with the tty's readiness; crossterm then
//! returns on the wake-up and, the tty being edge-triggered, never learns of the keys again.
//! Keys typed right after the setup screen were lost that way (1 run in 3 under load).
//! Why its own thread, blocking in crossterm's `read`: once the terminal is gone, crossterm's
//! reader spins reading it (0 bytes or EIO, forever: crossterm#793) without ever returning.
//! Polled as a task, it spun on the thread of the UI loop itself, which then never saw the
//! SIGHUP that asked it to end: a core burnt until someone killed the process. On a thread of
//! its own it spins only there, and the UI ends (see [`watch_hangup`]) and the process with it.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;

type Receiver = mpsc::UnboundedReceiver<std::io::Result<Event>>;

/// The receiving end while no screen holds it; `None` before the first use and while lent.
static IDLE: Mutex<Option<Receiver>> = Mutex::new(None);
static STARTED: std::sync::Once = std::sync::Once::new();

/// The terminal's events, in order; keys typed while no screen listened are kept for the next
/// one. Given back for the next screen when dropped.
pub(crate) struct TerminalInput {
    events: Option<Receiver>,
}

impl TerminalInput {
    /// Takes the process's terminal input, starting its reader on first use (inside a tokio
    /// runtime). Only one screen reads at a time.
    pub(crate) fn take() -> TerminalInput {
        STARTED.call_once(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let read = move || {
                loop {
                    let mut event = crossterm::event::read();
                    if let Ok(Event::Key(key)) = &mut event {
                        typed_ahead(key);
                    }
                    let failed = event.is_err();
                    if tx.send(event).is_err() || failed {
                        break;
                    }
                }
            };
            if let Err(err) = std::thread::Builder::new()
                .name("terminal-input".into())
                .spawn(read)
            {
                // No input: the screen ends at once (its events end), saying why.
                let (tx, rx) = mpsc::unbounded_channel();
                let _ = tx.send(Err(err));
                *idle() = Some(rx);
                return;
            }
            watch_hangup();
            *idle() = Some(rx);
        });
        let events = idle().take();
        assert!(
            events.is_some(),
            "the terminal's input is read by one screen at a time"
        );
        TerminalInput { events }
    }

    /// The next event; `None` once the terminal's input has ended.
    pub(crate) async fn next(&mut self) -> Option<std::io::Result<Event>> {
        self.events.as_mut()?.recv().await
    }
}

impl Drop for TerminalInput {
    fn drop(&mut self) {
        *idle() = self.events.take();
    }
}

/// Raises SIGHUP, which the UI ends on (the session written, commands killed), when the
/// terminal goes away (`platform::terminal::watch_hangup`).
fn watch_hangup() {
    platform::terminal::watch_hangup();
}

/// A key read from what was typed before raw mode went on (see
/// [`TYPED_AHEAD`](crate::terminal::TYPED_AHEAD)): a Ctrl+J there was an Enter, so a prompt
/// typed while the program started is sent, not left with a new line in the editor.
fn typed_ahead(key: &mut KeyEvent) {
    let ahead = &crate::terminal::TYPED_AHEAD;
    let left = ahead.load(Ordering::SeqCst);
    if left == 0 {
        return;
    }
    // The bytes the key came as: a character's own (with the ESC Alt adds), one for a control
    // key, an escape sequence (three, the shortest) for the rest.
    let bytes = match key.code {
        KeyCode::Char(c) => c.len_utf8() + usize::from(key.modifiers.contains(KeyModifiers::ALT)),
        KeyCode::Enter | KeyCode::Tab | KeyCode::Backspace | KeyCode::Esc => 1,
        _ => 3,
    };
    if key.code == KeyCode::Char('j') && key.modifiers == KeyModifiers::CONTROL {
        *key = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    }
    ahead.store(left.saturating_sub(bytes), Ordering::SeqCst);
}

fn idle() -> std::sync::MutexGuard<'static, Option<Receiver>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_ctrl_j_typed_before_raw_mode_is_an_enter() {
        let ahead = &crate::terminal::TYPED_AHEAD;
        // "é", Enter (as a newline), "x": four bytes.
        ahead.store(4, Ordering::SeqCst);
        let ctrl_j = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL);
        let mut keys = [
            KeyEvent::from(KeyCode::Char('é')),
            ctrl_j,
            KeyEvent::from(KeyCode::Char('x')),
            ctrl_j,
        ];
        for key in &mut keys {
            typed_ahead(key);
        }
        assert_eq!(keys[1], KeyEvent::from(KeyCode::Enter));
        assert_eq!(keys[3], ctrl_j, "typed after start-up: still Ctrl+J");
        assert_eq!(ahead.load(Ordering::SeqCst), 0);
    }
}
