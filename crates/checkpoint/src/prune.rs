//! Keeping the stores small: the checkpoints of sessions that no longer exist go, and past a
//! size budget the oldest checkpoints go first; then git collects the garbage.
//!
//! Each session's newest checkpoint always stays: its index names exactly the objects of
//! that snapshot, and the next snapshot trusts the index not to name missing objects.
//! Collection runs with `--prune=now` under the store's exclusive lock, so no other process
//! is between writing objects and referencing them; a store whose lock is held (a snapshot
//! running) is skipped and reported busy.
//!
//! Over budget, the share of checkpoints dropped per round is the share of the size over the
//! budget (every checkpoint is assumed to cost about the same), then the size is measured
//! again, for at most eight rounds.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{CheckpointError, Result};
use crate::git::{self, Git};
use crate::lock::{self, Mode};
use crate::store::{dir_size, loose_objects};

/// The default size budget of one workspace's store: 1 GiB.
pub const DEFAULT_BUDGET: u64 = 1 << 30;

const MAX_ROUNDS: usize = 8;
/// Loose objects worth a collection even under the budget (snapshots pack at 300).
const LOOSE_COLLECT: usize = 100;

/// What pruning did to one workspace's store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorePruned {
    /// The store's directory.
    pub dir: PathBuf,
    /// The workspace it snapshots, if recorded.
    pub workspace: Option<PathBuf>,
    /// Sessions whose checkpoints were removed (they no longer exist).
    pub removed_sessions: Vec<String>,
    /// Checkpoints (refs) removed, of dead sessions and over the budget.
    pub removed_checkpoints: usize,
    /// Checkpoints kept.
    pub kept_checkpoints: usize,
    /// Size on disk before, in bytes.
    pub size_before: u64,
    /// Size on disk after, in bytes (0 when the store was removed).
    pub size_after: u64,
    /// The whole store was removed: its workspace is gone and no live session had anything
    /// in it.
    pub removed: bool,
    /// Another process held the store's lock: left as it was.
    pub busy: bool,
}

/// Prunes every store under `home` (`$CODING_AGENT_HOME`): `live_sessions` are the ids of
/// every session that still exists (resumable sessions, and the running one even if its
/// session file is not written yet); the unsaved sessions of running processes
/// ([`unsaved_session_id`]) are live too; everything of other sessions goes, and a store whose
/// workspace no longer exists goes whole once none of its sessions is live. `budget` is the size
/// allowed per workspace store ([`DEFAULT_BUDGET`]). Blocks for as long as git's garbage
/// collection takes: run it in the background.
pub fn prune(home: &Path, live_sessions: &[String], budget: u64) -> Result<Vec<StorePruned>> {
    prune_with(Path::new("git"), home, live_sessions, budget)
}

/// [`prune`] with another git program.
pub fn prune_with(
    program: &Path,
    home: &Path,
    live_sessions: &[String],
    budget: u64,
) -> Result<Vec<StorePruned>> {
    git::check_version(program)?;
    let root = home.join("checkpoints");
    let entries = match fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::io(&root)(e)),
    };
    let live: HashSet<&str> = live_sessions.iter().map(String::as_str).collect();
    let mut reports = Vec::new();
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("git/HEAD").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        reports.push(prune_store(program, &dir, &live, budget)?);
    }
    Ok(reports)
}

/// The store's name for the snapshots of a session that is not saved (`--no-session`): tied
/// to this process, so that pruning by another process keeps them while this one runs.
pub fn unsaved_session_id() -> String {
    format!("unsaved-{}", std::process::id())
}

/// Whether `session` is the unsaved session of a process that still runs.
fn running_unsaved(session: &str) -> bool {
    session
        .strip_prefix("unsaved-")
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(platform::process::pid_alive)
}

/// One checkpoint ref.
struct Ref {
    name: String,
    session: String,
    number: u64,
    time: u64,
}

