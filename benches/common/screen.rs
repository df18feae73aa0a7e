//! A pseudo-terminal's screen, parsed by vt100 on a reader thread. Waiting on it wakes once
//! per chunk parsed: polling the screen every millisecond took most of a core from the agent
//! being measured on a 2-core machine, and its caches with it.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The parser and a count of the chunks it has parsed.
type State = (Mutex<(vt100::Parser, u64)>, Condvar);

pub struct Screen(Arc<State>);

/// The terminal's keyboard: what is typed into the program (shared with the reader thread,
/// which answers the program's terminal queries).
pub type Keys = Arc<Mutex<Box<dyn Write + Send>>>;

impl Screen {
    /// Parses what `reader` yields into a 120×50 screen, until it ends, answering as a
    /// terminal does the queries a real one answers at once (background colour, device
    /// attributes) through `writer`: a terminal that never answered would cost the agent its
    /// detection timeout at every start, which no user's terminal does.
    pub fn read(mut reader: Box<dyn Read + Send>, writer: Box<dyn Write + Send>) -> (Self, Keys) {
        let keys: Keys = Arc::new(Mutex::new(writer));
        let answers = keys.clone();
        let parser = vt100::Parser::new(
            NonZeroU16::new(50).unwrap(),
            NonZeroU16::new(120).unwrap(),
            0,
        );
        let state: Arc<State> = Arc::new((Mutex::new((parser, 0)), Condvar::new()));
        let shared = state.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                let mut replies = Vec::new();
                if chunk.windows(6).any(|w| w == b"\x1b]11;?") {
                    replies.extend_from_slice(b"\x1b]11;rgb:0000/0000/0000\x1b\\");
                }
                if chunk.windows(3).any(|w| w == b"\x1b[c") {
                    replies.extend_from_slice(b"\x1b[?62;22c");
                }
                if !replies.is_empty() {
                    let mut answers = answers.lock().unwrap();
                    let _ = answers.write_all(&replies);
                    let _ = answers.flush();
                }
                let (screen, parsed) = &*shared;
                let mut screen = screen.lock().unwrap();
                screen.0.process(&buf[..n]);
                screen.1 += 1;
                parsed.notify_all();
            }
        });
        (Self(state), keys)
    }

    /// When the screen's text first satisfied `done`, checked after each chunk parsed; panics
    /// with the screen if it does not within `limit`.
    pub fn wait(&self, limit: Duration, done: impl Fn(&str) -> bool) -> Instant {
        let deadline = Instant::now() + limit;
        let (screen, parsed) = &*self.0;
        let mut screen = screen.lock().unwrap();
        loop {
            let contents = screen.0.screen().contents();
            if done(&contents) {
                return Instant::now();
            }
            let seen = screen.1;
            while screen.1 == seen {
                let left = deadline.saturating_duration_since(Instant::now());
                assert!(
                    !left.is_zero(),
                    "never showed what was waited for:\n{contents}"
                );
                screen = parsed.wait_timeout(screen, left).unwrap().0;
            }
        }
    }
}
