//! Shared fixtures: a temporary home and workspace, shell commands run in the workspace as
//! the agent's bash tool would, the user's own git repository, and a byte-level record of
//! its `.git` to prove the store never touches it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use checkpoint::{Excludes, Store, StoreOptions};

pub struct Fixture {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn ws(&self) -> &Path {
        self.ws.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    /// A store with no global excludes, so the machine's git setup cannot change a result.
    pub fn store(&self, session: &str) -> Store {
        self.store_with(session, StoreOptions::default())
    }

    pub fn store_with(&self, session: &str, mut options: StoreOptions) -> Store {
        if options.excludes == Excludes::User {
            options.excludes = Excludes::None;
        }
        Store::open_with(self.home.path(), self.ws.path(), session, options).unwrap()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    /// `sh -c script` in the workspace, as the agent's bash tool runs commands.
    pub fn sh(&self, script: &str) {
        let status = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(self.ws())
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    }

    /// `git <args>` in the workspace as the user runs it (their repository), without the
    /// machine's config.
    pub fn user_git(&self, args: &[&str]) -> String {
        user_git(self.ws(), args)
    }

    /// Makes the workspace a git repository with one commit of its current files.
    pub fn init_user_repo(&self) {
        self.user_git(&["init", "-q", "-b", "main"]);
        self.user_git(&["add", "-A"]);
        self.user_git(&["commit", "-q", "-m", "initial"]);
    }

    /// Every file under the user's `.git`, with its bytes, and the stash list.
    pub fn user_git_state(&self) -> (BTreeMap<PathBuf, Vec<u8>>, String) {
        let mut files = BTreeMap::new();
        let mut stack = vec![self.path(".git")];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let meta = entry.path().symlink_metadata().unwrap();
                if meta.is_dir() {
                    stack.push(entry.path());
                } else {
                    files.insert(entry.path(), fs::read(entry.path()).unwrap());
                }
            }
        }
        assert!(files.keys().any(|p| p.ends_with("HEAD")));
        (files, self.user_git(&["stash", "list"]))
    }
}

pub fn user_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "User")
        .env("GIT_AUTHOR_EMAIL", "user@example.invalid")
        .env("GIT_COMMITTER_NAME", "User")
        .env("GIT_COMMITTER_EMAIL", "user@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The paths of a tree in the store (for checking what a snapshot holds).
pub fn tree_paths(store: &Store, tree: &checkpoint::TreeId) -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-tree", "-r", "--name-only", "-z", tree.as_str()])
        .env("GIT_DIR", store.dir().join("git"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// `["M a.txt", "D b.txt"]`.
pub fn shown(changes: &[checkpoint::Change]) -> Vec<String> {
    changes.iter().map(|c| c.to_string()).collect()
}
