//! Checkpoints for every mode: the loop's [`Checkpointer`] (a snapshot of the workspace
//! before and after each tool batch that can change files), `!cmd` commands, and the
//! restores behind `/undo`, `/redo`, `/rewind` and `/tree`.
//!
//! The snapshots live in the `checkpoint` crate's shadow store for the workspace (the
//! repository's top level), under the session's id. Which checkpoints are on the current
//! branch and which can be undone is a [`Timeline`], kept current from the agent's events in
//! order; a host that loads another history (resume, a `/tree` jump) prepares the timeline
//! that goes with it before the agent announces the switch.
//!
//! Store work runs git and blocks: it always runs on a blocking thread.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{
    Agent, AgentEvent, CheckpointRecord, Checkpointer, FileChange, FileChangeKind, OnConflict,
    RestoreKind, RestoreOutcome, RestoreRecord,
};
use async_trait::async_trait;
use checkpoint::{Change, ChangeKind, Checkpoint, CheckpointError, Resolution, Store, TreeId};
use llm::ToolCall;
use session::{TimedCheckpoint, Timeline};

/// See the module docs.
pub struct Checkpoints {
    home: PathBuf,
    workspace: PathBuf,
    inner: Mutex<Inner>,
}

struct Inner {
    /// The session the store is opened for.
    session: String,
    /// Opened on first use.
    store: Option<Arc<Store>>,
    /// Why checkpoints are off (no git, a workspace too large): said once, then nothing is
    /// attempted.
    off: Option<String>,
    timeline: Timeline,
    /// The timeline of the history the next `history_reset` or `/tree` jump brings.
    prepared: Option<Timeline>,
}

impl Checkpoints {
    /// Checkpoints of `workspace` for the session `session` (its file's id; `None`: not
    /// saved), whose history has `timeline`.
    pub fn new(home: &Path, workspace: PathBuf, session: Option<&str>, timeline: Timeline) -> Self {
        Self {
            home: home.to_path_buf(),
            workspace,
            inner: Mutex::new(Inner {
                session: session.map_or_else(unsaved_id, str::to_string),
                store: None,
                off: None,
                timeline,
                prepared: None,
            }),
        }
    }

    /// Turns checkpoints off for this run, saying why when asked.
    pub fn turn_off(&self, reason: &str) {
        self.inner().off = Some(reason.to_string());
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the session's first snapshot in the background: on a large repository it reads
    /// every file once (seconds), which the first tool batch then does not wait for.
    pub fn warm_up(self: &Arc<Self>) {
        if self.inner().off.is_some() {
            return;
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            if let Ok(store) = this.store() {
                let _ = store.snapshot().map_err(|e| this.failed(e));
            }
        });
    }

