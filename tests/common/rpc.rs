//! The agent in RPC mode as a child process: commands in, responses and events out.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use mock_llm::MockServer;
use serde_json::{Value, json};

use super::Env;

pub struct Rpc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<Value>,
    /// Everything read so far.
    pub seen: Vec<Value>,
}

impl Rpc {
    /// The agent in RPC mode with two models on the mock server, `mock/a` first.
    pub fn start(env: &Env, server: &MockServer) -> Self {
        Self::start_with(env, server, |_| {})
    }

    /// [`Rpc::start`], with more said to the command first (an environment variable, say).
    pub fn start_with(
        env: &Env,
        server: &MockServer,
        adjust: impl FnOnce(&mut std::process::Command),
    ) -> Self {
        std::fs::write(
            env.home.path().join("config.toml"),
            format!(
                "[providers.mock]\napi = \"openai-completions\"\nbase_url = \"{}\"\nmodels = [{{ id = \"a\" }}, {{ id = \"b\", reasoning = true }}]\n",
                server.url()
            ),
        )
        .unwrap();
        let mut command = env.command(None, &["--mode", "rpc", "--model", "mock/a"]);
        command.stderr(Stdio::null());
        adjust(&mut command);
        Self::spawn(command)
    }

    /// Runs `command` (an RPC-mode command line) with its input and output piped here.
    pub fn spawn(mut command: std::process::Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str::<Value>(&line).unwrap());
            }
        });
        Self {
            child,
            stdin,
            out,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, command: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line that `want` accepts (lines before it are kept in `seen`).
    pub fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let value = self
                .out
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no {what} within 20 s; saw {:#?}", self.seen));
            self.seen.push(value.clone());
            if want(&value) {
                return value;
            }
        }
    }

    /// Sends a command and returns its response.
    pub fn call(&mut self, id: u64, command: Value) -> Value {
        let mut command = command;
        command["id"] = json!(id);
        self.send(command);
        self.wait_for(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }

    pub fn event(&mut self, kind: &str) -> Value {
        self.wait_for(kind, |v| v["type"] == kind)
    }

    /// Ends the input and waits for the process to finish.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success());
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "rpc mode did not end at the end of its input"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
