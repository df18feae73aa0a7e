//! The loop's side of checkpoints: a host plugs in a [`Checkpointer`] (the binary uses the
//! `checkpoint` crate's shadow store), the loop asks it around every tool batch that can change
//! files, and what it recorded becomes a `checkpoint_taken` event — so the session file, the TUI
//! and RPC clients all learn about it the same way. Restores (undo, redo, rewind) happen
//! outside runs, in the host; it announces them through `Agent::announce_restore`.

use async_trait::async_trait;
use llm::ToolCall;
use serde::{Deserialize, Serialize};

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    Added,
    Modified,
    Deleted,
    /// A file became a symlink or the other way round.
    TypeChanged,
}

/// One changed path, relative to the workspace. Displays as `M src/a.rs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub kind: FileChangeKind,
}

impl std::fmt::Display for FileChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let letter = match self.kind {
            FileChangeKind::Added => 'A',
            FileChangeKind::Modified => 'M',
            FileChangeKind::Deleted => 'D',
            FileChangeKind::TypeChanged => 'T',
        };
        write!(f, "{letter} {}", self.path)
    }
}

/// What one batch of tool calls changed in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Unique in the session.
    pub id: String,
    /// The workspace before the batch and after it (the store's snapshot ids).
    pub before: String,
    pub after: String,
    /// The paths the batch changed.
    pub changed: Vec<FileChange>,
    /// Paths left out of the snapshots (too large, nested repositories), with the reason:
    /// changes there cannot be taken back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The tool calls of the batch (empty for a `!cmd` shell command).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_call_ids: Vec<String>,
}

/// Which way a restore went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreKind {
    /// Back to before the checkpoint.
    Undo,
    /// Forward to after it again.
    Redo,
    /// Back to an earlier point of the conversation (`/rewind`, `/tree`).
    Rewind,
}

/// A restore the host made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRecord {
    pub kind: RestoreKind,
    /// The checkpoints taken back (undo, rewind: the workspace is as before the first of
    /// them) or re-applied (redo: as after the last).
    pub checkpoints: Vec<String>,
    /// What the restore changed in the workspace.
    pub restored: Vec<FileChange>,
    /// Paths the user chose to keep as they were (changed by someone else since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// Paths that could not be restored, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// The snapshot taken just before restoring, so the restore itself can be undone.
    pub pre_restore: String,
    /// The snapshot taken just after; with `pre_restore`, what `/redo` of an undo puts back
    /// (the files as they were before it, a change of the user's it overwrote included).
    /// Empty in sessions recorded before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub post_restore: String,
}

/// Takes checkpoints around tool batches; see the module docs.
#[async_trait]
pub trait Checkpointer: Send + Sync + 'static {
    /// Whether a batch of these calls can change files (so a checkpoint is worth taking).
    fn changes_files(&self, calls: &[ToolCall]) -> bool;

    /// Snapshots the workspace before a batch of `calls` (what they write is captured even
    /// where a plain snapshot would not look); the mark is handed to [`Self::after`].
    async fn before(&self, calls: &[ToolCall]) -> Result<String, String>;

    /// Snapshots it after the batch; `None` when the batch changed nothing.
    async fn after(
        &self,
        mark: String,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<CheckpointRecord>, String>;
}

/// What to do with files changed since the agent's checkpoint by someone else (the user's
/// editor) when restoring would overwrite them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnConflict {
    /// Change nothing and report them, so the user can choose.
    Ask,
    /// Restore them too (their current content stays in the snapshot taken first).
    Overwrite,
    /// Leave them as they are; restore the rest.
    Keep,
}

/// How a restore (undo, redo, the code part of a rewind) went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RestoreOutcome {
    /// Done (and announced as `checkpoint_restored`).
    Restored { record: RestoreRecord },
    /// Nothing was changed: these files changed since the agent's checkpoint; ask again with
    /// `Overwrite` or `Keep`.
    Conflicts { paths: Vec<String> },
    /// Nothing to do, and why.
    Nothing { reason: String },
}
