//! Starting the agent for a bench: the release binary (or `BENCH_AGENT`, another build for an
//! A/B run in the same minutes) in a 120×50 pseudo-terminal against a mock server, with its
//! own home, no probe of local servers, and the screen parsed as it draws.
// Each bench uses what it measures.
#![allow(dead_code)]

use std::path::Path;
use std::time::Instant;

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

use crate::screen::{Keys, Screen};

pub struct Launched {
    pub child: Box<dyn Child + Send + Sync>,
    pub pid: u32,
    pub screen: Screen,
    pub keys: Keys,
    /// Just before the process was started.
    pub started: Instant,
}

/// The agent against the mock at `url` (model `bench`) with `args`, working in `cwd` with
/// `CODING_AGENT_HOME` at `home`.
pub fn agent(url: &str, args: &[&str], cwd: &Path, home: &Path) -> Launched {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let agent = std::env::var_os("BENCH_AGENT")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_coding-agent").into());
    let mut command = CommandBuilder::new(agent);
    command.args(["--base-url", url, "--model", "bench"]);
    command.args(args);
    command.cwd(cwd);
    command.env("TERM", "xterm-256color");
    command.env("CODING_AGENT_HOME", home);
    // Only the mock: no background probe of the local servers' ports during the measurement.
    command.env("CODING_AGENT_LOCAL_PROBES", "");
    let started = Instant::now();
    let child = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let pid = child.process_id().unwrap();
    let (screen, keys) = Screen::read(
        pty.master.try_clone_reader().unwrap(),
        pty.master.take_writer().unwrap(),
    );
    Launched {
        child,
        pid,
        screen,
        keys,
        started,
    }
}
