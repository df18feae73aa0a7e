//! The coding tools on the agent-core [`Tool`](agent_core::Tool) trait: read, write, edit,
//! bash, grep, find and ls, listed in one table ([`REGISTRY`]).
//!
//! Every tool resolves paths against the working directory it was made for, states its limits
//! in its description, turns every failure into a message the model can act on, and stops
//! promptly when the run is aborted.

mod args;
mod bash;
mod diff;
mod edit;
mod edit_match;
mod fetch;
mod find;
mod grep;
mod line_endings;
mod ls;
mod paths;
mod plan;
mod read;
mod registry;
mod spill;
mod task;
mod truncate;
mod walk;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::Tool;

pub use bash::{BashOptions, BashTool, key_env_vars};
pub use diff::unified_diff;
pub use edit::EditTool;
pub use fetch::{FetchOptions, FetchTool, HostAllowed, host_of, is_private};
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use plan::{
    Checklist, PlanStep, SUBMIT_PLAN, StepStatus, SubmitPlanTool, UPDATE_PLAN, UpdatePlanTool,
    submitted_plan,
};
#[cfg(unix)]
pub use platform::process::group_alive;
pub use read::ReadTool;
pub use registry::{
    Effect, PATH_ARGUMENT, REGISTRY, ToolEntry, UnknownTool, build, call_path, changes_files,
    effect, prompt_section,
};
pub use spill::{DEFAULT_SPILL_CAP, SpillDir};
pub use task::{Delegate, Delegation, Job, TASK, TaskTool};
pub use truncate::{MAX_BYTES, MAX_LINES};
pub use write::WriteTool;

/// How the tools are made; the defaults suit a host that configures nothing.
#[derive(Clone, Debug, Default)]
pub struct ToolOptions {
    pub bash: BashOptions,
    pub fetch: FetchOptions,
    /// Runs the `task` tool's subagents; without it `task` is offered to nobody.
    pub delegate: Option<Delegation>,
}

/// Every tool, working in `cwd`, with the default options (tests, benchmarks).
pub fn all_tools(cwd: impl Into<PathBuf>) -> Vec<Arc<dyn Tool>> {
    // No name is asked for, so none can be unknown.
    registry::build(cwd, &ToolOptions::default(), None).unwrap_or_default()
}
