//! `coding-agent doctor`: what this machine offers to confine commands, what the current
//! settings ask for, and why anything is missing — in words a user can act on.

use std::fmt::Write;
use std::path::Path;

use session::Home;

use crate::cli::Cli;
use crate::config::Config;

pub fn report(cli: &Cli, config: &Config, home: &Home, cwd: &Path) -> String {
    let mut out = String::new();
    let capabilities = sandbox::probe();
    let _ = writeln!(
        out,
        "What {} offers for confining commands:",
        platform::SYSTEM
    );
    for line in &capabilities.report {
        let _ = writeln!(out, "  {line}");
    }
    let workspace = session::repository_root(cwd);
    let policy = crate::safety::policy(cli, config, home, &workspace);
    let summary = capabilities.summary(&policy);
    let approval = cli.approval.or(config.approval).unwrap_or_default();
    let _ = writeln!(
        out,
        "\nWith these settings ({}):",
        home.config_file().display()
    );
    let _ = writeln!(out, "  sandbox mode: {} ({})", policy.mode, summary.label);
    let _ = writeln!(out, "  workspace: {}", workspace.display());
    let _ = writeln!(
        out,
        "  network for commands: {}",
        if policy.network { "on" } else { "off" }
    );
    let _ = writeln!(out, "  approvals: {}", approval.name());
    if policy.mode != sandbox::SandboxMode::DangerFullAccess {
        let _ = writeln!(out, "  hidden from commands: {}", hidden_list(&policy));
    }
    for missing in &summary.missing {
        let _ = writeln!(out, "  not enforced: {missing}");
    }
    if summary.level == sandbox::Level::None {
        let _ = writeln!(
            out,
            "  nothing can confine commands here: the agent asks before every command that is \
             not known read-only (with -a never, or where nobody can answer, it refuses them)"
        );
    }
    let store = sandbox::TrustStore::new(home.root());
    let trust = match store.state(&workspace) {
        Ok(sandbox::Trust::Trusted) => "trusted".to_string(),
        Ok(sandbox::Trust::Untrusted) => "not trusted".to_string(),
        Ok(sandbox::Trust::Changed) => "trusted, but its .coding-agent/ changed since".to_string(),
        Err(err) => format!("unknown ({err})"),
    };
    let _ = writeln!(out, "  this repository: {trust}");
    mcp_servers(&mut out, config);
    out
}

/// What commands may not read: the agent's home (but what stays readable) and `deny_read`.
pub fn hidden_list(policy: &sandbox::Policy) -> String {
    let mut parts = Vec::new();
    if let Some(home) = policy.agent_home() {
        parts.push(format!(
            "{} (all but {})",
            home.display(),
            sandbox::AGENT_HOME_READABLE.join(", ")
        ));
    }
    parts.extend(policy.deny_read().iter().map(|p| p.display().to_string()));
    if parts.is_empty() {
        "nothing".to_string()
    } else {
        parts.join("; ")
    }
}

/// The configured MCP servers, how each would start, and what is wrong with an entry.
fn mcp_servers(out: &mut String, config: &Config) {
    if config.mcp_servers.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nMCP servers:");
    for (name, server) in &config.mcp_servers {
        let how = match (mcp::check_name(name), server.transport()) {
            (Err(err), _) | (_, Err(err)) => format!("error: {err}"),
            (Ok(()), Ok(mcp::Transport::Stdio { command, args })) => {
                let confined = if server.sandboxed() {
                    "in the sandbox"
                } else {
                    "unconfined (sandbox = false)"
                };
                format!("stdio `{command} {}`, {confined}", args.join(" "))
            }
            (Ok(()), Ok(mcp::Transport::Http { url })) => {
                let token = match &server.bearer_token_env {
                    Some(var) if std::env::var_os(var).is_some() => format!(", token from {var}"),
                    Some(var) => format!(", token from {var} (not set!)"),
                    None => String::new(),
                };
                format!("streamable HTTP {url}{token}")
            }
        };
        let off = if server.enabled() { "" } else { " (disabled)" };
        let _ = writeln!(out, "  {name}{off}: {}", how.trim_end());
    }
}
