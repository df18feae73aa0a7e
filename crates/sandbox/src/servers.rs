//! The MCP servers of repositories that the user allowed to start, in
//! `$CODING_AGENT_HOME/mcp-servers.toml`, keyed by the canonical repository root.
//!
//! Why: a trusted repository's `.coding-agent/config.toml` may name MCP servers, and starting
//! one runs a program of the repository's choosing (or connects to a URL of its choosing).
//! Trusting a repository's instructions is not agreeing to that: each server is shown to the
//! user (its command or URL) and starts only once approved, for that repository. What is
//! remembered is the server's whole launch (name, program, arguments, environment, directory,
//! URL, headers), so a server whose launch changes is asked about again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::home_file::{self, StoreError};

/// The file, in the home directory.
pub const SERVERS_FILE: &str = "mcp-servers.toml";

/// The approved servers of every repository.
#[derive(Debug, Clone)]
pub struct ServerStore {
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
    #[serde(default)]
    approved: Vec<String>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    repositories: BTreeMap<&'a str, RepositoryOut<'a>>,
}

#[derive(Serialize)]
struct RepositoryOut<'a> {
    approved: &'a [String],
}

const HEADER: &str = "\
# MCP servers from repositories' .coding-agent/config.toml that you allowed to start (written
# by coding-agent). Each entry is a server's whole launch: when it changes, you are asked again.
";

impl ServerStore {
    /// The store in the home directory `home` (`$CODING_AGENT_HOME`).
    pub fn new(home: &Path) -> Self {
        Self {
            path: home.join(SERVERS_FILE),
        }
    }

    /// The file the approvals are kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the server launched as `launch` was approved for the repository at `root`.
    pub fn approved(&self, root: &Path, launch: &str) -> Result<bool, StoreError> {
        let key = home_file::root_key(root)?;
        Ok(self
            .load()?
            .get(&key)
            .is_some_and(|approved| approved.iter().any(|a| a == launch)))
    }

    /// Approves the server launched as `launch` for the repository at `root`. An earlier
    /// launch of the same name is forgotten (only the one approved last can start).
    pub fn approve(&self, root: &Path, name: &str, launch: &str) -> Result<(), StoreError> {
        let key = home_file::root_key(root)?;
        let prefix = format!("{name} ");
        let _lock = home_file::lock(&self.path)?;
        let mut repos = self.load()?;
        let approved = repos.entry(key).or_default();
        approved.retain(|a| !a.starts_with(&prefix));
        approved.push(launch.to_string());
        approved.sort();
        let out = FileOut {
            repositories: repos
                .iter()
                .map(|(root, approved)| (root.as_str(), RepositoryOut { approved }))
                .collect(),
        };
        let body = toml::to_string(&out)
            .map_err(|err| StoreError::io(&self.path)(std::io::Error::other(err.to_string())))?;
        home_file::write_atomic(&self.path, &format!("{HEADER}\n{body}"))
    }

    fn load(&self) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        let Some(text) = home_file::read_optional(&self.path)? else {
            return Ok(BTreeMap::new());
        };
        let file: FileIn = toml::from_str(&text).map_err(|err| {
            StoreError::damaged(
                &self.path,
                &text,
                err.span().map(|s| s.start),
                err.message(),
            )
        })?;
        let mut repos = BTreeMap::new();
        for (root, repo) in file.repositories {
            if !Path::new(root.get_ref()).is_absolute() {
                return Err(StoreError::damaged(
                    &self.path,
                    &text,
                    Some(root.span().start),
                    "a repository root must be an absolute path",
                ));
            }
            repos.insert(root.into_inner(), repo.approved);
        }
        Ok(repos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_holds_for_its_launch_and_repository_only() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let store = ServerStore::new(home.path());
        let launch = "docs stdio `npx -y docs-server`";
        assert!(!store.approved(repo.path(), launch).unwrap());
        store.approve(repo.path(), "docs", launch).unwrap();
        assert!(store.approved(repo.path(), launch).unwrap());
        assert!(!store.approved(other.path(), launch).unwrap());
        // The same name launched otherwise is a new question, and replaces the old answer.
        let changed = "docs stdio `npx -y evil-server`";
        assert!(!store.approved(repo.path(), changed).unwrap());
        store.approve(repo.path(), "docs", changed).unwrap();
        assert!(!store.approved(repo.path(), launch).unwrap());
        // Damage is an error naming the file, never an approval.
        std::fs::write(store.path(), "repositories = 3").unwrap();
        let err = store.approved(repo.path(), changed).unwrap_err();
        assert!(err.to_string().contains(SERVERS_FILE), "{err}");
    }
}
