//! Undo and redo over the store, in two steps the host drives:
//!
//! 1. [`Store::plan_undo`] / [`Store::plan_redo`] → a [`Plan`]: what applying would change
//!    (`changes`) and which of the checkpoint's paths changed since the agent's step
//!    (`conflicts`: the user's editor touched them), so the host can ask before clobbering;
//! 2. [`Store::apply`] with a [`Resolution`] → [`Applied`]: a snapshot first, then the
//!    checkpoint's paths restored (minus the conflicts the user chose to keep), then a
//!    snapshot after; [`Applied::checkpoint`] spans the two, so the undo itself can be undone.
//!
//! Undo restores `before` (conflicts: paths that differ now from `after`); redo restores
//! `after` (conflicts: paths that differ now from `before`). A conflict that appears between
//! planning and applying (not in the plan, so never confirmed) is always kept.
//!
//! The decisions are pure functions over plain data ([`plan_changes`], [`select`]), tested
//! without git; the `Store` methods only gather their inputs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::restore::PathFailure;
use crate::store::Store;
use crate::types::{Change, Checkpoint, Snapshot, TreeId};

/// Which way a plan goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Back to the checkpoint's `before`.
    Undo,
    /// Forward to its `after`.
    Redo,
}

/// What undoing or redoing a checkpoint would do, worked out against the workspace as it was
/// when planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Undo or redo.
    pub direction: Direction,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The workspace when planned.
    pub current: TreeId,
    /// What applying would do to the workspace (from now to the restored state), e.g.
    /// `A b.txt` for a file the agent deleted.
    pub changes: Vec<Change>,
    /// Paths of the checkpoint that changed after the agent's step (from the state the step
    /// left to now): restoring them would throw those changes away.
    pub conflicts: Vec<Change>,
}

impl Plan {
    /// The tree this plan restores.
    pub fn target(&self) -> &TreeId {
        match self.direction {
            Direction::Undo => &self.checkpoint.before,
            Direction::Redo => &self.checkpoint.after,
        }
    }

    /// The tree the step left, against which conflicts are found.
    pub fn expected(&self) -> &TreeId {
        match self.direction {
            Direction::Undo => &self.checkpoint.after,
            Direction::Redo => &self.checkpoint.before,
        }
    }

    /// Whether applying would change nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// What to do with conflicting paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Restore them too: the user's later changes to them are lost (they stay in the
    /// snapshot `apply` takes first, so undoing the undo brings them back).
    RestoreAnyway,
    /// Keep them as the user has them; restore the rest.
    SkipConflicts,
}

/// What [`Store::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// From the snapshot before applying to the one after: plan an undo of it to take the
    /// undo (or redo) back.
    pub checkpoint: Checkpoint,
    /// What changed in the workspace (`A b.txt`, `M src/a.rs`, `D c.txt`).
    pub restored: Vec<Change>,
    /// Conflicting paths left as the user has them.
    pub kept: Vec<Change>,
    /// Paths that could not be restored, and why.
    pub failed: Vec<PathFailure>,
}

impl Applied {
    /// One line per restored path, then the kept and failed ones: what the host shows.
    pub fn summary(&self) -> String {
        let mut lines: Vec<String> = self.restored.iter().map(Change::to_string).collect();
        lines.extend(
            self.kept
                .iter()
                .map(|c| format!("kept (changed since): {}", c.path.display())),
        );
        lines.extend(
            self.failed
                .iter()
                .map(|f| format!("not restored: {}: {}", f.path.display(), f.reason)),
        );
        if lines.is_empty() {
            lines.push("nothing to restore".into());
        }
        lines.join("\n")
    }
}

/// The plan's two lists: `to_target` (now → target) among the checkpoint's paths is what
/// applying does; `since_step` (expected → now) among them are conflicts, except paths
/// already back at the target (nothing to do there).
pub fn plan_changes(
    paths: &[PathBuf],
    to_target: Vec<Change>,
    since_step: Vec<Change>,
) -> (Vec<Change>, Vec<Change>) {
    let wanted: HashSet<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let changes: Vec<Change> = to_target
        .into_iter()
        .filter(|c| wanted.contains(c.path.as_path()))
        .collect();
    let to_do: HashSet<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
    let conflicts = since_step
        .into_iter()
        .filter(|c| to_do.contains(c.path.as_path()))
        .collect();
    (changes, conflicts)
}

/// Which paths to restore when applying, from the situation at apply time: `changes` and
/// `conflicts` as [`plan_changes`] finds them now, `confirmed` the conflicts the user saw in
/// the plan. Returns the paths to restore and the conflicts kept.
pub fn select(
    changes: &[Change],
    conflicts: &[Change],
    confirmed: &[Change],
    resolution: Resolution,
) -> (Vec<PathBuf>, Vec<Change>) {
    let confirmed: HashSet<&Path> = confirmed.iter().map(|c| c.path.as_path()).collect();
    let kept: Vec<Change> = conflicts
        .iter()
        .filter(|c| {
            resolution == Resolution::SkipConflicts || !confirmed.contains(c.path.as_path())
        })
        .cloned()
        .collect();
    let skip: HashSet<&Path> = kept.iter().map(|c| c.path.as_path()).collect();
    let restore = changes
        .iter()
        .filter(|c| !skip.contains(c.path.as_path()))
        .map(|c| c.path.clone())
        .collect();
    (restore, kept)
}

