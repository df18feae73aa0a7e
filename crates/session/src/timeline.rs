//! What a session knows about its checkpoints: which ones are on the current branch, where in
//! the history each was taken, and which can be undone or redone next.
//!
//! One type serves both ways of knowing: the loader builds it from the entries on the current
//! branch, and a host keeps it current by feeding it the agent's events
//! ([`Timeline::observe`]), so undo after a resume behaves exactly as undo before it.
//!
//! Undo walks back through the checkpoints not yet undone, newest first; redo re-applies the
//! last undone one. A new checkpoint forgets what could be redone (the files moved on: redoing
//! an older change on top of them would mix two versions), as every editor's undo does.

use agent_core::{AgentEvent, CheckpointRecord, CompactionOutcome, RestoreKind, RestoreRecord};

/// One checkpoint on the current branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedCheckpoint {
    pub record: CheckpointRecord,
    /// How many messages the history held when it was taken: it belongs before message `at`.
    pub at: usize,
    /// Undone (its `before` state is what the files show, as far as the agent knows).
    pub undone: bool,
}

/// See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    checkpoints: Vec<TimedCheckpoint>,
    /// Undone checkpoints that can be redone, the next one last.
    redo: Vec<String>,
    /// Messages in the history now.
    len: usize,
}

impl Timeline {
    /// An empty timeline for a history of `len` messages.
    pub fn new(len: usize) -> Self {
        Self {
            len,
            ..Self::default()
        }
    }

    /// Every checkpoint on the current branch, oldest first.
    pub fn checkpoints(&self) -> &[TimedCheckpoint] {
        &self.checkpoints
    }

    /// The checkpoint `/undo` takes back next: the newest not undone.
    pub fn next_undo(&self) -> Option<&TimedCheckpoint> {
        self.checkpoints.iter().rev().find(|c| !c.undone)
    }

    /// The checkpoint `/redo` re-applies next.
    pub fn next_redo(&self) -> Option<&TimedCheckpoint> {
        let id = self.redo.last()?;
        self.checkpoints.iter().find(|c| &c.record.id == id)
    }

    /// The checkpoints taken at or after message `index` that are not undone, oldest first:
    /// what restoring the code to just before that message takes back.
    pub fn since(&self, index: usize) -> Vec<&TimedCheckpoint> {
        self.checkpoints
            .iter()
            .filter(|c| c.at > index && !c.undone)
            .collect()
    }

