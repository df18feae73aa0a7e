//! A pseudo-terminal's screen, parsed by vt100 on a reader thread. Waiting on it wakes once
//! per chunk parsed: polling the screen every millisecond took most of a core from the agent
//! being measured on a 2-core machine, and its caches with it.

use std::io::Read;
use std::num::NonZeroU16;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The parser and a count of the chunks it has parsed.
type State = (Mutex<(vt100::Parser, u64)>, Condvar);

pub struct Screen(Arc<State>);

impl Screen {
    /// Parses what `reader` yields into a 120×50 screen, until it ends.
    pub fn read(mut reader: Box<dyn Read + Send>) -> Self {
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
                let (screen, parsed) = &*shared;
                let mut screen = screen.lock().unwrap();
                screen.0.process(&buf[..n]);
                screen.1 += 1;
                parsed.notify_all();
            }
        });
        Self(state)
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
