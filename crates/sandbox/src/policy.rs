//! The sandbox policy: what a command (and the agent's own write/edit tools) may write, and
//! whether it may open network sockets.
//!
//! One policy feeds two enforcers. The kernel enforces it on the commands the agent runs
//! ([`crate::confine`]); [`Policy::write_allowed`] applies the same rule in-process to the
//! write and edit tools, which run inside the agent and so cannot be confined by the kernel
//! without confining the agent itself.
//!
//! The modes and their names are Codex's, so users who know one know the other:
//! - `read-only`: commands read everything and write nothing (only the harmless character
//!   devices such as `/dev/null`, see [`WRITABLE_DEVICES`]); network off by default.
//! - `workspace-write` (the default): writes go only to the workspace, the temp dirs
//!   (`$TMPDIR`, `/tmp`, `/dev/shm`) and the configured extra paths; inside the workspace `.git/hooks`, `.git/config` and
//!   `.coding-agent/` stay read-only, because each of them makes something run later
//!   *outside* the sandbox (a hook on the next commit, a config's `core.fsmonitor` or alias,
//!   the agent's own project config). Network on by default.
//! - `danger-full-access`: nothing is confined.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Character devices a command may open for writing in every confined mode: writing to them
/// changes no file, and common tools fail without them (`> /dev/null`, `dd of=/dev/null`,
/// a shell's `/dev/tty` probe). `/dev/pts/*` is left out on purpose: the bash tool gives
/// commands no terminal, and another terminal of the user is not the command's business.
pub const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// How much the agent's commands may do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read everything, write nothing but [`WRITABLE_DEVICES`].
    ReadOnly,
    /// Write only in the workspace, the temp dirs and the extra writable paths.
    #[default]
    WorkspaceWrite,
    /// No confinement at all.
    DangerFullAccess,
}

impl SandboxMode {
    /// Every mode, in order of increasing freedom.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess,
    ];

    /// The name used in the config file, on the command line and by Codex.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A sandbox mode name that is not one of [`SandboxMode::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox mode {0:?}: expected read-only, workspace-write or danger-full-access")]
pub struct UnknownSandboxMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownSandboxMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| UnknownSandboxMode(s.to_string()))
    }
}

/// What commands may write and whether they may use the network.
///
/// Paths are resolved (symlinks, `..`) when the policy is made, so the kernel rules and
/// [`Policy::write_allowed`] compare real paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// The workspace root (resolved).
    pub workspace: PathBuf,
    /// The extra writable paths (config `[sandbox] writable`), resolved.
    pub writable: Vec<PathBuf>,
    /// Whether commands may open network sockets (IPv4, IPv6, netlink, …). Unix sockets
    /// are always allowed.
    pub network: bool,
    /// `std::env::temp_dir()`, `/tmp` and `/dev/shm`, resolved and without duplicates.
    temp_dirs: Vec<PathBuf>,
    /// The agent's own directory (`$CODING_AGENT_HOME`), resolved: its keys, sessions and
    /// checkpoints are hidden from commands (see [`Policy::hidden_paths`]).
    agent_home: Option<PathBuf>,
    /// Paths commands may not read (config `[sandbox] deny_read`), resolved.
    deny_read: Vec<PathBuf>,
}

/// What stays readable in the agent's home: what the user wrote for the model and its
/// commands (skills with their scripts, prompt templates, hook scripts, instructions).
/// Everything else there — `auth.toml`, `config.toml` (it may hold keys), sessions,
/// checkpoints, the approval and trust records — is hidden.
pub const AGENT_HOME_READABLE: &[&str] = &["skills", "prompts", "hooks", "AGENTS.md", "SYSTEM.md"];

