//! The loop's side of checkpoints: a host plugs in a [`Checkpointer`] (the binary uses the
//! `checkpoint` crate's shadow store), the loop asks it around every tool batch that can change
//! files, and what it recorded becomes a `checkpoint_taken` event — so the session file, the TUI
//! and RPC clients all learn about it the same way. Restores (undo, redo, rewind) happen
//! outside runs, in the host; it announces them through `Agent::announce_restore`.

use async_trait::async_trait;
use llm::ToolCall;
use serde::{Deserialize, Serialize};

/// What one batch of tool calls changed in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Unique in the session.
    pub id: String,
    /// The workspace before the batch and after it (the store's snapshot ids).
    pub before: String,
    pub after: String,
    /// The paths the batch changed, relative to the workspace.
    pub changed: Vec<String>,
    /// Paths left out of the snapshots (too large, unreadable), with the reason.
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
    /// Back to before a user message (`/rewind`): `checkpoint` is the first after it.
    Rewind,
}

/// A restore the host made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRecord {
    pub kind: RestoreKind,
    /// The checkpoint it went back before (undo, rewind) or forward after (redo).
    pub checkpoint: String,
    /// The paths written or removed.
    pub restored: Vec<String>,
    /// Paths the user chose to keep as they were (changed by someone else since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// The snapshot taken just before restoring, so the restore itself can be undone.
    pub pre_restore: String,
}

/// Takes checkpoints around tool batches; see the module docs.
#[async_trait]
pub trait Checkpointer: Send + Sync + 'static {
    /// Whether a batch of these calls can change files (so a checkpoint is worth taking).
    fn changes_files(&self, calls: &[ToolCall]) -> bool;

    /// Snapshots the workspace before a batch; the mark is handed to [`Self::after`].
    async fn before(&self) -> Result<String, String>;

    /// Snapshots it after the batch; `None` when the batch changed nothing.
    async fn after(
        &self,
        mark: String,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<CheckpointRecord>, String>;
}