    /// Follows the agent's events (in order) for as long as it runs.
    pub fn follow(self: &Arc<Self>, agent: &Agent) {
        let mut events = agent.subscribe_settled();
        let this = self.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                this.observe(&event);
            }
        });
    }

    fn observe(&self, event: &AgentEvent) {
        let mut inner = self.inner();
        match event {
            AgentEvent::HistoryReset {
                messages, session, ..
            } => {
                let id = session.as_deref().and_then(session_id_of);
                let id = id.unwrap_or_else(unsaved_id);
                if id != inner.session {
                    inner.session = id;
                    inner.store = None;
                }
                let prepared = inner.prepared.take();
                inner.timeline = prepared.unwrap_or_else(|| Timeline::new(messages.len()));
            }
            AgentEvent::Rewound {
                leaf: Some(_),
                messages,
            } => {
                let prepared = inner.prepared.take();
                inner.timeline = prepared.unwrap_or_else(|| Timeline::new(messages.len()));
            }
            other => inner.timeline.observe(other),
        }
    }

    /// The timeline that goes with the history the next switch brings (see the module docs).
    pub fn prepare(&self, timeline: Timeline) {
        self.inner().prepared = Some(timeline);
    }

    /// The checkpoints on the current branch, oldest first.
    pub fn list(&self) -> Vec<TimedCheckpoint> {
        self.inner().timeline.checkpoints().to_vec()
    }

    /// How many checkpoints the current branch has after history index `index` (not undone):
    /// what a rewind to before that message would take back.
    pub fn count_since(&self, index: usize) -> usize {
        self.inner().timeline.since(index).len()
    }

    /// One line for `/status`.
    pub fn status(&self) -> String {
        let inner = self.inner();
        match &inner.off {
            Some(reason) => format!("Checkpoints: off ({reason})."),
            None => format!(
                "Checkpoints: on, {} on this branch (/undo, /redo, /rewind); store under {}.",
                inner.timeline.checkpoints().len(),
                self.home.join("checkpoints").display()
            ),
        }
    }

    /// The store for the current session, opened on first use (blocking). Opened outside the
    /// lock: the event follower takes the same lock on the async runtime.
    fn store(&self) -> Result<Arc<Store>, String> {
        let session = {
            let inner = self.inner();
            if let Some(reason) = &inner.off {
                return Err(reason.clone());
            }
            if let Some(store) = &inner.store {
                return Ok(store.clone());
            }
            inner.session.clone()
        };
        match Store::open(&self.home, &self.workspace, &session) {
            Ok(store) => {
                let mut inner = self.inner();
                // The session may have switched meanwhile: keep what matches.
                if inner.session != session {
                    return Err("the session changed; try again".into());
                }
                Ok(inner.store.get_or_insert_with(|| Arc::new(store)).clone())
            }
            Err(err) => Err(self.failed(err)),
        }
    }

    /// A store failure: one that will not go away turns checkpoints off (said once).
    fn failed(&self, err: CheckpointError) -> String {
        let message = err.to_string();
        if err.is_unavailable() || matches!(err, CheckpointError::TooLarge { .. }) {
            self.inner().off = Some(message.clone());
        }
        message
    }

    /// Snapshots the workspace (blocking), `touched` included; the mark is handed to
    /// [`Self::after_blocking`].
    fn before_blocking(&self, touched: Vec<PathBuf>) -> Result<String, String> {
        let store = self.store()?;
        let snapshot = store
            .snapshot_including(&touched)
            .map_err(|e| self.failed(e))?;
        serde_json::to_string(&Mark { snapshot, touched }).map_err(|e| e.to_string())
    }

    fn after_blocking(
        &self,
        mark: &str,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<CheckpointRecord>, String> {
        let store = self.store()?;
        let Mark {
            snapshot: before,
            touched,
        } = serde_json::from_str(mark).map_err(|e| format!("a checkpoint mark: {e}"))?;
        let after = store
            .snapshot_including(&touched)
            .map_err(|e| self.failed(e))?;
        let checkpoint = store
            .checkpoint(&before, &after)
            .map_err(|e| self.failed(e))?;
        if checkpoint.changed.is_empty() && checkpoint.skipped.is_empty() {
            return Ok(None);
        }
        Ok(Some(CheckpointRecord {
            id: new_id(),
            before: checkpoint.before.as_str().to_string(),
            after: checkpoint.after.as_str().to_string(),
            changed: checkpoint.changed.iter().map(file_change).collect(),
            skipped: checkpoint.skipped.iter().map(|s| s.to_string()).collect(),
            tool_call_ids,
        }))
    }

    /// Runs `work` (a `!cmd` command) between two snapshots and announces what it changed.
    /// A failure to snapshot never stops the command: it is returned as a note.
    pub async fn around<T>(
        self: &Arc<Self>,
        agent: &Agent,
        work: impl std::future::Future<Output = T>,
    ) -> (T, Option<String>) {
        if self.inner().off.is_some() {
            return (work.await, None);
        }
        let this = self.clone();
        let mark = blocking(move || this.before_blocking(Vec::new())).await;
        let out = work.await;
        let mark = match mark {
            Ok(mark) => mark,
            Err(err) => return (out, Some(err)),
        };
        let this = self.clone();
        match blocking(move || this.after_blocking(&mark, Vec::new())).await {
            Ok(Some(record)) => {
                agent.announce_checkpoint(record);
                (out, None)
            }
            Ok(None) => (out, None),
            Err(err) => (out, Some(err)),
        }
    }

    /// `/undo`: takes back the newest step not undone.
    pub async fn undo(self: &Arc<Self>, agent: &Agent, on: OnConflict) -> RestoreOutcome {
        let steps = self.pick(Timeline::next_undo);
        let empty = "nothing to undo: the agent changed no files on this branch";
        self.restore_steps(agent, RestoreKind::Undo, steps, on, empty)
            .await
    }

    /// `/redo`: takes back the undo done last — the files as they were before it, a change
    /// of the user's that "restore anyway" overwrote included (for a session recorded before
    /// restores kept their snapshot after: re-applies the step's own changes).
    pub async fn redo(self: &Arc<Self>, agent: &Agent, on: OnConflict) -> RestoreOutcome {
        let undo = self.inner().timeline.next_redo_step().cloned();
        let Some(session::RedoStep {
            checkpoints,
            undo: Some(undo),
        }) = undo
        else {
            let steps = self.pick(Timeline::next_redo);
            return self
                .restore_steps(agent, RestoreKind::Redo, steps, on, "nothing to redo")
                .await;
        };
        let step = TimedCheckpoint {
            record: undo,
            at: 0,
            step: 0,
            undone: true,
        };
        // The step's own checkpoints are back, not the undo's.
        self.restore_as(agent, RestoreKind::Redo, vec![step], on, checkpoints)
            .await
    }

    /// The code part of a rewind to just before history index `index`: every change the
    /// agent made after it is taken back.
    pub async fn rewind_code(
        self: &Arc<Self>,
        agent: &Agent,
        index: usize,
        on: OnConflict,
    ) -> RestoreOutcome {
        let steps = self.pick(|t| t.since(index));
        let empty = "no files to restore: the agent changed none after that";
        self.restore_steps(agent, RestoreKind::Rewind, steps, on, empty)
            .await
    }

    /// The checkpoints `pick` chooses from the timeline, copied out of the lock.
    fn pick(&self, pick: impl FnOnce(&Timeline) -> Vec<&TimedCheckpoint>) -> Vec<TimedCheckpoint> {
        pick(&self.inner().timeline).into_iter().cloned().collect()
    }

    async fn restore_steps(
        self: &Arc<Self>,
        agent: &Agent,
        kind: RestoreKind,
        steps: Vec<TimedCheckpoint>,
        on: OnConflict,
        empty: &str,
    ) -> RestoreOutcome {
        if steps.is_empty() {
            return nothing(self, empty);
        }
        self.restore(agent, kind, steps, on).await
    }

    /// The code part of a `/tree` jump: the files the agent changed on either branch, as
    /// they were at the point jumped to (`target`: the timeline of that history).
    pub async fn jump_code(
        self: &Arc<Self>,
        agent: &Agent,
        target: &Timeline,
        on: OnConflict,
    ) -> RestoreOutcome {
        let current = self.inner().timeline.clone();
        // What the files should be now, as far as the agent knows: anything else is a
        // change of someone else's (a conflict).
        let expected = current.current_state().or_else(|| {
            target
                .checkpoints()
                .first()
                .map(|c| c.record.before.as_str())
        });
        let Some(expected) = expected else {
            return nothing(self, "no files to restore: the agent changed none");
        };
        let Some(state) = target.current_state().or_else(|| {
            current
                .checkpoints()
                .first()
                .map(|c| c.record.before.as_str())
        }) else {
            return nothing(self, "no files to restore");
        };
        // Checkpoints on both branches (before the fork) touched what both have alike.
        let shared = |c: &&TimedCheckpoint, other: &Timeline| {
            other
                .checkpoints()
                .iter()
                .any(|o| o.record.id == c.record.id)
        };
        let mut ids = Vec::new();
        let mut changed: Vec<FileChange> = Vec::new();
        for c in current
            .checkpoints()
            .iter()
            .filter(|c| !shared(c, target))
            .chain(target.checkpoints().iter().filter(|c| !shared(c, &current)))
        {
            ids.push(c.record.id.clone());
            changed.extend(c.record.changed.iter().cloned());
        }
        if changed.is_empty() {
            return nothing(
                self,
                "no files to restore: the branches changed the same files",
            );
        }
        let step = TimedCheckpoint {
            record: CheckpointRecord {
                id: String::new(),
                before: state.to_string(),
                after: expected.to_string(),
                changed,
                skipped: Vec::new(),
                tool_call_ids: Vec::new(),
            },
            at: 0,
            step: 0,
            undone: false,
        };
        // Checkpoints of the other branch are not on this one: the record names this
        // branch's only.
        let own: Vec<String> = current
            .checkpoints()
            .iter()
            .filter(|c| !shared(c, target))
            .map(|c| c.record.id.clone())
            .collect();
        let outcome = self
            .restore(agent, RestoreKind::Rewind, vec![step], on)
            .await;
        match outcome {
            RestoreOutcome::Restored { mut record } => {
                record.checkpoints = own;
                RestoreOutcome::Restored { record }
            }
            other => other,
        }
    }

    /// Restores the workspace as before `steps` (undo, rewind) or after them (redo); asks
    /// about, overwrites or keeps the files changed since as `on` says; announces the
    /// restore.
    async fn restore(
        self: &Arc<Self>,
        agent: &Agent,
        kind: RestoreKind,
        steps: Vec<TimedCheckpoint>,
        on: OnConflict,
    ) -> RestoreOutcome {
        let ids: Vec<String> = steps.iter().map(|c| c.record.id.clone()).collect();
        self.restore_as(agent, kind, steps, on, ids).await
    }

    /// [`Self::restore`], recorded as a restore of the checkpoints `ids`.
    async fn restore_as(
        self: &Arc<Self>,
        agent: &Agent,
        kind: RestoreKind,
        steps: Vec<TimedCheckpoint>,
        on: OnConflict,
        ids: Vec<String>,
    ) -> RestoreOutcome {
        if agent.snapshot().await.is_ok_and(|s| s.running) {
            return nothing(self, "the agent is running; stop it first (Esc)");
        }
        let this = self.clone();
        let result = blocking(move || this.restore_blocking(kind, &steps, on)).await;
        match result {
            Ok(Restored::Conflicts(paths)) => RestoreOutcome::Conflicts { paths },
            Ok(Restored::Nothing(reason)) => RestoreOutcome::Nothing { reason },
            Ok(Restored::Done(applied)) => {
                let record = RestoreRecord {
                    kind,
                    checkpoints: ids,
                    restored: applied.restored.iter().map(file_change).collect(),
                    kept: applied
                        .kept
                        .iter()
                        .map(|c| c.path.to_string_lossy().into_owned())
                        .collect(),
                    failed: applied
                        .failed
                        .iter()
                        .map(|f| format!("{}: {}", f.path.display(), f.reason))
                        .collect(),
                    pre_restore: applied.checkpoint.before.as_str().to_string(),
                    post_restore: applied.checkpoint.after.as_str().to_string(),
                };
                // At once, so a second /undo right after goes further back; the event
                // brings the same change again, which changes nothing.
                self.inner().timeline.restored(&record);
                agent.announce_restore(record.clone());
                RestoreOutcome::Restored { record }
            }
            Err(reason) => RestoreOutcome::Nothing { reason },
        }
    }

    fn restore_blocking(
        &self,
        kind: RestoreKind,
        steps: &[TimedCheckpoint],
        on: OnConflict,
    ) -> Result<Restored, String> {
        let store = self.store()?;
        let checkpoints = steps
            .iter()
            .map(|c| to_checkpoint(&c.record))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(merged) = Checkpoint::merge(&checkpoints) else {
            return Ok(Restored::Nothing("nothing to restore".into()));
        };
        let plan = match kind {
            RestoreKind::Redo => store.plan_redo(&merged),
            RestoreKind::Undo | RestoreKind::Rewind => store.plan_undo(&merged),
        }
        .map_err(|e| self.failed(e))?;
        // What the steps changed that checkpoints could not capture: said every time.
        let mut uncaptured: Vec<String> = Vec::new();
        for step in steps {
            for skipped in &step.record.skipped {
                if !uncaptured.contains(skipped) {
                    uncaptured.push(skipped.clone());
                }
            }
        }
        if plan.is_empty() {
            return Ok(Restored::Nothing(if uncaptured.is_empty() {
                "the files checkpoints cover are already as they were: nothing to restore \
                 (they do not cover nested repositories, nor git-ignored files a command \
                 changed)"
                    .into()
            } else {
                format!(
                    "nothing could be restored; not captured: {}",
                    uncaptured.join("; ")
                )
            }));
        }
        let resolution = match on {
            OnConflict::Ask if !plan.conflicts.is_empty() => {
                let paths = plan
                    .conflicts
                    .iter()
                    .map(|c| c.path.to_string_lossy().into_owned())
                    .collect();
                return Ok(Restored::Conflicts(paths));
            }
            OnConflict::Overwrite => Resolution::RestoreAnyway,
            OnConflict::Ask | OnConflict::Keep => Resolution::SkipConflicts,
        };
        let mut applied = store.apply(&plan, resolution).map_err(|e| self.failed(e))?;
        // Each reads `path: why` (the `Skipped` the snapshot recorded).
        applied.failed.extend(uncaptured.iter().map(|line| {
            let (path, why) = line
                .split_once(": ")
                .unwrap_or((line.as_str(), "not captured"));
            checkpoint::PathFailure {
                path: PathBuf::from(path),
                reason: why.to_string(),
            }
        }));
        Ok(Restored::Done(applied))
    }
}

