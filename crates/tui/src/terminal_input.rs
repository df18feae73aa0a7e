//! The terminal's input, read by one task for the whole process and lent to whichever screen
//! is showing (the first-run setup screen, then the session's UI).
//!
//! Why one reader: dropping a crossterm `EventStream` wakes the shared poller, and the next
//! stream's poll can see that stale wake-up together with the tty's readiness; crossterm then
//! returns on the wake-up and, the tty being edge-triggered, never learns of the keys again.
//! Keys typed right after the setup screen were lost that way (1 run in 3 under load).
//! Why its own task: crossterm's stream takes a contended lock each time it is polled, and the
//! UI loop wakes for every streamed delta, so polling it there cost CPU per delta.

use std::sync::Mutex;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
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
            tokio::spawn(async move {
                let mut stream = EventStream::new();
                while let Some(event) = stream.next().await {
                    let failed = event.is_err();
                    if tx.send(event).is_err() || failed {
                        break;
                    }
                }
            });
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

fn idle() -> std::sync::MutexGuard<'static, Option<Receiver>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}
