//! Seatbelt profiles (macOS): the SBPL text `sandbox-exec` applies to a command, generated
//! from a [`Policy`]. Pure: it is built and tested on every system (`seatbelt/tests.rs`
//! evaluates the generated profiles against every rule of the Linux scenario tests), and
//! used by `macos.rs` to wrap commands.
//!
//! Paths never enter the profile's text: each is a parameter (`-D WRITABLE_0=/path`) that
//! the text names with `(param "WRITABLE_0")`, so a path holding quotes or parentheses
//! cannot change the rules. Only fixed system paths (`/dev/null`) are written in the text.
//!
//! What the profile allows, in workspace-write mode:
//! - reading everywhere, running programs, signalling processes of the same sandbox, and
//!   what ordinary programs need from the system (user lookups, preferences, sysctl reads),
//!   after the base policies of Codex and Chromium;
//! - writing beneath the writable roots except the protected paths (`.git/hooks`,
//!   `.git/config`, `.coding-agent/`, a worktree's git files), which Seatbelt protects
//!   whether or not they exist yet; an existing `.git` directory itself cannot be moved or
//!   removed (moved aside, it could be replaced by a `.git` file pointing at a copy with
//!   hooks);
//! - writing the harmless devices (`/dev/null`, …);
//! - with the network off, Unix sockets only; with it on, any socket.
//!
//! Seatbelt matches real paths (symlinks resolved: `/tmp` is `/private/tmp`), so every path
//! given is resolved first, as [`Policy`] does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::policy::{Policy, SandboxMode, WRITABLE_DEVICES};

/// The one `sandbox-exec` the agent runs: never one found on the `PATH`.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What a profile enforces, as plain data: the policy's rules for one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Where commands may write (resolved paths).
    pub writable: Vec<PathBuf>,
    /// Paths inside the writable roots that stay read-only, the path and everything beneath
    /// it, whether or not they exist.
    pub read_only: Vec<PathBuf>,
    /// Directories that may be written inside but not moved, removed or replaced themselves
    /// (an existing `.git`).
    pub fixed: Vec<PathBuf>,
    /// Whether commands may open network sockets (Unix sockets always).
    pub network: bool,
    /// Paths commands may neither read nor write (the agent's own files, `deny_read`).
    pub hidden: Vec<PathBuf>,
}

impl Rules {
    /// The rules of `policy` as the file system is now (call it per command: a `git init`
    /// or a new worktree changes them). `None` for `danger-full-access`: nothing to apply.
    pub fn from_policy(policy: &Policy) -> Option<Rules> {
        match policy.mode {
            SandboxMode::DangerFullAccess => None,
            SandboxMode::ReadOnly => Some(Rules {
                network: policy.network,
                hidden: policy.hidden_paths(),
                ..Rules::default()
            }),
            SandboxMode::WorkspaceWrite => {
                let hidden = policy.hidden_paths();
                Some(Rules {
                    writable: policy.writable_roots(),
                    // A hidden path in a writable root (an agent home under the temp dir) is
                    // not written either.
                    read_only: policy
                        .protected_paths()
                        .into_iter()
                        .chain(hidden.iter().cloned())
                        .collect(),
                    hidden,
                    fixed: policy
                        .git_dirs()
                        .into_iter()
                        .filter(|d| d.is_dir())
                        .collect(),
                    network: policy.network,
                })
            }
        }
    }
}

/// A generated profile and the parameters its text names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    text: String,
    params: Vec<(String, PathBuf)>,
}

/// What every profile allows, whatever the policy: running programs, reading, and what
/// ordinary programs (a shell, git, python, cargo, node) need from the system. Taken from
/// the base policies Codex and Chromium ship, narrowed to what the sandbox's users run.
const BASE: &str = r#"(version 1)
(deny default)

; Running programs, and signalling only the processes of this sandbox.
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; What ordinary programs ask of the system: machine facts, user and group lookups,
; preferences, POSIX semaphores (Python's multiprocessing), power assertions.
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.PowerManagement.control")
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent")
  (global-name "com.apple.SystemConfiguration.configd")
  (local-name "com.apple.cfprefsd.agent"))

; Pseudo-terminals a command opens for itself.
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))
"#;

