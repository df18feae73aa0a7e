//! The real binary in a real pseudo-terminal (portable-pty + vt100): start it against a mock
//! server, type, and read the screen.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::MockServer;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 30;
const COLS: u16 = 100;
pub const WAIT: Duration = Duration::from_secs(20);

/// Lines the emulated terminal keeps above the screen.
const SCROLLBACK: usize = 20_000;

pub struct Session {
    pub screen: Arc<Mutex<vt100::Parser>>,
    /// Every byte the program wrote, in order.
    pub raw: Arc<Mutex<Vec<u8>>>,
    /// The screen is between the begin and the end of a synchronized update (a frame drawn
    /// halfway), as a terminal that knows DEC mode 2026 would not show it.
    mid_frame: Arc<AtomicBool>,
    master: Box<dyn portable_pty::MasterPty + Send>,
    /// Shared with the reader thread, which answers the terminal queries a real terminal
    /// answers.
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    pub dir: tempfile::TempDir,
    /// CODING_AGENT_HOME of the run; kept alive with the session.
    pub home: tempfile::TempDir,
}

impl Session {
    pub fn start(server: &MockServer) -> Self {
        Self::start_with(server, &[], |_| {})
    }

    /// With more flags, in a work directory `prepare` fills first.
    pub fn start_with(
        server: &MockServer,
        args: &[&str],
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        Self::start_sized(server, args, (ROWS, COLS), prepare)
    }

    /// With more flags, in a work directory `prepare` fills first, and these environment
    /// variables (set after the provider keys are taken out, so a test can give one).
    pub fn start_with_env(
        server: &MockServer,
        args: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let home = tempfile::tempdir().unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        command.args(args);
        Self::spawn_after(command, (ROWS, COLS), (dir, home), b"", env)
    }

    /// Against `server`, with `config` as the home's config.toml.
    pub fn start_with_home_config(server: &MockServer, config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        Self::spawn_after(command, (ROWS, COLS), (dir, home), b"", &[])
    }

    /// In a terminal of `rows` × `cols`.
    pub fn start_sized(
        server: &MockServer,
        args: &[&str],
        (rows, cols): (u16, u16),
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let home = tempfile::tempdir().unwrap();
        Self::start_in(server, args, (rows, cols), (dir, home))
    }

    /// In the work directory and home given (those of an earlier session, say).
    pub fn start_in(
        server: &MockServer,
        args: &[&str],
        (rows, cols): (u16, u16),
        (dir, home): (tempfile::TempDir, tempfile::TempDir),
    ) -> Self {
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        command.args(args);
        Self::spawn(command, (rows, cols), (dir, home))
    }

    /// With `keys` typed before the program starts: the terminal is still in its cooked mode
    /// then, so an Enter among them reaches the program as a newline (ICRNL), as when a user
    /// types while it starts up.
    pub fn start_typed_ahead(server: &MockServer, keys: &str) -> Self {
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        Self::spawn_after(command, (ROWS, COLS), dirs, keys.as_bytes(), &[])
    }

    /// Runs the binary with exactly `args` and `env` (no mock flags): for the first run, and
    /// for detection, where the environment says where the servers are.
    pub fn start_bare(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_bare_with_home(args, env, |_| {})
    }

    /// Like [`start_bare`](Self::start_bare), with `CODING_AGENT_HOME` filled by `prepare`
    /// first (a config, a saved `auth.toml`).
    pub fn start_bare_with_home(
        args: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        prepare(home.path());
        Self::spawn(command, (ROWS, COLS), (dir, home))
    }

    /// The program typed into an interactive bash, as a user starts it: the shell's job
    /// control is on (Ctrl+Z, `fg`).
    pub fn start_in_shell(server: &MockServer, size: (u16, u16)) -> Self {
        Self::start_in_shell_as(server, size, |agent| agent.to_string())
    }

