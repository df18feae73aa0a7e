//! Project context: the `AGENTS.md` (or `CLAUDE.md`) files the model should follow.

use std::path::{Path, PathBuf};

use crate::Home;

/// Most bytes of context files put into the system prompt: instructions beyond this are
/// rarely worth their share of every request.
pub const CONTEXT_LIMIT: usize = 64 * 1024;

/// The context files found, concatenated under their paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectContext {
    /// The files read, global first, then from the repository root down to the cwd.
    pub files: Vec<PathBuf>,
    /// Each file under a `## <path>` heading; empty when there are none.
    pub text: String,
    /// The text was cut at [`CONTEXT_LIMIT`] (a note at its end says so).
    pub truncated: bool,
}

/// The repository root of `cwd`: the nearest ancestor (itself included) holding `.git`, else
/// `cwd` itself. The search stops at `$HOME` when `cwd` is inside it, and before any
/// world-writable directory (mode `o+w`, such as `/tmp`): anyone can create `/tmp/.git`, and
/// the root decides whose `.coding-agent/` and `AGENTS.md` apply, so a root found at or above
/// such a directory would let another user configure the agent in every directory below it.
pub fn repository_root(cwd: &Path) -> PathBuf {
    repository_root_within(cwd, platform::fs::home_dir().as_deref())
}

/// [`repository_root`] with the user's home given (tests pass a fake one).
fn repository_root_within(cwd: &Path, home: Option<&Path>) -> PathBuf {
    // The highest directory the search may reach: `$HOME`, as written or canonical, when
    // `cwd` is below it.
    let limit = home.and_then(|home| {
        if cwd.starts_with(home) {
            return Some(home.to_path_buf());
        }
        std::fs::canonicalize(home)
            .ok()
            .filter(|canonical| cwd.starts_with(canonical))
    });
    for dir in cwd.ancestors() {
        // A directory that cannot be examined counts as open to all: the search fails closed.
        let open_to_all =
            std::fs::metadata(dir).map_or(true, |meta| platform::fs::writable_by_everyone(&meta));
        if open_to_all {
            break;
        }
        if dir.join(".git").exists() {
            return dir.to_path_buf();
        }
        if limit.as_deref() == Some(dir) {
            break;
        }
    }
    cwd.to_path_buf()
}

/// Reads `AGENTS.md` — or `CLAUDE.md` where a directory has no `AGENTS.md` — from the home
/// dir, then from every directory from the repository root down to `cwd`. Unreadable files
/// are skipped: missing instructions must not stop the agent.
/// With [`RepoFiles::Skip`] (an untrusted repository), only the home dir's file is read.
pub fn project_context(home: &Home, cwd: &Path, repo: RepoFiles) -> ProjectContext {
    project_context_limited(home, cwd, repo, CONTEXT_LIMIT)
}

/// Whether a repository's own files (its `.coding-agent/`, `AGENTS.md`, `CLAUDE.md`) may be
/// read: only once the user trusts the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoFiles {
    Read,
    Skip,
}