fn prune_store(
    program: &Path,
    dir: &Path,
    live: &HashSet<&str>,
    budget: u64,
) -> Result<StorePruned> {
    let mut report = StorePruned {
        dir: dir.to_path_buf(),
        workspace: fs::read_to_string(dir.join("workspace"))
            .ok()
            .map(|w| PathBuf::from(w.trim_end_matches('\n'))),
        ..StorePruned::default()
    };
    let Some(_lock) = lock::lock(&dir.join("lock"), Mode::TryExclusive)? else {
        report.busy = true;
        return Ok(report);
    };
    report.size_before = dir_size(dir)?;
    // No command here reads the work tree or an index; the store's own directory stands in
    // for both (the workspace may be gone), and a missing index keeps gc from counting one.
    let git = Git::new(
        program.to_path_buf(),
        dir.join("git"),
        dir.to_path_buf(),
        dir.join("index/.none"),
        None,
    );
    let mut refs = list_refs(&git)?;
    let index_dir = dir.join("index");
    let indexes: Vec<String> = fs::read_dir(&index_dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    let mut dead: Vec<String> = refs
        .iter()
        .map(|r| r.session.clone())
        .chain(indexes.iter().cloned())
        .filter(|s| !live.contains(s.as_str()) && !running_unsaved(s))
        .collect();
    dead.sort();
    dead.dedup();
    let sessions: HashSet<&String> = refs.iter().map(|r| &r.session).chain(&indexes).collect();
    let workspace_gone = report.workspace.as_ref().is_some_and(|w| !w.is_dir());
    if workspace_gone && dead.len() == sessions.len() {
        // The workspace no longer exists and no live session has anything here: the whole
        // store goes. (A store whose workspace exists stays, even empty: a new session may
        // have opened it and not snapshotted yet.)
        report.removed_checkpoints = refs.len();
        report.removed_sessions = dead;
        fs::remove_dir_all(dir).map_err(CheckpointError::io(dir))?;
        report.removed = true;
        return Ok(report);
    }
    let (gone, kept): (Vec<Ref>, Vec<Ref>) =
        refs.drain(..).partition(|r| dead.contains(&r.session));
    refs = kept;
    delete_refs(&git, &gone)?;
    for session in &dead {
        let _ = fs::remove_file(index_dir.join(session));
    }
    report.removed_checkpoints = gone.len();
    report.removed_sessions = dead;
    let mut size = report.size_before;
    let loose = loose_objects(&dir.join("git"));
    if report.removed_checkpoints > 0 || size > budget || loose >= LOOSE_COLLECT {
        size = collect(&git, dir)?;
    }
    for _ in 0..MAX_ROUNDS {
        if size <= budget {
            break;
        }
        // Oldest first; each session's newest checkpoint is never a candidate.
        let mut newest: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &refs {
            let n = newest.entry(&r.session).or_insert(r.number);
            *n = (*n).max(r.number);
        }
        let mut candidates: Vec<&Ref> = refs
            .iter()
            .filter(|r| newest.get(r.session.as_str()) != Some(&r.number))
            .collect();
        if candidates.is_empty() {
            break;
        }
        candidates.sort_by_key(|r| (r.time, r.number));
        let share = (size - budget) as f64 / size as f64;
        let count = ((candidates.len() as f64 * share).ceil() as usize).clamp(1, candidates.len());
        let drop: HashSet<String> = candidates[..count].iter().map(|r| r.name.clone()).collect();
        let (gone, kept): (Vec<Ref>, Vec<Ref>) =
            refs.drain(..).partition(|r| drop.contains(&r.name));
        refs = kept;
        delete_refs(&git, &gone)?;
        report.removed_checkpoints += gone.len();
        size = collect(&git, dir)?;
    }
    report.kept_checkpoints = refs.len();
    report.size_after = size;
    Ok(report)
}

fn list_refs(git: &Git) -> Result<Vec<Ref>> {
    let out = git.run(
        [
            "for-each-ref",
            "--format=%(refname)%00%(committerdate:unix)",
            "refs/checkpoints/",
        ],
        None,
    )?;
    let mut refs = Vec::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = String::from_utf8_lossy(line);
        let Some((name, time)) = line.split_once('\0') else {
            continue;
        };
        let Some(rest) = name.strip_prefix("refs/checkpoints/") else {
            continue;
        };
        let Some((session, number)) = rest.rsplit_once('/') else {
            continue;
        };
        refs.push(Ref {
            name: name.to_string(),
            session: session.to_string(),
            number: number.parse().unwrap_or(0),
            time: time.parse().unwrap_or(0),
        });
    }
    Ok(refs)
}

fn delete_refs(git: &Git, refs: &[Ref]) -> Result<()> {
    if refs.is_empty() {
        return Ok(());
    }
    let script: String = refs
        .iter()
        .map(|r| format!("delete {}\n", r.name))
        .collect();
    git.run(["update-ref", "--stdin"], Some(script.as_bytes()))?;
    Ok(())
}

/// `git gc --prune=now` (the caller holds the exclusive lock), then the size on disk.
fn collect(git: &Git, dir: &Path) -> Result<u64> {
    git.run(["gc", "--prune=now", "--quiet"], None)?;
    dir_size(dir)
}
