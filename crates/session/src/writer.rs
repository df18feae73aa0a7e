//! Appends entries to a session file as the agent's messages end, holding the file's lock.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use agent_core::{AgentEvent, AgentMessage, CompactionOutcome, RestoreKind, RestoreRecord};
use llm::{Model, ThinkingLevel, now_millis};

use crate::entry::{Entry, EntryBody, FORMAT_VERSION, HeaderTag, SessionHeader};
use crate::ids::IdSet;
use crate::ids::{random_hex, rfc3339, unique_id};
use crate::load::{Leaf, load_session_at};
use crate::private::{create_private_dirs, create_private_file, try_lock};
use crate::{Home, LoadedSession};

/// Why a session cannot be continued by this writer.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// Another process (or another writer of this one) holds the session's lock: appending too
    /// would interleave two conversations.
    #[error("{} is in use by another coding-agent process", .0.display())]
    Locked(PathBuf),
    /// The file grew since it was loaded (another process appended to it): load it again.
    #[error("{} changed since it was loaded", .0.display())]
    Changed(PathBuf),
    #[error("{}: {}", .0.display(), .1)]
    Io(PathBuf, #[source] io::Error),
}

/// Writes one session file. Each entry is one `write` of a whole line to an unbuffered file, so
/// a crashed process loses at most the entry being written, and a reader never sees half of a
/// line that was reported written. (Not fsynced per entry: that costs milliseconds on many
/// disks; call [`SessionWriter::sync`] where durability against power loss matters.)
///
/// The writer holds an exclusive `flock` on the file from the first entry (or from
/// [`SessionWriter::resume`]) until it is dropped, so a second process cannot append to the
/// same session.
pub struct SessionWriter {
    path: PathBuf,
    header: SessionHeader,
    /// Opened (and locked) on the first entry, so a session in which nothing happened leaves
    /// no file.
    file: Option<File>,
    /// Where the private directories start (the home); `None` for a resumed file, whose
    /// directory exists.
    home_root: Option<PathBuf>,
    last_id: Option<String>,
    /// Every entry id in the file: a new one is checked against them.
    ids: IdSet,
    /// Entry ids of the messages in the agent's history, in order: a compaction that replaced
    /// `messages[..n]` is recorded as "kept from the entry `ids[n]`".
    history_ids: Vec<String>,
    /// The parent of each of those entries: where a rewind to before that message goes back
    /// to.
    history_parents: Vec<Option<String>>,
    provider: String,
    model: String,
    server: Option<String>,
    thinking: ThinkingLevel,
}

/// The base URL of `model` when it runs on a local server (which no registry knows, so a
/// resumed session must find it again by it).
fn server_of(model: &Model) -> Option<String> {
    llm::is_local_url(&model.base_url).then(|| model.base_url.clone())
}

impl SessionWriter {
    /// A new session for `cwd`; nothing touches the disk until the first entry.
    pub fn create(home: &Home, cwd: &Path, model: &Model, thinking: ThinkingLevel) -> Self {
        Self::create_as(
            home,
            cwd,
            (&model.provider, &model.id, server_of(model)),
            thinking,
        )
    }

    fn create_as(
        home: &Home,
        cwd: &Path,
        model: (&str, &str, Option<String>),
        thinking: ThinkingLevel,
    ) -> Self {
        let id = random_hex(16);
        let created = rfc3339(now_millis());
        let file_name = format!("{}_{id}.jsonl", created.replace([':', '.'], "-"));
        let path = home.sessions_dir_for(cwd).join(file_name);
        Self::create_at_as(home, &path, cwd, model, thinking)
    }

    /// A new session to be written at `path` (`<time>_<id>.jsonl`: the id is read from the
    /// name); nothing touches the disk until the first entry.
    pub fn create_at(
        home: &Home,
        path: &Path,
        cwd: &Path,
        model: &Model,
        thinking: ThinkingLevel,
    ) -> Self {
        Self::create_at_as(
            home,
            path,
            cwd,
            (&model.provider, &model.id, server_of(model)),
            thinking,
        )
    }

