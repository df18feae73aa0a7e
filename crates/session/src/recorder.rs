//! The one recorder: every agent event goes to the session file it belongs to.
//!
//! The recorder is a reader of the agent's event stream like any other. Messages, compactions,
//! model and thinking switches become entries; a `history_reset` switches files: to a writer
//! the host prepared for that path (it opened and locked the file before resetting the agent,
//! so it could report a failure first), or else to the path itself (opened if it exists,
//! created on the first entry otherwise). So the events alone decide what is written where, and
//! replaying a recorded event stream into a fresh recorder writes the same files.
//!
//! All file work happens on one blocking thread: a slow disk or an fsync never stalls the
//! async runtime the UI runs on.

use std::path::{Path, PathBuf};

use agent_core::AgentEvent;
use llm::{Model, ThinkingLevel};
use tokio::sync::{mpsc, oneshot};

use crate::{SessionWriter, load_session};

/// What the recorder needs besides the events: how to head a session file it creates itself.
#[derive(Debug, Clone)]
pub struct RecorderSetup {
    /// Where a session file the recorder creates gets its private directories from.
    pub home: crate::Home,
    pub cwd: PathBuf,
    /// Model and thinking level in effect when recording starts.
    pub model: Model,
    pub thinking: ThinkingLevel,
}

enum Control {
    Prepare(Box<SessionWriter>),
    Label(String, oneshot::Sender<Result<String, String>>),
    Flush(oneshot::Sender<()>),
    Finish(oneshot::Sender<Vec<String>>),
}

enum Input {
    Event(AgentEvent),
    Control(Control),
}

/// A handle to the recording thread.
#[derive(Clone)]
pub struct Recorder {
    control: mpsc::UnboundedSender<Control>,
}

impl Recorder {
    /// Records `events` into `writer` (nothing while it is `None`: `--no-session`) until the
    /// event stream ends or [`finish`](Self::finish) is called.
    pub fn spawn(
        events: mpsc::UnboundedReceiver<AgentEvent>,
        writer: Option<SessionWriter>,
        setup: RecorderSetup,
    ) -> Self {
        let (control, control_rx) = mpsc::unbounded_channel();
        let (input, input_rx) = mpsc::unbounded_channel();
        tokio::spawn(forward(events, control_rx, input));
        let state = State {
            writer,
            prepared: Vec::new(),
            setup,
            errors: Vec::new(),
        };
        tokio::task::spawn_blocking(move || state.run(input_rx));
        Self { control }
    }

    /// A writer for the path the next `history_reset` names (see the module docs).
    pub fn prepare(&self, writer: SessionWriter) {
        let _ = self.control.send(Control::Prepare(Box::new(writer)));
    }

    /// Names the newest message of the session (`/label`), once every event before this call
    /// is written; returns the labelled entry's id.
    pub async fn label(&self, name: String) -> Result<String, String> {
        let (reply, rx) = oneshot::channel();
        self.control
            .send(Control::Label(name, reply))
            .map_err(|_| "the session recorder has stopped".to_string())?;
        rx.await
            .map_err(|_| "the session recorder has stopped".to_string())?
    }

    /// Resolves once every event the agent sent before this call is written: call it before
    /// reading a session file the recorder may still be writing (resuming it, say).
    pub async fn flush(&self) {
        let (reply, rx) = oneshot::channel();
        if self.control.send(Control::Flush(reply)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Writes every event the agent sent before this call, syncs the file and stops; returns
    /// the write errors met on the way.
    pub async fn finish(&self) -> Vec<String> {
        let (reply, rx) = oneshot::channel();
        if self.control.send(Control::Finish(reply)).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }
}

/// Merges the events and the control messages into one ordered input. Control goes first:
/// a writer is prepared before the agent is asked to reset, so it must be in place before the
/// reset's event is handled.
async fn forward(
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
    mut control: mpsc::UnboundedReceiver<Control>,
    input: mpsc::UnboundedSender<Input>,
) {
    loop {
        tokio::select! {
            biased;
            message = control.recv() => match message {
                Some(message @ (Control::Flush(_) | Control::Finish(_) | Control::Label(..))) => {
                    // Everything the agent said before is written first.
                    while let Ok(event) = events.try_recv() {
                        let _ = input.send(Input::Event(event));
                    }
                    let finish = matches!(message, Control::Finish(_));
                    let _ = input.send(Input::Control(message));
                    if finish {
                        return;
                    }
                }
                Some(message) => {
                    let _ = input.send(Input::Control(message));
                }
                None => return,
            },
            event = events.recv() => match event {
                Some(event) => {
                    let _ = input.send(Input::Event(event));
                }
                None => return,
            },
        }
    }
}

struct State {
    writer: Option<SessionWriter>,
    prepared: Vec<SessionWriter>,
    setup: RecorderSetup,
    errors: Vec<String>,
}

impl State {
    fn run(mut self, mut input: mpsc::UnboundedReceiver<Input>) {
        while let Some(next) = input.blocking_recv() {
            match next {
                Input::Event(event) => self.record(&event),
                Input::Control(Control::Prepare(writer)) => self.prepared.push(*writer),
                Input::Control(Control::Flush(reply)) => {
                    let _ = reply.send(());
                }
                Input::Control(Control::Label(name, reply)) => {
                    let result = match &mut self.writer {
                        Some(writer) => writer.label(&name).map_err(|e| e.to_string()),
                        None => Err("this session is not saved (--no-session)".to_string()),
                    };
                    let _ = reply.send(result);
                }
                Input::Control(Control::Finish(reply)) => {
                    self.sync();
                    // Closed before the reply: the file's lock is free once `finish` returns.
                    self.writer = None;
                    self.prepared.clear();
                    let _ = reply.send(std::mem::take(&mut self.errors));
                    return;
                }
            }
        }
        self.sync();
    }

    fn record(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::HistoryReset { session, .. } => {
                self.switch(session.as_deref().map(Path::new));
                return;
            }
            AgentEvent::ModelChange { model } => self.setup.model = model.clone(),
            AgentEvent::ThinkingChange { level } => self.setup.thinking = *level,
            _ => {}
        }
        let Some(writer) = &mut self.writer else {
            return;
        };
        if let Err(err) = writer.record(event) {
            self.errors
                .push(format!("{}: {err}", writer.path().display()));
        }
        // One fsync per run, off the per-message path.
        if matches!(event, AgentEvent::AgentEnd { .. }) {
            self.sync();
        }
    }

    /// Records into the session at `path` from now on (nothing for `None`).
    fn switch(&mut self, path: Option<&Path>) {
        if self.writer.as_ref().map(SessionWriter::path) == path {
            return;
        }
        self.sync();
        self.writer = None;
        let Some(path) = path else {
            return;
        };
        if let Some(i) = self.prepared.iter().position(|w| w.path() == path) {
            self.writer = Some(self.prepared.swap_remove(i));
            return;
        }
        let opened = if path.exists() {
            load_session(path)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|loaded| SessionWriter::resume(&loaded).map_err(|e| e.to_string()))
        } else {
            Ok(SessionWriter::create_at(
                &self.setup.home,
                path,
                &self.setup.cwd,
                &self.setup.model,
                self.setup.thinking,
            ))
        };
        match opened {
            Ok(writer) => self.writer = Some(writer),
            Err(err) => self.errors.push(err),
        }
    }

    fn sync(&mut self) {
        if let Some(writer) = &self.writer
            && let Err(err) = writer.sync()
        {
            self.errors
                .push(format!("{}: {err}", writer.path().display()));
        }
    }
}
