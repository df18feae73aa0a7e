//! What this machine offers for confining commands, found once at startup ([`probe()`]), and
//! what that means for a policy ([`Capabilities::summary`]), in words a user can act on.
//!
//! Each system has its own probe: Linux tries Landlock, seccomp and namespaces in throw-away
//! children (`linux/probe.rs`), macOS runs a generated Seatbelt profile through
//! `sandbox-exec` (`macos.rs`), Windows has no sandbox yet and says so. The report lines and
//! the summary are shared, so `coding-agent doctor`, `/status` and the status line read the
//! same on every system.

use std::fmt;

use crate::policy::{Policy, SandboxMode};

/// What confines commands on this system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// Landlock, seccomp and namespaces, applied in the command's child (Linux).
    Linux,
    /// A Seatbelt profile generated from the policy, run through `/usr/bin/sandbox-exec`
    /// (macOS).
    Seatbelt,
    /// Nothing yet (Windows, other systems): commands run unconfined, and the approvals ask
    /// before any command that is not known read-only.
    #[default]
    Unsupported,
}

/// How commands get their own mount namespace (for the read-only carve-outs; Linux).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MountNs {
    /// Not available: the carve-outs are missing.
    #[default]
    None,
    /// `unshare(CLONE_NEWNS)` directly (root without user namespaces).
    Plain,
    /// Through a user namespace: mapping the user to itself, or every id for root.
    User,
}

/// How a line of the report reads: works, works with a limit, or missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Limited,
    Missing,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportLine {
    pub status: Status,
    pub text: String,
}

impl fmt::Display for ReportLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = match self.status {
            Status::Ok => "ok  ",
            Status::Limited => "warn",
            Status::Missing => "no  ",
        };
        write!(f, "{mark} {}", self.text)
    }
}

pub(crate) fn line(report: &mut Vec<ReportLine>, status: Status, text: String) {
    report.push(ReportLine { status, text });
}

/// What can be used to confine commands on this machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The system's kind of sandbox.
    pub backend: Backend,
    /// Linux: the Landlock ABI version, when Landlock can restrict a process.
    pub landlock_abi: Option<u32>,
    /// Linux: whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Linux: how commands can get a mount namespace.
    pub mount_ns: MountNs,
    /// macOS: whether `sandbox-exec` ran a generated profile.
    pub seatbelt: bool,
    /// What works and what does not, and why.
    pub report: Vec<ReportLine>,
}

/// How strongly a policy's commands are confined on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `danger-full-access`: confinement is off on purpose.
    Off,
    /// Everything the policy asks for is enforced.
    Full,
    /// Some of it is; [`Summary::missing`] says what is not.
    Partial,
    /// Nothing is: commands run unconfined.
    None,
}

/// The strongest confinement available for a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub level: Level,
    /// The mechanisms in use: `landlock`, `seccomp`, `mountns`, `seatbelt`.
    pub layers: Vec<&'static str>,
    /// What the policy asks for that is not enforced, one sentence each.
    pub missing: Vec<String>,
    /// For a status line: `sandbox: landlock+seccomp`, `sandbox: none`, `sandbox: off`.
    pub label: String,
}

/// Probes this machine once (a few milliseconds: Linux forks a few short children, macOS
/// runs `sandbox-exec` on a profile). Call once at startup.
pub fn probe() -> Capabilities {
    #[cfg(target_os = "linux")]
    let capabilities = crate::linux::probe::probe();
    #[cfg(target_os = "macos")]
    let capabilities = crate::macos::probe();
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    let capabilities = Capabilities::unsupported(platform::SYSTEM);
    capabilities
}

impl Capabilities {
    /// Nothing available (no probe run).
    pub fn none() -> Capabilities {
        Capabilities::default()
    }

    /// A system with no sandbox for commands (Windows): the report says so, and what the
    /// agent does instead.
    pub fn unsupported(system: &str) -> Capabilities {
        let mut report = Vec::new();
        line(
            &mut report,
            Status::Missing,
            format!(
                "no sandbox for commands on {system} yet: commands run with your rights, so the \
                 agent asks before any command that is not known read-only (unless you choose \
                 --sandbox danger-full-access; with -a never such commands are refused)"
            ),
        );
        Capabilities {
            backend: Backend::Unsupported,
            report,
            ..Capabilities::default()
        }
    }

    /// The strongest confinement of `policy`'s commands this machine allows.
    pub fn summary(&self, policy: &Policy) -> Summary {
        if policy.mode == SandboxMode::DangerFullAccess {
            return Summary {
                level: Level::Off,
                layers: Vec::new(),
                missing: Vec::new(),
                label: "sandbox: off".into(),
            };
        }
        let (layers, missing) = match self.backend {
            Backend::Linux => self.linux_layers(policy),
            Backend::Seatbelt if self.seatbelt => (vec!["seatbelt"], Vec::new()),
            Backend::Seatbelt => (
                Vec::new(),
                vec![
                    "Seatbelt (sandbox-exec) does not work here: commands can write wherever \
                     your user can and use the network"
                        .to_string(),
                ],
            ),
            Backend::Unsupported => (
                Vec::new(),
                vec![format!(
                    "no sandbox on {}: commands can write wherever your user can and use \
                     the network",
                    platform::SYSTEM
                )],
            ),
        };
        // seccomp alone (setuid bits, sockets) leaves every file writable: commands are not
        // confined in the sense that matters, and the agent asks as where nothing is.
        let confines_writes = layers
            .iter()
            .any(|l| matches!(*l, "landlock" | "mountns" | "seatbelt"));
        let level = if !confines_writes {
            Level::None
        } else if missing.is_empty() {
            Level::Full
        } else {
            Level::Partial
        };
        let label = match level {
            Level::None if layers.is_empty() => "sandbox: none".to_string(),
            Level::None => format!("sandbox: none (only {})", layers.join("+")),
            Level::Partial => format!("sandbox: {} (partial)", layers.join("+")),
            _ => format!("sandbox: {}", layers.join("+")),
        };
        Summary {
            level,
            layers,
            missing,
            label,
        }
    }

