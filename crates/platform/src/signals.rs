//! The signals that reach the agent, as one stream of what they ask.
//!
//! Unix: SIGINT, SIGTERM and SIGHUP ask to stop; with job control, SIGTSTP asks to suspend
//! (Ctrl+Z is a key in raw mode; a `kill -TSTP` from elsewhere comes here) and SIGCONT says
//! the process was continued. Windows: Ctrl+C, Ctrl+Break, closing the console window, logging
//! off and shutting down ask to stop; there is no job control.

use std::io;

use tokio::sync::mpsc;

/// What a signal asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// Stop cleanly (commands killed, the session written).
    Stop,
    /// Suspend to the shell (Unix SIGTSTP).
    Suspend,
    /// The process was continued after a stop (Unix SIGCONT).
    Continue,
}

/// The signals this process listens to; must be made inside a tokio runtime.
pub struct Signals {
    rx: mpsc::UnboundedReceiver<Signal>,
}

impl Signals {
    /// The requests to stop only (headless modes).
    pub fn stops() -> io::Result<Signals> {
        Signals::listen(false)
    }

    /// The requests to stop, and job control where the system has it (the interactive UI).
    pub fn with_job_control() -> io::Result<Signals> {
        Signals::listen(true)
    }

    fn listen(job_control: bool) -> io::Result<Signals> {
        let (tx, rx) = mpsc::unbounded_channel();
        crate::sys::listen(tx, job_control)?;
        Ok(Signals { rx })
    }

    /// The next signal; never ends while the process runs.
    pub async fn recv(&mut self) -> Option<Signal> {
        self.rx.recv().await
    }
}
