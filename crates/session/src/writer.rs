//! Appends entries to a session file as the agent's messages end.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use agent_core::{AgentEvent, CompactionOutcome};
use llm::{Model, ThinkingLevel, now_millis};

use crate::entry::{Entry, EntryBody, FORMAT_VERSION, HeaderTag, SessionHeader};
use crate::ids::{random_hex, rfc3339};
use crate::{Home, LoadedSession};

/// Writes one session file. Each entry is one `write` of a whole line to an unbuffered file, so
/// a crashed process loses at most the entry being written, and a reader never sees half of a
/// line that was reported written. (Not fsynced per entry: that costs milliseconds on many
/// disks; call [`SessionWriter::sync`] where durability against power loss matters.)
pub struct SessionWriter {
    path: PathBuf,
    header: SessionHeader,
    /// Opened on the first entry, so a session in which nothing happened leaves no file.
    file: Option<File>,
    last_id: Option<String>,
    /// Entry ids of the messages in the agent's history, in order: a compaction that replaced
    /// `messages[..n]` is recorded as "kept from the entry `ids[n]`".
    history_ids: Vec<String>,
    provider: String,
    model: String,
    thinking: ThinkingLevel,
}

impl SessionWriter {
    /// A new session for `cwd`; nothing touches the disk until the first entry.
    pub fn create(home: &Home, cwd: &Path, model: &Model, thinking: ThinkingLevel) -> Self {
        let id = random_hex(16);
        let created = rfc3339(now_millis());
        let file_name = format!("{}_{id}.jsonl", created.replace([':', '.'], "-"));
        Self::create_at(
            &home.sessions_dir_for(cwd).join(file_name),
            cwd,
            model,
            thinking,
        )
    }

    /// A new session to be written at `path` (`<time>_<id>.jsonl`: the id is read from the
    /// name); nothing touches the disk until the first entry.
    pub fn create_at(path: &Path, cwd: &Path, model: &Model, thinking: ThinkingLevel) -> Self {
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
            provider: model.provider.clone(),
            model: model.id.clone(),
            thinking,
        };
        Self {
            path: path.to_path_buf(),
            header,
            file: None,
            last_id: None,
            history_ids: Vec::new(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            thinking,
        }
    }

    /// Continues a loaded session: new entries are appended to its file.
    pub fn resume(session: &LoadedSession) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&session.path)?;
        // A crash can leave a cut-off last line; start on a fresh line so the next entry is
        // not glued to it (the cut-off line stays a skipped, reported line).
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(Self {
            path: session.path.clone(),
            header: session.header.clone(),
            file: Some(file),
            last_id: session.leaf_id.clone(),
            history_ids: session.message_ids.clone(),
            provider: session.provider.clone(),
            model: session.model.clone(),
            thinking: session.thinking,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Appends one entry and returns its id.
    pub fn append(&mut self, body: EntryBody) -> io::Result<String> {
        let entry = Entry {
            id: random_hex(8),
            parent_id: self.last_id.clone(),
            timestamp: rfc3339(now_millis()),
            body,
        };
        let mut line = entry.to_json();
        line.push('\n');
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(self.open_new()?),
        };
        file.write_all(line.as_bytes())?;
        self.last_id = Some(entry.id.clone());
        Ok(entry.id)
    }

    fn open_new(&self) -> io::Result<File> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&self.path)?;
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
            AgentEvent::MessageEnd { message } => {
                let id = self.append(EntryBody::Message(message.clone()))?;
                self.history_ids.push(id);
            }
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { summary, replaced },
                ..
            } => {
                let replaced = (*replaced).min(self.history_ids.len());
                let first_kept_id = self.history_ids.get(replaced).cloned();
                let id = self.append(EntryBody::Compaction {
                    summary: summary.clone(),
                    first_kept_id,
                })?;
                self.history_ids.splice(..replaced, [id]);
            }
            _ => {}
        }
        Ok(())
    }

    /// Records a model switch (nothing when it is the current model).
    pub fn record_model(&mut self, model: &Model) -> io::Result<()> {
        if model.provider == self.provider && model.id == self.model {
            return Ok(());
        }
        self.append(EntryBody::ModelChange {
            provider: model.provider.clone(),
            model: model.id.clone(),
        })?;
        self.provider = model.provider.clone();
        self.model = model.id.clone();
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
