//! The plain data the store hands out and the host keeps (in the session file): tree ids,
//! snapshots, what changed, and checkpoints.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CheckpointError;
use crate::paths::serde_path;

/// A git tree in the store: one snapshot of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TreeId(String);

impl TreeId {
    /// Checks that `id` is an object id (40 or 64 hex digits), so that nothing else ever
    /// reaches git's command line from a session file.
    pub fn parse(id: &str) -> Result<Self, CheckpointError> {
        let hex = id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if hex && (id.len() == 40 || id.len() == 64) {
            Ok(Self(id.to_string()))
        } else {
            Err(CheckpointError::InvalidTreeId(id.to_string()))
        }
    }

    /// The hexadecimal id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TreeId {
    type Error = CheckpointError;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::parse(&id)
    }
}

impl From<TreeId> for String {
    fn from(id: TreeId) -> Self {
        id.0
    }
}

impl fmt::Display for TreeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a path is not in a snapshot although git would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// A file over the size cap.
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// A nested repository or submodule (a directory with its own `.git`): its files are its
    /// own repository's business, never copied, restored or deleted.
    NestedRepository,
    /// A file the agent's tools wrote inside a nested repository (`repository`, relative to
    /// the workspace): left to that repository's git.
    InNestedRepository {
        #[serde(with = "serde_path")]
        repository: PathBuf,
    },
    /// A file the agent's tools wrote outside the workspace (an approved write): the path is
    /// absolute.
    OutsideWorkspace,
}

/// A path left out of a snapshot, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// Relative to the workspace; a directory for a nested repository.
    #[serde(with = "serde_path")]
    pub path: PathBuf,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
    /// The file's size and modification time when skipped, to tell whether a step changed
    /// it; only meaningful between snapshots of one run (the mark a host keeps between the
    /// snapshots around a batch carries it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) stamp: u64,
}

fn is_zero(stamp: &u64) -> bool {
    *stamp == 0
}

impl PartialEq for Skipped {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.reason == other.reason
    }
}

impl Eq for Skipped {}

impl Skipped {
    /// A skipped path (for hosts and tests that build checkpoints themselves).
    pub fn new(path: impl Into<PathBuf>, reason: SkipReason) -> Self {
        Self {
            path: path.into(),
            reason,
            stamp: 0,
        }
    }

    /// Whether `other` is the same path, skipped for the same reason, unchanged.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        self == other && self.stamp == other.stamp
    }

    /// Whether `path` is this entry or (for a nested repository) inside it.
    pub fn covers(&self, path: &Path) -> bool {
        match self.reason {
            SkipReason::TooLarge { .. }
            | SkipReason::InNestedRepository { .. }
            | SkipReason::OutsideWorkspace => path == self.path,
            SkipReason::NestedRepository => path.starts_with(&self.path),
        }
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            SkipReason::TooLarge { size, limit } => write!(
                f,
                "{}: {} over the {} cap, not checkpointed",
                self.path.display(),
                human_bytes(*size),
                human_bytes(*limit)
            ),
            SkipReason::NestedRepository => write!(
                f,
                "{}/: nested repository, not checkpointed",
                self.path.display()
            ),
            SkipReason::InNestedRepository { repository } => write!(
                f,
                "{}: inside the nested repository {}/, not checkpointed (its own git has it)",
                self.path.display(),
                repository.display()
            ),
            SkipReason::OutsideWorkspace => write!(
                f,
                "{}: outside the workspace, not checkpointed",
                self.path.display()
            ),
        }
    }
}

/// One snapshot of the workspace: its tree, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The tree in the store.
    pub tree: TreeId,
    /// Paths git would see that are not in the tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// How a path differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Absent before, present after.
    Added,
    /// Content or executable bit changed.
    Modified,
    /// Present before, absent after.
    Deleted,
    /// A file became a symlink or the other way round.
    TypeChanged,
}

impl ChangeKind {
    /// The one-letter code git uses (`A`, `M`, `D`, `T`).
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
            Self::TypeChanged => 'T',
        }
    }
}

/// One changed path. Displays as `M src/a.rs`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    /// Relative to the workspace.
    #[serde(with = "serde_path")]
    pub path: PathBuf,
    /// How it changed.
    pub kind: ChangeKind,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.letter(), self.path.display())
    }
}

/// What one step of the agent (a tool batch, a turn) did to the workspace: the snapshots
/// before and after, and the paths that differ between them — whatever changed them, the
/// write and edit tools or a shell command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The workspace before the step.
    pub before: TreeId,
    /// The workspace after it.
    pub after: TreeId,
    /// The paths that differ, sorted (never a skipped one: it cannot be restored).
    pub changed: Vec<Change>,
    /// Paths left out of either snapshot (too large, nested repositories): changes there are
    /// not undoable, and the host says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