    fn create_at_as(
        home: &Home,
        path: &Path,
        cwd: &Path,
        (provider, model, server): (&str, &str, Option<String>),
        thinking: ThinkingLevel,
    ) -> Self {
        let id = path
            .file_stem()
            .and_then(|stem| {
                stem.to_string_lossy()
                    .rsplit_once('_')
                    .map(|(_, id)| id.to_string())
            })
            .unwrap_or_else(|| random_hex(16));
        let header = SessionHeader {
            kind: HeaderTag::Session,
            version: FORMAT_VERSION,
            id,
            cwd: cwd.to_string_lossy().into_owned(),
            created: rfc3339(now_millis()),
            provider: provider.to_string(),
            model: model.to_string(),
            server: server.clone(),
            thinking,
        };
        Self {
            path: path.to_path_buf(),
            header,
            file: None,
            home_root: Some(home.root().to_path_buf()),
            last_id: None,
            ids: IdSet::default(),
            history_ids: Vec::new(),
            history_parents: Vec::new(),
            provider: provider.to_string(),
            model: model.to_string(),
            server,
            thinking,
        }
    }

    /// Continues a loaded session: takes the file's lock, writes the entries that close the
    /// tool calls a crash left open (see [`LoadedSession::repaired`]), and appends new entries
    /// after the loaded leaf.
    pub fn resume(session: &LoadedSession) -> Result<Self, ResumeError> {
        let file = Self::open_to_append(session)?;
        let index = (
            session.ids.clone(),
            session.message_ids.clone(),
            session.message_parents.clone(),
        );
        Self::resumed(session, file, index)
    }

    /// [`resume`](Self::resume), taking the session's entry ids instead of copying them: they
    /// are tens of megabytes in a long session, and from then on the writer is what uses them
    /// ([`LoadedSession::parent_of_message`] answers `None` afterwards). When the file cannot
    /// be taken (locked, changed) the session is left whole.
    pub fn resume_taking(session: &mut LoadedSession) -> Result<Self, ResumeError> {
        let file = Self::open_to_append(session)?;
        let index = (
            std::mem::take(&mut session.ids),
            std::mem::take(&mut session.message_ids),
            std::mem::take(&mut session.message_parents),
        );
        Self::resumed(session, file, index)
    }