enum Restored {
    Done(checkpoint::Applied),
    Conflicts(Vec<String>),
    Nothing(String),
}

fn nothing(checkpoints: &Checkpoints, reason: &str) -> RestoreOutcome {
    let reason = match &checkpoints.inner().off {
        Some(off) => off.clone(),
        None => reason.to_string(),
    };
    RestoreOutcome::Nothing { reason }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the checkpoint task failed: {e}"))?
}

/// What the snapshot before a batch hands to the one after it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Mark {
    snapshot: checkpoint::Snapshot,
    /// The paths the batch's file tools write (absolute).
    touched: Vec<PathBuf>,
}

/// The loop's side: snapshots around tool batches that can change files.
pub struct Hook {
    pub checkpoints: Arc<Checkpoints>,
    /// Where the tools resolve relative paths.
    pub cwd: PathBuf,
}

#[async_trait]
impl Checkpointer for Hook {
    fn changes_files(&self, calls: &[ToolCall]) -> bool {
        if self.checkpoints.inner().off.is_some() {
            return false;
        }
        calls.iter().any(|call| {
            if tools::effect(&call.name) == Some(tools::Effect::RunsCommands) {
                // A command known to only read changes nothing worth a snapshot.
                let command = call.arguments.get("command").and_then(|c| c.as_str());
                return command.is_none_or(|c| !sandbox::is_known_read_only(c));
            }
            tools::changes_files(&call.name)
        })
    }

