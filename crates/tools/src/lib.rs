//! The coding tools on the agent-core [`Tool`](agent_core::Tool) trait: read, write, edit,
//! bash, grep, find and ls.
//!
//! Every tool resolves paths against the working directory it was made for, states its limits
//! in its description, turns every failure into a message the model can act on, and stops
//! promptly when the run is aborted.

mod args;
mod bash;
mod diff;
mod edit;
mod edit_match;
mod find;
mod grep;
mod ls;
mod paths;
mod read;
mod spill;
mod truncate;
mod walk;
mod watchdog;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::Tool;

pub use bash::{BashOptions, BashTool, group_alive, key_env_vars};
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use spill::{DEFAULT_SPILL_CAP, SpillDir};
pub use truncate::{MAX_BYTES, MAX_LINES};
pub use write::WriteTool;

/// Names of every tool, in the order the model sees them.
pub const ALL: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// How the tools are made; the defaults suit a host that configures nothing.
#[derive(Clone, Debug, Default)]
pub struct ToolOptions {
    pub bash: BashOptions,
}

/// Every tool, working in `cwd`, with the default options.
pub fn all_tools(cwd: impl Into<PathBuf>) -> Vec<Arc<dyn Tool>> {
    all_tools_with(cwd, &ToolOptions::default())
}

/// Every tool, working in `cwd`.
pub fn all_tools_with(cwd: impl Into<PathBuf>, options: &ToolOptions) -> Vec<Arc<dyn Tool>> {
    let cwd = cwd.into();
    let locks = paths::FileLocks::default();
    vec![
        Arc::new(ReadTool::new(cwd.clone())),
        Arc::new(WriteTool::new(cwd.clone(), locks.clone())),
        Arc::new(EditTool::new(cwd.clone(), locks)),
        Arc::new(BashTool::with_options(cwd.clone(), options.bash.clone())),
        Arc::new(GrepTool::new(cwd.clone())),
        Arc::new(FindTool::new(cwd.clone())),
        Arc::new(LsTool::new(cwd)),
    ]
}

/// The named tools only, with the default options (unknown names are an error naming the
/// valid ones).
pub fn tools_named(cwd: impl Into<PathBuf>, names: &[&str]) -> Result<Vec<Arc<dyn Tool>>, String> {
    tools_named_with(cwd, names, &ToolOptions::default())
}

/// The named tools only (unknown names are an error naming the valid ones).
pub fn tools_named_with(
    cwd: impl Into<PathBuf>,
    names: &[&str],
    options: &ToolOptions,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    if let Some(unknown) = names.iter().find(|n| !ALL.contains(n)) {
        return Err(format!(
            "unknown tool `{unknown}`; the tools are {}",
            ALL.join(", ")
        ));
    }
    Ok(all_tools_with(cwd, options)
        .into_iter()
        .filter(|t| names.contains(&t.name()))
        .collect())
}
