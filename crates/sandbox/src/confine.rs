//! Confining one command: [`Confinement::prepare`] makes a [`Prepared`] confinement from the
//! policy and what this machine offers, and [`Prepared::command`] turns it into the command to
//! spawn. How is each system's own:
//!
//! - Linux (`linux/confine.rs`): Landlock, seccomp and namespaces, prepared in the agent and
//!   applied in the command's child between fork and exec.
//! - macOS (`macos.rs`): the command is wrapped in `/usr/bin/sandbox-exec` with a Seatbelt
//!   profile generated from the policy (`seatbelt.rs`).
//! - Windows: nothing yet; the command runs as it is, and [`Prepared::left_out`] says so.

use std::ffi::OsStr;
use std::path::Path;

use crate::planted::{Planted, Watch};
use crate::policy::{Policy, SandboxMode};
use crate::probe::{Capabilities, Summary};

/// Preparing a confinement failed; the command should not run (it would run unconfined).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("cannot prepare the read-only mounts: {0}")]
    Mount(String),
    #[error("cannot write the Seatbelt profile: {0}")]
    Seatbelt(String),
}

/// Builds confinements.
pub struct Confinement;

impl Confinement {
    /// Prepares the confinement of one command under `policy` with what `capabilities`
    /// says this machine offers. Call it per command: protected paths may have appeared.
    pub fn prepare(policy: &Policy, capabilities: &Capabilities) -> Result<Prepared, SandboxError> {
        let mut prepared = Prepared::default();
        if policy.mode == SandboxMode::DangerFullAccess {
            return Ok(prepared);
        }
        prepared.left_out = capabilities.summary(policy).missing;
        #[cfg(target_os = "linux")]
        crate::linux::confine::prepare(policy, capabilities, &mut prepared)?;
        #[cfg(target_os = "macos")]
        crate::macos::prepare(policy, capabilities, &mut prepared)?;
        Ok(prepared)
    }
}

/// One command's confinement, ready to be given to the command.
#[derive(Debug, Default)]
pub struct Prepared {
    #[cfg(target_os = "linux")]
    pub(crate) linux: crate::linux::confine::Layers,
    /// The profile and its parameters for `sandbox-exec`.
    #[cfg(target_os = "macos")]
    pub(crate) seatbelt: Option<crate::seatbelt::Profile>,
    pub(crate) layers: Vec<&'static str>,
    pub(crate) left_out: Vec<String>,
}

impl Prepared {
    /// Whether there is nothing to apply (`danger-full-access`, or nothing available).
    pub fn is_empty(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.linux.is_empty();
        #[cfg(target_os = "macos")]
        return self.seatbelt.is_none();
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        return true;
    }

    /// The layers that will be applied, in order: `userns`, `mountns`, `landlock`,
    /// `seccomp` on Linux; `seatbelt` on macOS.
    pub fn layers(&self) -> &[&'static str] {
        &self.layers
    }

    /// What the policy asks for that this confinement does not enforce, one sentence each.
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The command that runs `program` with `args` in `cwd`, confined. On Linux the
    /// confinement is applied in the child before exec (a failure there makes `spawn` fail
    /// with the errno of the step that failed: the command never runs half-confined); on
    /// macOS the program is run by `sandbox-exec` with the profile. Set its environment and
    /// standard streams as for any command; do not change its directory.
    pub fn command<I, S>(
        self,
        program: impl AsRef<OsStr>,
        args: I,
        cwd: &Path,
    ) -> std::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        #[cfg(target_os = "macos")]
        if let Some(profile) = &self.seatbelt {
            let mut command = std::process::Command::new(crate::seatbelt::SANDBOX_EXEC);
            command
                .args(profile.arguments())
                .arg("--")
                .arg(program)
                .args(args)
                .current_dir(cwd);
            return command;
        }
        let mut command = std::process::Command::new(program);
        command.args(args).current_dir(cwd);
        #[cfg(target_os = "linux")]
        self.install(&mut command);
        command
    }

    /// Makes `command` apply this confinement in its child before exec (Linux). Nothing is
    /// installed when there is nothing to apply (so the spawn keeps its fast path).
    #[cfg(target_os = "linux")]
    pub fn install(mut self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        if self.is_empty() {
            return;
        }
        self.linux.set_cwd(command.get_current_dir());
        // SAFETY: `apply_in_child` is async-signal-safe (see its contract) and runs in the
        // child only; the closure owns everything it touches.
        unsafe {
            command.pre_exec(move || self.apply_in_child());
        }
    }

    /// Applies the confinement to the calling process (Linux). Call it only in the forked
    /// child of a command, between fork and exec (as [`Prepared::install`] does).
    ///
    /// # Safety
    ///
    /// It confines the calling process for good: calling it in the agent would confine the
    /// agent. It is async-signal-safe, so it may run in the child of a multi-threaded
    /// process: it only passes memory prepared by [`Confinement::prepare`] (C strings, id
    /// map bytes, the BPF program, the ruleset's file descriptor) and stack buffers to raw
    /// system calls (`unshare`, `open`/`write`/`close` on `/proc`, `mount`, `chdir`,
    /// `prctl`, `landlock_restrict_self`, `seccomp`; for root's user namespace also `pipe2`,
    /// `fork`, `read`, `waitpid` and `_exit` of a helper that runs only such calls); it does
    /// not allocate, take a lock or panic, and its errors are `io::Error`s made from
    /// `errno`, which do not allocate.
    #[cfg(target_os = "linux")]
    pub unsafe fn apply_in_child(&self) -> std::io::Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.linux.apply_in_child() }
    }
}

