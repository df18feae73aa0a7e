//! Starting, resuming and listing sessions for the interactive and RPC modes.
//!
//! Each switch follows one order: the file work happens first, off the async runtime (so a
//! slow disk never freezes the UI, and a failure is reported before anything changed); then
//! the writer is handed to the recorder; then the agent is reset, and its `history_reset`
//! event tells every reader — the TUI, an RPC client, the recorder — what happened.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_core::{Agent, AgentMessage, ResetReason};
use session::{Home, LoadedSession, Recorder, ResumeError, SessionInfo, SessionWriter, Timeline};

use crate::checkpoints::Checkpoints;

/// The session a mode is recording into, and how to switch it.
pub struct Sessions {
    pub(crate) agent: Agent,
    pub(crate) recorder: Recorder,
    pub(crate) checkpoints: Arc<Checkpoints>,
    /// Where bash saves long outputs: beside the current session file, so they go when the
    /// session goes.
    spill: tools::SpillDir,
    pub(crate) home: Home,
    pub(crate) cwd: PathBuf,
    pub(crate) no_session: bool,
    /// The current session file and its id; none with `--no-session`.
    current: Mutex<Option<(PathBuf, String)>>,
}

impl Sessions {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        agent: Agent,
        recorder: Recorder,
        checkpoints: Arc<Checkpoints>,
        spill: tools::SpillDir,
        home: Home,
        cwd: PathBuf,
        no_session: bool,
        current: Option<(PathBuf, String)>,
    ) -> Self {
        if let Some((path, _)) = &current {
            spill.set(session::spill_dir(path));
        }
        // Outputs saved for sessions that were deleted since go too.
        let (prune_home, prune_cwd) = (home.clone(), cwd.clone());
        tokio::task::spawn_blocking(move || session::prune_orphan_spills(&prune_home, &prune_cwd));
        Self {
            agent,
            recorder,
            checkpoints,
            spill,
            home,
            cwd,
            no_session,
            current: Mutex::new(current),
        }
    }

    pub fn current(&self) -> Option<(PathBuf, String)> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A new, empty session (nothing is written until its first message).
    pub async fn new_session(&self) -> Result<(), String> {
        let snapshot = self.agent.snapshot().await.map_err(|e| e.to_string())?;
        if snapshot.running {
            return Err("the agent is running; stop it first (Esc)".into());
        }
        let writer = match self.no_session {
            true => Opened::Nothing,
            false => Opened::Writer(Box::new(SessionWriter::create(
                &self.home,
                &self.cwd,
                &snapshot.model,
                snapshot.thinking,
            ))),
        };
        self.checkpoints.prepare(Timeline::new(0));
        self.switch(writer, Vec::new(), ResetReason::New).await
    }

    /// Loads the session at `path` into the agent and records into it from now on. A
    /// session another process is writing is refused (its file is locked).
    pub async fn resume(&self, path: PathBuf) -> Result<(), String> {
        if self.agent.snapshot().await.is_ok_and(|s| s.running) {
            return Err("the agent is running; stop it first (Esc)".into());
        }
        // The recorder may still be writing the file: let it finish first.
        self.recorder.flush().await;
        // This process holds the current session's lock: resuming it just reloads it.
        let reopen = !self.no_session && self.current().is_none_or(|(current, _)| current != path);
        let (loaded, writer) = tokio::task::spawn_blocking(move || open(&path, reopen))
            .await
            .map_err(|e| format!("loading the session failed: {e}"))??;
        self.checkpoints.prepare(loaded.timeline);
        self.switch(writer, loaded.messages, ResetReason::Resume)
            .await
    }

    pub(crate) async fn switch(
        &self,
        writer: Opened,
        messages: Vec<AgentMessage>,
        reason: ResetReason,
    ) -> Result<(), String> {
        let (writer, current) = match writer {
            Opened::Writer(writer) => {
                let current = (writer.path().to_path_buf(), writer.header().id.clone());
                (Some(writer), Some(current))
            }
            Opened::Current => (None, self.current()),
            Opened::Nothing => (None, None),
        };
        let label = current
            .as_ref()
            .map(|(path, _)| path.to_string_lossy().into_owned());
        // Prepared before the reset: its event must find the writer in place.
        if let Some(writer) = writer {
            self.recorder.prepare(*writer);
        }
        self.agent
            .reset(messages, reason, label)
            .await
            .map_err(|e| e.to_string())?;
        if let Some((path, _)) = &current {
            self.spill.set(session::spill_dir(path));
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = current;
        Ok(())
    }

    /// The sessions of this directory, newest first (read off the async runtime).
    pub async fn list(&self) -> Vec<SessionInfo> {
        let (home, cwd) = (self.home.clone(), self.cwd.clone());
        tokio::task::spawn_blocking(move || session::list_sessions(&home, &cwd))
            .await
            .unwrap_or_default()
    }

    /// Where the session stands, in one line: how to come back to it, or why there is
    /// nothing to come back to.
    pub fn status_line(&self) -> String {
        match self.current() {
            None => "This session is not saved (--no-session).".to_string(),
            // Nothing is written before the first message.
            Some((path, _)) if !path.exists() => {
                "Nothing was said yet, so nothing is saved.".to_string()
            }
            Some((path, id)) => format!(
                "Resume this session with: coding-agent --session {id}\n(saved in {})",
                path.display()
            ),
        }
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

/// Where recording goes after a switch.
pub(crate) enum Opened {
    Writer(Box<SessionWriter>),
    /// The session being recorded already: keep its writer.
    Current,
    /// Nowhere (`--no-session`).
    Nothing,
}

/// Loads a session and, with `reopen`, takes its lock for appending (writing the entries that
/// close tool calls a crash left open). Another process appending in between makes it load
/// again.
fn open(path: &std::path::Path, reopen: bool) -> Result<(LoadedSession, Opened), String> {
    for _ in 0..5 {
        let mut loaded =
            session::load_session(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !reopen {
            return Ok((loaded, Opened::Current));
        }
        match SessionWriter::resume_taking(&mut loaded) {
            Ok(writer) => return Ok((loaded, Opened::Writer(Box::new(writer)))),
            Err(ResumeError::Changed(_)) => continue,
            Err(ResumeError::Locked(_)) => {
                return Err(format!(
                    "session {} is in use by another coding-agent process",
                    loaded.header.id
                ));
            }
            Err(err) => return Err(err.to_string()),
        }
    }
    Err(format!("{} keeps changing; try again", path.display()))
}
