//! Agent definitions for the `task` tool's subagents, written as Claude Code writes them: a
//! Markdown file whose front matter gives `name`, `description`, `tools` and `model`, and
//! whose body is the subagent's system prompt. They live in `$CODING_AGENT_HOME/agents/` and,
//! in a trusted repository, `.coding-agent/agents/` and `.claude/agents/`; a later directory's
//! definition replaces an earlier one of the same name. A built-in read-only `explore` comes
//! first and is the default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frontmatter;
use crate::skills::Origin;

/// The built-in default: reads, searches, lists, and runs commands only read-only.
pub const EXPLORE: &str = "explore";

/// The tools `explore` has.
const EXPLORE_TOOLS: [&str; 5] = ["read", "grep", "find", "ls", "bash"];

const EXPLORE_PROMPT: &str = "You are `explore`, a read-only research subagent. Find what the \
job asks for in the code and the repository: read files, search with grep and find, list \
directories, and run commands that only read (your commands run in a read-only sandbox). \
Change nothing. Work quickly: search first, then read what matters. Report concisely: the \
answer, with file paths and line numbers, and what you could not find.";

/// One subagent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The tools it may have (our names), within the parent's; `None`: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// `provider/id` or a bare id; `None` (or `inherit`): the parent's model.
    pub model: Option<String>,
    /// The system prompt.
    pub prompt: String,
    pub origin: Origin,
    /// Where it was written; `None` for the built-in one.
    pub path: Option<PathBuf>,
}

impl AgentDefinition {
    pub fn explore() -> Self {
        Self {
            name: EXPLORE.into(),
            description: "read-only research: finds and reads code, runs read-only commands, \
                          and reports what it found with paths and line numbers"
                .into(),
            tools: Some(EXPLORE_TOOLS.iter().map(|t| t.to_string()).collect()),
            model: None,
            prompt: EXPLORE_PROMPT.into(),
            origin: Origin::User,
            path: None,
        }
    }

    /// Whether it may have `tool` (before the parent's ceiling).
    pub fn allows(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == tool))
    }

    /// Whether it may change files with its own tools: without write or edit its commands
    /// run read-only too.
    pub fn writes(&self) -> bool {
        self.allows("write") || self.allows("edit")
    }
}

#[derive(Debug, Default, Deserialize)]
struct Meta {
    name: Option<String>,
    description: Option<String>,
    tools: Option<ToolList>,
    model: Option<String>,
}

/// `tools: Read, Grep` (Claude Code's) or a YAML list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    Text(String),
    List(Vec<String>),
}

/// Our name of a tool as a definition may spell it (Claude Code's names too).
fn tool_name(given: &str) -> Option<&'static str> {
    Some(match given.trim().to_ascii_lowercase().as_str() {
        "read" => "read",
        "write" => "write",
        "edit" | "multiedit" => "edit",
        "bash" => "bash",
        "grep" => "grep",
        "find" | "glob" => "find",
        "ls" => "ls",
        "fetch" | "webfetch" => "fetch",
        "update_plan" | "todowrite" => "update_plan",
        "task" | "agent" => "task",
        _ => return None,
    })
}

/// The definitions an agent can use, and what was wrong with the files.
#[derive(Debug, Clone)]
pub struct AgentDefinitions {
    /// The default (`explore`, unless a file replaced it) first.
    pub agents: Vec<AgentDefinition>,
    pub problems: Vec<String>,
}

impl Default for AgentDefinitions {
    fn default() -> Self {
        Self {
            agents: vec![AgentDefinition::explore()],
            problems: Vec::new(),
        }
    }
}

