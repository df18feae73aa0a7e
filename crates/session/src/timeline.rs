//! What a session knows about its checkpoints: which ones are on the current branch, where in
//! the history each was taken, and which can be undone or redone next.
//!
//! One type serves both ways of knowing: the loader builds it from the entries on the current
//! branch, and a host keeps it current by feeding it the agent's events
//! ([`Timeline::observe`]), so undo after a resume behaves exactly as undo before it.
//!
//! Undo walks back one step at a time, newest first, and redo re-applies the last step undone.
//! A step is everything the agent changed in answer to one user message (all the tool batches
//! of that run), or one `!cmd` command: what a person thinks of as "what it just did". A new
//! checkpoint forgets what could be redone (the files moved on: redoing an older change on top
//! of them would mix two versions), as every editor's undo does.

use agent_core::{
    AgentEvent, AgentMessage, CheckpointRecord, CompactionOutcome, RestoreKind, RestoreRecord,
};

/// One checkpoint on the current branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedCheckpoint {
    pub record: CheckpointRecord,
    /// How many messages the history held when it was taken: it belongs before message `at`.
    pub at: usize,
    /// The step it is part of (checkpoints of one step share it).
    pub step: u64,
    /// Undone: as far as the agent knows, the files are as before it.
    pub undone: bool,
}

/// An undone step, as `/redo` puts it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedoStep {
    /// The checkpoints the undo took back.
    pub checkpoints: Vec<String>,
    /// The undo as a checkpoint of its own: from the files after it (`before`) to the files
    /// before it (`after`), over the paths it changed. Redoing restores its `after`, so a
    /// change of the user's that "restore anyway" overwrote comes back with the agent's.
    /// `None` for a session recorded before restores kept their snapshot after.
    pub undo: Option<CheckpointRecord>,
}