    fn linux_layers(&self, policy: &Policy) -> (Vec<&'static str>, Vec<String>) {
        let mut layers = Vec::new();
        let mut missing = Vec::new();
        match self.landlock_abi {
            Some(abi) => {
                layers.push("landlock");
                missing.extend(
                    LANDLOCK_GAPS
                        .iter()
                        .filter(|(needs, _)| abi < *needs)
                        .map(|(_, gap)| gap.to_string()),
                );
            }
            None => missing.push(
                "file-system rules (Landlock): commands can write wherever your user can"
                    .to_string(),
            ),
        }
        if self.seccomp {
            layers.push("seccomp");
        } else {
            missing.push(
                "no setuid bits, no chown to another owner (seccomp): commands can set them \
                 (as root: leave a setuid binary behind)"
                    .to_string(),
            );
            if !policy.network {
                missing.push(
                    "network off (seccomp): commands can still open network connections"
                        .to_string(),
                );
            }
        }
        let hides = policy.agent_home().is_some() || !policy.deny_read().is_empty();
        if hides && policy.mode != SandboxMode::DangerFullAccess && self.mount_ns == MountNs::None {
            missing.push(
                "hiding the agent's own files (keys, sessions) and [sandbox] deny_read from \
                 commands (mount namespaces): commands can read them"
                    .to_string(),
            );
        }
        if self.mount_ns == MountNs::None {
            if policy.mode == SandboxMode::WorkspaceWrite {
                missing.push(
                    "read-only .git/hooks, .git/config and .coding-agent/ (mount namespaces): \
                     commands can write them"
                        .to_string(),
                );
            }
            missing.push(
                "read-only file metadata outside the writable paths (mount namespaces): \
                 commands can change the modes, owners and times of your files elsewhere"
                    .to_string(),
            );
        } else {
            layers.push("mountns");
        }
        (layers, missing)
    }
}

/// What an older Landlock ABI leaves out, with the ABI and kernel that bring it.
pub(crate) const LANDLOCK_GAPS: &[(u32, &str)] = &[
    (
        2,
        "moving or linking a file into another directory always fails (EXDEV) \
         (needs Landlock ABI 2, Linux 5.19)",
    ),
    (
        3,
        "truncate(2) of files outside the writable paths is not blocked \
         (needs Landlock ABI 3, Linux 6.2)",
    ),
    (
        5,
        "ioctl(2) on device files is not restricted (needs Landlock ABI 5, Linux 6.10)",
    ),
    (
        6,
        "commands can send signals to your other processes (the agent, your editor) and \
         connect to their abstract Unix sockets (needs Landlock ABI 6, Linux 6.12)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy(mode: SandboxMode) -> Policy {
        Policy::new(mode, Path::new("/"), &[], None)
    }

    #[test]
    fn report_lines_print_with_their_status() {
        let line = ReportLine {
            status: Status::Missing,
            text: "seccomp refused".into(),
        };
        assert_eq!(line.to_string(), "no   seccomp refused");
        let ok = ReportLine {
            status: Status::Ok,
            text: "Landlock ABI 7".into(),
        };
        assert_eq!(ok.to_string(), "ok   Landlock ABI 7");
    }

    #[test]
    fn a_system_without_a_sandbox_says_so_and_confines_nothing() {
        let caps = Capabilities::unsupported("Windows");
        assert_eq!(caps.report.len(), 1);
        assert_eq!(caps.report[0].status, Status::Missing);
        assert!(
            caps.report[0]
                .text
                .contains("no sandbox for commands on Windows")
                && caps.report[0].text.contains("asks before any command"),
            "{}",
            caps.report[0]
        );
        let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite));
        assert_eq!(summary.level, Level::None);
        assert_eq!(summary.label, "sandbox: none");
        assert_eq!(summary.missing.len(), 1, "{:?}", summary.missing);
        let off = caps.summary(&policy(SandboxMode::DangerFullAccess));
        assert_eq!(off.level, Level::Off);
    }

    #[test]
    fn seatbelt_is_the_whole_sandbox_on_macos_or_nothing() {
        let works = Capabilities {
            backend: Backend::Seatbelt,
            seatbelt: true,
            ..Capabilities::default()
        };
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            let summary = works.summary(&policy(mode));
            assert_eq!(summary.level, Level::Full);
            assert_eq!(summary.label, "sandbox: seatbelt");
        }
        let broken = Capabilities {
            seatbelt: false,
            ..works
        };
        let summary = broken.summary(&policy(SandboxMode::WorkspaceWrite));
        assert_eq!(summary.level, Level::None);
        assert!(summary.missing[0].contains("sandbox-exec"));
    }
}
