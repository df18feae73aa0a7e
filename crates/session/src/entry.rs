//! The lines of a session file: a header, then one entry per line.
//!
//! ```text
//! {"type":"session","version":1,"id":"…","cwd":"/repo","created":"2025-…Z","provider":"openai","model":"gpt-5","thinking":"off"}
//! {"type":"message","id":"a1b2c3d4","parent_id":null,"timestamp":"2025-…Z","message":{"role":"user",…}}
//! {"type":"model_change","id":"…","parent_id":"a1b2c3d4","timestamp":"…","provider":"…","model":"…"}
//! {"type":"thinking_change","id":"…","parent_id":"…","timestamp":"…","level":"high"}
//! {"type":"compaction","id":"…","parent_id":"…","timestamp":"…","summary":{…},"first_kept_id":"…"}
//! {"type":"checkpoint","id":"…","parent_id":"…","timestamp":"…","record":{"id":"…","before":"…","after":"…","changed":["src/a.rs"]}}
//! {"type":"restore","id":"…","parent_id":"…","timestamp":"…","record":{"kind":"undo","checkpoint":"…","restored":[…],"pre_restore":"…"}}
//! {"type":"branch","id":"…","parent_id":"…","timestamp":"…"}
//! {"type":"label","id":"…","parent_id":"…","timestamp":"…","target":"…","name":"…"}
//! ```
//!
//! Every entry names its parent. The history is the chain from the last entry back to a root,
//! so a file holds branches: a rewind or a `/tree` jump writes a `branch` entry under the point
//! it went back to, and the entries after that point stay in the file on their own branch.
//! Without rewinds the entries form one chain in file order.

use agent_core::{AgentMessage, CheckpointRecord, CompactionSummary, RestoreRecord};
use llm::ThinkingLevel;
use serde::{Deserialize, Serialize};

/// Version written in new headers; files of a newer version still load what they can.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    #[serde(rename = "type")]
    pub kind: HeaderTag,
    pub version: u32,
    pub id: String,
    /// The working directory the session ran in.
    pub cwd: String,
    /// RFC 3339 UTC; its date is the one the system prompt shows for the whole session.
    pub created: String,
    pub provider: String,
    pub model: String,
    /// The local server the model ran on (its base URL), which no registry knows; `None` for a
    /// hosted model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default)]
    pub thinking: ThinkingLevel,
}

/// The `"type": "session"` tag of the header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderTag {
    #[default]
    Session,
}

/// A line that is not an entry of this format (damaged, or from a newer version).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EntryError(#[from] serde_json::Error);

/// One entry after the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub parent_id: Option<String>,
    /// RFC 3339 UTC, when the entry was written.
    pub timestamp: String,
    pub body: EntryBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    Message(AgentMessage),
    ModelChange {
        provider: String,
        model: String,
        /// As in the header: the local server's base URL.
        server: Option<String>,
    },
    ThinkingChange(ThinkingLevel),
    /// The working mode (default, auto-edit, plan) from here on.
    ModeChange(agent_core::Mode),
    /// The messages before `first_kept_id` were replaced by `summary`.
    Compaction {
        summary: CompactionSummary,
        first_kept_id: Option<String>,
    },
    /// A tool batch changed files; the workspace before it can be restored.
    Checkpoint(CheckpointRecord),
    /// Files were restored from a checkpoint (undo, redo, rewind).
    Restore(RestoreRecord),
    /// The conversation went back: it goes on from this entry's parent (`/rewind`, `/tree`);
    /// what came after the parent stays in the file as another branch.
    Branch,
    /// The user named entry `target` (`/label`), for `/tree`.
    Label {
        target: String,
        name: String,
    },
}

/// The serde shape of an entry: the tag first, so a reader can tell a message line by its
/// first bytes.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    Message {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        message: AgentMessage,
    },
    ModelChange {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        provider: String,
        model: String,
        #[serde(default)]
        server: Option<String>,
    },
    ThinkingChange {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        level: ThinkingLevel,
    },
    Compaction {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        summary: CompactionSummary,
        first_kept_id: Option<String>,
    },
    Checkpoint {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        record: CheckpointRecord,
    },
    Restore {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        record: RestoreRecord,
    },
    Branch {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
    },
    Label {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        target: String,
        name: String,
    },
    ModeChange {
        id: String,
        parent_id: Option<String>,
        timestamp: String,
        mode: agent_core::Mode,
    },
}

/// [`Wire`] borrowed, so writing an entry copies nothing.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireRef<'a> {
    Message {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        message: &'a AgentMessage,
    },
    ModelChange {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        provider: &'a str,
        model: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        server: Option<&'a str>,
    },
    ThinkingChange {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        level: ThinkingLevel,
    },
    Compaction {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        summary: &'a CompactionSummary,
        first_kept_id: Option<&'a str>,
    },
    Checkpoint {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        record: &'a CheckpointRecord,
    },
    Restore {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        record: &'a RestoreRecord,
    },
    Branch {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
    },
    Label {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        target: &'a str,
        name: &'a str,
    },
    ModeChange {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: &'a str,
        mode: agent_core::Mode,
    },
}