/// See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    checkpoints: Vec<TimedCheckpoint>,
    /// Undone steps that can be redone, the next one last.
    redo: Vec<RedoStep>,
    /// Messages in the history now.
    len: usize,
    /// The current step; a user message or a `!cmd` checkpoint starts the next.
    step: u64,
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

    /// The checkpoints `/undo` takes back next: those of the newest step not undone, oldest
    /// first (empty when there is nothing to undo).
    pub fn next_undo(&self) -> Vec<&TimedCheckpoint> {
        let Some(last) = self.checkpoints.iter().rev().find(|c| !c.undone) else {
            return Vec::new();
        };
        self.checkpoints
            .iter()
            .filter(|c| c.step == last.step && !c.undone)
            .collect()
    }

    /// The checkpoints `/redo` re-applies next, oldest first.
    pub fn next_redo(&self) -> Vec<&TimedCheckpoint> {
        let Some(step) = self.redo.last() else {
            return Vec::new();
        };
        self.checkpoints
            .iter()
            .filter(|c| step.checkpoints.contains(&c.record.id))
            .collect()
    }

    /// What `/redo` puts back next: the undone step, and the undo to take back.
    pub fn next_redo_step(&self) -> Option<&RedoStep> {
        self.redo.last()
    }

    /// The checkpoints taken after message `index` that are not undone, oldest first: what
    /// restoring the code to just before that message takes back.
    pub fn since(&self, index: usize) -> Vec<&TimedCheckpoint> {
        self.checkpoints
            .iter()
            .filter(|c| c.at > index && !c.undone)
            .collect()
    }

    /// The workspace as the agent last left it, as a snapshot id: the `after` of the newest
    /// checkpoint not undone (later ones were undone back to it), else the `before` of the
    /// first. `None` without checkpoints.
    pub fn current_state(&self) -> Option<&str> {
        match self.checkpoints.iter().rev().find(|c| !c.undone) {
            Some(c) => Some(&c.record.after),
            None => self.checkpoints.first().map(|c| c.record.before.as_str()),
        }
    }

    /// Follows one agent event.
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageEnd { message } => self.message(message),
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

    pub(crate) fn message(&mut self, message: &AgentMessage) {
        if matches!(message, AgentMessage::User(_)) {
            self.step += 1;
        }
        self.len += 1;
    }

    pub(crate) fn taken(&mut self, record: CheckpointRecord) {
        if self.checkpoints.iter().any(|c| c.record.id == record.id) {
            return;
        }
        // A `!cmd` command is a step of its own, and whatever follows it is another.
        let own_step = record.tool_call_ids.is_empty();
        if own_step {
            self.step += 1;
        }
        self.redo.clear();
        self.checkpoints.push(TimedCheckpoint {
            record,
            at: self.len,
            step: self.step,
            undone: false,
        });
        if own_step {
            self.step += 1;
        }
    }

    /// Applies a restore; applying the same one twice changes nothing (a host applies it at
    /// once and again when its event comes back).
    pub fn restored(&mut self, record: &RestoreRecord) {
        let ids = &record.checkpoints;
        self.redo
            .retain(|step| !step.checkpoints.iter().any(|id| ids.contains(id)));
        let undone = record.kind != RestoreKind::Redo;
        for checkpoint in &mut self.checkpoints {
            if ids.contains(&checkpoint.record.id) {
                checkpoint.undone = undone;
            }
        }
        if undone {
            let undo = (!record.post_restore.is_empty()).then(|| CheckpointRecord {
                id: String::new(),
                before: record.post_restore.clone(),
                after: record.pre_restore.clone(),
                changed: record.restored.clone(),
                skipped: Vec::new(),
                tool_call_ids: Vec::new(),
            });
            self.redo.push(RedoStep {
                checkpoints: ids.clone(),
                undo,
            });
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
        self.redo
            .retain(|step| step.checkpoints.iter().all(|id| ids.contains(&id.as_str())));
        self.len = len;
        self.step += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{FileChange, FileChangeKind};

    fn record(id: &str, calls: bool) -> CheckpointRecord {
        CheckpointRecord {
            id: id.into(),
            before: format!("{id}-before"),
            after: format!("{id}-after"),
            changed: vec![FileChange {
                path: "a.txt".into(),
                kind: FileChangeKind::Modified,
            }],
            skipped: Vec::new(),
            tool_call_ids: if calls {
                vec![format!("call-{id}")]
            } else {
                Vec::new()
            },
        }
    }

    fn restore(kind: RestoreKind, ids: &[&str]) -> RestoreRecord {
        RestoreRecord {
            kind,
            checkpoints: ids.iter().map(|id| id.to_string()).collect(),
            restored: Vec::new(),
            kept: Vec::new(),
            failed: Vec::new(),
            pre_restore: "pre".into(),
            post_restore: String::new(),
        }
    }

    fn ids(list: Vec<&TimedCheckpoint>) -> Vec<&str> {
        list.into_iter().map(|c| c.record.id.as_str()).collect()
    }

    fn user(t: &mut Timeline) {
        t.message(&AgentMessage::user("u"));
    }

    fn other(t: &mut Timeline) {
        t.message(&AgentMessage::notice("n"));
    }

    #[test]
    fn undo_takes_back_a_whole_answer_and_redo_brings_it_back() {
        let mut t = Timeline::new(0);
        user(&mut t);
        t.taken(record("a1", true));
        other(&mut t);
        t.taken(record("a2", true));
        user(&mut t);
        t.taken(record("b", true));
        assert_eq!(ids(t.next_undo()), ["b"]);
        assert!(t.next_redo().is_empty());
        t.restored(&restore(RestoreKind::Undo, &["b"]));
        assert_eq!(ids(t.next_undo()), ["a1", "a2"]);
        t.restored(&restore(RestoreKind::Undo, &["a1", "a2"]));
        // Twice is once.
        t.restored(&restore(RestoreKind::Undo, &["a1", "a2"]));
        assert!(t.next_undo().is_empty());
        assert_eq!(t.current_state(), Some("a1-before"));
        assert_eq!(ids(t.next_redo()), ["a1", "a2"]);
        t.restored(&restore(RestoreKind::Redo, &["a1", "a2"]));
        assert_eq!(ids(t.next_redo()), ["b"]);
        assert_eq!(ids(t.next_undo()), ["a1", "a2"]);
        assert_eq!(t.current_state(), Some("a2-after"));
        // A new change forgets what could be redone.
        user(&mut t);
        t.taken(record("c", true));
        assert!(t.next_redo().is_empty());
        assert_eq!(ids(t.next_undo()), ["c"]);
    }

    #[test]
    fn a_shell_command_is_a_step_of_its_own() {
        let mut t = Timeline::new(0);
        user(&mut t);
        t.taken(record("a", true));
        t.taken(record("shell", false));
        t.taken(record("a-again", true));
        assert_eq!(ids(t.next_undo()), ["a-again"]);
        t.restored(&restore(RestoreKind::Undo, &["a-again"]));
        assert_eq!(ids(t.next_undo()), ["shell"]);
    }

    #[test]
    fn a_rewind_undoes_everything_after_and_redo_brings_it_back_at_once() {
        let mut t = Timeline::new(0);
        for id in ["a", "b", "c"] {
            user(&mut t);
            t.taken(record(id, true));
        }
        assert_eq!(ids(t.since(1)), ["b", "c"]);
        t.restored(&restore(RestoreKind::Rewind, &["b", "c"]));
        assert_eq!(ids(t.next_undo()), ["a"]);
        assert_eq!(ids(t.next_redo()), ["b", "c"]);
    }

    #[test]
    fn a_conversation_rewind_drops_later_checkpoints_and_compaction_keeps_positions() {
        let mut t = Timeline::new(0);
        user(&mut t); // 0
        other(&mut t); // 1: assistant with a call
        t.taken(record("a", true)); // at 2
        other(&mut t); // 2: result
        user(&mut t); // 3
        other(&mut t); // 4: assistant
        t.taken(record("b", true)); // at 5
        t.compacted(3); // messages 0..3 become one summary: b now at 3
        assert_eq!(t.checkpoints()[0].at, 0);
        assert_eq!(t.checkpoints()[1].at, 3);
        t.restored(&restore(RestoreKind::Undo, &["b"]));
        t.rewound(1);
        assert_eq!(t.checkpoints().len(), 1);
        assert!(t.next_redo().is_empty(), "b is on the other branch");
        assert_eq!(ids(t.next_undo()), ["a"]);
    }
}
