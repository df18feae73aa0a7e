//! Saves the session: every agent event goes to the current session file, which `/new` and
//! `/resume` can switch.

use agent_core::{Agent, AgentEvent};
use llm::{Model, ThinkingLevel};
use session::SessionWriter;
use tokio::sync::{mpsc, oneshot};

enum Control {
    Switch(Option<SessionWriter>),
    Model(Model),
    Thinking(ThinkingLevel),
    Finish(oneshot::Sender<Vec<String>>),
}

/// A handle to the recording task.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<Control>,
}

impl Recorder {
    /// Records `agent`'s events into `writer` (nothing when `None`: `--no-session`).
    pub fn spawn(agent: &Agent, writer: Option<SessionWriter>) -> Self {
        let mut events = agent.subscribe();
        let (tx, mut control) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut writer = writer;
            let mut errors: Vec<String> = Vec::new();
            loop {
                tokio::select! {
                    event = events.recv() => match event {
                        Some(event) => record(&mut writer, &event, &mut errors),
                        None => break,
                    },
                    message = control.recv() => match message {
                        Some(Control::Switch(next)) => {
                            sync(&writer, &mut errors);
                            writer = next;
                        }
                        Some(Control::Model(model)) => {
                            if let Some(w) = &mut writer && let Err(e) = w.record_model(&model) {
                                errors.push(e.to_string());
                            }
                        }
                        Some(Control::Thinking(level)) => {
                            if let Some(w) = &mut writer && let Err(e) = w.record_thinking(level) {
                                errors.push(e.to_string());
                            }
                        }
                        Some(Control::Finish(reply)) => {
                            // Everything the agent said before the finish is written first.
                            while let Ok(event) = events.try_recv() {
                                record(&mut writer, &event, &mut errors);
                            }
                            sync(&writer, &mut errors);
                            let _ = reply.send(std::mem::take(&mut errors));
                            return;
                        }
                        None => break,
                    },
                }
            }
            sync(&writer, &mut errors);
        });
        Self { tx }
    }

    pub fn switch(&self, writer: Option<SessionWriter>) {
        let _ = self.tx.send(Control::Switch(writer));
    }

    pub fn model(&self, model: Model) {
        let _ = self.tx.send(Control::Model(model));
    }

    pub fn thinking(&self, level: ThinkingLevel) {
        let _ = self.tx.send(Control::Thinking(level));
    }

    /// Writes what is pending and stops; returns the write errors met on the way.
    pub async fn finish(&self) -> Vec<String> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Control::Finish(reply)).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }
}

fn record(writer: &mut Option<SessionWriter>, event: &AgentEvent, errors: &mut Vec<String>) {
    let Some(w) = writer else { return };
    if let Err(err) = w.record(event) {
        errors.push(format!("{}: {err}", w.path().display()));
    }
    // One fsync per run, off the per-message path.
    if matches!(event, AgentEvent::AgentEnd { .. }) {
        sync(writer, errors);
    }
}

fn sync(writer: &Option<SessionWriter>, errors: &mut Vec<String>) {
    if let Some(w) = writer
        && let Err(err) = w.sync()
    {
        errors.push(format!("{}: {err}", w.path().display()));
    }
}
