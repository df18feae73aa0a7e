//! Repository trust: whether the user agreed to let a repository's own files steer the
//! agent, and whether those files changed since.
//!
//! Why: a repository can carry `.coding-agent/` (config, `SYSTEM.md`, later hooks and MCP
//! servers), `AGENTS.md` and `CLAUDE.md`. Cloning a stranger's repository must not hand it
//! the agent, so the first run in such a repository asks once ([`wants`] lists what it would
//! load), and the answer is kept in `$CODING_AGENT_HOME/trusted.toml`, keyed by the canonical
//! repository root, with a [`Fingerprint`] of the root's `.coding-agent/`. When that directory
//! no longer matches, the state is [`Trust::Changed`] and the user is asked again: a command
//! run in the repository may have planted a config since.
//!
//! What the fingerprint covers: SHA-256 (the `sha2` crate, RustCrypto) over the relative path,
//! the kind and the content of every entry under `<root>/.coding-agent/`, in sorted order,
//! so it is stable across runs and machines and costs one read of a few small files. A
//! symbolic link counts by its target's text, and by the file it points to when that is a
//! regular file; links to directories are not followed (a link to `/` must not make the
//! agent read the disk). `AGENTS.md` and `CLAUDE.md` are not fingerprinted: the agent itself
//! edits them as part of the work, and they instruct the model rather than configure the
//! agent. `.coding-agent/` directories below the root are listed by [`wants`] but not
//! fingerprinted, since their set depends on the working directory.
//!
//! What it does not do: ask, or load anything: the host asks when [`wants`] is not empty and
//! the state is not [`Trust::Trusted`], then loads only what a trusted repository may set.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toml::Spanned;

use crate::home_file::{self, StoreError};

/// The file, in the home directory.
pub const TRUST_FILE: &str = "trusted.toml";

/// The repository's own directory of agent settings.
pub const PROJECT_DIR: &str = ".coding-agent";

/// Where a repository stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Trusted, and its `.coding-agent/` is as it was then.
    Trusted,
    /// Never trusted (or the trust was revoked).
    Untrusted,
    /// Trusted once, but its `.coding-agent/` changed since: ask again.
    Changed,
}

/// A digest of a repository's `.coding-agent/`, as `sha256:<hex>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The text kept in the store.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The fingerprint of `<root>/.coding-agent/` as it is now. Never fails: an entry that cannot
/// be read counts as "unreadable", which differs from any content it may have later.
pub fn fingerprint(root: &Path) -> Fingerprint {
    let dir = root.join(PROJECT_DIR);
    let mut hasher = Sha256::new();
    hasher.update(b"coding-agent trust v1\0");
    if fs::symlink_metadata(&dir).is_err() {
        hasher.update(b"absent");
    } else {
        let walk = walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .sort_by_file_name();
        for entry in walk {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    let path = err.path().map(|p| relative(&dir, p)).unwrap_or_default();
                    field(&mut hasher, &path);
                    field(&mut hasher, b"unreadable");
                    continue;
                }
            };
            field(&mut hasher, &relative(&dir, entry.path()));
            let kind = entry.file_type();
            if kind.is_symlink() {
                field(&mut hasher, b"link");
                let target = fs::read_link(entry.path()).unwrap_or_default();
                field(&mut hasher, &platform::fs::path_bytes(&target));
                // What a loader reading this path gets.
                if fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                    content(&mut hasher, entry.path());
                }
            } else if kind.is_dir() {
                field(&mut hasher, b"dir");
            } else if kind.is_file() {
                field(&mut hasher, b"file");
                content(&mut hasher, entry.path());
            } else {
                // FIFOs, sockets, devices: never opened (a FIFO would block).
                field(&mut hasher, b"special");
            }
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Fingerprint(format!("sha256:{hex}"))
}

fn relative(dir: &Path, path: &Path) -> Vec<u8> {
    platform::fs::path_bytes(path.strip_prefix(dir).unwrap_or(path)).into_owned()
}

/// A length-prefixed field, so that no two different sequences hash the same bytes.
fn field(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

/// A file's content, streamed, then its length (so "unreadable" halfway is distinct).
fn content(hasher: &mut Sha256, path: &Path) {
    let Ok(mut file) = fs::File::open(path) else {
        field(hasher, b"unreadable");
        return;
    };
    let mut buf = [0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                total += n as u64;
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                field(hasher, b"unreadable");
                return;
            }
        }
    }
    hasher.update(total.to_le_bytes());
}

