//! What a confined command created that the kernel could not stop: a protected path
//! ([`Policy::protected_paths`]) that did not exist when the sandbox was made, and a git
//! redirection ([`Policy::git_redirects`]).
//!
//! Why: on Linux a read-only bind needs something to bind, so a path that does not exist yet
//! is not protected. A command may then create the repository's `.coding-agent/` (a config
//! whose hooks and MCP servers run outside the sandbox the next time the repository is
//! trusted, `--trust` included), `.git/hooks/` when it was missing, or a `.git/commondir`
//! that sends git to another directory's config and hooks. The host checks after each
//! command ([`Watch::planted`]) and refuses what it finds: removes it and says so to the
//! model and the user. A background job that creates one later is caught after the next
//! command. On macOS Seatbelt refuses these before they exist; the check costs a few `stat`
//! calls there too.
//!
//! Only paths whose parent existed when the sandbox was made are watched: a `git init` or
//! `git submodule add` during the session makes a new git directory with its own hooks and
//! config, which is the work asked for, not a way around the sandbox (they are bound
//! read-only from the next command on). What the user approved the agent to create (a write
//! the user allowed, a command the user let run unconfined) is no longer watched.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::policy::Policy;

/// A path a command created where commands may not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    pub path: PathBuf,
    /// What the path does, for the user: "git hooks, which git runs outside the sandbox".
    pub what: &'static str,
}

/// The paths watched for one sandbox.
#[derive(Debug)]
pub(crate) struct Watch {
    /// Protected paths absent (with their parent present) when the sandbox was made.
    absent: Vec<PathBuf>,
    /// Git redirections present then: the user's own setup.
    known_redirects: Vec<PathBuf>,
    /// Paths the user approved creating since; each covers what is beneath it.
    approved: Mutex<Vec<PathBuf>>,
}

impl Watch {
    pub(crate) fn new(policy: &Policy) -> Watch {
        // The agent makes its own home when it first saves something: never taken for
        // planted.
        let absent = policy
            .protected_paths()
            .into_iter()
            .filter(|path| Some(path.as_path()) != policy.agent_home())
            .filter(|path| !exists(path) && path.parent().is_some_and(|p| p.is_dir()))
            .collect();
        Watch {
            absent,
            known_redirects: policy.git_redirects(),
            approved: Mutex::new(Vec::new()),
        }
    }

    /// What commands created since the sandbox was made, and the user did not approve.
    /// Reported until it is gone.
    pub(crate) fn planted(&self, policy: &Policy) -> Vec<Planted> {
        let approved = self.approved.lock().unwrap_or_else(|e| e.into_inner());
        let approved = |path: &Path| approved.iter().any(|a| path.starts_with(a));
        let mut found: Vec<Planted> = self
            .absent
            .iter()
            .filter(|path| exists(path) && !approved(path))
            .map(|path| Planted {
                what: describe(path),
                path: path.clone(),
            })
            .collect();
        for path in policy.git_redirects() {
            if !self.known_redirects.contains(&path)
                && !approved(&path)
                && !found.iter().any(|f| f.path == path)
            {
                found.push(Planted {
                    what: describe(&path),
                    path,
                });
            }
        }
        found
    }

    /// The user approved creating `path` (a write into a protected path, asked and
    /// allowed; what an unconfined command the user allowed created): it, and what is
    /// beneath it, is not reported. A watched path beneath which
    /// `path` lies is approved as a whole: writing `.coding-agent/config.toml` creates
    /// `.coding-agent/`.
    pub(crate) fn approve(&self, path: &Path) {
        // The rule's own resolution: the watched paths are resolved the same way.
        let path = &crate::policy::resolve(path).unwrap_or_else(|| path.to_path_buf());
        let mut approved = self.approved.lock().unwrap_or_else(|e| e.into_inner());
        let covering = self
            .absent
            .iter()
            .find(|absent| path.starts_with(absent))
            .cloned()
            .unwrap_or_else(|| path.to_path_buf());
        if !approved.contains(&covering) {
            approved.push(covering);
        }
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// What a protected path is for, by its name.
fn describe(path: &Path) -> &'static str {
    match path.file_name().and_then(|n| n.to_str()) {
        Some(".coding-agent") => {
            "the repository's agent settings, whose hooks and MCP servers run outside the \
             sandbox"
        }
        Some("hooks") => "git hooks, which git runs outside the sandbox",
        Some("config" | "config.worktree") => {
            "a git config, which can name commands git runs outside the sandbox"
        }
        Some("info") => "git's info directory, whose attributes choose the filters git runs",
        Some("commondir" | "gitdir") => {
            "a redirection that makes git take its config and hooks from another directory"
        }
        _ => "a path commands may not write",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::SandboxMode;

    fn policy_of(ws: &Path) -> Policy {
        Policy::new(SandboxMode::WorkspaceWrite, ws, &[], None)
    }

    #[test]
    fn a_created_project_dir_is_planted_until_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        let policy = policy_of(&ws);
        let watch = Watch::new(&policy);
        assert_eq!(watch.planted(&policy), []);
        std::fs::create_dir_all(ws.join(".coding-agent/hooks")).unwrap();
        let found = watch.planted(&policy);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, ws.join(".coding-agent"));
        assert!(
            found[0].what.contains("agent settings"),
            "{}",
            found[0].what
        );
        std::fs::remove_dir_all(ws.join(".coding-agent")).unwrap();
        assert_eq!(watch.planted(&policy), []);
    }

    #[test]
    fn a_project_dir_there_from_the_start_is_the_user_s() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".coding-agent")).unwrap();
        let policy = policy_of(&ws);
        let watch = Watch::new(&policy);
        std::fs::write(ws.join(".coding-agent/config.toml"), "").unwrap();
        assert_eq!(watch.planted(&policy), []);
    }

    #[test]
    fn a_git_init_during_the_session_is_not_planted_but_missing_hooks_are() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        let policy = policy_of(&ws);
        let watch = Watch::new(&policy);
        for dir in [".git/hooks", ".git/info"] {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
        }
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(watch.planted(&policy), []);

        // A repository whose hooks directory is missing: creating one is planting hooks.
        std::fs::remove_dir_all(ws.join(".git/hooks")).unwrap();
        let watch = Watch::new(&policy);
        std::fs::create_dir(ws.join(".git/hooks")).unwrap();
        let found = watch.planted(&policy);
        assert_eq!(
            found.iter().map(|f| &f.path).collect::<Vec<_>>(),
            [&ws.join(".git/hooks")]
        );
        assert!(found[0].what.contains("git hooks"), "{}", found[0].what);
    }

    #[test]
    fn what_the_user_approved_is_not_planted() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        let policy = policy_of(&ws);
        let watch = Watch::new(&policy);
        watch.approve(&ws.join(".coding-agent/config.toml"));
        std::fs::create_dir(ws.join(".coding-agent")).unwrap();
        std::fs::write(ws.join(".coding-agent/config.toml"), "").unwrap();
        assert_eq!(watch.planted(&policy), []);

        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        let policy = policy_of(&ws);
        let watch = Watch::new(&policy);
        std::fs::create_dir(ws.join(".coding-agent")).unwrap();
        watch.approve(&ws.join(".coding-agent"));
        assert_eq!(watch.planted(&policy), []);
    }
}