fn project_context_limited(
    home: &Home,
    cwd: &Path,
    repo: RepoFiles,
    limit: usize,
) -> ProjectContext {
    let root = repository_root(cwd);
    let mut dirs = vec![home.root().to_path_buf()];
    // Root first: general rules, then the more specific ones nearer the cwd.
    let mut chain: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    if repo == RepoFiles::Read {
        dirs.extend(chain);
    }

    let mut context = ProjectContext::default();
    let mut seen = Vec::new();
    for dir in dirs {
        let Some(path) = ["AGENTS.md", "CLAUDE.md"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
        else {
            continue;
        };
        // The home dir may also be inside the repository: read each file once.
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&canonical) {
            continue;
        }
        let Ok(content) = std::fs::read_to_string(&path) else {
            continue;
        };
        seen.push(canonical);
        context.text.push_str(&format!(
            "## {}\n\n{}\n\n",
            path.display(),
            content.trim_end()
        ));
        context.files.push(path);
    }
    let trimmed_len = context.text.trim_end().len();
    context.text.truncate(trimmed_len);
    if context.text.len() > limit {
        let mut cut = limit;
        while !context.text.is_char_boundary(cut) {
            cut -= 1;
        }
        context.text.truncate(cut);
        context.text.push_str(&format!(
            "\n\n[Project context cut at {} KB; the rest of these files was left out.]",
            limit / 1024
        ));
        context.truncated = true;
    }
    context
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn home_then_root_down_to_cwd_with_claude_as_fallback() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let repo = tmp.path().join("outside/repo");
        let cwd = repo.join("crates/core");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        write(&home.root().join("AGENTS.md"), "global rules");
        write(
            &tmp.path().join("outside/AGENTS.md"),
            "above the repo: ignored",
        );
        write(&repo.join("AGENTS.md"), "repo rules");
        write(&repo.join("CLAUDE.md"), "shadowed by AGENTS.md");
        write(&repo.join("crates/CLAUDE.md"), "crates rules");
        write(&cwd.join("AGENTS.md"), "core rules\n");

        let context = project_context(&home, &cwd, RepoFiles::Read);
        assert_eq!(
            context.files,
            [
                home.root().join("AGENTS.md"),
                repo.join("AGENTS.md"),
                repo.join("crates/CLAUDE.md"),
                cwd.join("AGENTS.md"),
            ]
        );
        let expected = format!(
            "## {}\n\nglobal rules\n\n## {}\n\nrepo rules\n\n## {}\n\ncrates rules\n\n## {}\n\ncore rules",
            context.files[0].display(),
            context.files[1].display(),
            context.files[2].display(),
            context.files[3].display()
        );
        assert_eq!(context.text, expected);
        assert!(!context.truncated);
    }

    #[test]
    fn without_a_repository_only_the_cwd_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let cwd = tmp.path().join("a/b");
        std::fs::create_dir_all(&cwd).unwrap();
        write(&tmp.path().join("a/AGENTS.md"), "parent");
        write(&cwd.join("AGENTS.md"), "here");
        let context = project_context(&home, &cwd, RepoFiles::Read);
        assert_eq!(context.files, [cwd.join("AGENTS.md")]);
        assert_eq!(
            project_context(
                &Home::new("/nonexistent"),
                Path::new("/nonexistent/x"),
                RepoFiles::Read
            )
            .text,
            ""
        );
    }

    #[test]
    fn long_context_is_cut_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        write(&home.root().join("AGENTS.md"), &"é".repeat(1000));
        let context = project_context_limited(&home, tmp.path(), RepoFiles::Read, 1025);
        assert!(context.truncated);
        assert!(
            context
                .text
                .ends_with("the rest of these files was left out.]")
        );
        assert!(context.text.len() < 1200);
    }

    /// Makes `dir` writable by everyone, with the sticky bit, as `/tmp` is.
    #[cfg(unix)]
    fn open_to_all(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_git_in_a_world_writable_directory_is_no_root() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        let cwd = shared.join("someone/else");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(shared.join(".git")).unwrap();
        std::fs::create_dir_all(shared.join(".coding-agent")).unwrap();
        open_to_all(&shared);
        assert_eq!(repository_root(&cwd), cwd);
        // Nor above one: a repository holding a world-writable directory.
        let repo = tmp.path().join("repo");
        let cwd = repo.join("scratch/sub");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        open_to_all(&repo.join("scratch"));
        assert_eq!(repository_root(&cwd), cwd);
        // A world-writable cwd is its own root, as with no repository at all.
        assert_eq!(repository_root(&shared), shared);
        // A repository inside a world-writable directory is found as before.
        let inside = shared.join("mine");
        std::fs::create_dir_all(inside.join(".git")).unwrap();
        std::fs::create_dir_all(inside.join("src")).unwrap();
        assert_eq!(repository_root(&inside.join("src")), inside);
    }

    #[test]
    fn the_search_stops_at_home() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path().join("outer");
        let home = outer.join("home/me");
        let cwd = home.join("notes/today");
        std::fs::create_dir_all(outer.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        assert_eq!(repository_root_within(&cwd, Some(&home)), cwd);
        // Home itself may be a repository (dotfiles), and a repository under it is found.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert_eq!(repository_root_within(&cwd, Some(&home)), home);
        std::fs::create_dir_all(home.join("notes/.git")).unwrap();
        assert_eq!(
            repository_root_within(&cwd, Some(&home)),
            home.join("notes")
        );
        // A cwd outside home is not limited by it.
        let elsewhere = outer.join("srv/app");
        std::fs::create_dir_all(&elsewhere).unwrap();
        assert_eq!(repository_root_within(&elsewhere, Some(&home)), outer);
        assert_eq!(repository_root_within(&elsewhere, None), outer);
    }

    #[cfg(unix)]
    #[test]
    fn home_is_compared_in_canonical_form_too() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let home = real.join("me");
        let cwd = home.join("project");
        std::fs::create_dir_all(real.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // `$HOME` names the link; the cwd is the real path.
        assert_eq!(repository_root_within(&cwd, Some(&link.join("me"))), cwd);
    }
}
