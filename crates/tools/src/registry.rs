//! The one table of built-in tools. The model's tool list, the system prompt's tool section,
//! `--tools` validation and the names the UI knows all come from here: adding a tool is its
//! file plus one line in [`REGISTRY`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::Tool;

use crate::fetch::FetchTool;
use crate::paths::{FileLocks, resolve};
use crate::plan::{SubmitPlanTool, UpdatePlanTool};
use crate::task::TaskTool;
use crate::{BashTool, EditTool, FindTool, GrepTool, LsTool, ReadTool, ToolOptions, WriteTool};

/// What every tool of one agent is made with.
pub(crate) struct Workspace {
    pub cwd: PathBuf,
    /// Shared by the tools that write, so two mutations of one file never interleave.
    pub locks: FileLocks,
    pub options: ToolOptions,
}

/// What a tool does to the world beyond the conversation, as approvals and checkpoints read
/// it. Only `fetch` uses the network itself (a command may: that is the sandbox's call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads the file or directory its `path` argument names (default: the working
    /// directory); `descends`: and what lies beneath it, skipping hidden entries.
    Reads { descends: bool },
    /// Writes the file its `path` argument names (approved when outside the writable roots;
    /// captured by checkpoints, ignored or not).
    Writes,
    /// Runs the shell command of its `command` argument: anything, within the sandbox.
    RunsCommands,
    /// Reads the web page its `url` argument names (approved per host; private addresses
    /// refused unless their host is allowed by name). Changes no file.
    Fetches,
    /// Only tells the user something (a plan, its progress): reads and changes nothing.
    Informs,
    /// Hands a job to a subagent, whose own calls are checked one by one as this agent's
    /// are; it may change files.
    Delegates,
}

impl Effect {
    /// Whether a call can change files (a checkpoint is taken around it).
    pub fn changes_files(self) -> bool {
        matches!(
            self,
            Effect::Writes | Effect::RunsCommands | Effect::Delegates
        )
    }
}

/// The argument naming the file or directory of a tool that reads or writes one.
pub const PATH_ARGUMENT: &str = "path";

/// A built-in tool.
pub struct ToolEntry {
    pub name: &'static str,
    /// The tool's lines in the system prompt's "Tools" section: when to use it.
    pub guidance: &'static str,
    /// What a call does; see [`Effect`].
    pub effect: Effect,
    make: fn(&Workspace) -> Arc<dyn Tool>,
}

/// Every built-in tool, in the order the model sees them.
pub static REGISTRY: [ToolEntry; 11] = [
    ToolEntry {
        name: "read",
        guidance: "read a file (text or image), with an optional line offset and limit for \
                   long files. Read before you edit, and rather than cat in bash.",
        effect: Effect::Reads { descends: false },
        make: |w| Arc::new(ReadTool::new(w.cwd.clone())),
    },
    ToolEntry {
        name: "write",
        guidance: "create a file or replace all of its content. Prefer edit for changes to \
                   existing files.",
        effect: Effect::Writes,
        make: |w| Arc::new(WriteTool::new(w.cwd.clone(), w.locks.clone())),
    },
    ToolEntry {
        name: "edit",
        guidance: "replace an exact piece of text in a file with new text. The old text must \
                   match the file exactly and once; include enough surrounding lines to make it \
                   unique.",
        effect: Effect::Writes,
        make: |w| Arc::new(EditTool::new(w.cwd.clone(), w.locks.clone())),
    },
    ToolEntry {
        name: "bash",
        guidance: "run a shell command in the working directory (build, test, git, ...). \
                   Output is truncated when long; avoid commands that wait for input or never \
                   end.",
        effect: Effect::RunsCommands,
        make: |w| {
            Arc::new(BashTool::with_options(
                w.cwd.clone(),
                w.options.bash.clone(),
            ))
        },
    },
    ToolEntry {
        name: "grep",
        guidance: "search file contents with a regular expression; respects .gitignore. Use \
                   it rather than grep in bash.",
        effect: Effect::Reads { descends: true },
        make: |w| Arc::new(GrepTool::new(w.cwd.clone())),
    },
    ToolEntry {
        name: "find",
        guidance: "find files by glob pattern; respects .gitignore. Use it rather than find \
                   in bash.",
        effect: Effect::Reads { descends: true },
        make: |w| Arc::new(FindTool::new(w.cwd.clone())),
    },
    ToolEntry {
        name: "ls",
        guidance: "list a directory.",
        effect: Effect::Reads { descends: false },
        make: |w| Arc::new(LsTool::new(w.cwd.clone())),
    },
    ToolEntry {
        name: "fetch",
        guidance: "read a web page or text file by URL (as markdown): documentation, an \
                   issue, a changelog. The user may be asked before a new host.",
        effect: Effect::Fetches,
        make: |w| Arc::new(FetchTool::new(w.options.fetch.clone())),
    },
    ToolEntry {
        name: "update_plan",
        guidance: "for a task of several steps: keep the user's checklist (the whole list, \
                   one step in progress) as you start and finish each step.",
        effect: Effect::Informs,
        make: |_| Arc::new(UpdatePlanTool),
    },
    ToolEntry {
        name: "submit_plan",
        guidance: "plan mode only: present your finished plan for the user to accept; \
                   nothing else ends a planning turn.",
        effect: Effect::Informs,
        make: |_| Arc::new(SubmitPlanTool),
    },
    ToolEntry {
        name: "task",
        guidance: "hand a self-contained job (research across many files, an independent \
                   piece of work) to a subagent with its own context; several in one reply \
                   run at once. Its final answer is the result.",
        effect: Effect::Delegates,
        make: |w| Arc::new(TaskTool::new(w.options.delegate.clone())),
    },
];