/// What the repository at `root` would have the agent load when it runs in `cwd`, for the
/// trust question: the entries under `.coding-agent/` (directories themselves left out), the
/// `AGENTS.md` and `CLAUDE.md` files and the `.agents/skills/` and `.claude/skills/` folders, in every directory from the root down to `cwd`
/// (the root alone when `cwd` is not inside it). Empty: nothing to ask about.
pub fn wants(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .collect();
    dirs.reverse();
    if dirs.is_empty() {
        dirs.push(root);
    }
    let mut found = Vec::new();
    for dir in dirs {
        let project = dir.join(PROJECT_DIR);
        if fs::symlink_metadata(&project).is_ok() {
            let walk = walkdir::WalkDir::new(&project)
                .follow_links(false)
                .sort_by_file_name()
                .min_depth(1);
            found.extend(
                walk.into_iter()
                    .flatten()
                    .filter(|e| !e.file_type().is_dir())
                    .map(|e| e.into_path()),
            );
        }
        // Skills other agents' users bring along steer the model like AGENTS.md does; the
        // folders are listed (not each file of every skill) and, like AGENTS.md, not
        // fingerprinted.
        for name in ["AGENTS.md", "CLAUDE.md", ".agents/skills", ".claude/skills"] {
            let path = dir.join(name);
            if fs::symlink_metadata(&path).is_ok() {
                found.push(path);
            }
        }
    }
    found
}

/// The repositories the user trusted, in `$CODING_AGENT_HOME/trusted.toml`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    #[serde(default)]
    repositories: BTreeMap<Spanned<String>, RepositoryIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepositoryIn {
    fingerprint: Spanned<String>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    repositories: BTreeMap<&'a str, RepositoryOut<'a>>,
}

#[derive(Serialize)]
struct RepositoryOut<'a> {
    fingerprint: &'a str,
}

const HEADER: &str = "\
# Repositories whose own .coding-agent/, AGENTS.md and CLAUDE.md you trusted (written by
# coding-agent). The fingerprint is of .coding-agent/ then; when it differs you are asked again.
";

impl TrustStore {
    /// The store in the home directory `home` (`$CODING_AGENT_HOME`).
    pub fn new(home: &Path) -> Self {
        Self {
            path: home.join(TRUST_FILE),
        }
    }

    /// The file the trusted repositories are kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the repository at `root` stands now (its `.coding-agent/` is fingerprinted
    /// afresh).
    pub fn state(&self, root: &Path) -> Result<Trust, StoreError> {
        let key = home_file::root_key(root)?;
        let Some(trusted) = self.load()?.remove(&key) else {
            return Ok(Trust::Untrusted);
        };
        if fingerprint(Path::new(&key)).as_str() == trusted {
            Ok(Trust::Trusted)
        } else {
            Ok(Trust::Changed)
        }
    }

    /// Trusts the repository at `root` as it was when the user was asked: `seen` is the
    /// fingerprint taken for the question (so a change made while the question was open is
    /// not trusted with it; the next [`TrustStore::state`] says [`Trust::Changed`]).
    pub fn trust(&self, root: &Path, seen: &Fingerprint) -> Result<(), StoreError> {
        let key = home_file::root_key(root)?;
        self.update(|repos| {
            repos.insert(key, seen.as_str().to_string()).as_deref() != Some(seen.as_str())
        })
        .map(|_| ())
    }

    /// Forgets the repository; `false` when it was not trusted.
    pub fn revoke(&self, root: &Path) -> Result<bool, StoreError> {
        let key = home_file::root_key(root)?;
        self.update(|repos| repos.remove(&key).is_some())
    }

    /// Every trusted repository root with its fingerprint.
    pub fn list(&self) -> Result<Vec<(PathBuf, Fingerprint)>, StoreError> {
        Ok(self
            .load()?
            .into_iter()
            .map(|(root, fp)| (PathBuf::from(root), Fingerprint(fp)))
            .collect())
    }

    fn update(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, String>) -> bool,
    ) -> Result<bool, StoreError> {
        let _lock = home_file::lock(&self.path)?;
        let mut repos = self.load()?;
        if !change(&mut repos) {
            return Ok(false);
        }
        let out = FileOut {
            repositories: repos
                .iter()
                .map(|(root, fp)| (root.as_str(), RepositoryOut { fingerprint: fp }))
                .collect(),
        };
        let body = toml::to_string(&out)
            .map_err(|err| StoreError::io(&self.path)(std::io::Error::other(err.to_string())))?;
        home_file::write_atomic(&self.path, &format!("{HEADER}\n{body}"))?;
        Ok(true)
    }

    fn load(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let Some(text) = home_file::read_optional(&self.path)? else {
            return Ok(BTreeMap::new());
        };
        let damaged = |offset: Option<usize>, message: &str| {
            StoreError::damaged(&self.path, &text, offset, message)
        };
        let file: FileIn = toml::from_str(&text)
            .map_err(|err| damaged(err.span().map(|s| s.start), err.message()))?;
        let mut repos = BTreeMap::new();
        for (root, repo) in file.repositories {
            if !Path::new(root.get_ref()).is_absolute() {
                return Err(damaged(
                    Some(root.span().start),
                    "a repository root must be an absolute path",
                ));
            }
            if !is_fingerprint(repo.fingerprint.get_ref()) {
                return Err(damaged(
                    Some(repo.fingerprint.span().start),
                    "a fingerprint is `sha256:` and 64 hex digits",
                ));
            }
            repos.insert(root.into_inner(), repo.fingerprint.into_inner());
        }
        Ok(repos)
    }
}

fn is_fingerprint(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests;