    async fn before(&self, calls: &[ToolCall]) -> Result<String, String> {
        // The paths the file tools are about to write, as the tools resolve them.
        let touched: Vec<PathBuf> = calls
            .iter()
            .filter(|call| tools::effect(&call.name) == Some(tools::Effect::Writes))
            .filter_map(|call| tools::call_path(&call.name, &call.arguments, &self.cwd))
            .collect();
        let this = self.checkpoints.clone();
        blocking(move || this.before_blocking(touched)).await
    }

    async fn after(
        &self,
        mark: String,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<CheckpointRecord>, String> {
        let this = self.checkpoints.clone();
        blocking(move || this.after_blocking(&mark, tool_call_ids)).await
    }
}

fn file_change(change: &Change) -> FileChange {
    FileChange {
        path: change.path.to_string_lossy().into_owned(),
        kind: match change.kind {
            ChangeKind::Added => FileChangeKind::Added,
            ChangeKind::Modified => FileChangeKind::Modified,
            ChangeKind::Deleted => FileChangeKind::Deleted,
            ChangeKind::TypeChanged => FileChangeKind::TypeChanged,
        },
    }
}

fn to_checkpoint(record: &CheckpointRecord) -> Result<Checkpoint, String> {
    let tree = |id: &str| TreeId::parse(id).map_err(|e| e.to_string());
    Ok(Checkpoint {
        before: tree(&record.before)?,
        after: tree(&record.after)?,
        changed: record
            .changed
            .iter()
            .map(|c| Change {
                path: PathBuf::from(&c.path),
                kind: match c.kind {
                    FileChangeKind::Added => ChangeKind::Added,
                    FileChangeKind::Modified => ChangeKind::Modified,
                    FileChangeKind::Deleted => ChangeKind::Deleted,
                    FileChangeKind::TypeChanged => ChangeKind::TypeChanged,
                },
            })
            .collect(),
        skipped: Vec::new(),
    })
}

/// A checkpoint id, unique in the session (and in practice everywhere).
fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("cp-{nanos:x}")
}