    /// The same, with the command line the shell runs made from the agent's (`cargo run`,
    /// a wrapper script).
    pub fn start_in_shell_as(
        server: &MockServer,
        (rows, cols): (u16, u16),
        line: impl FnOnce(&str) -> String,
    ) -> Self {
        let mut command = CommandBuilder::new("bash");
        command.args(["--norc", "--noprofile", "-i"]);
        command.env("PS1", "$ ");
        // No history file written into the home of whoever runs the tests.
        command.env("HISTFILE", "");
        let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut session = Self::spawn(command, (rows, cols), dirs);
        session.wait_for("$");
        let agent = format!(
            "'{}' --base-url {} --model mock-model",
            env!("CARGO_BIN_EXE_coding-agent"),
            server.url()
        );
        session.send(&format!("{}\r", line(&agent)));
        session
    }

    fn spawn(
        command: CommandBuilder,
        size: (u16, u16),
        dirs: (tempfile::TempDir, tempfile::TempDir),
    ) -> Self {
        Self::spawn_after(command, size, dirs, b"", &[])
    }

    /// Spawns the program once `typed` is in the terminal's input.
    fn spawn_after(
        mut command: CommandBuilder,
        (rows, cols): (u16, u16),
        (dir, home): (tempfile::TempDir, tempfile::TempDir),
        typed: &[u8],
        env: &[(&str, &str)],
    ) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        command.cwd(dir.path());
        command.env("TERM", "xterm-256color");
        for key in super::KEYS {
            command.env_remove(key);
        }
        command.env_remove("CODING_AGENT_MODEL");
        command.env_remove("CODING_AGENT_BASE_URL");
        command.env_remove("OLLAMA_HOST");
        // Whether the developer runs the tests inside tmux, over SSH or on a desktop must not
        // change what they see (`/copy` would use the desktop's clipboard).
        for name in [
            "TMUX",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "SSH_CONNECTION",
            "SSH_TTY",
        ] {
            command.env_remove(name);
        }
        if !super::something_confines() && command.get_env(super::SANDBOX_FOR_TESTS.0).is_none() {
            command.env(super::SANDBOX_FOR_TESTS.0, super::SANDBOX_FOR_TESTS.1);
        }
        // No test looks for real local servers unless it says where (after `env`, so it wins).
        if command.get_env("CODING_AGENT_LOCAL_PROBES").is_none() {
            command.env("CODING_AGENT_LOCAL_PROBES", "");
        }
        command.env("CODING_AGENT_HOME", home.path());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut writer = pty.master.take_writer().unwrap();
        // The open slave's line discipline takes these in now, with its default settings.
        writer.write_all(typed).unwrap();
        writer.flush().unwrap();
        let child = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            nonzero(rows),
            nonzero(cols),
            SCROLLBACK,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mid_frame = Arc::new(AtomicBool::new(false));
        let writer = Arc::new(Mutex::new(writer));
        let (parser, log, mid) = (screen.clone(), raw.clone(), mid_frame.clone());
        let answers = writer.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut log = log.lock().unwrap();
                // The last bytes before this read: a sequence may be split between reads.
                let from = log.len().saturating_sub(SYNC_BEGIN.len());
                log.extend_from_slice(&buf[..n]);
                // Like a terminal: the background colour (OSC 11) and the device attributes
                // (DA1) queries are answered, so the agent's theme detection finds a dark
                // terminal at once instead of waiting out its timeout.
                let replies = terminal_answers(&log[from..], log.len() - n - from);
                if !replies.is_empty() {
                    let mut answers = answers.lock().unwrap();
                    let _ = answers.write_all(&replies);
                    let _ = answers.flush();
                }
                let mut parser = parser.lock().unwrap();
                parser.process(&buf[..n]);
                let recent = &log[from..];
                let begin = last_index(recent, SYNC_BEGIN);
                let end = last_index(recent, SYNC_END);
                if begin.is_some() || end.is_some() {
                    mid.store(begin > end, Ordering::SeqCst);
                }
            }
        });
        Self {
            screen,
            raw,
            mid_frame,
            master: pty.master,
            writer,
            child,
            dir,
            home,
        }
    }

    /// The terminal between frames.
    fn settled(&self) -> std::sync::MutexGuard<'_, vt100::Parser> {
        let deadline = Instant::now() + WAIT;
        loop {
            let parser = self.screen.lock().unwrap();
            if !self.mid_frame.load(Ordering::SeqCst) || Instant::now() > deadline {
                return parser;
            }
            drop(parser);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// What the screen shows between frames.
    pub fn contents(&self) -> String {
        self.settled().screen().contents()
    }

    /// Every row the terminal holds, scrollback first, then the screen (trailing blanks
    /// trimmed).
    pub fn history(&self) -> Vec<String> {
        let mut parser = self.settled();
        let (rows, cols) = parser.screen().size();
        let cols = cols.get();
        let kept = parser.screen().scrollback_len();
        let mut lines = Vec::new();
        // Each offset shows one more row of the scrollback at the top of the view.
        for offset in (1..=kept).rev() {
            parser.screen_mut().set_scrollback(offset);
            let top = parser.screen().rows(0, cols).next().unwrap_or_default();
            lines.push(top.trim_end().to_string());
        }
        parser.screen_mut().set_scrollback(0);
        lines.extend(
            parser
                .screen()
                .rows(0, cols)
                .take(usize::from(rows.get()))
                .map(|r| r.trim_end().to_string()),
        );
        lines
    }

    /// Whether the program wrote `sequence` at any time.
    pub fn wrote(&self, sequence: &str) -> bool {
        let raw = self.raw.lock().unwrap();
        raw.windows(sequence.len())
            .any(|w| w == sequence.as_bytes())
    }

    /// Resizes the terminal, as a user dragging the window does (the program gets SIGWINCH).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(nonzero(rows), nonzero(cols));
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.contents().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "screen never showed {text:?}; it shows:\n{}",
            self.contents()
        );
    }

    /// Waits until the screen no longer shows `text`.
    pub fn wait_gone(&self, text: &str) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if !self.contents().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("screen still shows {text:?}:\n{}", self.contents());
    }

    pub fn send(&mut self, bytes: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(bytes.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Types `text` and waits until the editor shows it, so the next key lands after it.
    pub fn type_text(&mut self, text: &str) {
        self.send(text);
        self.wait_for(text);
    }

    /// Sends `signal` to the terminal's foreground process group leader: the program a shell
    /// started (see [`Session::start_in_shell`]), as `kill` from another terminal would.
    pub fn signal_foreground(&self, signal: libc::c_int) {
        let leader = self
            .master
            .process_group_leader()
            .expect("a foreground process group");
        // SAFETY: kill takes no pointers.
        assert_eq!(unsafe { libc::kill(leader, signal) }, 0, "kill {leader}");
    }

    /// Ends the program and hands its work directory and home on.
    pub fn into_dirs(mut self) -> (tempfile::TempDir, tempfile::TempDir) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let home = std::mem::replace(&mut self.home, tempfile::tempdir().unwrap());
        (dir, home)
    }

    pub fn flag(&self) -> std::path::PathBuf {
        self.dir.path().join("flag")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";

/// What a terminal answers to the queries in `bytes` that end after its first `seen` bytes
/// (those were looked at with the read before): its background colour (OSC 11, a dark one)
/// and its device attributes (DA1).
pub fn terminal_answers(bytes: &[u8], seen: usize) -> Vec<u8> {
    let mut replies = Vec::new();
    let asked = |query: &[u8]| {
        bytes
            .windows(query.len())
            .enumerate()
            .any(|(at, w)| w == query && at + query.len() > seen)
    };
    if asked(b"\x1b]11;?") {
        replies.extend_from_slice(b"\x1b]11;rgb:0000/0000/0000\x1b\\");
    }
    if asked(b"\x1b[c") {
        replies.extend_from_slice(b"\x1b[?62;22c");
    }
    replies
}

fn last_index(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

fn nonzero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("terminal sizes are not zero")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}
