//! Taking it back: snapshots of the workspace in a shadow git store under the agent's home
//! (never the user's `.git`), what changed between two of them, and restoring exactly the
//! paths the agent changed — by its own tools or by shell commands alike.
//!
//! - [`Store`] ([`Store::open`]): the store of one workspace for one session, under
//!   `$CODING_AGENT_HOME/checkpoints/<slug>/`, driven through the `git` binary with its own
//!   `GIT_DIR` and a per-session index. No git installed → [`CheckpointError::GitNotFound`].
//! - [`Store::snapshot`] → [`Snapshot`]: every file git would see, tracked or not, ignore
//!   rules honoured, files over the cap and nested repositories listed as [`Skipped`].
//! - [`Store::checkpoint`] → [`Checkpoint`]: the paths that differ between two snapshots
//!   ([`Store::changes`] for any two trees).
//! - [`Store::restore`]: paths written back as a snapshot has them; [`Store::conflicts`]:
//!   which of them changed since.
//! - Undo and redo ([`undo`]): [`Store::plan_undo`] / [`Store::plan_redo`] → [`Plan`],
//!   [`Store::apply`] with a [`Resolution`] → [`Applied`].
//! - [`prune()`]: dead sessions' checkpoints, then the oldest past a size budget.
//!
//! `docs/checkpoints.md` describes the design, what is and is not captured, and the figures.

mod error;
mod git;
mod lock;
mod paths;
mod prune;
mod restore;
mod store;
mod types;
pub mod undo;

pub use error::{CheckpointError, Result};
pub use prune::{DEFAULT_BUDGET, StorePruned, prune, prune_with, unsaved_session_id};
pub use restore::{PathFailure, Restored};
pub use store::{Excludes, Store, StoreOptions};
pub use types::{Change, ChangeKind, Checkpoint, Limits, SkipReason, Skipped, Snapshot, TreeId};
pub use undo::{Applied, Direction, Plan, Resolution};