/// The id of the session saved at `path` (`<time>_<id>.jsonl`).
pub fn session_id_of(path: &str) -> Option<String> {
    let stem = Path::new(path).file_stem()?.to_string_lossy().into_owned();
    Some(stem.rsplit_once('_')?.1.to_string())
}

fn unsaved_id() -> String {
    checkpoint::unsaved_session_id()
}

/// Whether the `git` program the store drives is on the `PATH`: a look at the directories,
/// not a process (the store checks git's version when it opens).
pub fn git_available() -> Result<(), String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let name = if cfg!(windows) { "git.exe" } else { "git" };
    let found = std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(name))
            .is_ok_and(|m| m.is_file() && (cfg!(windows) || platform::fs::is_executable(&m)))
    });
    if found {
        Ok(())
    } else {
        Err("git not found".into())
    }
}

/// The ids pruning must keep: every saved session, and the unsaved ones of running
/// processes.
pub fn live_sessions(home: &session::Home) -> Vec<String> {
    // The unsaved sessions of running processes are kept by the store itself.
    session::all_session_ids(home)
}

/// Drops the checkpoints of sessions that no longer exist, and the oldest past the default
/// budget, in the background; at most once a day (a stamp file says when it last ran).
pub fn prune_in_background(home: &session::Home) {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
    let stamp = home.root().join("checkpoints").join(".pruned");
    let recent = std::fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < EVERY));
    if recent || !home.root().join("checkpoints").is_dir() {
        return;
    }
    let home = home.clone();
    tokio::task::spawn_blocking(move || {
        let live = live_sessions(&home);
        if checkpoint::prune(home.root(), &live, checkpoint::DEFAULT_BUDGET).is_ok() {
            let _ = std::fs::write(&stamp, b"");
        }
    });
}