/// A message line read without the tagged-enum detour (see `llm::tagged`): the common case,
/// and the one that decides how fast a long session loads.
#[derive(Deserialize)]
struct MessageLine {
    id: String,
    parent_id: Option<String>,
    timestamp: String,
    message: AgentMessage,
}

/// Read this way a list grows by doubling (a buffered read knew its length): a long session
/// holds a hundred thousand of them, so they give back what they do not use.
fn shrunk(mut message: AgentMessage) -> AgentMessage {
    match &mut message {
        AgentMessage::User(m) => m.content.shrink_to_fit(),
        AgentMessage::Assistant(m) => m.content.shrink_to_fit(),
        AgentMessage::ToolResult(m) => m.content.shrink_to_fit(),
        AgentMessage::Notice(_) | AgentMessage::CompactionSummary(_) => {}
    }
    message
}

const MESSAGE_PREFIX: &str = r#"{"type":"message","#;

impl Entry {
    /// The entry as one JSON line, without the newline.
    pub fn to_json(&self) -> String {
        let (id, parent_id, timestamp) = (
            self.id.as_str(),
            self.parent_id.as_deref(),
            self.timestamp.as_str(),
        );
        let wire = match &self.body {
            EntryBody::Message(message) => WireRef::Message {
                id,
                parent_id,
                timestamp,
                message,
            },
            EntryBody::ModelChange {
                provider,
                model,
                server,
            } => WireRef::ModelChange {
                id,
                parent_id,
                timestamp,
                server: server.as_deref(),
                provider,
                model,
            },
            EntryBody::ThinkingChange(level) => WireRef::ThinkingChange {
                id,
                parent_id,
                timestamp,
                level: *level,
            },
            EntryBody::Compaction {
                summary,
                first_kept_id,
            } => WireRef::Compaction {
                id,
                parent_id,
                timestamp,
                summary,
                first_kept_id: first_kept_id.as_deref(),
            },
            EntryBody::Checkpoint(record) => WireRef::Checkpoint {
                id,
                parent_id,
                timestamp,
                record,
            },
            EntryBody::Restore(record) => WireRef::Restore {
                id,
                parent_id,
                timestamp,
                record,
            },
            EntryBody::Branch => WireRef::Branch {
                id,
                parent_id,
                timestamp,
            },
            EntryBody::Label { target, name } => WireRef::Label {
                id,
                parent_id,
                timestamp,
                target,
                name,
            },
            EntryBody::ModeChange(mode) => WireRef::ModeChange {
                id,
                parent_id,
                timestamp,
                mode: *mode,
            },
        };
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Parses one line; the error is a readable reason for the load warning.
    pub fn from_json(line: &str) -> Result<Self, EntryError> {
        if line.starts_with(MESSAGE_PREFIX) {
            let m: MessageLine = serde_json::from_str(line)?;
            return Ok(Self {
                id: m.id,
                parent_id: m.parent_id,
                timestamp: m.timestamp,
                body: EntryBody::Message(shrunk(m.message)),
            });
        }
        let wire: Wire = serde_json::from_str(line)?;
        Ok(match wire {
            Wire::Message {
                id,
                parent_id,
                timestamp,
                message,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Message(message),
            },
            Wire::ModelChange {
                id,
                parent_id,
                timestamp,
                provider,
                model,
                server,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::ModelChange {
                    provider,
                    model,
                    server,
                },
            },
            Wire::ThinkingChange {
                id,
                parent_id,
                timestamp,
                level,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::ThinkingChange(level),
            },
            Wire::Compaction {
                id,
                parent_id,
                timestamp,
                summary,
                first_kept_id,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Compaction {
                    summary,
                    first_kept_id,
                },
            },
            Wire::Checkpoint {
                id,
                parent_id,
                timestamp,
                record,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Checkpoint(record),
            },
            Wire::Restore {
                id,
                parent_id,
                timestamp,
                record,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Restore(record),
            },
            Wire::Branch {
                id,
                parent_id,
                timestamp,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Branch,
            },
            Wire::Label {
                id,
                parent_id,
                timestamp,
                target,
                name,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::Label { target, name },
            },
            Wire::ModeChange {
                id,
                parent_id,
                timestamp,
                mode,
            } => Self {
                id,
                parent_id,
                timestamp,
                body: EntryBody::ModeChange(mode),
            },
        })
    }
}

/// Whether a raw line is a message entry (for counting without parsing).
pub(crate) fn is_message_line(line: &[u8]) -> bool {
    line.starts_with(MESSAGE_PREFIX.as_bytes())
}
