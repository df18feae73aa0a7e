//! What users bring from the agents they come from: skills (agentskills.io `SKILL.md`
//! folders), prompt templates (Markdown files that become slash commands) and hook commands
//! (`[[hooks]]`, run at agent-core's hook points).
//!
//! Nothing here reaches the terminal: the host loads an [`Extensions`], puts the skill list
//! into the system prompt, expands `/name args` in every mode, and wraps its approval hooks in
//! [`ExtensionHooks`], whose runs reach every front end as `hook_run` events.

pub mod agents;
mod frontmatter;
pub mod hooks;
pub mod skills;
pub mod templates;

use std::path::Path;

pub use agents::{AgentDefinition, AgentDefinitions};
pub use hooks::{ExtensionHooks, Hook, HookConfig, HookEvent, Runner};
pub use skills::{Origin, Skill, Skills};
pub use templates::{Template, Templates};

/// Skills, templates and hooks of one agent, and what was wrong with them.
#[derive(Debug, Default)]
pub struct Extensions {
    pub skills: Skills,
    pub templates: Templates,
    pub hooks: Vec<Hook>,
    /// Hooks that could not be used (a bad matcher, say), one line each.
    pub hook_problems: Vec<String>,
}

/// A slash command an extension adds, for the `/` popup and `/help`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraCommand {
    /// With its slash: `/review`, `/skill:pdf`.
    pub name: String,
    pub help: String,
}

impl Extensions {
    /// Loads from `home` (`$CODING_AGENT_HOME`) and, when the repository is trusted, from
    /// `project` (its root). `hooks` are the `[[hooks]]` tables with where each was written;
    /// `builtin` names the built-in commands (with their slash), which win over templates.
    pub fn load(
        home: &Path,
        project: Option<&Path>,
        hooks: &[(HookConfig, Origin)],
        builtin: &[&str],
    ) -> Self {
        let skills = Skills::discover(&skills::roots(home, project));
        let mut templates = Templates::discover(&templates::roots(home, project));
        templates.yield_to(builtin);
        let mut compiled = Vec::new();
        let mut hook_problems = Vec::new();
        for (config, origin) in hooks {
            match Hook::compile(config, *origin) {
                Ok(hook) => compiled.push(hook),
                Err(problem) => hook_problems.push(format!("{problem}; the hook is not used")),
            }
        }
        Self {
            skills,
            templates,
            hooks: compiled,
            hook_problems,
        }
    }

    /// Every problem, one line each, for the user to see once.
    pub fn problems(&self) -> Vec<String> {
        self.skills
            .problems
            .iter()
            .chain(&self.templates.problems)
            .chain(&self.hook_problems)
            .cloned()
            .collect()
    }

    /// The prompt `text` stands for when it is `/skill:name args` or `/template args`;
    /// `Ok(None)` when it is neither (plain text, or a command the host handles).
    pub fn expand(&self, text: &str) -> Result<Option<String>, String> {
        let trimmed = text.trim_start();
        let Some(command) = trimmed.strip_prefix('/') else {
            return Ok(None);
        };
        let (name, args) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        if let Some(skill) = name.strip_prefix("skill:") {
            return match self.skills.get(skill) {
                Some(skill) => skill.invocation(args).map(Some),
                None => Err(format!("no skill `{skill}`; /skills lists them")),
            };
        }
        Ok(self.templates.get(name).map(|t| t.expand(args)))
    }

    /// The commands templates and skills add.
    pub fn commands(&self) -> Vec<ExtraCommand> {
        let templates = self.templates.templates.iter().map(|t| ExtraCommand {
            name: format!("/{}", t.name),
            help: t
                .description
                .clone()
                .unwrap_or_else(|| format!("prompt template ({})", t.origin)),
        });
        let skills = self.skills.skills.iter().map(|s| ExtraCommand {
            name: format!("/skill:{}", s.name),
            help: skills::shorten(&s.description, 80),
        });
        templates.chain(skills).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_skills_and_templates_and_leaves_the_rest() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::write(home.path().join("prompts/review.md"), "Review $1 closely").unwrap();
        std::fs::create_dir_all(home.path().join("skills/pdf")).unwrap();
        std::fs::write(
            home.path().join("skills/pdf/SKILL.md"),
            "---\ndescription: PDF work\n---\nUse pdftk.\n",
        )
        .unwrap();
        let ext = Extensions::load(home.path(), None, &[], &["/help"]);
        assert_eq!(
            ext.expand("/review src/a.rs").unwrap().as_deref(),
            Some("Review src/a.rs closely")
        );
        assert!(
            ext.expand("/skill:pdf merge")
                .unwrap()
                .unwrap()
                .contains("Use pdftk.")
        );
        assert!(ext.expand("/skill:nope").is_err());
        assert_eq!(ext.expand("/help").unwrap(), None);
        assert_eq!(ext.expand("hello /review").unwrap(), None);
        let names: Vec<_> = ext.commands().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["/review", "/skill:pdf"]);
    }
}