    /// Follows one agent event.
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageEnd { .. } => self.len += 1,
            AgentEvent::CompactionEnd {
                outcome: CompactionOutcome::Compacted { replaced, .. },
                ..
            } => self.compacted(*replaced),
            AgentEvent::CheckpointTaken { record } => self.taken(record.clone()),
            AgentEvent::CheckpointRestored { record } => self.restored(record),
            AgentEvent::Rewound { messages, .. } => self.rewound(messages.len()),
            _ => {}
        }
    }

    pub(crate) fn message(&mut self) {
        self.len += 1;
    }

    pub(crate) fn taken(&mut self, record: CheckpointRecord) {
        self.redo.clear();
        self.checkpoints.push(TimedCheckpoint {
            record,
            at: self.len,
            undone: false,
        });
    }

    pub(crate) fn restored(&mut self, record: &RestoreRecord) {
        let Some(i) = self
            .checkpoints
            .iter()
            .position(|c| c.record.id == record.checkpoint)
        else {
            return;
        };
        match record.kind {
            RestoreKind::Undo => {
                self.checkpoints[i].undone = true;
                self.redo.retain(|id| *id != record.checkpoint);
                self.redo.push(record.checkpoint.clone());
            }
            RestoreKind::Redo => {
                self.checkpoints[i].undone = false;
                self.redo.retain(|id| *id != record.checkpoint);
            }
            RestoreKind::Rewind => {
                // Everything from that checkpoint on is taken back; redo brings back the
                // oldest first.
                for checkpoint in self.checkpoints[i..].iter_mut().rev() {
                    if !checkpoint.undone {
                        checkpoint.undone = true;
                        self.redo.retain(|id| *id != checkpoint.record.id);
                        self.redo.push(checkpoint.record.id.clone());
                    }
                }
            }
        }
    }

    /// `messages[..replaced]` became one summary message.
    pub(crate) fn compacted(&mut self, replaced: usize) {
        for checkpoint in &mut self.checkpoints {
            // Taken inside the summarised part: it now sits before the summary.
            checkpoint.at = match checkpoint.at.checked_sub(replaced) {
                Some(after) => after + 1,
                None => 0,
            };
        }
        self.len = self.len.saturating_sub(replaced) + 1;
    }

    /// `n` messages were inserted at history index `at` (the crash repair's results).
    pub(crate) fn inserted(&mut self, at: usize, n: usize) {
        for checkpoint in &mut self.checkpoints {
            if checkpoint.at > at {
                checkpoint.at += n;
            }
        }
        self.len += n;
    }

    /// The history was cut to its first `len` messages: later checkpoints are on another
    /// branch now.
    pub(crate) fn rewound(&mut self, len: usize) {
        self.checkpoints.retain(|c| c.at <= len);
        let ids: Vec<&str> = self
            .checkpoints
            .iter()
            .map(|c| c.record.id.as_str())
            .collect();
        self.redo.retain(|id| ids.contains(&id.as_str()));
        self.len = len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> CheckpointRecord {
        CheckpointRecord {
            id: id.into(),
            before: format!("{id}-before"),
            after: format!("{id}-after"),
            changed: vec!["a.txt".into()],
            skipped: Vec::new(),
            tool_call_ids: Vec::new(),
        }
    }

    fn restore(kind: RestoreKind, id: &str) -> RestoreRecord {
        RestoreRecord {
            kind,
            checkpoint: id.into(),
            restored: vec!["a.txt".into()],
            kept: Vec::new(),
            pre_restore: "pre".into(),
        }
    }

    #[test]
    fn undo_walks_back_and_redo_forward() {
        let mut t = Timeline::new(0);
        t.message();
        t.taken(record("a"));
        t.message();
        t.taken(record("b"));
        assert_eq!(t.next_undo().unwrap().record.id, "b");
        assert!(t.next_redo().is_none());
        t.restored(&restore(RestoreKind::Undo, "b"));
        assert_eq!(t.next_undo().unwrap().record.id, "a");
        t.restored(&restore(RestoreKind::Undo, "a"));
        assert!(t.next_undo().is_none());
        assert_eq!(t.next_redo().unwrap().record.id, "a");
        t.restored(&restore(RestoreKind::Redo, "a"));
        assert_eq!(t.next_redo().unwrap().record.id, "b");
        assert_eq!(t.next_undo().unwrap().record.id, "a");
        // A new change forgets what could be redone.
        t.taken(record("c"));
        assert!(t.next_redo().is_none());
        assert_eq!(t.next_undo().unwrap().record.id, "c");
    }

    #[test]
    fn rewind_restore_undoes_everything_after_and_redo_starts_with_the_oldest() {
        let mut t = Timeline::new(0);
        for id in ["a", "b", "c"] {
            t.message();
            t.taken(record(id));
        }
        assert_eq!(
            t.since(1)
                .iter()
                .map(|c| c.record.id.as_str())
                .collect::<Vec<_>>(),
            ["b", "c"]
        );
        t.restored(&restore(RestoreKind::Rewind, "b"));
        assert_eq!(t.next_undo().unwrap().record.id, "a");
        assert_eq!(t.next_redo().unwrap().record.id, "b");
    }

    #[test]
    fn a_conversation_rewind_drops_later_checkpoints_and_compaction_keeps_positions() {
        let mut t = Timeline::new(0);
        t.message(); // 0: user
        t.message(); // 1: assistant with a call
        t.taken(record("a")); // at 2
        t.message(); // 2: result
        t.message(); // 3: user
        t.message(); // 4: assistant
        t.taken(record("b")); // at 5
        t.compacted(3); // messages 0..3 become one summary: b now at 3
        assert_eq!(t.checkpoints()[0].at, 0);
        assert_eq!(t.checkpoints()[1].at, 3);
        t.rewound(1);
        assert_eq!(t.checkpoints().len(), 1);
        assert_eq!(t.next_undo().unwrap().record.id, "a");
    }
}
