//! What keeps the agent inside the lines the user drew: the sandbox policy and the
//! confinement of the commands it runs (never the agent itself), the approval rules the user
//! remembered, and which repositories the user trusts. No UI: questions for the user go out
//! as agent events, through the host.
//!
//! - [`shell`] reads a bash command line into its simple commands, failing closed, and
//!   [`is_known_read_only`] says whether every one of them is a read-only program.
//! - [`rules`] holds the command prefixes the user allowed per project
//!   (`$CODING_AGENT_HOME/approvals.toml`) and decides whether a command may run unasked.
//! - [`trust`] remembers which repositories the user trusted, with a fingerprint of their
//!   `.coding-agent/` (`$CODING_AGENT_HOME/trusted.toml`).
//! - [`servers`] remembers which of a repository's MCP servers the user allowed to start
//!   (`$CODING_AGENT_HOME/mcp-servers.toml`).
//!
//! Confinement, one [`Policy`] for every system:
//! - [`policy`]: [`SandboxMode`] and [`Policy`], what commands may write and whether they
//!   may use the network; [`Policy::write_allowed`] applies the same rule to the agent's own
//!   write and edit tools.
//! - [`probe`]: what this machine offers ([`probe()`] → [`Capabilities`]), a report for
//!   `coding-agent doctor`, and the [`Summary`] of a policy (`sandbox: landlock+seccomp`).
//! - [`confine`]: [`Sandbox`] (a policy and the capabilities) prepares a [`Prepared`]
//!   confinement per command, which makes the command to spawn.
//! - [`planted`]: what commands created where the kernel could not stop them (a protected
//!   path that did not exist yet, a git redirection), which the host refuses after each
//!   command.
//! - Each system's backend: Landlock, seccomp and namespaces on Linux (`linux/`); a Seatbelt
//!   profile run through `sandbox-exec` on macOS (`macos.rs`, with the profile generator
//!   [`seatbelt`], which builds and is tested everywhere); none yet on Windows, which the
//!   report and the summary say.
//!
//! `docs/sandbox.md` explains the tiers and what is not protected.

pub mod confine;
mod home_file;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
pub mod planted;
pub mod policy;
pub mod probe;
mod restriction;
pub mod rules;
pub mod seatbelt;
pub mod servers;
pub mod shell;
pub mod trust;

pub use confine::{Confinement, Prepared, Sandbox, SandboxError};
pub use home_file::StoreError;
#[cfg(target_os = "linux")]
pub use linux::child::Trial;
#[cfg(target_os = "linux")]
pub use linux::probe::Facts;
pub use planted::Planted;
pub use policy::{AGENT_HOME_READABLE, Policy, SandboxMode, UnknownSandboxMode, WRITABLE_DEVICES};
pub use probe::{Backend, Capabilities, Level, MountNs, ReportLine, Status, Summary, probe};
pub use restriction::Restriction;
pub use rules::{
    ApprovalStore, AskReason, Decision, ProjectRules, WEB_RULE, suggest_prefix, web_rule,
    web_rule_private,
};
pub use servers::ServerStore;
pub use shell::{Hazard, ParseError, is_known_read_only};
pub use trust::{Fingerprint, TRUST_FILE, Trust, TrustStore, fingerprint, wants};
