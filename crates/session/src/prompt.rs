//! The system prompt: a template (built in, or the user's `SYSTEM.md`) rendered once per
//! session, so every request of the session starts with the same bytes and provider prompt
//! caches keep hitting.

use std::path::{Path, PathBuf};

use crate::{Home, ProjectContext, RepoFiles, repository_root};

/// The built-in template (`assets/system-prompt.md`).
pub const DEFAULT_TEMPLATE: &str = include_str!("../../../assets/system-prompt.md");

/// What the placeholders are filled with. Everything here is fixed for a session: `date` is the
/// day the session started, not today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptInputs {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub cwd: PathBuf,
    pub os: String,
    pub shell: String,
    /// The "Tools" section: a line for each tool the model has.
    pub tools: String,
    pub project_context: ProjectContext,
}

impl PromptInputs {
    /// Inputs for `cwd` with this process's OS and the shell the bash tool runs commands in,
    /// the project context files, and `tools` as the tool section.
    pub fn gather(home: &Home, cwd: &Path, date: &str, tools: String, repo: RepoFiles) -> Self {
        let shell = platform::shell::Shell::detect();
        let shell = match shell.kind {
            platform::shell::ShellKind::PowerShell => format!(
                "PowerShell ({}): the bash tool runs PowerShell commands, not bash",
                shell.program.display()
            ),
            _ => format!("{} ({})", shell.name(), shell.program.display()),
        };
        Self {
            date: date.to_string(),
            cwd: cwd.to_path_buf(),
            os: std::env::consts::OS.to_string(),
            shell,
            tools,
            project_context: crate::project_context(home, cwd, repo),
        }
    }
}

/// A system prompt template and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub template: String,
    /// The `SYSTEM.md` that replaced the built-in template, if any.
    pub source: Option<PathBuf>,
}

impl SystemPrompt {
    /// The template for `cwd`: the nearest `.coding-agent/SYSTEM.md` from `cwd` up to the
    /// repository root (a trusted repository only), else `SYSTEM.md` in the home dir, else
    /// the built-in one.
    pub fn load(home: &Home, cwd: &Path, repo: RepoFiles) -> Self {
        let root = repository_root(cwd);
        let project = cwd
            .ancestors()
            .take_while(|dir| repo == RepoFiles::Read && dir.starts_with(&root))
            .map(|dir| dir.join(".coding-agent").join("SYSTEM.md"));
        for path in project.chain([home.root().join("SYSTEM.md")]) {
            if let Ok(template) = std::fs::read_to_string(&path) {
                return Self {
                    template,
                    source: Some(path),
                };
            }
        }
        Self {
            template: DEFAULT_TEMPLATE.to_string(),
            source: None,
        }
    }

    /// Fills `{{date}}`, `{{cwd}}`, `{{os}}`, `{{shell}}`, `{{tools}}` and `{{project_context}}`
    /// in one pass:
    /// text inside the values (an AGENTS.md that mentions `{{date}}`) is never expanded.
    /// Unknown placeholders are left as written.
    pub fn render(&self, inputs: &PromptInputs) -> String {
        let context = if inputs.project_context.text.is_empty() {
            "(no AGENTS.md or CLAUDE.md files)".to_string()
        } else {
            inputs.project_context.text.clone()
        };
        let cwd = inputs.cwd.display().to_string();
        let value = |name: &str| -> Option<&str> {
            Some(match name {
                "date" => &inputs.date,
                "cwd" => &cwd,
                "os" => &inputs.os,
                "shell" => &inputs.shell,
                "tools" => &inputs.tools,
                "project_context" => &context,
                _ => return None,
            })
        };
        let mut out = String::with_capacity(self.template.len() + context.len());
        let mut rest = self.template.as_str();
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            match after
                .find("}}")
                .and_then(|close| value(after[..close].trim()).map(|v| (close, v)))
            {
                Some((close, v)) => {
                    out.push_str(v);
                    rest = &after[close + 2..];
                }
                None => {
                    out.push_str("{{");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(context: &str) -> PromptInputs {
        PromptInputs {
            date: "2025-03-04".into(),
            cwd: PathBuf::from("/repo"),
            os: "linux".into(),
            shell: "bash".into(),
            tools: "- read: read a file\n- ls: list a directory".into(),
            project_context: ProjectContext {
                text: context.into(),
                ..ProjectContext::default()
            },
        }
    }

    /// The prompt names the shell the bash tool really runs, not the user's `$SHELL`.
    #[test]
    fn the_shell_named_is_the_one_commands_run_in() {
        let home = Home::new(std::env::temp_dir().join("no-such-home"));
        let inputs = PromptInputs::gather(
            &home,
            Path::new("/"),
            "2025-03-04",
            String::new(),
            RepoFiles::Skip,
        );
        let shell = platform::shell::Shell::detect();
        assert!(
            inputs.shell.contains(&shell.program.display().to_string()),
            "{}",
            inputs.shell
        );
        if cfg!(unix) && Path::new("/bin/bash").exists() {
            assert_eq!(inputs.shell, "bash (/bin/bash)");
        }
    }

    #[test]
    fn built_in_template_fills_every_placeholder() {
        let prompt = SystemPrompt {
            template: DEFAULT_TEMPLATE.into(),
            source: None,
        };
        let text = prompt.render(&inputs("## AGENTS.md\n\nuse {{date}} literally"));
        assert!(text.contains("Date: 2025-03-04"));
        assert!(
            text.contains("use {{date}} literally"),
            "values are not expanded"
        );
        assert!(text.contains("Working directory: /repo"));
        assert!(text.contains("Shell: bash"));
        assert!(text.contains("# Tools\n\n- read: read a file\n- ls: list a directory\n"));
        assert_eq!(
            text,
            prompt.render(&inputs("## AGENTS.md\n\nuse {{date}} literally"))
        );
    }

    #[test]
    fn unknown_and_unclosed_placeholders_stay() {
        let prompt = SystemPrompt {
            template: "a {{nope}} b {{ os }} c {{cwd".into(),
            source: None,
        };
        assert_eq!(prompt.render(&inputs("")), "a {{nope}} b linux c {{cwd");
    }

    #[test]
    fn project_override_beats_home_override_beats_built_in() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let repo = tmp.path().join("repo");
        let cwd = repo.join("sub");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        assert_eq!(
            SystemPrompt::load(&home, &cwd, RepoFiles::Read).source,
            None
        );
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(home.root().join("SYSTEM.md"), "home {{os}}").unwrap();
        assert_eq!(
            SystemPrompt::load(&home, &cwd, RepoFiles::Read).template,
            "home {{os}}"
        );
        std::fs::create_dir_all(repo.join(".coding-agent")).unwrap();
        std::fs::write(repo.join(".coding-agent/SYSTEM.md"), "project").unwrap();
        let prompt = SystemPrompt::load(&home, &cwd, RepoFiles::Read);
        assert_eq!(prompt.template, "project");
        assert_eq!(prompt.source, Some(repo.join(".coding-agent/SYSTEM.md")));
    }
}
