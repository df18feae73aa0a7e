//! The shadow store of one workspace, seen by one session: opening it, taking snapshots,
//! and what changed between two of them.
//!
//! Layout, under `$CODING_AGENT_HOME/checkpoints/<slug>/` (0700):
//! - `git/`: a bare repository (files 0600, directories 0700) whose work tree is given per
//!   command; its `info/exclude` keeps out `.git` and repeats the workspace repository's
//!   own `.git/info/exclude`, its `info/attributes` turns every conversion off so bytes come
//!   back as they went in;
//! - `index/<session>`: each session's own index, so sessions never share staged state;
//! - `lock`: shared by snapshots and restores, exclusive for pruning;
//! - `workspace`: the workspace's path, for people and for pruning.
//!
//! Every snapshot whose tree differs from the session's previous one is a parentless commit
//! under `refs/checkpoints/<session>/<n>`, so git keeps it until pruning drops the ref.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{CheckpointError, Result};
use crate::git::{self, Git};
use crate::lock::{self, Held, Mode};
use crate::paths::{self, from_bytes, split_nul};
use crate::types::{Change, ChangeKind, Checkpoint, Limits, SkipReason, Skipped, Snapshot, TreeId};

/// Where the user's global excludes come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Excludes {
    /// As the user's git finds them (`core.excludesFile`, else `~/.config/git/ignore`).
    #[default]
    User,
    /// This file.
    File(PathBuf),
    /// None.
    None,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The git program (default `git`, found on `PATH`).
    pub git: PathBuf,
    /// Snapshot limits.
    pub limits: Limits,
    /// Global excludes.
    pub excludes: Excludes,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            git: PathBuf::from("git"),
            limits: Limits::default(),
            excludes: Excludes::User,
        }
    }
}

/// The checkpoint store of one workspace, for one session. Every method runs git processes
/// and blocks: call it from a blocking task. Safe to share between threads (calls of one
/// store run one at a time) and to open from several processes at once (each session has
/// its own index; git's locks guard refs and objects).
#[derive(Debug)]
pub struct Store {
    pub(crate) git: Git,
    dir: PathBuf,
    workspace: PathBuf,
    session: String,
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The number of the next ref of this session.
    next: u64,
    /// The tree of the session's newest ref: an unchanged workspace makes no new commit.
    last: Option<TreeId>,
    /// Commits made by this process since it last asked git whether to pack.
    since_pack: u32,
}

/// Contents of the store's `info/exclude`: the user's `.git` (a directory or a worktree's
/// file) at any depth. Nested repositories are found and skipped separately.
const INFO_EXCLUDE: &str = "# written by coding-agent: never copy a repository's own data\n.git\n";
/// Contents of `info/attributes`, which outranks every `.gitattributes`: no end-of-line
/// conversion, filter, ident or encoding, so restored files are byte-identical.
const INFO_ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";
/// How many commits between two counts of loose objects.
const PACK_EVERY: u32 = 50;
/// Loose objects that make the store pack them: each version of a changed file is a whole
/// compressed copy until packed as a delta (1,000 turns of a 1 MiB file: ~370 MiB loose).
const PACK_LOOSE: usize = 300;

impl Store {
    /// Opens (creating if needed) the store of `workspace` under `home`
    /// (`$CODING_AGENT_HOME`) for session `session`, with default options.
    pub fn open(home: &Path, workspace: &Path, session: &str) -> Result<Self> {
        Self::open_with(home, workspace, session, StoreOptions::default())
    }