    /// Opens the session's file to append, locked, checked to hold what was loaded.
    fn open_to_append(session: &LoadedSession) -> Result<File, ResumeError> {
        let io_err = |err| ResumeError::Io(session.path.clone(), err);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&session.path)
            .map_err(io_err)?;
        if !try_lock(&file).map_err(io_err)? {
            return Err(ResumeError::Locked(session.path.clone()));
        }
        // Under the lock nobody else appends; what was loaded must still be all there is.
        let len = file.metadata().map_err(io_err)?.len();
        if len != session.len {
            return Err(ResumeError::Changed(session.path.clone()));
        }
        // An empty file (`--session` naming a new file) gets a header first.
        if len == 0 {
            let mut header =
                serde_json::to_string(&session.header).map_err(|e| io_err(io::Error::other(e)))?;
            header.push('\n');
            file.write_all(header.as_bytes()).map_err(io_err)?;
        }
        // A crash can leave a cut-off last line; start on a fresh line so the next entry is
        // not glued to it (the cut-off line stays a skipped, reported line).
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1)).map_err(io_err)?;
            file.read_exact(&mut last).map_err(io_err)?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io_err)?;
            }
        }
        Ok(file)
    }

    fn resumed(
        session: &LoadedSession,
        file: File,
        (ids, history_ids, history_parents): (IdSet, Vec<String>, Vec<Option<String>>),
    ) -> Result<Self, ResumeError> {
        let io_err = |err| ResumeError::Io(session.path.clone(), err);
        let mut writer = Self {
            path: session.path.clone(),
            header: session.header.clone(),
            file: Some(file),
            home_root: None,
            last_id: session.leaf_id.clone(),
            ids,
            history_ids,
            history_parents,
            provider: session.provider.clone(),
            model: session.model.clone(),
            server: session.server.clone(),
            thinking: session.thinking,
        };
        for entry in &session.pending {
            writer.write_entry(entry).map_err(io_err)?;
        }
        Ok(writer)
    }

    /// A new session of `cwd` that starts with `session`'s history (its current branch, as
    /// loaded: compactions applied, unfinished tool calls closed) and its model and thinking
    /// level; `session`'s file is left as it is. Written at once.
    pub fn fork(home: &Home, cwd: &Path, session: &LoadedSession) -> io::Result<Self> {
        let mut writer = Self::create_as(
            home,
            cwd,
            (&session.provider, &session.model, session.server.clone()),
            session.thinking,
        );
        // The checkpoints go along, where they were, so undo works in the fork too.
        let checkpoints = session.timeline.checkpoints();
        let mut next = 0;
        let mut checkpoints_at = |writer: &mut Self, at: usize| -> io::Result<()> {
            while let Some(c) = checkpoints.get(next).filter(|c| c.at <= at) {
                writer.append(EntryBody::Checkpoint(c.record.clone()))?;
                if c.undone {
                    writer.append(EntryBody::Restore(RestoreRecord {
                        kind: RestoreKind::Undo,
                        checkpoints: vec![c.record.id.clone()],
                        restored: Vec::new(),
                        kept: Vec::new(),
                        failed: Vec::new(),
                        pre_restore: String::new(),
                        post_restore: String::new(),
                    }))?;
                }
                next += 1;
            }
            Ok(())
        };
        for (i, message) in session.messages.iter().enumerate() {
            checkpoints_at(&mut writer, i)?;
            let body = match message {
                AgentMessage::CompactionSummary(summary) => EntryBody::Compaction {
                    summary: summary.clone(),
                    first_kept_id: None,
                },
                other => EntryBody::Message(other.clone()),
            };
            writer.append_message(body)?;
        }
        checkpoints_at(&mut writer, usize::MAX)?;
        if writer.file.is_none() {
            // An empty history still makes the file, so the fork can be found.
            let file = writer.open_new()?;
            writer.file = Some(file);
        }
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Appends an entry that is a message of the history.
    fn append_message(&mut self, body: EntryBody) -> io::Result<()> {
        let parent = self.last_id.clone();
        let id = self.append(body)?;
        self.history_ids.push(id);
        self.history_parents.push(parent);
        Ok(())
    }

    /// Appends one entry and returns its id.
    pub fn append(&mut self, body: EntryBody) -> io::Result<String> {
        let entry = Entry {
            id: unique_id(&mut self.ids),
            parent_id: self.last_id.clone(),
            timestamp: rfc3339(now_millis()),
            body,
        };
        self.write_entry(&entry)?;
        Ok(entry.id)
    }

    /// Writes an entry whose parent is the current leaf, which it becomes.
    fn write_entry(&mut self, entry: &Entry) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(self.open_new()?),
        };
        // Images go beside the file, stored once each; the line holds their hashes.
        let with_images = match &entry.body {
            EntryBody::Message(message) => crate::images::stored(message, &self.path)?,
            _ => None,
        };
        let mut line = match with_images {
            Some(message) => Entry {
                id: entry.id.clone(),
                parent_id: entry.parent_id.clone(),
                timestamp: entry.timestamp.clone(),
                body: EntryBody::Message(message),
            }
            .to_json(),
            None => entry.to_json(),
        };
        line.push('\n');
        file.write_all(line.as_bytes())?;
        self.ids.insert(entry.id.clone());
        self.last_id = Some(entry.id.clone());
        Ok(())
    }

    fn open_new(&self) -> io::Result<File> {
        if let (Some(root), Some(dir)) = (&self.home_root, self.path.parent()) {
            create_private_dirs(root, dir)?;
        }
        let mut file = create_private_file(&self.path)?;
        // Nobody else knows the new file yet; the lock tells later resumers it is in use.
        if !try_lock(&file)? {
            return Err(io::Error::other(format!(
                "{} is locked by another process",
                self.path.display()
            )));
        }
        let mut header = serde_json::to_string(&self.header).map_err(io::Error::other)?;
        header.push('\n');
        file.write_all(header.as_bytes())?;
        Ok(file)
    }

    /// Records what an agent event changes: a finished message, a compaction, a model or
    /// thinking switch.
    pub fn record(&mut self, event: &AgentEvent) -> io::Result<()> {
        match event {
            AgentEvent::ModelChange { model } => self.record_model(model)?,
            AgentEvent::ThinkingChange { level } => self.record_thinking(*level)?,
            AgentEvent::ModeChange { mode } => {
                self.append(EntryBody::ModeChange(*mode))?;
            }
            AgentEvent::MessageEnd { message } => {
                self.append_message(EntryBody::Message(message.clone()))?
            }
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { summary, replaced },
                ..
            } => {
                let replaced = (*replaced).min(self.history_ids.len());
                let first_kept_id = self.history_ids.get(replaced).cloned();
                let parent = self.last_id.clone();
                let id = self.append(EntryBody::Compaction {
                    summary: summary.clone(),
                    first_kept_id,
                })?;
                self.history_ids.splice(..replaced, [id]);
                self.history_parents.splice(..replaced, [parent]);
            }
            AgentEvent::CheckpointTaken { record } => {
                self.append(EntryBody::Checkpoint(record.clone()))?;
            }
            AgentEvent::CheckpointRestored { record } => {
                self.append(EntryBody::Restore(record.clone()))?;
            }
            AgentEvent::Rewound { messages, leaf } => {
                self.rewind(messages.len(), leaf.as_deref())?
            }
            _ => {}
        }
        Ok(())
    }

    /// Moves the current leaf back: to `leaf` when given (a `/tree` jump), else to just before
    /// message `keep` of the history (a rewind). The entries after it stay in the file, on
    /// their own branch; a `branch` entry makes the move survive a restart.
    fn rewind(&mut self, keep: usize, leaf: Option<&str>) -> io::Result<()> {
        if self.file.is_none() {
            return Ok(()); // nothing written, nothing to go back from
        }
        let target = match leaf {
            Some(id) => Some(id.to_string()),
            None => match self.history_parents.get(keep) {
                Some(parent) => parent.clone(),
                None => return Ok(()), // nothing dropped
            },
        };
        if target == self.last_id {
            return Ok(());
        }
        let at = match &target {
            Some(id) => Leaf::Entry(id),
            None => Leaf::Root,
        };
        let loaded = load_session_at(&self.path, at)?;
        self.last_id = target;
        // The tool calls a branch ending mid-batch leaves open are closed there first.
        for entry in &loaded.pending {
            self.write_entry(entry)?;
        }
        self.append(EntryBody::Branch)?;
        self.history_ids = loaded.message_ids;
        self.history_parents = loaded.message_parents;
        // The model and thinking level stay what they are now, whatever they were back there.
        let (provider, model, server, thinking) = (
            self.provider.clone(),
            self.model.clone(),
            self.server.clone(),
            self.thinking,
        );
        if (&loaded.provider, &loaded.model, &loaded.server) != (&provider, &model, &server) {
            self.append(EntryBody::ModelChange {
                provider,
                model,
                server,
            })?;
        }
        if loaded.thinking != thinking {
            self.append(EntryBody::ThinkingChange(thinking))?;
        }
        Ok(())
    }

    /// Names the newest message of the history (`/label`), for `/tree`.
    pub fn label(&mut self, name: &str) -> io::Result<String> {
        let Some(target) = self.history_ids.last().cloned() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "nothing to label yet: the session has no message",
            ));
        };
        self.append(EntryBody::Label {
            target: target.clone(),
            name: name.to_string(),
        })?;
        Ok(target)
    }

    /// Records a model switch (nothing when it is the current model).
    pub fn record_model(&mut self, model: &Model) -> io::Result<()> {
        let server = server_of(model);
        if model.provider == self.provider && model.id == self.model && server == self.server {
            return Ok(());
        }
        self.append(EntryBody::ModelChange {
            provider: model.provider.clone(),
            model: model.id.clone(),
            server: server.clone(),
        })?;
        self.provider = model.provider.clone();
        self.model = model.id.clone();
        self.server = server;
        Ok(())
    }

    /// Records a thinking-level switch (nothing when it is unchanged).
    pub fn record_thinking(&mut self, level: ThinkingLevel) -> io::Result<()> {
        if level == self.thinking {
            return Ok(());
        }
        self.append(EntryBody::ThinkingChange(level))?;
        self.thinking = level;
        Ok(())
    }

    /// Forces what was written to the disk.
    pub fn sync(&self) -> io::Result<()> {
        match &self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }
}
