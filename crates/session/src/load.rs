//! Reads a session file back into the history the agent had.
//!
//! Every entry names its parent. The history is the chain of parents from the last entry in
//! the file (the current leaf) back to a root: entries of other branches stay in the file but
//! not in the history. Reading still goes through the file once, in order; parents always come
//! before their children, so the chain is found with one map lookup per entry.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use agent_core::AgentMessage;
use llm::ThinkingLevel;

use crate::entry::{Entry, EntryBody, HeaderTag, SessionHeader};
use crate::ids::{IdIndex, IdSet};
use crate::loaded::LoadedSession;
use crate::timeline::Timeline;

/// Loads a session file. Fails only when the file cannot be read; damaged lines (a truncated
/// last line after a crash, garbage in the middle) are skipped and reported in `warnings`.
/// Never writes: see [`LoadedSession::repaired`].
pub fn load_session(path: &Path) -> io::Result<LoadedSession> {
    load(path, Leaf::Last)
}

/// Where the history to load ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf<'a> {
    /// At the last entry of the file: where the session was left.
    Last,
    /// At this entry, on whatever branch it is (`/tree`, a rewind).
    Entry(&'a str),
    /// Before the first entry: an empty history (a rewind to the first message).
    Root,
}

/// Loads the history that ends at `leaf`; an entry id the file does not hold is a `NotFound`
/// error. See [`load_session`].
pub fn load_session_at(path: &Path, leaf: Leaf<'_>) -> io::Result<LoadedSession> {
    load(path, leaf)
}

fn load(path: &Path, leaf: Leaf<'_>) -> io::Result<LoadedSession> {
    if leaf != Leaf::Last {
        let mut session = load_branches(path, leaf)?;
        crate::repair::repair(&mut session);
        return Ok(session);
    }
    // Almost every file is one chain in file order: apply its entries as they are read. A file
    // with branches is read again, keeping every entry until its chain is known.
    let mut session = empty(path);
    let linear = scan(path, &mut session, |session, entry, here, parent| {
        if parent != here.checked_sub(1) {
            return false;
        }
        session.apply(entry, here);
        true
    })?;
    if !linear {
        session = load_branches(path, Leaf::Last)?;
    }
    crate::repair::repair(&mut session);
    Ok(session)
}

fn load_branches(path: &Path, leaf: Leaf<'_>) -> io::Result<LoadedSession> {
    let mut session = empty(path);
    let mut entries: Vec<Entry> = Vec::new();
    let mut parents: Vec<Option<usize>> = Vec::new();
    scan(path, &mut session, |_, entry, _, parent| {
        entries.push(entry);
        parents.push(parent);
        true
    })?;
    let mut on_chain = vec![false; entries.len()];
    let mut at = match leaf {
        Leaf::Last => entries.len().checked_sub(1),
        Leaf::Root => None,
        Leaf::Entry(id) => match entries.iter().rposition(|e| e.id == id) {
            Some(i) => Some(i),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} has no entry {id}", path.display()),
                ));
            }
        },
    };
    while let Some(i) = at {
        on_chain[i] = true;
        at = parents[i];
    }
    for (i, entry) in entries.into_iter().enumerate() {
        if on_chain[i] {
            session.apply(entry, i);
        }
    }
    Ok(session)
}

/// Hands `each` the messages of the current branch (the chain ending at the file's last
/// entry), in order, one at a time: the file is read twice (the chain first, by indexes only)
/// and no more than one message is held, so a session of any size streams. Every message on
/// the chain comes, also those a compaction replaced for the model (the summary comes where
/// it was made). Returns the file's header (the fallback one when its first line is damaged).
pub fn for_each_message_on_branch(
    path: &Path,
    mut each: impl FnMut(AgentMessage),
) -> io::Result<SessionHeader> {
    let mut parents: Vec<Option<usize>> = Vec::new();
    scan_entries(path, |_, _, parent| parents.push(parent))?;
    let mut on_chain = vec![false; parents.len()];
    let mut at = parents.len().checked_sub(1);
    while let Some(i) = at {
        on_chain[i] = true;
        at = parents[i];
    }
    let mut session = empty(path);
    scan(path, &mut session, |_, entry, here, _| {
        if on_chain.get(here).copied().unwrap_or(false) {
            match entry.body {
                EntryBody::Message(message) => each(message),
                EntryBody::Compaction { summary, .. } => {
                    each(AgentMessage::CompactionSummary(summary))
                }
                _ => {}
            }
        }
        true
    })?;
    Ok(session.header)
}

