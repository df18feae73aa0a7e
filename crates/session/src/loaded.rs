//! A session as loaded: what the loader fills in, what the repair and the writer work from.
//! Its own module so the loader, the repair and the writer all depend on it and not on each
//! other.

use std::path::PathBuf;

use agent_core::AgentMessage;
use llm::ThinkingLevel;

use crate::entry::{Entry, SessionHeader};
use crate::ids::IdSet;
use crate::timeline::Timeline;

/// A session as loaded: the history to start an agent from, and what went wrong on the way.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub path: PathBuf,
    pub header: SessionHeader,
    /// The agent's history, compactions applied and unfinished tool calls closed: pass it as
    /// `AgentConfig::messages`.
    pub messages: Vec<AgentMessage>,
    /// The entry id of each message of `messages` (a compaction summary has its entry's id).
    pub message_ids: Vec<String>,
    /// The current leaf: the parent of the next entry written.
    pub leaf_id: Option<String>,
    /// Model and thinking level in effect at the leaf.
    pub provider: String,
    pub model: String,
    /// The local server the model ran on (its base URL); `None` for a hosted model.
    pub server: Option<String>,
    pub thinking: ThinkingLevel,
    /// The working mode in effect at the leaf.
    pub mode: agent_core::Mode,
    /// Entries read (the header not counted), on every branch.
    pub entries: usize,
    /// Tool calls a crash left without a result, now closed with an
    /// [`INTERRUPTED`](crate::INTERRUPTED) error result. The file gets the same results when a
    /// [`SessionWriter`](crate::SessionWriter) resumes it; loading alone never writes.
    pub repaired: usize,
    /// One line per skipped line or inconsistency, each naming the file; loading never fails on
    /// content.
    pub warnings: Vec<String>,
    /// Entries that make the file hold `messages`: the repair, written on resume.
    pub(crate) pending: Vec<Entry>,
    /// Every entry id in the file, so new ids can be checked against them.
    pub(crate) ids: IdSet,
    /// Bytes read: a resume finding the file longer knows another process wrote to it since.
    pub(crate) len: u64,
    /// The index in the file of each message's entry (for the repair's branch point).
    pub(crate) message_pos: Vec<usize>,
    /// The parent of each message's entry: the point a rewind to before that message goes
    /// back to.
    pub(crate) message_parents: Vec<Option<String>>,
    /// The checkpoints on this branch, and which can be undone or redone.
    pub timeline: Timeline,
}

impl LoadedSession {
    /// The entry before message `index`'s entry: where a rewind to just before that message
    /// goes back to (`None`: the start of the file).
    pub fn parent_of_message(&self, index: usize) -> Option<String> {
        self.message_parents.get(index).cloned().flatten()
    }
}