impl Policy {
    /// The policy of `mode` for `workspace`.
    ///
    /// `writable` are extra writable paths: `~/` is the home directory, a relative path is
    /// relative to the workspace. They only count in `workspace-write`. `network` overrides
    /// the mode's default (on in `workspace-write`, off in `read-only`); `danger-full-access`
    /// always has the network.
    pub fn new(
        mode: SandboxMode,
        workspace: &Path,
        writable: &[PathBuf],
        network: Option<bool>,
    ) -> Policy {
        let workspace = resolve(&absolute(workspace)).unwrap_or_else(|| absolute(workspace));
        let writable = writable
            .iter()
            .map(|p| expand(&workspace, p))
            .map(|p| resolve(&p).unwrap_or(p))
            .collect();
        // /dev/shm is where POSIX shared memory and semaphores live (Python's
        // multiprocessing, test runners that fork workers): a temp dir in all but name.
        let mut temp_dirs: Vec<PathBuf> = Vec::new();
        // `/tmp` and `/dev/shm` only where they exist (not on Windows; no `/dev/shm` on
        // macOS).
        let system: [PathBuf; 2] = ["/tmp".into(), "/dev/shm".into()];
        let system = system.into_iter().filter(|d| d.is_dir());
        for dir in std::iter::once(std::env::temp_dir()).chain(system) {
            let dir = resolve(&dir).unwrap_or(dir);
            if !temp_dirs.contains(&dir) {
                temp_dirs.push(dir);
            }
        }
        let network = match mode {
            SandboxMode::DangerFullAccess => true,
            SandboxMode::WorkspaceWrite => network.unwrap_or(true),
            SandboxMode::ReadOnly => network.unwrap_or(false),
        };
        Policy {
            mode,
            workspace,
            writable,
            network,
            temp_dirs,
            agent_home: None,
            deny_read: Vec::new(),
        }
    }

    /// Hides the agent's own files in `agent_home` from commands, and the `deny_read` paths
    /// (`~/` is the home directory, a relative path is relative to the workspace). Nothing is
    /// hidden in `danger-full-access`, nor the agent home when the workspace is inside it
    /// (working on one's own agent setup).
    pub fn hiding(mut self, agent_home: Option<&Path>, deny_read: &[PathBuf]) -> Policy {
        self.agent_home = agent_home
            .map(|home| {
                let home = absolute(home);
                resolve(&home).unwrap_or(home)
            })
            .filter(|home| !self.workspace.starts_with(home));
        self.deny_read = deny_read
            .iter()
            .map(|p| expand(&self.workspace, p))
            .map(|p| resolve(&p).unwrap_or(p))
            .collect();
        self
    }