/// What a call of the built-in tool `name` does; `None` for a tool this table does not know
/// (from an MCP server), which may do anything.
pub fn effect(name: &str) -> Option<Effect> {
    REGISTRY.iter().find(|t| t.name == name).map(|t| t.effect)
}

/// Whether a call of the tool `name` can change files: a tool this table does not know (from
/// an MCP server) is assumed to.
pub fn changes_files(name: &str) -> bool {
    effect(name).is_none_or(Effect::changes_files)
}

/// The path a call of a tool that reads or writes one acts on, resolved as the tool itself
/// resolves it (the same function: what approvals check is what the tool opens). `None` for
/// a tool that names no path, or a writing call without one (the tool refuses it).
pub fn call_path(name: &str, arguments: &serde_json::Value, cwd: &Path) -> Option<PathBuf> {
    let given = arguments.get(PATH_ARGUMENT).and_then(|p| p.as_str());
    match effect(name)? {
        Effect::Reads { .. } => Some(resolve(cwd, given.unwrap_or("."))),
        Effect::Writes => given.map(|path| resolve(cwd, path)),
        Effect::RunsCommands | Effect::Fetches | Effect::Informs | Effect::Delegates => None,
    }
}

/// A name `--tools` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool `{name}`; the tools are {}", known().join(", "))]
pub struct UnknownTool {
    pub name: String,
}

fn known() -> Vec<&'static str> {
    REGISTRY.iter().map(|t| t.name).collect()
}

/// The built-in tools working in `cwd`: all of them, or the ones `only` names (in the
/// registry's order).
pub fn build(
    cwd: impl Into<PathBuf>,
    options: &ToolOptions,
    only: Option<&[&str]>,
) -> Result<Vec<Arc<dyn Tool>>, UnknownTool> {
    if let Some(unknown) = only
        .into_iter()
        .flatten()
        .find(|name| REGISTRY.iter().all(|t| t.name != **name))
    {
        return Err(UnknownTool {
            name: unknown.to_string(),
        });
    }
    let workspace = Workspace {
        cwd: cwd.into(),
        locks: FileLocks::default(),
        options: options.clone(),
    };
    Ok(REGISTRY
        .iter()
        .filter(|t| only.is_none_or(|names| names.contains(&t.name)))
        .map(|t| (t.make)(&workspace))
        .collect())
}

/// The system prompt's tool section for the tools the model has: one line each, and nothing
/// about the ones it does not have.
pub fn prompt_section(names: &[&str]) -> String {
    if names.is_empty() {
        return "You have no tools: answer from what the user tells you.".to_string();
    }
    let mut out: Vec<String> = REGISTRY
        .iter()
        .filter(|t| names.contains(&t.name))
        .map(|t| format!("- {}: {}", t.name, t.guidance))
        .collect();
    // Tools from elsewhere (MCP servers) describe themselves in their tool definitions.
    out.extend(
        names
            .iter()
            .filter(|n| REGISTRY.iter().all(|t| t.name != **n))
            .map(|n| format!("- {n}: see its description.")),
    );
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_makes_the_tool_it_names() {
        let tools = build("/tmp", &ToolOptions::default(), None).unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, known());
    }

    #[test]
    fn only_the_named_tools_in_registry_order() {
        let tools = build("/tmp", &ToolOptions::default(), Some(&["ls", "read"])).unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["read", "ls"]);
        let Err(err) = build("/tmp", &ToolOptions::default(), Some(&["read", "rm"])) else {
            panic!("rm is not a tool")
        };
        assert_eq!(
            err.to_string(),
            "unknown tool `rm`; the tools are read, write, edit, bash, grep, find, ls, fetch, \
             update_plan, submit_plan, task"
        );
    }

    #[test]
    fn the_prompt_describes_only_the_tools_the_model_has() {
        let section = prompt_section(&["read", "grep"]);
        assert!(section.starts_with("- read: read a file"), "{section}");
        assert!(section.contains("- grep: search"), "{section}");
        for absent in ["write", "edit", "bash", "find", "ls:"] {
            assert!(!section.contains(&format!("- {absent}")), "{section}");
        }
        assert!(prompt_section(&[]).contains("no tools"));
    }

    #[test]
    fn a_call_s_path_is_the_one_the_tool_opens() {
        let cwd = Path::new("/work/project");
        let args = |path: &str| serde_json::json!({ "path": path });
        assert_eq!(
            call_path("write", &args("src/a.rs"), cwd),
            Some(cwd.join("src/a.rs"))
        );
        // grep, find and ls default to the working directory; bash names no path.
        assert_eq!(
            call_path("grep", &serde_json::json!({}), cwd),
            Some(cwd.join("."))
        );
        assert_eq!(call_path("bash", &args("x"), cwd), None);
        assert_eq!(call_path("write", &serde_json::json!({}), cwd), None);
        // A bare `~` is the home directory for the check as for the tool.
        if let Some(home) = platform::fs::home_dir() {
            assert_eq!(call_path("read", &args("~"), cwd), Some(home.clone()));
            assert_eq!(call_path("ls", &args("~/x"), cwd), Some(home.join("x")));
        }
        assert!(effect("mcp__gh__create").is_none() && changes_files("mcp__gh__create"));
        assert!(!changes_files("grep") && changes_files("edit") && changes_files("bash"));
    }
}