    /// Like [`Store::open`], with options. Fails with [`CheckpointError::GitNotFound`] or
    /// [`CheckpointError::GitTooOld`] ([`CheckpointError::is_unavailable`]) when git cannot
    /// be used: the host shows "checkpoints are off" and carries on.
    pub fn open_with(
        home: &Path,
        workspace: &Path,
        session: &str,
        options: StoreOptions,
    ) -> Result<Self> {
        check_session(session)?;
        git::check_version(&options.git)?;
        let workspace = fs::canonicalize(workspace).map_err(CheckpointError::io(workspace))?;
        let root = home.join("checkpoints");
        let dir = root.join(paths::workspace_slug(&workspace));
        private_dir(home, false)?;
        private_dir(&root, true)?;
        private_dir(&dir, true)?;
        let git_dir = dir.join("git");
        let index_dir = dir.join("index");
        {
            let _init = lock::lock(&dir.join("lock"), Mode::Exclusive)?;
            if !git_dir.join("HEAD").exists() {
                git::init(&options.git, &git_dir)?;
            }
            // The repository's own excludes too (read only): what the user's git ignores.
            let mut exclude = INFO_EXCLUDE.as_bytes().to_vec();
            if let Ok(user) = fs::read(workspace.join(".git/info/exclude")) {
                exclude.extend_from_slice(b"# the workspace's .git/info/exclude\n");
                exclude.extend_from_slice(&user);
                exclude.push(b'\n');
            }
            write_if_changed(&git_dir.join("info/exclude"), &exclude)?;
            write_if_changed(&git_dir.join("info/attributes"), INFO_ATTRIBUTES.as_bytes())?;
            write_if_changed(
                &dir.join("workspace"),
                format!("{}\n", workspace.display()).as_bytes(),
            )?;
            private_dir(&index_dir, true)?;
        }
        let excludes = match options.excludes {
            Excludes::User => git::user_excludes_file(
                &options.git,
                std::env::var_os("HOME").as_deref(),
                std::env::var_os("XDG_CONFIG_HOME").as_deref(),
            ),
            Excludes::File(file) => Some(file),
            Excludes::None => None,
        };
        let git = Git::new(
            options.git,
            git_dir,
            workspace.clone(),
            index_dir.join(session),
            excludes,
        );
        let mut state = State::default();
        for (n, tree) in session_refs(&git, session)? {
            if n >= state.next {
                state.next = n + 1;
                state.last = Some(tree);
            }
        }
        Ok(Self {
            git,
            dir,
            workspace,
            session: session.to_string(),
            limits: options.limits,
            state: Mutex::new(state),
        })
    }

    /// The workspace (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The session this store was opened for.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The store's size on disk, in bytes (every session's share).
    pub fn size(&self) -> Result<u64> {
        dir_size(&self.dir)
    }

