//! Prompt templates: Markdown files in `$CODING_AGENT_HOME/prompts/` and the repository's
//! `.coding-agent/prompts/` become slash commands. `/review src/lib.rs` sends `review.md`
//! with `$ARGUMENTS` (or `$@`) replaced by everything after the name and `$1`, `$2`, … by
//! the words (quoted as in a shell). Front matter `description` is shown in the `/` popup.
//! Built-in commands win over a template of the same name, with a warning.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::Deserialize;

use crate::frontmatter;
use crate::skills::{Origin, Root};

/// The template directories for a home and (when trusted) a repository root.
pub fn roots(home: &Path, project: Option<&Path>) -> Vec<Root> {
    let mut roots = vec![Root {
        dir: home.join("prompts"),
        origin: Origin::User,
    }];
    if let Some(project) = project {
        roots.push(Root {
            dir: project.join(".coding-agent/prompts"),
            origin: Origin::Project,
        });
    }
    roots
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The command without its slash: the file name without `.md`.
    pub name: String,
    pub description: Option<String>,
    /// The text after the front matter.
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
}

impl Template {
    /// The prompt for `/name args`.
    pub fn expand(&self, args: &str) -> String {
        expand(&self.body, args)
    }
}

#[derive(Debug, Default, Deserialize)]
struct Meta {
    description: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Templates {
    pub templates: Vec<Template>,
    pub problems: Vec<String>,
}

impl Templates {
    /// Reads `*.md` from each root in order; a missing directory is fine. A name found twice
    /// is reported and the first is used.
    pub fn discover(roots: &[Root]) -> Self {
        let mut found = Self::default();
        for root in roots {
            let Ok(entries) = std::fs::read_dir(&root.dir) else {
                continue;
            };
            let mut paths: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
                .collect();
            paths.sort();
            for path in paths {
                match read_template(&path, root.origin) {
                    Ok(template) => found.add(template),
                    Err(problem) => found.problems.push(problem),
                }
            }
        }
        found
    }

    fn add(&mut self, template: Template) {
        if let Some(first) = self.templates.iter().find(|t| t.name == template.name) {
            self.problems.push(format!(
                "prompt template /{} is defined twice: {} is used, {} is not",
                template.name,
                first.path.display(),
                template.path.display()
            ));
            return;
        }
        self.templates.push(template);
    }

    /// Drops the templates named like a built-in command (`builtin` names carry their slash),
    /// with a warning for each.
    pub fn yield_to(&mut self, builtin: &[&str]) {
        let problems = &mut self.problems;
        self.templates.retain(|t| {
            let clash = builtin
                .iter()
                .any(|b| b.strip_prefix('/') == Some(t.name.as_str()));
            if clash {
                problems.push(format!(
                    "prompt template {} is not used: /{} is a built-in command (rename the file)",
                    t.path.display(),
                    t.name
                ));
            }
            !clash
        });
    }

    pub fn get(&self, name: &str) -> Option<&Template> {
        self.templates.iter().find(|t| t.name == name)
    }
}

fn read_template(path: &Path, origin: Origin) -> Result<Template, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (meta, body): (Meta, _) =
        frontmatter::split(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains(':') {
        return Err(format!(
            "{}: a template's file name must be one word without `:`",
            path.display()
        ));
    }
    Ok(Template {
        name,
        description: meta
            .description
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty()),
        body: body.to_string(),
        path: path.to_path_buf(),
        origin,
    })
}

/// Fills `$ARGUMENTS` / `$@` with `args` and `$1`… with its words (shell quoting; a missing
/// one is empty). A template with no placeholder gets the arguments appended, so they are
/// never dropped silently.
pub fn expand(body: &str, args: &str) -> String {
    static PLACEHOLDER: OnceLock<Regex> = OnceLock::new();
    let placeholder =
        PLACEHOLDER.get_or_init(|| Regex::new(r"\$(ARGUMENTS|@|[1-9][0-9]*)").expect("valid"));
    let args = args.trim();
    let words = shell_words::split(args)
        .unwrap_or_else(|_| args.split_whitespace().map(str::to_string).collect());
    let mut used = false;
    let text = placeholder.replace_all(body, |caps: &regex::Captures<'_>| {
        used = true;
        match &caps[1] {
            "ARGUMENTS" | "@" => args.to_string(),
            n => n
                .parse::<usize>()
                .ok()
                .and_then(|i| words.get(i - 1).cloned())
                .unwrap_or_default(),
        }
    });
    let mut text = text.trim().to_string();
    if !used && !args.is_empty() {
        text.push_str("\n\n");
        text.push_str(args);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_and_positions_are_filled() {
        assert_eq!(
            expand(
                "Review $1 for $2.\nAll: $ARGUMENTS / $@",
                "src/lib.rs 'null checks'"
            ),
            "Review src/lib.rs for null checks.\nAll: src/lib.rs 'null checks' / src/lib.rs 'null checks'"
        );
        assert_eq!(expand("Fix $1 and $3", "a"), "Fix a and");
        assert_eq!(expand("Explain this.", "x y"), "Explain this.\n\nx y");
        assert_eq!(expand("Cost: $5 ok", ""), "Cost:  ok");
        // Unbalanced quotes fall back to plain words.
        assert_eq!(expand("$1|$2", "it's here"), "it's|here");
    }

    #[test]
    fn discovery_reads_both_places_and_builtins_win() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::create_dir_all(repo.path().join(".coding-agent/prompts")).unwrap();
        std::fs::write(
            home.path().join("prompts/review.md"),
            "---\ndescription: Review a file\n---\nReview $1\n",
        )
        .unwrap();
        std::fs::write(home.path().join("prompts/model.md"), "x").unwrap();
        std::fs::write(home.path().join("prompts/notes.txt"), "x").unwrap();
        std::fs::write(repo.path().join(".coding-agent/prompts/review.md"), "y").unwrap();
        std::fs::write(repo.path().join(".coding-agent/prompts/ship.md"), "Ship it").unwrap();
        let mut found = Templates::discover(&roots(home.path(), Some(repo.path())));
        found.yield_to(&["/model", "/help"]);
        let names: Vec<_> = found.templates.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["review", "ship"]);
        let review = found.get("review").unwrap();
        assert_eq!(review.description.as_deref(), Some("Review a file"));
        assert_eq!(review.expand("a.rs"), "Review a.rs");
        assert_eq!(found.get("ship").unwrap().origin, Origin::Project);
        assert_eq!(found.problems.len(), 2, "{:?}", found.problems);
        assert!(found.problems.iter().any(|p| p.contains("defined twice")));
        assert!(
            found
                .problems
                .iter()
                .any(|p| p.contains("/model is a built-in"))
        );
    }
}