    /// What commands may not read, as the file system is now (call it per command: a key
    /// saved meanwhile is a new file): every entry of the agent's home but
    /// [`AGENT_HOME_READABLE`], and the `deny_read` paths that exist. Empty in
    /// `danger-full-access`.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        if self.mode == SandboxMode::DangerFullAccess {
            return Vec::new();
        }
        let mut hidden: Vec<PathBuf> = Vec::new();
        if let Some(home) = &self.agent_home
            && let Ok(entries) = std::fs::read_dir(home)
        {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if !AGENT_HOME_READABLE.iter().any(|keep| name == *keep) {
                    hidden.push(entry.path());
                }
            }
        }
        hidden.extend(
            self.deny_read
                .iter()
                .filter(|p| std::fs::symlink_metadata(p).is_ok())
                .cloned(),
        );
        hidden.sort();
        hidden.dedup();
        hidden
    }

    /// The hidden path that reading `path` would reach (`path` inside it, or — for a tool
    /// that descends into directories but skips hidden entries, `recursive` — one beneath it
    /// reached without entering a dot-named directory): the rule the kernel applies to
    /// commands, checked in-process on the real path.
    pub fn read_hidden(&self, path: &Path, recursive: bool) -> Option<PathBuf> {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace.join(path)
        };
        let real = resolve(&path).unwrap_or(path);
        self.hidden_paths().into_iter().find(|hidden| {
            real.starts_with(hidden)
                || (recursive
                    && hidden.strip_prefix(&real).is_ok_and(|below| {
                        !below
                            .components()
                            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
                    }))
        })
    }

    /// The agent home whose files are hidden, if any.
    pub fn agent_home(&self) -> Option<&Path> {
        self.agent_home.as_deref()
    }

    /// The configured `deny_read` paths (resolved), existing or not.
    pub fn deny_read(&self) -> &[PathBuf] {
        &self.deny_read
    }

    /// The temp dirs commands may write in `workspace-write`.
    pub fn temp_dirs(&self) -> &[PathBuf] {
        &self.temp_dirs
    }

    /// Where commands may write (beside [`WRITABLE_DEVICES`]): nothing in `read-only`, `/`
    /// in `danger-full-access`; in `workspace-write` the workspace, the temp dirs, the extra
    /// paths and the real git directory of a worktree or submodule (so that `git commit`
    /// works there; its hooks and config are protected like `.git`'s).
    pub fn writable_roots(&self) -> Vec<PathBuf> {
        match self.mode {
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::DangerFullAccess => vec![PathBuf::from("/")],
            SandboxMode::WorkspaceWrite => {
                let mut roots = vec![self.workspace.clone()];
                roots.extend(self.temp_dirs.iter().cloned());
                roots.extend(self.writable.iter().cloned());
                roots.extend(linked_git_dirs(&self.workspace));
                roots.dedup();
                roots
            }
        }
    }

    /// The paths inside the writable roots that stay read-only, as they are on disk now
    /// (a `git init` or a new worktree changes them: ask again for each command). They need
    /// not exist. Empty unless the mode is `workspace-write`.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let dot_git = self.workspace.join(".git");
        let mut paths = vec![self.workspace.join(".coding-agent")];
        let linked = linked_git_dirs(&self.workspace);
        if linked.is_empty() {
            paths.extend(git_dir_metadata(&dot_git));
        } else {
            // The `gitdir:` file itself: rewritten, it would send git elsewhere.
            paths.push(dot_git);
        }
        for dir in linked {
            paths.extend(git_dir_metadata(&dir));
        }
        // An agent home under a writable root (`CODING_AGENT_HOME` in the temp dir): its
        // config, keys and records are the agent's, not the commands'.
        if let Some(home) = &self.agent_home
            && self
                .writable_roots()
                .iter()
                .any(|root| home.starts_with(root))
        {
            paths.push(home.clone());
        }
        paths.sort();
        paths.dedup();
        paths
    }

    /// The workspace's real git directories: `.git` when it is a directory, else the
    /// directories its `gitdir:` file leads to. Empty when there is none or the mode is not
    /// `workspace-write`.
    pub fn git_dirs(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let dot_git = self.workspace.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => vec![dot_git],
            Ok(_) => linked_git_dirs(&self.workspace),
            Err(_) => Vec::new(),
        }
    }

    /// Files that redirect git to another directory for its config and hooks and that a
    /// command could have created, because they cannot be protected before they exist:
    /// `commondir` in a plain `.git` directory (git reads it in any git directory but only
    /// writes it in a worktree's). Empty normally; anything listed deserves the user's eyes
    /// before git runs again. The host checks after each command.
    pub fn git_redirects(&self) -> Vec<PathBuf> {
        let dot_git = self.workspace.join(".git");
        if !dot_git.is_dir() {
            return Vec::new();
        }
        std::iter::once(dot_git.clone())
            .chain(submodule_git_dirs(&dot_git))
            .map(|dir| dir.join("commondir"))
            .filter(|commondir| std::fs::symlink_metadata(commondir).is_ok())
            .collect()
    }

    /// Whether `path`, resolved as [`Policy::write_allowed`] resolves it (`..`, symbolic
    /// links, dangling ones too), is inside the workspace.
    pub fn in_workspace(&self, path: &Path) -> bool {
        resolve(path).is_some_and(|real| real.starts_with(&self.workspace))
    }

    /// Whether the write and edit tools may write `path` (relative paths are relative to
    /// the workspace): the rule the kernel applies to commands, checked on the real path.
    ///
    /// Symlinks and `..` of the longest existing prefix are resolved first, a dangling
    /// symlink included (writing through it would create its target), so a link inside the
    /// workspace that points outside counts as outside. A path that cannot be resolved (a
    /// symlink loop) is refused. The check is not atomic with the write that follows: it
    /// keeps an honest model inside the lines, the kernel confinement of commands is what
    /// holds against a hostile one.
    pub fn write_allowed(&self, path: &Path) -> bool {
        match self.mode {
            SandboxMode::DangerFullAccess => true,
            SandboxMode::ReadOnly => false,
            SandboxMode::WorkspaceWrite => {
                let path = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    self.workspace.join(path)
                };
                let Some(real) = resolve(&path) else {
                    return false;
                };
                let inside = self
                    .writable_roots()
                    .iter()
                    .any(|root| real.starts_with(root));
                let protected = self.protected_paths().iter().any(|p| {
                    let p = resolve(p).unwrap_or_else(|| p.clone());
                    real.starts_with(p)
                });
                inside && !protected
            }
        }
    }
}