    pub(crate) fn shared_lock(&self) -> Result<Held> {
        let path = self.dir.join("lock");
        lock::lock(&path, Mode::Shared)?.ok_or_else(|| {
            CheckpointError::io(&path)(std::io::Error::from(std::io::ErrorKind::WouldBlock))
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding it cannot leave State inconsistent in a harmful way (at worst
        // a missed dedup), so a poisoned lock is taken over.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Snapshots the workspace: every file git would see (tracked or not, ignore rules and
    /// global excludes honoured), except files over the size cap and nested repositories,
    /// which are listed in [`Snapshot::skipped`]. Incremental: files whose size and times
    /// did not change since this session's last snapshot are not read again.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.snapshot_including(&[])
    }

    /// [`Store::snapshot`], with `touched` (absolute paths the agent's own tools are about to
    /// write or just wrote) captured whatever the ignore rules say: an agent's edit of `.env`
    /// or of a file in `build/` is undone like any other. Once captured a file stays in the
    /// session's snapshots. A touched path inside a nested repository or outside the
    /// workspace cannot be captured: it is listed in [`Snapshot::skipped`] with why.
    pub fn snapshot_including(&self, touched: &[PathBuf]) -> Result<Snapshot> {
        let _lock = self.shared_lock()?;
        let mut state = self.state();
        self.seed_index()?;
        let (tree, skipped) = match self.write_tree(touched) {
            Ok(done) => done,
            Err(CheckpointError::Git { command, .. }) if command.starts_with("write-tree") => {
                // The index names an object the store no longer has (a crash between adding
                // and referencing, then a prune): start the index afresh, reading every file.
                let _ = fs::remove_file(self.git.index());
                self.write_tree(touched)?
            }
            Err(e) => return Err(e),
        };
        if state.last.as_ref() != Some(&tree) {
            self.commit(&mut state, &tree, &skipped)?;
        }
        Ok(Snapshot { tree, skipped })
    }

    /// Stages the workspace into the session's index and writes its tree.
    ///
    /// One walk of the workspace (`ls-files -m -o`: tracked files whose stat data changed,
    /// untracked ones not ignored), then exactly those paths go to `update-index`. That is
    /// what `add -A` does, without its second walk: half the time on a large repository.
    fn write_tree(&self, touched: &[PathBuf]) -> Result<(TreeId, Vec<Skipped>)> {
        let listing = self.git.run(
            ["ls-files", "-z", "-t", "-m", "-o", "--exclude-standard"],
            None,
        )?;
        let mut skipped = Vec::new();
        let extra = self.touched_paths(touched, &mut skipped);
        let mut update: Vec<&[u8]> = extra.iter().map(Vec::as_slice).collect();
        let mut unstage: Vec<&[u8]> = Vec::new();
        let (mut files, mut bytes) = (0usize, 0u64);
        let mut links = SymlinkParents::default();
        for record in split_nul(&listing) {
            let (tag, path) = match record {
                [tag, b' ', path @ ..] => (*tag, path),
                _ => return Err(git::parse_error("ls-files", "untagged record")),
            };
            if let Some(dir) = path.strip_suffix(b"/") {
                // `ls-files -o` names an untracked nested repository as a directory.
                skipped.push(Skipped {
                    path: from_bytes(dir),
                    reason: SkipReason::NestedRepository,
                    stamp: 0,
                });
                continue;
            }
            if tag != b'?' && links.beyond(&self.workspace, path) {
                // A tracked file whose directory became a symlink: gone from git's view
                // (update-index refuses paths beyond a symlink, even to remove them).
                unstage.push(path);
                continue;
            }
            let meta = fs::symlink_metadata(self.workspace.join(from_bytes(path))).ok();
            if let Some(meta) = meta.as_ref().filter(|m| m.is_file()) {
                if meta.len() > self.limits.max_file_bytes {
                    skipped.push(Skipped {
                        path: from_bytes(path),
                        reason: SkipReason::TooLarge {
                            size: meta.len(),
                            limit: self.limits.max_file_bytes,
                        },
                        stamp: stamp(meta),
                    });
                    if tag != b'?' {
                        unstage.push(path); // it was small in an earlier snapshot
                    }
                    continue;
                }
                files += 1;
                bytes += meta.len();
            }
            // Deleted files, symlinks, and a file that became a directory go too:
            // update-index removes or replaces their entries.
            update.push(path);
        }
        if files > self.limits.max_changed_files || bytes > self.limits.max_changed_bytes {
            return Err(CheckpointError::TooLarge {
                files,
                bytes,
                max_files: self.limits.max_changed_files,
                max_bytes: self.limits.max_changed_bytes,
            });
        }
        if !unstage.is_empty() {
            let list: Vec<u8> = unstage.iter().flat_map(|p| nul_terminated(p)).collect();
            self.git.run(
                ["update-index", "-z", "--force-remove", "--stdin"],
                Some(&list),
            )?;
        }
        if !update.is_empty() {
            // Sorted, so a path comes before what is under it: `thing` (a file that became a
            // directory) leaves the index before `thing/inner.rs` is added.
            update.sort_unstable();
            update.dedup();
            let list: Vec<u8> = update.iter().flat_map(|p| nul_terminated(p)).collect();
            self.git.run(
                [
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                ],
                Some(&list),
            )?;
        }
        let out = self.git.run(["write-tree"], None)?;
        let tree = TreeId::parse(String::from_utf8_lossy(&out).trim())?;
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((tree, skipped))
    }

    /// The workspace-relative bytes of the `touched` paths git can be given (ignored or not,
    /// existing or not: `update-index --remove` drops a missing one), and a [`Skipped`] entry
    /// for each it cannot: inside a nested repository, outside the workspace, over the cap.
    fn touched_paths(&self, touched: &[PathBuf], skipped: &mut Vec<Skipped>) -> Vec<Vec<u8>> {
        let mut extra = Vec::new();
        for path in touched {
            let meta = fs::symlink_metadata(path).ok();
            let stamp = meta.as_ref().map_or(0, stamp);
            let Some(relative) = within(&self.workspace, path) else {
                skipped.push(Skipped {
                    path: path.clone(),
                    reason: SkipReason::OutsideWorkspace,
                    stamp,
                });
                continue;
            };
            if paths::check_relative(&relative).is_err() {
                continue;
            }
            if let Some(repository) = nested_repository(&self.workspace, &relative) {
                skipped.push(Skipped {
                    path: relative,
                    reason: SkipReason::InNestedRepository { repository },
                    stamp,
                });
                continue;
            }
            if let Some(meta) = meta.as_ref().filter(|m| m.is_file())
                && meta.len() > self.limits.max_file_bytes
            {
                skipped.push(Skipped {
                    path: relative,
                    reason: SkipReason::TooLarge {
                        size: meta.len(),
                        limit: self.limits.max_file_bytes,
                    },
                    stamp,
                });
                continue;
            }
            extra.push(platform::fs::path_bytes(&relative).into_owned());
        }
        extra
    }

    /// Keeps `tree` under the session's next ref.
    fn commit(&self, state: &mut State, tree: &TreeId, skipped: &[Skipped]) -> Result<()> {
        let mut message = format!("checkpoint of {}\n", self.workspace.display());
        for s in skipped {
            message.push_str(&format!("\nskipped {s}"));
        }
        let out = self
            .git
            .run(["commit-tree", tree.as_str()], Some(message.as_bytes()))?;
        let commit = String::from_utf8_lossy(&out).trim().to_string();
        // Another process of the same session id could have taken the number: try the next.
        let mut attempt = 0;
        loop {
            let name = format!("refs/checkpoints/{}/{}", self.session, state.next);
            state.next += 1;
            match self.git.run(["update-ref", &name, &commit, ""], None) {
                Ok(_) => break,
                Err(e) if attempt >= 3 => return Err(e),
                Err(_) => attempt += 1,
            }
        }
        state.last = Some(tree.clone());
        state.since_pack += 1;
        if state.since_pack >= PACK_EVERY {
            state.since_pack = 0;
            if loose_objects(self.git.git_dir()) >= PACK_LOOSE {
                // Packs the loose objects (deltas between versions of a file) and drops
                // them; never prunes anything, so it is safe beside other sessions.
                self.git.run(["repack", "-d", "-l", "-q"], None)?;
            }
        }
        Ok(())
    }

    /// A new session starts from the newest index of another session of this workspace:
    /// its files' stat data are as good as ours, and every object it names is in a kept
    /// snapshot, so the first snapshot does not read the whole workspace again.
    fn seed_index(&self) -> Result<()> {
        let ours = self.git.index();
        if ours.exists() {
            return Ok(());
        }
        let Some(dir) = ours.parent() else {
            return Ok(());
        };
        let newest = fs::read_dir(dir)
            .map_err(CheckpointError::io(dir))?
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max();
        if let Some((_, source)) = newest {
            let tmp = dir.join(format!(".seed-{}", std::process::id()));
            if fs::copy(&source, &tmp).is_ok() {
                let _ = fs::File::open(&tmp).and_then(|f| platform::fs::make_private(&f));
                fs::rename(&tmp, ours).map_err(CheckpointError::io(ours))?;
            }
        }
        Ok(())
    }

    /// The checkpoint between two snapshots of this store: the paths that differ, minus
    /// those either snapshot skipped (they cannot be restored), with the skipped entries
    /// that differ between the two (a big file the step created, grew or deleted).
    pub fn checkpoint(&self, before: &Snapshot, after: &Snapshot) -> Result<Checkpoint> {
        let changed = self
            .changes(&before.tree, &after.tree)?
            .into_iter()
            .filter(|c| !skipped_covers(&before.skipped, &c.path))
            .filter(|c| !skipped_covers(&after.skipped, &c.path))
            .collect();
        let mut skipped: Vec<Skipped> = Vec::new();
        for s in after.skipped.iter().chain(&before.skipped) {
            let in_before = before.skipped.iter().any(|b| b.same_as(s));
            let in_after = after.skipped.iter().any(|a| a.same_as(s));
            let listed = skipped.iter().any(|k| k.path == s.path);
            let untouched = in_before && in_after;
            if !untouched && !listed {
                skipped.push(s.clone());
            }
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Checkpoint {
            before: before.tree.clone(),
            after: after.tree.clone(),
            changed,
            skipped,
        })
    }

    /// Fails with [`CheckpointError::Missing`] unless every one of `trees` is in the store.
    pub(crate) fn require(&self, trees: &[&TreeId]) -> Result<()> {
        let query: String = trees.iter().map(|t| format!("{t}\n")).collect();
        let out = self
            .git
            .run(["cat-file", "--batch-check"], Some(query.as_bytes()))?;
        let text = String::from_utf8_lossy(&out);
        for (tree, line) in trees.iter().zip(text.lines()) {
            if !line.ends_with(" tree") && !line.contains(" tree ") {
                return Err(CheckpointError::Missing {
                    tree: tree.to_string(),
                });
            }
        }
        Ok(())
    }

    /// The paths that differ between two trees, sorted (nested repositories excluded).
    pub fn changes(&self, from: &TreeId, to: &TreeId) -> Result<Vec<Change>> {
        let out = self.git.run(
            [
                "diff-tree",
                "-r",
                "-z",
                "--raw",
                "--no-renames",
                from.as_str(),
                to.as_str(),
            ],
            None,
        )?;
        let mut records = split_nul(&out);
        let mut changes = Vec::new();
        while let Some(meta) = records.next() {
            let path = records
                .next()
                .ok_or_else(|| git::parse_error("diff-tree", "a change without a path"))?;
            let meta = String::from_utf8_lossy(meta);
            let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let [old_mode, new_mode, _, _, status] = fields[..] else {
                return Err(git::parse_error("diff-tree", meta.into_owned()));
            };
            if old_mode == "160000" || new_mode == "160000" {
                continue;
            }
            let kind = match status {
                "A" => ChangeKind::Added,
                "D" => ChangeKind::Deleted,
                "T" => ChangeKind::TypeChanged,
                _ => ChangeKind::Modified,
            };
            changes.push(Change {
                path: from_bytes(path),
                kind,
            });
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Which of `paths` differ now from the snapshot `against` (changed since, by the
    /// user's editor for instance), as changes from `against` to now. Takes a snapshot.
    pub fn conflicts(&self, against: &TreeId, paths: &[PathBuf]) -> Result<Vec<Change>> {
        let now = self.snapshot()?;
        self.differences(against, &now, paths)
    }

    /// The changes from `from` to the snapshot `now`, among `paths`. A path `now` skipped
    /// (grown over the cap) counts as modified.
    pub(crate) fn differences(
        &self,
        from: &TreeId,
        now: &Snapshot,
        paths: &[PathBuf],
    ) -> Result<Vec<Change>> {
        let wanted: HashSet<&Path> = paths.iter().map(PathBuf::as_path).collect();
        Ok(self
            .changes(from, &now.tree)?
            .into_iter()
            .filter(|c| wanted.contains(c.path.as_path()))
            .map(|mut c| {
                if skipped_covers(&now.skipped, &c.path) {
                    c.kind = ChangeKind::Modified;
                }
                c
            })
            .collect())
    }
}

/// Which directories of the workspace are symlinks, asked once each.
#[derive(Default)]
struct SymlinkParents {
    known: std::collections::HashMap<PathBuf, bool>,
}

impl SymlinkParents {
    /// Whether a parent directory of `path` (relative to `workspace`) is a symlink.
    fn beyond(&mut self, workspace: &Path, path: &[u8]) -> bool {
        let path = from_bytes(path);
        let mut dir = PathBuf::new();
        let Some(parent) = path.parent() else {
            return false;
        };
        for component in parent.components() {
            dir.push(component);
            let link = *self.known.entry(dir.clone()).or_insert_with(|| {
                fs::symlink_metadata(workspace.join(&dir)).is_ok_and(|m| m.file_type().is_symlink())
            });
            if link {
                return true;
            }
        }
        false
    }
}

fn skipped_covers(skipped: &[Skipped], path: &Path) -> bool {
    skipped.iter().any(|s| s.covers(path))
}

/// `path` relative to `workspace` (a real path), its existing part resolved; `None` outside.
fn within(workspace: &Path, path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    let base = loop {
        if let Ok(real) = fs::canonicalize(&existing) {
            break real;
        }
        rest.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?.to_path_buf();
    };
    let mut real = base;
    for name in rest.iter().rev() {
        real.push(name);
    }
    real.strip_prefix(workspace)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .map(Path::to_path_buf)
}

/// The nested repository (a directory below the workspace with its own `.git`) holding
/// `relative`, if any.
fn nested_repository(workspace: &Path, relative: &Path) -> Option<PathBuf> {
    let mut dir = PathBuf::new();
    let parents: Vec<_> = relative.parent()?.components().collect();
    for part in parents {
        dir.push(part);
        if fs::symlink_metadata(workspace.join(&dir).join(".git")).is_ok() {
            return Some(dir);
        }
    }
    None
}

/// Size and modification time in one number, to tell whether a skipped file changed.
fn stamp(meta: &fs::Metadata) -> u64 {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    modified
        .as_secs()
        .wrapping_mul(1_000_000_007)
        .wrapping_add(u64::from(modified.subsec_nanos()))
        ^ meta.len().rotate_left(32)
}

fn nul_terminated(bytes: &[u8]) -> impl Iterator<Item = u8> + '_ {
    bytes.iter().copied().chain(std::iter::once(0))
}

/// This session's refs, as (number, tree).
pub(crate) fn session_refs(git: &Git, session: &str) -> Result<Vec<(u64, TreeId)>> {
    let prefix = format!("refs/checkpoints/{session}/");
    let out = git.run(
        [
            "for-each-ref",
            "--format=%(refname)%00%(tree)",
            prefix.as_str(),
        ],
        None,
    )?;
    let mut refs = Vec::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.split(|&b| b == 0);
        let (Some(name), Some(tree)) = (fields.next(), fields.next()) else {
            continue;
        };
        let name = String::from_utf8_lossy(name);
        let Some(n) = name.strip_prefix(&prefix).and_then(|n| n.parse().ok()) else {
            continue;
        };
        refs.push((n, TreeId::parse(&String::from_utf8_lossy(tree))?));
    }
    Ok(refs)
}

/// A session id names a ref and a file: keep it to a safe alphabet.
pub(crate) fn check_session(session: &str) -> Result<()> {
    let ok = !session.is_empty()
        && session.len() <= 128
        && !session.starts_with('.')
        && !session.ends_with(".lock")
        && !session.contains("..")
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(CheckpointError::InvalidSession(session.to_string()))
    }
}

/// Creates `dir` and its parents (private); with `fix`, also makes an existing one private.
pub(crate) fn private_dir(dir: &Path, fix: bool) -> Result<()> {
    if !dir.is_dir() {
        // Every directory made here is private, the missing parents too.
        let first_missing = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .last()
            .unwrap_or(dir);
        platform::fs::create_private_dirs(first_missing, dir).map_err(CheckpointError::io(dir))?;
    } else if fix {
        platform::fs::restrict_dir(dir).map_err(CheckpointError::io(dir))?;
    }
    Ok(())
}

/// Writes a small file of the store (private) unless it already holds `content`; a temporary
/// file renamed in place, so a reader never sees half of it.
fn write_if_changed(path: &Path, content: &[u8]) -> Result<()> {
    if fs::read(path).is_ok_and(|old| old == content) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        private_dir(parent, false)?;
    }
    platform::fs::write_private_atomic(path, content).map_err(CheckpointError::io(path))
}

/// The number of loose objects in the store.
pub(crate) fn loose_objects(git_dir: &Path) -> usize {
    let Ok(dirs) = fs::read_dir(git_dir.join("objects")) else {
        return 0;
    };
    dirs.filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            name.len() == 2 && name.as_encoded_bytes().iter().all(u8::is_ascii_hexdigit)
        })
        .filter_map(|e| fs::read_dir(e.path()).ok())
        .map(|objects| objects.count())
        .sum()
}

/// Bytes on disk under `dir` (allocated blocks, so sparse or tiny files count as they cost).
pub(crate) fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A pack file removed by a concurrent gc, say: it no longer costs anything.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(CheckpointError::io(&dir)(e)),
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += platform::fs::disk_usage(&meta);
            }
        }
    }
    Ok(total)
}
