//! Reads a session file back into the history the agent had.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use agent_core::AgentMessage;
use llm::ThinkingLevel;

use crate::entry::{Entry, EntryBody, HeaderTag, SessionHeader};

/// A session as loaded: the history to start an agent from, and what went wrong on the way.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub path: PathBuf,
    pub header: SessionHeader,
    /// The agent's history, compactions applied: pass it as `AgentConfig::messages`.
    pub messages: Vec<AgentMessage>,
    /// The entry id of each message of `messages` (a compaction summary has its entry's id).
    pub message_ids: Vec<String>,
    /// The last entry read: the parent of the next one written.
    pub leaf_id: Option<String>,
    /// Model and thinking level in effect at the end of the file.
    pub provider: String,
    pub model: String,
    pub thinking: ThinkingLevel,
    /// Entries read (the header not counted).
    pub entries: usize,
    /// One line per skipped line or inconsistency; loading never fails on content.
    pub warnings: Vec<String>,
}

/// Loads a session file. Fails only when the file cannot be read; damaged lines (a truncated
/// last line after a crash, garbage in the middle) are skipped and reported in `warnings`.
pub fn load_session(path: &Path) -> io::Result<LoadedSession> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut session = LoadedSession {
        path: path.to_path_buf(),
        header: fallback_header(path),
        messages: Vec::new(),
        message_ids: Vec::new(),
        leaf_id: None,
        provider: String::new(),
        model: String::new(),
        thinking: ThinkingLevel::Off,
        entries: 0,
        warnings: Vec::new(),
    };
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut header_seen = false;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text.trim_end_matches(['\n', '\r']),
            Err(_) => {
                session.warn(number, "not UTF-8");
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        if !header_seen && number == 1 {
            header_seen = true;
            match serde_json::from_str::<SessionHeader>(text) {
                Ok(header) => {
                    session.header = header;
                    session.provider = session.header.provider.clone();
                    session.model = session.header.model.clone();
                    session.thinking = session.header.thinking;
                    continue;
                }
                Err(err) => {
                    session.warn(number, &format!("not a session header ({err})"));
                    // Maybe the header was lost but entries follow: read it as an entry.
                }
            }
        }
        match Entry::from_json(text) {
            Ok(entry) => session.apply(entry),
            Err(err) => session.warn(number, &err),
        }
    }
    Ok(session)
}

/// The header of a file whose first line is damaged: the id from the file name, the rest
/// unknown.
fn fallback_header(path: &Path) -> SessionHeader {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let id = stem
        .as_deref()
        .and_then(|s| s.rsplit('_').next())
        .unwrap_or_default()
        .to_string();
    SessionHeader {
        kind: HeaderTag::Session,
        version: crate::FORMAT_VERSION,
        id,
        cwd: String::new(),
        created: String::new(),
        provider: String::new(),
        model: String::new(),
        thinking: ThinkingLevel::Off,
    }
}

impl LoadedSession {
    fn warn(&mut self, line: usize, reason: &str) {
        let name = self.path.display();
        self.warnings
            .push(format!("{name}:{line}: skipped a damaged line: {reason}"));
    }

    fn apply(&mut self, entry: Entry) {
        self.entries += 1;
        self.leaf_id = Some(entry.id.clone());
        match entry.body {
            EntryBody::Message(message) => {
                self.messages.push(message);
                self.message_ids.push(entry.id);
            }
            EntryBody::ModelChange { provider, model } => {
                self.provider = provider;
                self.model = model;
            }
            EntryBody::ThinkingChange(level) => self.thinking = level,
            EntryBody::Compaction {
                summary,
                first_kept_id,
            } => {
                let cut = match &first_kept_id {
                    None => Some(self.messages.len()),
                    Some(kept) => self.message_ids.iter().position(|id| id == kept),
                };
                let Some(cut) = cut else {
                    // Better a history too long (the next call compacts again) than one
                    // missing messages the summary did not cover.
                    self.warnings.push(format!(
                        "{}: compaction {} kept entry {} which is missing; compaction ignored",
                        self.path.display(),
                        entry.id,
                        first_kept_id.unwrap_or_default()
                    ));
                    return;
                };
                self.messages
                    .splice(..cut, [AgentMessage::CompactionSummary(summary)]);
                self.message_ids.splice(..cut, [entry.id]);
            }
        }
    }

    /// The date part (`YYYY-MM-DD`) of when the session started, for the system prompt.
    pub fn start_date(&self) -> Option<&str> {
        self.header.created.get(..10)
    }
}
