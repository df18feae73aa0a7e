//! Sessions: the JSONL store and resume, project context files, the system prompt, and
//! compaction.
//!
//! - [`Home`] finds `$CODING_AGENT_HOME` (default `~/.coding-agent`).
//! - [`Recorder`] follows the agent's events into the right session file; [`SessionWriter`]
//!   appends one entry per finished message to
//!   `sessions/<cwd-slug>/<timestamp>_<id>.jsonl`; [`load_session`] rebuilds the exact history
//!   along the `parent_id` chain of the last entry (compactions applied, tool calls a crash
//!   left open closed), skipping damaged lines with a warning; [`list_sessions`],
//!   [`latest_session`] and [`find_session`] serve `--continue`, `--resume` and `--session`.
//!   Files are private (0700 directories, 0600 files) and locked while a process writes them.
//! - [`spill_dir`] names the directory beside a session file for large tool outputs;
//!   [`images_dir`], inside it, holds the session's images once each, by hash.
//! - [`project_context`] gathers `AGENTS.md` / `CLAUDE.md`; [`SystemPrompt`] renders the prompt
//!   once per session.
//! - [`compaction`] decides when and where to cut and asks the model for a summary;
//!   [`SessionCompactor`] plugs that into the agent loop.

pub mod compaction;
mod context;
mod entry;
mod home;
mod ids;
mod images;
mod list;
mod load;
mod loaded;
mod private;
mod prompt;
mod recorder;
mod repair;
mod spill;
mod timeline;
mod tree;
mod writer;

pub use compaction::{CompactionSettings, SessionCompactor};
pub use context::{CONTEXT_LIMIT, ProjectContext, RepoFiles, project_context, repository_root};
pub use entry::{Entry, EntryBody, EntryError, FORMAT_VERSION, SessionHeader};
pub use home::Home;
pub use images::images_dir;
pub use list::{
    SessionInfo, all_session_ids, find_session, latest_session, latest_session_path, list_sessions,
};
pub use load::{Leaf, for_each_message_on_branch, load_session, load_session_at};
pub use loaded::LoadedSession;
pub use prompt::{PromptInputs, SystemPrompt};
pub use recorder::{Recorder, RecorderSetup};
pub use repair::INTERRUPTED;
pub use spill::{create_spill_dir, prune_orphan_spills, spill_dir};
pub use timeline::{RedoStep, TimedCheckpoint, Timeline};
pub use tree::{NodeKind, SessionTree, SubagentLink, TreeNode, load_tree};
pub use writer::{ResumeError, SessionWriter};

/// Today's date as `YYYY-MM-DD` (UTC), the date a new session's system prompt states.
pub fn today() -> String {
    ids::rfc3339(llm::now_millis())[..10].to_string()
}