impl Store {
    /// Plans undoing `checkpoint`: restoring its paths as they were before (takes a
    /// snapshot of the workspace now).
    pub fn plan_undo(&self, checkpoint: &Checkpoint) -> Result<Plan> {
        self.plan(checkpoint, Direction::Undo)
    }

    /// Plans redoing `checkpoint`: restoring its paths as the step left them.
    pub fn plan_redo(&self, checkpoint: &Checkpoint) -> Result<Plan> {
        self.plan(checkpoint, Direction::Redo)
    }

    fn plan(&self, checkpoint: &Checkpoint, direction: Direction) -> Result<Plan> {
        self.require(&[&checkpoint.before, &checkpoint.after])?;
        let mut plan = Plan {
            direction,
            checkpoint: checkpoint.clone(),
            current: checkpoint.after.clone(),
            changes: Vec::new(),
            conflicts: Vec::new(),
        };
        let now = self.snapshot()?;
        let (changes, conflicts) = self.situation(&plan, &now)?;
        plan.current = now.tree;
        plan.changes = changes;
        plan.conflicts = conflicts;
        Ok(plan)
    }

    /// The changes and conflicts of `plan` against the snapshot `now`.
    fn situation(&self, plan: &Plan, now: &Snapshot) -> Result<(Vec<Change>, Vec<Change>)> {
        let paths = plan.checkpoint.paths();
        let to_target = self.changes(&now.tree, plan.target())?;
        let since_step = self.differences(plan.expected(), now, &paths)?;
        Ok(plan_changes(&paths, to_target, since_step))
    }

    /// Applies `plan`: a snapshot first, then its paths restored as `resolution` says, then
    /// a snapshot after. The situation is read again at this point: a path already restored
    /// is left alone, and a conflict that was not in the plan is kept whatever `resolution`.
    pub fn apply(&self, plan: &Plan, resolution: Resolution) -> Result<Applied> {
        let pre = self.snapshot()?;
        let (changes, conflicts) = self.situation(plan, &pre)?;
        let (restore, kept) = select(&changes, &conflicts, &plan.conflicts, resolution);
        let report = self.restore(plan.target(), &restore)?;
        let post = self.snapshot()?;
        let checkpoint = self.checkpoint(&pre, &post)?;
        Ok(Applied {
            restored: checkpoint.changed.clone(),
            checkpoint,
            kept,
            failed: report.failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ChangeKind::{Added, Deleted, Modified};

    fn c(path: &str, kind: crate::types::ChangeKind) -> Change {
        Change {
            path: path.into(),
            kind,
        }
    }

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn plans_only_the_checkpoint_paths_and_drops_conflicts_already_resolved() {
        let (changes, conflicts) = plan_changes(
            &paths(&["a", "b", "c"]),
            // `d` differs too, but the step never touched it: never restored.
            vec![c("a", Modified), c("b", Added), c("d", Deleted)],
            // `c` was changed by the user back to the target: nothing to do, no question.
            vec![c("a", Modified), c("c", Modified)],
        );
        assert_eq!(changes, vec![c("a", Modified), c("b", Added)]);
        assert_eq!(conflicts, vec![c("a", Modified)]);
    }

    #[test]
    fn skip_keeps_every_conflict_and_restore_anyway_only_confirmed_ones() {
        let changes = [c("a", Modified), c("b", Added), c("n", Modified)];
        let conflicts = [c("a", Modified), c("n", Modified)];
        let confirmed = [c("a", Modified)];
        let (restore, kept) = select(&changes, &conflicts, &confirmed, Resolution::SkipConflicts);
        assert_eq!(restore, paths(&["b"]));
        assert_eq!(kept, conflicts.to_vec());
        // `n` became a conflict after planning: the user never agreed to lose it.
        let (restore, kept) = select(&changes, &conflicts, &confirmed, Resolution::RestoreAnyway);
        assert_eq!(restore, paths(&["a", "b"]));
        assert_eq!(kept, vec![c("n", Modified)]);
    }

    #[test]
    fn summaries_read_like_git_status() {
        let applied = Applied {
            checkpoint: Checkpoint {
                before: TreeId::parse(&"1".repeat(40)).unwrap(),
                after: TreeId::parse(&"2".repeat(40)).unwrap(),
                changed: vec![],
                skipped: vec![],
            },
            restored: vec![c("src/a.rs", Modified), c("b.txt", Added)],
            kept: vec![c("c.txt", Modified)],
            failed: vec![],
        };
        assert_eq!(
            applied.summary(),
            "M src/a.rs\nA b.txt\nkept (changed since): c.txt"
        );
    }
}
