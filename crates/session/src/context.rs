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

/// The nearest ancestor of `cwd` (itself included) holding `.git`, else `cwd`.
pub fn repository_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Reads `AGENTS.md` — or `CLAUDE.md` where a directory has no `AGENTS.md` — from the home
/// dir, then from every directory from the repository root down to `cwd`. Unreadable files
/// are skipped: missing instructions must not stop the agent.
pub fn project_context(home: &Home, cwd: &Path) -> ProjectContext {
    project_context_limited(home, cwd, CONTEXT_LIMIT)
}

fn project_context_limited(home: &Home, cwd: &Path, limit: usize) -> ProjectContext {
    let root = repository_root(cwd);
    let mut dirs = vec![home.root().to_path_buf()];
    // Root first: general rules, then the more specific ones nearer the cwd.
    let mut chain: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    dirs.extend(chain);

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

        let context = project_context(&home, &cwd);
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
        let context = project_context(&home, &cwd);
        assert_eq!(context.files, [cwd.join("AGENTS.md")]);
        assert_eq!(
            project_context(&Home::new("/nonexistent"), Path::new("/nonexistent/x")).text,
            ""
        );
    }

    #[test]
    fn long_context_is_cut_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        write(&home.root().join("AGENTS.md"), &"é".repeat(1000));
        let context = project_context_limited(&home, tmp.path(), 1025);
        assert!(context.truncated);
        assert!(
            context
                .text
                .ends_with("the rest of these files was left out.]")
        );
        assert!(context.text.len() < 1200);
    }
}