/// With the network on: every socket, and the services that resolve names and check
/// certificates.
const NETWORK_ON: &str = r#"
; The network is on.
(allow network-outbound)
(allow network-inbound)
(allow network-bind)
(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration"))
"#;

/// With the network off: Unix sockets only (ssh-agent, docker, local daemons), as on Linux.
const NETWORK_OFF: &str = r#"
; The network is off: Unix sockets only.
(allow system-socket (socket-domain AF_UNIX))
(allow network-bind (local unix-socket))
(allow network-outbound (remote unix-socket))
"#;

impl Profile {
    /// The profile enforcing `rules`.
    pub fn new(rules: &Rules) -> Profile {
        let mut text = String::from(BASE);
        let mut params = Vec::new();
        if rules.hidden.is_empty() {
            text.push_str("\n; Reading is allowed everywhere, as on Linux.\n(allow file-read*)\n");
        } else {
            text.push_str(
                "\n; Reading is allowed everywhere, as on Linux, but for the hidden paths.\n\
                 (allow file-read*\n  (require-all (subpath \"/\")",
            );
            for (i, path) in rules.hidden.iter().enumerate() {
                let name = format!("HIDDEN_{i}");
                text.push_str(&format!(
                    "\n    (require-not (literal (param \"{name}\")))\
                     \n    (require-not (subpath (param \"{name}\")))"
                ));
                params.push((name, path.clone()));
            }
            text.push_str("))\n");
        }
        text.push_str("\n; The harmless devices.\n");
        for device in WRITABLE_DEVICES {
            text.push_str(&format!(
                "(allow file-write-data (require-all (path \"{device}\") (vnode-type \
                 CHARACTER-DEVICE)))\n"
            ));
        }
        if !rules.writable.is_empty() {
            text.push_str(
                "\n; Where commands may write, but for the protected paths inside.\n\
                 (allow file-write*",
            );
            for (i, root) in rules.writable.iter().enumerate() {
                let name = format!("WRITABLE_{i}");
                let read_only: Vec<&PathBuf> = rules
                    .read_only
                    .iter()
                    .filter(|p| p.starts_with(root))
                    .collect();
                // A root may itself be fixed (a worktree's git directory).
                let fixed: Vec<&PathBuf> =
                    rules.fixed.iter().filter(|p| p.starts_with(root)).collect();
                if read_only.is_empty() && fixed.is_empty() {
                    text.push_str(&format!("\n  (subpath (param \"{name}\"))"));
                } else {
                    text.push_str(&format!("\n  (require-all (subpath (param \"{name}\"))"));
                    for (j, path) in read_only.into_iter().enumerate() {
                        let excluded = format!("{name}_READ_ONLY_{j}");
                        // The path itself too: `subpath` alone has been seen to leave its
                        // first creation (`mkdir .coding-agent`) open.
                        text.push_str(&format!(
                            "\n    (require-not (literal (param \"{excluded}\")))\
                             \n    (require-not (subpath (param \"{excluded}\")))"
                        ));
                        params.push((excluded, path.clone()));
                    }
                    for (j, path) in fixed.into_iter().enumerate() {
                        let excluded = format!("{name}_FIXED_{j}");
                        text.push_str(&format!(
                            "\n    (require-not (literal (param \"{excluded}\")))"
                        ));
                        params.push((excluded, path.clone()));
                    }
                    text.push(')');
                }
                params.push((name, root.clone()));
            }
            text.push_str(")\n");
        }
        text.push_str(if rules.network {
            NETWORK_ON
        } else {
            NETWORK_OFF
        });
        params.sort();
        Profile { text, params }
    }

    /// The profile's text (SBPL).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parameters the text names, with their paths.
    pub fn params(&self) -> &[(String, PathBuf)] {
        &self.params
    }

    /// The arguments of `sandbox-exec` before `--`: `-p <text>` and one `-DNAME=PATH` per
    /// parameter (one argument each, so a path with `=` or spaces stays whole).
    pub fn arguments(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from("-p"), OsString::from(&self.text)];
        for (name, path) in &self.params {
            let mut arg = OsString::from(format!("-D{name}="));
            arg.push(path.as_os_str());
            args.push(arg);
        }
        args
    }

    /// The path a parameter stands for.
    pub fn param(&self, name: &str) -> Option<&Path> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_path())
    }
}

#[cfg(test)]
mod tests;
