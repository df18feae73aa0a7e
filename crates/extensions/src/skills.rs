//! Skills in the agentskills.io format: a folder holding `SKILL.md`, whose front matter
//! names the skill and says when to use it. Only the names and descriptions go into the
//! system prompt (a bounded list); the model reads a `SKILL.md` with the read tool when a
//! task calls for it, and the user can invoke one with `/skill:name args`.
//!
//! Where they come from, in this order: `$CODING_AGENT_HOME/skills/`, then the repository's
//! `.coding-agent/skills/`, `.agents/skills/` and `.claude/skills/` (those only when the
//! repository is trusted; the caller decides). Two skills with one name are a clash: the first
//! found is used and the clash is reported, never silently shadowed.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frontmatter;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The user's home (`$CODING_AGENT_HOME`).
    User,
    /// The repository.
    Project,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::User => "user",
            Origin::Project => "project",
        })
    }
}

/// A directory to look for skills (or templates) in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub dir: PathBuf,
    pub origin: Origin,
}

/// The skill directories for a home and (when trusted) a repository root.
pub fn roots(home: &Path, project: Option<&Path>) -> Vec<Root> {
    let mut roots = vec![Root {
        dir: home.join("skills"),
        origin: Origin::User,
    }];
    if let Some(project) = project {
        for dir in [".coding-agent/skills", ".agents/skills", ".claude/skills"] {
            roots.push(Root {
                dir: project.join(dir),
                origin: Origin::Project,
            });
        }
    }
    roots
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md`.
    pub path: PathBuf,
    pub origin: Origin,
}

impl Skill {
    /// The text `/skill:name args` sends: the skill's instructions, then the user's words.
    pub fn invocation(&self, args: &str) -> Result<String, String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let (_, body): (Meta, &str) =
            frontmatter::split(&text).map_err(|e| format!("{}: {e}", self.path.display()))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut out = format!(
            "<skill name=\"{}\" location=\"{}\">\nPaths in this skill are relative to {}.\n\n{}\n</skill>",
            self.name,
            self.path.display(),
            dir.display(),
            body.trim()
        );
        if !args.trim().is_empty() {
            out.push_str("\n\n");
            out.push_str(args.trim());
        }
        Ok(out)
    }
}

#[derive(Debug, Default, Deserialize)]
struct Meta {
    name: Option<String>,
    description: Option<String>,
}

/// The skills found, and what was wrong on the way (clashes, unreadable files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

/// Most skills listed in the system prompt, and longest description shown there: the list
/// must stay a small share of the context however many skills a user collects.
const PROMPT_MAX_SKILLS: usize = 64;
const PROMPT_MAX_DESCRIPTION: usize = 250;

impl Skills {
    /// Looks through `roots` in order; a missing directory is fine.
    pub fn discover(roots: &[Root]) -> Self {
        let mut found = Self::default();
        for root in roots {
            let Ok(entries) = std::fs::read_dir(&root.dir) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            dirs.sort();
            for dir in dirs {
                let path = dir.join("SKILL.md");
                if !path.is_file() {
                    continue;
                }
                match read_skill(&dir, &path, root.origin) {
                    Ok(skill) => found.add(skill),
                    Err(problem) => found.problems.push(problem),
                }
            }
        }
        found
    }

    fn add(&mut self, skill: Skill) {
        if let Some(first) = self.skills.iter().find(|s| s.name == skill.name) {
            self.problems.push(format!(
                "skill `{}` is defined twice: {} is used, {} is not (rename one)",
                skill.name,
                first.path.display(),
                skill.path.display()
            ));
            return;
        }
        self.skills.push(skill);
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The system prompt's section: names, descriptions and where to read each, bounded.
    /// Empty without skills.
    pub fn prompt_section(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "# Skills\n\nSkills are instructions for particular tasks. When a task matches a \
             skill's description, read its SKILL.md with the read tool before you start, and \
             follow it.\n\n",
        );
        for skill in self.skills.iter().take(PROMPT_MAX_SKILLS) {
            out.push_str(&format!(
                "- {}: {} ({})\n",
                skill.name,
                shorten(&skill.description, PROMPT_MAX_DESCRIPTION),
                skill.path.display()
            ));
        }
        if self.skills.len() > PROMPT_MAX_SKILLS {
            out.push_str(&format!(
                "- … and {} more, not listed.\n",
                self.skills.len() - PROMPT_MAX_SKILLS
            ));
        }
        out
    }

    /// `/skills`: each skill with its origin and file, then the problems.
    pub fn report(&self) -> String {
        let mut out = if self.skills.is_empty() {
            "No skills. Put a folder with a SKILL.md in $CODING_AGENT_HOME/skills/ or the \
             repository's .coding-agent/skills/ (also .agents/skills/, .claude/skills/)."
                .to_string()
        } else {
            format!(
                "Skills ({}), invoke one with /skill:NAME:",
                self.skills.len()
            )
        };
        for skill in &self.skills {
            out.push_str(&format!(
                "\n  {}  [{}] {}\n      {}",
                skill.name,
                skill.origin,
                skill.path.display(),
                shorten(&skill.description, 120)
            ));
        }
        for problem in &self.problems {
            out.push_str(&format!("\n  warning: {problem}"));
        }
        out
    }
}

fn read_skill(dir: &Path, path: &Path, origin: Origin) -> Result<Skill, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (meta, _): (Meta, _) =
        frontmatter::split(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = meta
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or(folder);
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!(
            "{}: the skill's name `{name}` must be one word",
            path.display()
        ));
    }
    let description = meta
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            format!(
                "{}: no `description` in the front matter, so the model could not know when to use it; skipped",
                path.display()
            )
        })?;
    Ok(Skill {
        name,
        description,
        path: path.to_path_buf(),
        origin,
    })
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, dir: &str, name: &str, description: &str) -> PathBuf {
        let dir = root.join(dir).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("SKILL.md");
        std::fs::write(
            &path,
            format!("---\nname: {name}\ndescription: {description}\n---\nDo {name} things.\n"),
        )
        .unwrap();
        path
    }

    #[test]
    fn every_location_is_read_and_project_ones_only_when_given() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        skill(home.path(), "skills", "from-home", "home skill");
        skill(repo.path(), ".coding-agent/skills", "from-ours", "ours");
        skill(repo.path(), ".agents/skills", "from-agents", "agents");
        skill(repo.path(), ".claude/skills", "from-claude", "claude");
        let all = Skills::discover(&roots(home.path(), Some(repo.path())));
        let names: Vec<_> = all.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["from-home", "from-ours", "from-agents", "from-claude"]
        );
        assert_eq!(all.skills[0].origin, Origin::User);
        assert_eq!(all.skills[3].origin, Origin::Project);
        assert!(all.problems.is_empty(), "{:?}", all.problems);
        // An untrusted repository: the home's only.
        let home_only = Skills::discover(&roots(home.path(), None));
        assert_eq!(home_only.skills.len(), 1);
        let section = all.prompt_section();
        assert!(section.contains("- from-claude: claude ("), "{section}");
        assert!(all.report().contains("from-agents  [project]"));
    }

    #[test]
    fn a_clash_is_reported_and_the_first_is_used() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let first = skill(home.path(), "skills", "review", "mine");
        let second = skill(repo.path(), ".claude/skills", "review", "theirs");
        let found = Skills::discover(&roots(home.path(), Some(repo.path())));
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.skills[0].path, first);
        assert_eq!(found.problems.len(), 1);
        assert!(found.problems[0].contains(&second.display().to_string()));
        assert!(
            found
                .report()
                .contains("warning: skill `review` is defined twice")
        );
    }

    #[test]
    fn a_skill_without_description_is_skipped_with_a_reason() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("skills/bare");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), "no front matter\n").unwrap();
        let found = Skills::discover(&roots(home.path(), None));
        assert!(found.skills.is_empty());
        assert!(found.problems[0].contains("no `description`"));
    }

    #[test]
    fn the_prompt_list_is_bounded() {
        let home = tempfile::tempdir().unwrap();
        for i in 0..100 {
            skill(
                home.path(),
                "skills",
                &format!("s{i:03}"),
                &"long ".repeat(200),
            );
        }
        let found = Skills::discover(&roots(home.path(), None));
        let section = found.prompt_section();
        assert_eq!(section.matches("\n- s").count(), PROMPT_MAX_SKILLS);
        assert!(section.contains("and 36 more"));
        assert!(section.len() < 64 * 400, "{}", section.len());
    }

    #[test]
    fn invocation_carries_the_body_and_the_arguments() {
        let home = tempfile::tempdir().unwrap();
        skill(home.path(), "skills", "pdf", "PDFs");
        let found = Skills::discover(&roots(home.path(), None));
        let text = found
            .get("pdf")
            .unwrap()
            .invocation("fill form.pdf")
            .unwrap();
        assert!(text.starts_with("<skill name=\"pdf\""), "{text}");
        assert!(
            text.contains("Do pdf things.\n</skill>\n\nfill form.pdf"),
            "{text}"
        );
    }
}