/// Hands every readable entry of the file to `each`, with its index and its parent's.
pub(crate) fn scan_entries(
    path: &Path,
    mut each: impl FnMut(Entry, usize, Option<usize>),
) -> io::Result<()> {
    let mut session = empty(path);
    scan(path, &mut session, |_, entry, here, parent| {
        each(entry, here, parent);
        true
    })?;
    Ok(())
}

fn empty(path: &Path) -> LoadedSession {
    LoadedSession {
        path: path.to_path_buf(),
        header: fallback_header(path),
        messages: Vec::new(),
        message_ids: Vec::new(),
        leaf_id: None,
        provider: String::new(),
        model: String::new(),
        server: None,
        thinking: ThinkingLevel::Off,
        mode: agent_core::Mode::Default,
        entries: 0,
        repaired: 0,
        warnings: Vec::new(),
        pending: Vec::new(),
        ids: IdSet::default(),
        len: 0,
        message_pos: Vec::new(),
        message_parents: Vec::new(),
        timeline: Timeline::new(0),
    }
}

/// Reads the header into `session` and hands every entry to `each` with its index and its
/// parent's index, which is always an earlier entry (so a chain has no cycle); stops, returning
/// false, when `each` does. Fills `len`, `entries`, `ids` and the warnings about lines.
fn scan(
    path: &Path,
    session: &mut LoadedSession,
    mut each: impl FnMut(&mut LoadedSession, Entry, usize, Option<usize>) -> bool,
) -> io::Result<bool> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut index = IdIndex::default();
    // The previous entry's id: in the usual file it is the parent, found without a lookup.
    let mut previous = String::new();
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        session.len += read as u64;
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
        if number == 1 {
            match serde_json::from_str::<SessionHeader>(text) {
                Ok(header) => {
                    session.header = header;
                    session.provider = session.header.provider.clone();
                    session.model = session.header.model.clone();
                    session.server = session.header.server.clone();
                    session.thinking = session.header.thinking;
                    continue;
                }
                Err(err) => {
                    session.warn(number, &format!("not a session header ({err})"));
                    // Maybe the header was lost but entries follow: read it as an entry.
                }
            }
        }
        let mut entry = match Entry::from_json(text) {
            Ok(entry) => entry,
            Err(err) => {
                session.warn(number, &err.to_string());
                continue;
            }
        };
        if let EntryBody::Message(message) = &mut entry.body {
            crate::images::locate(message, path);
        }
        let here = session.entries;
        let parent = match &entry.parent_id {
            None => None,
            Some(id) if here > 0 && *id == previous => Some(here - 1),
            Some(id) => match index.get(id) {
                Some(&i) => Some(i),
                None => {
                    // Most likely the parent's line was damaged: the line before is the best
                    // guess (entries of one run follow each other), and keeps the history whole.
                    session.warnings.push(format!(
                        "{}:{number}: the parent {id} of entry {} is missing; continuing from the entry before it",
                        path.display(),
                        entry.id
                    ));
                    here.checked_sub(1)
                }
            },
        };
        index.insert(entry.id.clone(), here);
        previous.clear();
        previous.push_str(&entry.id);
        session.entries = here + 1;
        if !each(session, entry, here, parent) {
            return Ok(false);
        }
    }
    session.ids = index.into_keys().collect();
    Ok(true)
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
        server: None,
        thinking: ThinkingLevel::Off,
    }
}

impl LoadedSession {
    fn warn(&mut self, line: usize, reason: &str) {
        let name = self.path.display();
        self.warnings
            .push(format!("{name}:{line}: skipped a damaged line: {reason}"));
    }

    fn apply(&mut self, entry: Entry, pos: usize) {
        self.leaf_id = Some(entry.id.clone());
        match entry.body {
            EntryBody::Message(message) => {
                self.timeline.message(&message);
                self.messages.push(message);
                self.message_ids.push(entry.id);
                self.message_parents.push(entry.parent_id);
                self.message_pos.push(pos);
            }
            EntryBody::Checkpoint(record) => self.timeline.taken(record),
            EntryBody::Restore(record) => self.timeline.restored(&record),
            // Both only shape the tree: a branch point's parent is already on the chain.
            EntryBody::Branch | EntryBody::Label { .. } => {}
            EntryBody::ModelChange {
                provider,
                model,
                server,
            } => {
                self.server = server;
                self.provider = provider;
                self.model = model;
            }
            EntryBody::ThinkingChange(level) => self.thinking = level,
            EntryBody::ModeChange(mode) => self.mode = mode,
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
                self.message_parents.splice(..cut, [entry.parent_id]);
                self.message_pos.splice(..cut, [pos]);
                self.timeline.compacted(cut);
            }
        }
    }

    /// The date part (`YYYY-MM-DD`) of when the session started, for the system prompt.
    pub fn start_date(&self) -> Option<&str> {
        self.header.created.get(..10)
    }
}