impl AgentDefinitions {
    /// From `home` and, when the repository is trusted, `project` (its root).
    pub fn load(home: &Path, project: Option<&Path>) -> Self {
        let mut found = Self::default();
        let mut dirs = vec![(home.join("agents"), Origin::User)];
        if let Some(project) = project {
            for dir in [".coding-agent/agents", ".claude/agents"] {
                dirs.push((project.join(dir), Origin::Project));
            }
        }
        for (dir, origin) in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect();
            files.sort();
            for path in files {
                match read(&path, origin) {
                    Ok((definition, unknown)) => {
                        if !unknown.is_empty() {
                            found.problems.push(format!(
                                "{}: unknown tools left out: {}",
                                path.display(),
                                unknown.join(", ")
                            ));
                        }
                        found.agents.retain(|a| a.name != definition.name);
                        found.agents.push(definition);
                    }
                    Err(problem) => found.problems.push(format!(
                        "{}: {problem}; the agent is not used",
                        path.display()
                    )),
                }
            }
        }
        // The default first: explore where it is, else the first one.
        if let Some(i) = found.agents.iter().position(|a| a.name == EXPLORE) {
            let explore = found.agents.remove(i);
            found.agents.insert(0, explore);
        }
        found
    }

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The one a job without a name gets.
    pub fn default_agent(&self) -> &AgentDefinition {
        &self.agents[0]
    }
}

/// One definition file, and the tool names it gave that no tool has.
fn read(path: &Path, origin: Origin) -> Result<(AgentDefinition, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let (meta, body): (Meta, &str) = frontmatter::split(&text)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let name = meta.name.unwrap_or_else(|| stem.to_string());
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(format!(
            "the name `{name}` is not letters, digits, `-` and `_`"
        ));
    }
    let prompt = body.trim().to_string();
    if prompt.is_empty() {
        return Err("the body (its system prompt) is empty".into());
    }
    let given: Option<Vec<String>> = meta.tools.map(|t| match t {
        ToolList::Text(text) => text.split(',').map(str::to_string).collect(),
        ToolList::List(list) => list,
    });
    let mut unknown = Vec::new();
    let tools = given.map(|given| {
        let mut tools: Vec<String> = Vec::new();
        for name in given.iter().filter(|n| !n.trim().is_empty()) {
            match tool_name(name) {
                Some(ours) if !tools.iter().any(|t| t == ours) => tools.push(ours.into()),
                Some(_) => {}
                None => unknown.push(name.trim().to_string()),
            }
        }
        tools
    });
    let model = meta
        .model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && m != "inherit");
    Ok((
        AgentDefinition {
            name,
            description: meta
                .description
                .map(|d| d.trim().to_string())
                .unwrap_or_else(|| "(no description)".into()),
            tools,
            model,
            prompt,
            origin,
            path: Some(path.to_path_buf()),
        },
        unknown,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn definitions_load_from_home_and_a_trusted_repository_with_claude_codes_names() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "agents/reviewer.md",
            "---\nname: reviewer\ndescription: reviews a diff\ntools: Read, Grep, Glob, Bash, Frobnicate\nmodel: inherit\n---\nReview it.\n",
        );
        write(
            repo.path(),
            ".claude/agents/fixer.md",
            "---\ndescription: fixes\ntools: [read, edit, Task]\nmodel: anthropic/claude-sonnet-4-5\n---\nFix it.\n",
        );
        write(
            repo.path(),
            ".coding-agent/agents/empty.md",
            "---\nname: empty\n---\n\n",
        );
        let untrusted = AgentDefinitions::load(home.path(), None);
        let names: Vec<&str> = untrusted.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["explore", "reviewer"]);
        let reviewer = untrusted.get("reviewer").unwrap();
        assert_eq!(
            reviewer.tools.as_deref().unwrap(),
            ["read", "grep", "find", "bash"]
        );
        assert_eq!(reviewer.model, None, "inherit is the parent's model");
        assert!(!reviewer.writes());
        assert!(untrusted.problems[0].contains("unknown tools left out: Frobnicate"));

        let trusted = AgentDefinitions::load(home.path(), Some(repo.path()));
        let fixer = trusted.get("fixer").unwrap();
        assert_eq!(fixer.tools.as_deref().unwrap(), ["read", "edit", "task"]);
        assert!(fixer.writes() && fixer.allows("task"));
        assert_eq!(fixer.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
        assert_eq!(fixer.origin, Origin::Project);
        assert!(trusted.get("empty").is_none());
        assert!(
            trusted
                .problems
                .iter()
                .any(|p| p.contains("empty.md: the body")),
            "{:?}",
            trusted.problems
        );
        let explore = trusted.default_agent();
        assert_eq!(explore.name, "explore");
        assert!(!explore.writes() && !explore.allows("task"));
    }
}
