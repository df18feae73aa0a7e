//! What keeps the agent inside the lines the user drew: the sandbox policy and the kernel
//! confinement of the commands it runs (Landlock, seccomp, mount namespaces; never the agent
//! itself), the approval rules the user remembered, and which repositories the user trusts.
//! No UI: questions for the user go out as agent events, through the host.
//!
//! - [`shell`] reads a bash command line into its simple commands, failing closed, and
//!   [`is_known_read_only`] says whether every one of them is a read-only program.
//! - [`rules`] holds the command prefixes the user allowed per project
//!   (`$CODING_AGENT_HOME/approvals.toml`) and decides whether a command may run unasked.
//! - [`trust`] remembers which repositories the user trusted, with a fingerprint of their
//!   `.coding-agent/` (`$CODING_AGENT_HOME/trusted.toml`).
//!
//! Confinement (Linux):
//! - [`policy`]: [`SandboxMode`] and [`Policy`], what commands may write and whether they
//!   may use the network; [`Policy::write_allowed`] applies the same rule to the agent's own
//!   write and edit tools.
//! - [`probe`]: what this kernel offers ([`probe()`] → [`Capabilities`]), a report for
//!   `coding-agent doctor`, and the [`Summary`] of a policy (`sandbox: landlock+seccomp`).
//! - [`confine`]: [`Sandbox`] (a policy and the capabilities) prepares a [`Prepared`]
//!   confinement per command, installed into a `std::process::Command` and applied in the
//!   child between fork and exec.
//!
//! `docs/sandbox.md` explains the tiers and what is not protected.

mod child;
pub mod confine;
mod home_file;
pub mod policy;
pub mod probe;
pub mod rules;
pub mod shell;
pub mod trust;

pub use child::Trial;
pub use confine::{Confinement, Prepared, Sandbox, SandboxError};
pub use home_file::StoreError;
pub use policy::{Policy, SandboxMode, UnknownSandboxMode, WRITABLE_DEVICES};
pub use probe::{Capabilities, Facts, Level, MountNs, ReportLine, Status, Summary, probe};
pub use rules::{ApprovalStore, AskReason, Decision, ProjectRules, suggest_prefix};
pub use shell::{Hazard, ParseError, is_known_read_only};
pub use trust::{Fingerprint, Trust, TrustStore, fingerprint, wants};