/// Everything in a git directory `dir` (and the git directories of its submodules, under
/// `modules/`, and of its linked worktrees, under `worktrees/`) that makes git run or read
/// something chosen there: hooks, config, `info/` (attributes name filters the config runs),
/// and the files that send git to another directory (`commondir`, a worktree's `gitdir`).
/// They need not exist.
fn git_dir_metadata(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for git_dir in std::iter::once(dir.to_path_buf()).chain(submodule_git_dirs(dir)) {
        for name in ["hooks", "config", "config.worktree", "commondir", "info"] {
            paths.push(git_dir.join(name));
        }
    }
    if let Ok(worktrees) = std::fs::read_dir(dir.join("worktrees")) {
        for worktree in worktrees.flatten() {
            let path = worktree.path();
            if worktree.file_type().is_ok_and(|t| t.is_dir()) {
                for name in ["config.worktree", "commondir", "gitdir"] {
                    paths.push(path.join(name));
                }
            }
        }
    }
    paths
}

/// How deep submodules nest under `modules/` before the search stops (each level is
/// `modules/<name>/modules/<name>`; a name may itself hold slashes, a level or two more).
const MAX_SUBMODULE_DEPTH: usize = 12;

/// The git directories of the submodules of git directory `dir`, nested ones included: every
/// directory under `dir/modules` that holds a `HEAD` (a submodule's name may hold slashes, so
/// its git directory may be deeper than one level).
fn submodule_git_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.join("modules"), 0)];
    while let Some((current, depth)) = stack.pop() {
        if depth > MAX_SUBMODULE_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.join("HEAD").is_file() {
                stack.push((path.join("modules"), depth + 1));
                found.push(path);
            } else {
                stack.push((path, depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// The git directories that a workspace whose `.git` is a file (`gitdir: …`, a worktree or
/// a submodule) really uses: the one named there and, for a worktree, the common directory
/// it names in `commondir`. Empty for an ordinary `.git` directory.
fn linked_git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let dot_git = workspace.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    if !meta.is_file() {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return Vec::new();
    };
    let git_dir = workspace.join(target.trim());
    let git_dir = resolve(&git_dir).unwrap_or(git_dir);
    let mut dirs = vec![git_dir.clone()];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        let common = git_dir.join(common.trim());
        dirs.push(resolve(&common).unwrap_or(common));
    }
    dirs
}

/// `path` made absolute against the current directory (unchanged if that is unknown).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A configured writable path: `~/` expanded, relative to the workspace.
fn expand(workspace: &Path, path: &Path) -> PathBuf {
    let expanded = match (path.strip_prefix("~"), platform::fs::home_dir()) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        workspace.join(expanded)
    }
}

/// How many symlinks one resolution follows before it gives up (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The real path of `path` (absolute): the longest existing prefix resolved by the kernel,
/// dangling symlinks followed by hand, the rest normalised lexically. `None` for a symlink
/// loop or a relative `path`.
pub(crate) fn resolve(path: &Path) -> Option<PathBuf> {
    resolve_with(path, 0)
}

fn resolve_with(path: &Path, links: usize) -> Option<PathBuf> {
    if !path.is_absolute() || links > MAX_LINKS {
        return None;
    }
    let mut existing = path.to_path_buf();
    // The components after `existing`, last first.
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let base = loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            break real;
        }
        // A symlink that cannot be resolved: dangling, or a loop. Follow it by hand so a
        // write through it is judged where it would land.
        if let Ok(target) = std::fs::read_link(&existing) {
            let parent = existing.parent().unwrap_or(Path::new("/"));
            let mut next = parent.join(target);
            for name in rest.iter().rev() {
                next.push(name);
            }
            return resolve_with(&next, links + 1);
        }
        let last = existing.components().next_back()?;
        match last {
            Component::RootDir | Component::Prefix(_) => break existing,
            other => rest.push(other.as_os_str().to_os_string()),
        }
        existing.pop();
    };
    let mut real = base;
    for name in rest.iter().rev() {
        match Path::new(name).components().next() {
            Some(Component::ParentDir) => {
                real.pop();
            }
            Some(Component::CurDir) | None => {}
            Some(_) => real.push(name),
        }
    }
    Some(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::symlink;

    /// A workspace in a directory outside the temp dirs (which are writable roots).
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        (dir, ws)
    }

    fn write_policy(ws: &Path) -> Policy {
        Policy::new(SandboxMode::WorkspaceWrite, ws, &[], None)
    }

    #[test]
    fn mode_names_round_trip_through_str_and_serde() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.to_string().parse::<SandboxMode>().unwrap(), mode);
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
            assert_eq!(serde_json::from_str::<SandboxMode>(&json).unwrap(), mode);
        }
        assert_eq!(SandboxMode::default(), SandboxMode::WorkspaceWrite);
        let err = "workspace".parse::<SandboxMode>().unwrap_err();
        assert!(
            err.to_string().contains("read-only, workspace-write"),
            "{err}"
        );
    }

    #[test]
    fn network_defaults_follow_the_mode() {
        let ws = Path::new("/");
        let net = |mode, setting| Policy::new(mode, ws, &[], setting).network;
        assert!(net(SandboxMode::WorkspaceWrite, None));
        assert!(!net(SandboxMode::WorkspaceWrite, Some(false)));
        assert!(!net(SandboxMode::ReadOnly, None));
        assert!(net(SandboxMode::ReadOnly, Some(true)));
        assert!(net(SandboxMode::DangerFullAccess, Some(false)));
    }

    #[test]
    fn workspace_write_allows_the_workspace_temp_and_extra_paths_only() {
        let (dir, ws) = workspace();
        let extra = dir.path().join("cache");
        std::fs::create_dir(&extra).unwrap();
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            &ws,
            std::slice::from_ref(&extra),
            None,
        );
        assert!(policy.write_allowed(&ws.join("src/new/file.rs")));
        assert!(policy.write_allowed(Path::new("relative/to/workspace.txt")));
        assert!(policy.write_allowed(&extra.join("x")));
        assert!(policy.write_allowed(&std::env::temp_dir().join("scratch")));
        assert!(policy.write_allowed(Path::new("/tmp/scratch")));
        assert!(policy.write_allowed(Path::new("/dev/shm/sem.pytest")));
        assert!(!policy.write_allowed(&dir.path().join("beside-the-workspace")));
        assert!(!policy.write_allowed(Path::new("/etc/passwd")));
        assert!(!policy.write_allowed(Path::new("/")));
    }

    #[test]
    fn dot_dot_out_of_the_workspace_is_outside() {
        let (dir, ws) = workspace();
        let policy = write_policy(&ws);
        assert!(!policy.write_allowed(&ws.join("../escaped")));
        assert!(!policy.write_allowed(&ws.join("missing/../../escaped")));
        assert!(policy.write_allowed(&ws.join("missing/../inside")));
        assert!(!policy.write_allowed(&dir.path().join("ws/../escaped")));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_inside_pointing_outside_is_outside() {
        let (dir, ws) = workspace();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        symlink(&outside, ws.join("link")).unwrap();
        // A dangling link: writing through it creates its target, outside.
        symlink(dir.path().join("nowhere.txt"), ws.join("dangling")).unwrap();
        // A relative dangling link climbing out.
        symlink("../nowhere-else.txt", ws.join("relative")).unwrap();
        // A link inside pointing inside stays inside.
        std::fs::create_dir(ws.join("real")).unwrap();
        symlink("real", ws.join("alias")).unwrap();
        let policy = write_policy(&ws);
        assert!(!policy.write_allowed(&ws.join("link/file")));
        assert!(!policy.write_allowed(&ws.join("link/new/dir/file")));
        assert!(!policy.write_allowed(&ws.join("dangling")));
        assert!(!policy.write_allowed(&ws.join("relative")));
        assert!(policy.write_allowed(&ws.join("alias/file")));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_outside_pointing_inside_is_inside() {
        let (dir, ws) = workspace();
        symlink(&ws, dir.path().join("to-ws")).unwrap();
        let policy = write_policy(&ws);
        assert!(policy.write_allowed(&dir.path().join("to-ws/file")));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_refused() {
        let (_dir, ws) = workspace();
        symlink(ws.join("b"), ws.join("a")).unwrap();
        symlink(ws.join("a"), ws.join("b")).unwrap();
        let policy = write_policy(&ws);
        assert!(!policy.write_allowed(&ws.join("a")));
        assert!(!policy.write_allowed(&ws.join("a/file")));
    }

    #[test]
    fn git_hooks_config_and_project_config_are_protected() {
        let (_dir, ws) = workspace();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        let policy = write_policy(&ws);
        assert!(!policy.write_allowed(&ws.join(".git/hooks/pre-commit")));
        assert!(!policy.write_allowed(&ws.join(".git/hooks")));
        assert!(!policy.write_allowed(&ws.join(".git/config")));
        // Not yet existing: still protected in-process.
        assert!(!policy.write_allowed(&ws.join(".coding-agent/config.toml")));
        assert!(!policy.write_allowed(&ws.join("sub/../.coding-agent/config.toml")));
        // What git needs to commit stays writable.
        assert!(policy.write_allowed(&ws.join(".git/index")));
        assert!(policy.write_allowed(&ws.join(".git/objects/ab/cdef")));
        assert!(policy.write_allowed(&ws.join(".git/refs/heads/main")));
        assert!(policy.write_allowed(&ws.join(".git/config.lock")));
        // A redirection of git to another directory's config and hooks.
        assert!(!policy.write_allowed(&ws.join(".git/commondir")));
        assert!(policy.git_redirects().is_empty());
        std::fs::write(ws.join(".git/commondir"), "/tmp/elsewhere\n").unwrap();
        assert_eq!(policy.git_redirects(), vec![ws.join(".git/commondir")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_into_a_protected_path_is_protected() {
        let (_dir, ws) = workspace();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        symlink(ws.join(".git/hooks"), ws.join("hooks")).unwrap();
        symlink(ws.join(".coding-agent"), ws.join("agent-config")).unwrap();
        let policy = write_policy(&ws);
        assert!(!policy.write_allowed(&ws.join("hooks/post-checkout")));
        assert!(!policy.write_allowed(&ws.join("agent-config/config.toml")));
    }

    #[test]
    fn a_worktree_s_real_git_dir_is_writable_but_its_hooks_and_config_are_not() {
        let (dir, ws) = workspace();
        let common = dir.path().join("main/.git");
        let git_dir = common.join("worktrees/ws");
        std::fs::create_dir_all(common.join("hooks")).unwrap();
        std::fs::create_dir_all(&git_dir).unwrap();
        std::fs::write(git_dir.join("commondir"), "../..\n").unwrap();
        std::fs::write(ws.join(".git"), format!("gitdir: {}\n", git_dir.display())).unwrap();
        let policy = write_policy(&ws);
        let roots = policy.writable_roots();
        assert!(roots.contains(&git_dir), "{roots:?}");
        assert!(roots.contains(&common), "{roots:?}");
        assert!(policy.write_allowed(&git_dir.join("index")));
        assert!(policy.write_allowed(&common.join("objects/ab/cd")));
        assert!(!policy.write_allowed(&common.join("hooks/pre-commit")));
        assert!(!policy.write_allowed(&common.join("config")));
        assert!(!policy.write_allowed(&git_dir.join("config.worktree")));
        assert!(!policy.write_allowed(&git_dir.join("commondir")));
        // The `gitdir:` file in the workspace.
        assert!(!policy.write_allowed(&ws.join(".git")));
        assert!(policy.git_redirects().is_empty());
        let protected = policy.protected_paths();
        assert!(protected.contains(&common.join("hooks")), "{protected:?}");
        assert!(protected.contains(&git_dir.join("config")), "{protected:?}");
    }

    #[test]
    fn a_submodule_s_relative_gitdir_is_followed() {
        let (_dir, ws) = workspace();
        let sub = ws.join("sub");
        std::fs::create_dir_all(ws.join(".git/modules/sub/hooks")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let policy = write_policy(&sub);
        assert!(!policy.write_allowed(&ws.join(".git/modules/sub/hooks/pre-commit")));
        assert!(policy.write_allowed(&ws.join(".git/modules/sub/index")));
    }

    #[test]
    fn read_only_allows_nothing_and_full_access_everything() {
        let (_dir, ws) = workspace();
        let ro = Policy::new(SandboxMode::ReadOnly, &ws, &[], None);
        assert!(!ro.write_allowed(&ws.join("file")));
        assert!(!ro.write_allowed(Path::new("/tmp/file")));
        assert!(ro.writable_roots().is_empty());
        assert!(ro.protected_paths().is_empty());
        let full = Policy::new(SandboxMode::DangerFullAccess, &ws, &[], None);
        assert!(full.write_allowed(Path::new("/etc/passwd")));
        assert_eq!(full.writable_roots(), vec![PathBuf::from("/")]);
    }

    #[test]
    fn extra_paths_expand_home_and_resolve_against_the_workspace() {
        let (_dir, ws) = workspace();
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            &ws,
            &[PathBuf::from("out"), PathBuf::from("~/.cache/x")],
            None,
        );
        assert!(policy.writable.contains(&ws.join("out")));
        if let Some(home) = platform::fs::home_dir() {
            let home = resolve(&home).unwrap();
            assert!(policy.writable.contains(&home.join(".cache/x")));
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_workspace_itself_is_resolved() {
        let (dir, ws) = workspace();
        symlink(&ws, dir.path().join("ws-link")).unwrap();
        let policy = write_policy(&dir.path().join("ws-link"));
        assert_eq!(policy.workspace, ws);
        assert!(policy.write_allowed(&ws.join("file")));
    }
}
