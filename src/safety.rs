//! From flags and config to what keeps the agent in bounds: the sandbox its commands run in
//! (probed once, here) and the guard that asks before what the sandbox does not cover.

use std::path::Path;
use std::sync::Arc;

use sandbox::{Level, Policy, SandboxMode, Summary};
use session::Home;

use crate::cli::{Cli, Mode};
use crate::config::Config;
use crate::guard::{ApprovalMode, Guard};

pub struct Safety {
    /// `None` with danger-full-access: commands run as they are.
    pub sandbox: Option<Arc<sandbox::Sandbox>>,
    pub guard: Arc<Guard>,
    /// What confines commands, for the status line and `/status`.
    pub summary: Summary,
    pub approval: ApprovalMode,
    /// The read-only sandbox every command and hook runs in while the agent is in plan mode.
    pub restriction: sandbox::Restriction,
    /// What confines commands in plan mode.
    pub plan_summary: Summary,
}

/// The policy the flags and the home config ask for, in `workspace`, hiding the agent's own
/// files in `home` from commands.
pub fn policy(cli: &Cli, config: &Config, home: &Home, workspace: &Path) -> Policy {
    let mode = cli
        .sandbox
        .or(config.sandbox.mode)
        .unwrap_or(SandboxMode::WorkspaceWrite);
    Policy::new(
        mode,
        workspace,
        &config.sandbox.writable,
        config.sandbox.network,
    )
    .hiding(Some(home.root()), &config.sandbox.deny_read)
}

pub fn build(
    cli: &Cli,
    config: &Config,
    home: &Home,
    cwd: &Path,
    working: &agent_core::ModeSwitch,
) -> Safety {
    let workspace = session::repository_root(cwd);
    let policy = policy(cli, config, home, &workspace);
    let mode = policy.mode;
    let capabilities = sandbox::probe();
    let summary = capabilities.summary(&policy);
    // Plan mode's promise is the kernel's: read-only whatever the configured mode, with the
    // same hidden paths and the network as configured for read-only (off by default).
    let read_only = Policy::new(
        SandboxMode::ReadOnly,
        &workspace,
        &[],
        config.sandbox.network,
    )
    .hiding(Some(home.root()), &config.sandbox.deny_read);
    let plan_summary = capabilities.summary(&read_only);
    let planning = working.clone();
    let restriction = sandbox::Restriction::new(
        Arc::new(sandbox::Sandbox::new(read_only, capabilities.clone())),
        move || planning.get() == agent_core::Mode::Plan,
    );
    let sandbox = (mode != SandboxMode::DangerFullAccess)
        .then(|| Arc::new(sandbox::Sandbox::new(policy, capabilities)));
    let approval = cli.approval.or(config.approval).unwrap_or_default();
    let guard = Guard {
        mode: approval,
        // Print and JSON modes have nobody to ask.
        can_ask: cli.print.is_none() && cli.mode != Mode::Json,
        // Rather than running commands unconfined without a word, ask before each.
        unconfinable: sandbox.is_some() && summary.level == Level::None,
        sandbox: sandbox.clone(),
        rules: sandbox::ApprovalStore::new(home.root()),
        project: workspace,
        cwd: cwd.to_path_buf(),
        working: working.clone(),
        extra_tools: std::sync::OnceLock::new(),
    };
    Safety {
        sandbox,
        guard: Arc::new(guard),
        summary,
        approval,
        restriction,
        plan_summary,
    }
}