/// A policy with the capabilities of this machine: what the bash tool holds to confine each
/// command.
#[derive(Debug)]
pub struct Sandbox {
    policy: Policy,
    capabilities: Capabilities,
    /// What commands may have created that the kernel could not stop.
    watch: Watch,
}

impl Sandbox {
    pub fn new(policy: Policy, capabilities: Capabilities) -> Sandbox {
        Sandbox {
            watch: Watch::new(&policy),
            policy,
            capabilities,
        }
    }

    /// Protected paths and git redirections that commands created since the sandbox was
    /// made and the user did not approve (see [`crate::planted`]). Checked after each
    /// command, and reported until they are gone.
    pub fn planted(&self) -> Vec<Planted> {
        self.watch.planted(&self.policy)
    }

    /// The user approved creating `path` (a write into a protected path, a command run
    /// unconfined): it is not planted.
    pub fn approve_created(&self, path: &Path) {
        self.watch.approve(path);
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// The strongest confinement available for the policy (for a status line and doctor).
    pub fn summary(&self) -> Summary {
        self.capabilities.summary(&self.policy)
    }

    /// Prepares the confinement of the next command.
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        Confinement::prepare(&self.policy, &self.capabilities)
    }

    /// The note for a confined command that failed with `output`, when the output shows
    /// the kind of error the sandbox causes: a refused write ("Permission denied",
    /// "Read-only file system", "Operation not permitted", "Device or resource busy", the
    /// errno names), or with the
    /// network off a name that cannot be resolved. `None` otherwise. A false positive (a
    /// file that is unreadable for other reasons) costs one sentence; a missed one leaves
    /// the model guessing, so the match is broad.
    pub fn explain_failure(&self, output: &str) -> Option<String> {
        const DENIED: &[&str] = &[
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
            // Removing or renaming a read-only bind (a mount point).
            "Device or resource busy",
            "EACCES",
            "EPERM",
            "EROFS",
        ];
        const NO_NETWORK: &[&str] = &[
            "Could not resolve host",
            "Temporary failure in name resolution",
            "Network is unreachable",
        ];
        let denied = DENIED.iter().any(|p| output.contains(p))
            || (!self.policy.network && NO_NETWORK.iter().any(|p| output.contains(p)));
        // Where nothing confined the command (Windows, a kernel without any layer), the
        // sandbox refused nothing: no note that would say it did.
        let confined =
            self.policy.mode != SandboxMode::DangerFullAccess && !self.summary().layers.is_empty();
        (denied && confined).then(|| self.denial_note())
    }

    /// What the sandbox allows, and how to ask for more: appended to a confined command's
    /// result when it failed on a permission error.
    pub fn denial_note(&self) -> String {
        let policy = &self.policy;
        let writes = match policy.mode {
            SandboxMode::ReadOnly => "it may not write any file".to_string(),
            SandboxMode::DangerFullAccess => "it may write anywhere".to_string(),
            SandboxMode::WorkspaceWrite => {
                let roots: Vec<String> = policy
                    .writable_roots()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                format!(
                    "it may write only in {}; .git/hooks, .git/config and .coding-agent/ are \
                     read-only",
                    roots.join(", ")
                )
            }
        };
        let network = if policy.network {
            "the network is on"
        } else {
            "the network is off (no IP sockets at all, localhost included; Unix sockets work)"
        };
        format!(
            "[This command ran in the sandbox ({}): {writes}; {network}. If the task needs \
             more, run the command again with \"escalate\": true and a one-line \
             \"justification\"; the user is asked to approve it.]",
            policy.mode
        )
    }
}
