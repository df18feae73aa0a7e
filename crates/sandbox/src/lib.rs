//! What keeps the agent inside the lines the user drew: the sandbox policy and the kernel
//! confinement of the commands it runs (Landlock, seccomp, mount namespaces; never the agent
//! itself), the approval rules the user remembered, and which repositories the user trusts.
//! No UI: questions for the user go out as agent events, through the host.
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
pub mod policy;
pub mod probe;

pub use child::Trial;
pub use confine::{Confinement, Prepared, Sandbox, SandboxError};
pub use policy::{Policy, SandboxMode, UnknownSandboxMode, WRITABLE_DEVICES};
pub use probe::{Capabilities, Facts, Level, MountNs, ReportLine, Status, Summary, probe};
