//! The real binary in a real pseudo-terminal (portable-pty + vt100): start it against a mock
//! server, type, and read the screen.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::MockServer;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 30;
const COLS: u16 = 100;
pub const WAIT: Duration = Duration::from_secs(20);

pub struct Session {
    pub screen: Arc<Mutex<vt100::Parser>>,
    pub writer: Box<dyn Write + Send>,
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
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let home = tempfile::tempdir().unwrap();
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_coding-agent"));
        command.args(["--base-url", &server.url(), "--model", "mock-model"]);
        command.args(args);
        command.cwd(dir.path());
        command.env("TERM", "xterm-256color");
        command.env_remove("OPENAI_API_KEY");
        command.env("CODING_AGENT_HOME", home.path());
        let child = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            nonzero(ROWS),
            nonzero(COLS),
            0,
        )));
        let parser = screen.clone();
        std::thread::spawn(move || {
            // Keeps the master alive as long as output flows.
            let _master = pty.master;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                parser.lock().unwrap().process(&buf[..n]);
            }
        });
        Self {
            screen,
            writer,
            child,
            dir,
            home,
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
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
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types `text` and waits until the editor shows it, so the next key lands after it.
    pub fn type_text(&mut self, text: &str) {
        self.send(text);
        self.wait_for(text);
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