impl Checkpoint {
    /// Consecutive checkpoints as one (to rewind several steps at once): the first one's
    /// `before`, the last one's `after`, and every path any of them changed, so a file one
    /// step changed and a later step changed back is restored too. `None` for an empty list.
    pub fn merge(checkpoints: &[Checkpoint]) -> Option<Checkpoint> {
        let (first, last) = (checkpoints.first()?, checkpoints.last()?);
        let mut kinds: BTreeMap<PathBuf, Vec<ChangeKind>> = BTreeMap::new();
        let mut skipped: Vec<Skipped> = Vec::new();
        for cp in checkpoints {
            for change in &cp.changed {
                kinds
                    .entry(change.path.clone())
                    .or_default()
                    .push(change.kind);
            }
            for s in &cp.skipped {
                if !skipped.contains(s) {
                    skipped.push(s.clone());
                }
            }
        }
        let changed = kinds
            .into_iter()
            .map(|(path, kinds)| {
                let kind = combine(&kinds);
                Change { path, kind }
            })
            .collect();
        Some(Checkpoint {
            before: first.before.clone(),
            after: last.after.clone(),
            changed,
            skipped,
        })
    }

    /// The changed paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.changed.iter().map(|c| c.path.clone()).collect()
    }
}

/// The net kind of a path's successive changes: added then deleted nets to a change of
/// nothing, but the path stays listed (restoring it is then a no-op).
fn combine(kinds: &[ChangeKind]) -> ChangeKind {
    let (first, last) = (kinds[0], kinds[kinds.len() - 1]);
    match (first, last) {
        (ChangeKind::Added, ChangeKind::Deleted) => ChangeKind::Modified,
        (ChangeKind::Added, _) => ChangeKind::Added,
        (_, ChangeKind::Deleted) => ChangeKind::Deleted,
        (ChangeKind::Deleted, _) => ChangeKind::Modified,
        _ if kinds.contains(&ChangeKind::TypeChanged) => ChangeKind::TypeChanged,
        _ => ChangeKind::Modified,
    }
}

/// Limits of one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files bigger than this are left out of snapshots (listed as skipped). Default 10 MiB.
    pub max_file_bytes: u64,
    /// A snapshot that would copy more new or changed files than this is not taken
    /// ([`CheckpointError::TooLarge`]). Default 100,000.
    pub max_changed_files: usize,
    /// Likewise for their total size. Default 1 GiB.
    pub max_changed_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 << 20,
            max_changed_files: 100_000,
            max_changed_bytes: 1 << 30,
        }
    }
}

/// `12.0 MiB`, `512 B`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(c: char) -> TreeId {
        TreeId::parse(&c.to_string().repeat(40)).unwrap()
    }

    fn change(path: &str, kind: ChangeKind) -> Change {
        Change {
            path: path.into(),
            kind,
        }
    }

    #[test]
    fn tree_ids_are_hex_only() {
        assert!(TreeId::parse(&"a".repeat(40)).is_ok());
        assert!(TreeId::parse(&"0".repeat(64)).is_ok());
        for bad in [
            "",
            "--output=/tmp/x",
            &"g".repeat(40),
            &"A".repeat(40),
            &"a".repeat(41),
        ] {
            assert!(TreeId::parse(bad).is_err(), "{bad}");
        }
        let err = serde_json::from_str::<TreeId>("\"-p\"").unwrap_err();
        assert!(err.to_string().contains("invalid tree id"), "{err}");
    }

    #[test]
    fn merged_checkpoints_span_first_to_last_and_keep_every_path() {
        let one = Checkpoint {
            before: tree('1'),
            after: tree('2'),
            changed: vec![
                change("a", ChangeKind::Added),
                change("b", ChangeKind::Modified),
            ],
            skipped: vec![],
        };
        let two = Checkpoint {
            before: tree('2'),
            after: tree('3'),
            changed: vec![
                change("a", ChangeKind::Deleted),
                change("c", ChangeKind::Deleted),
            ],
            skipped: vec![],
        };
        let merged = Checkpoint::merge(&[one, two]).unwrap();
        assert_eq!((merged.before, merged.after), (tree('1'), tree('3')));
        let shown: Vec<String> = merged.changed.iter().map(|c| c.to_string()).collect();
        assert_eq!(shown, ["M a", "M b", "D c"]);
        assert!(Checkpoint::merge(&[]).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn checkpoints_round_trip_through_json_even_with_non_utf8_names() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"bad\xffname"));
        let cp = Checkpoint {
            before: tree('1'),
            after: tree('2'),
            changed: vec![Change {
                path: odd.clone(),
                kind: ChangeKind::Added,
            }],
            skipped: vec![Skipped::new(
                "big.bin",
                SkipReason::TooLarge {
                    size: 11 << 20,
                    limit: 10 << 20,
                },
            )],
        };
        let json = serde_json::to_string(&cp).unwrap();
        let back: Checkpoint = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cp);
        assert_eq!(back.changed[0].path, odd);
        assert_eq!(
            cp.skipped[0].to_string(),
            "big.bin: 11.0 MiB over the 10.0 MiB cap, not checkpointed"
        );
    }
}
