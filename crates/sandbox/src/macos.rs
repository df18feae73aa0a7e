//! The macOS sandbox: each command is run by `/usr/bin/sandbox-exec` with a Seatbelt profile
//! generated from the policy (`seatbelt.rs`). The probe runs the strictest profile the agent
//! makes (workspace-write, network off) once, for real: `sandbox-exec` is deprecated, the
//! profile language is undocumented, and it cannot start inside another sandbox, so only a
//! run says whether it works here. When it does not, the report says why and commands run
//! unconfined, with the approvals asking first (see `Capabilities::summary`).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::confine::{Prepared, SandboxError};
use crate::policy::{Policy, SandboxMode};
use crate::probe::{Backend, Capabilities, Status, line};
use crate::seatbelt::{Profile, Rules, SANDBOX_EXEC};

/// Prepares the profile of one command under `policy` into `prepared`.
pub(crate) fn prepare(
    policy: &Policy,
    capabilities: &Capabilities,
    prepared: &mut Prepared,
) -> Result<(), SandboxError> {
    if !capabilities.seatbelt {
        return Ok(());
    }
    if let Some(rules) = Rules::from_policy(policy) {
        prepared.seatbelt = Some(Profile::new(&rules));
        prepared.layers.push("seatbelt");
    }
    Ok(())
}

/// Whether `sandbox-exec` runs the generated profiles here, and the report's line.
pub(crate) fn probe() -> Capabilities {
    let mut report = Vec::new();
    let seatbelt = match try_profile() {
        Ok(()) => {
            line(
                &mut report,
                Status::Ok,
                "Seatbelt (sandbox-exec) works: commands write only where the policy allows \
                 (.git/hooks, .git/config and .coding-agent/ stay read-only even before they \
                 exist), and with the network off use only Unix sockets"
                    .to_string(),
            );
            true
        }
        Err(why) => {
            line(&mut report, Status::Missing, why);
            false
        }
    };
    Capabilities {
        backend: Backend::Seatbelt,
        seatbelt,
        report,
        ..Capabilities::default()
    }
}

fn try_profile() -> Result<(), String> {
    if !Path::new(SANDBOX_EXEC).exists() {
        return Err(format!(
            "Seatbelt not available: {SANDBOX_EXEC} is missing; commands run unconfined"
        ));
    }
    let dir = tempfile::tempdir()
        .map_err(|e| format!("Seatbelt not tried: no temporary directory ({e})"))?;
    let policy = Policy::new(SandboxMode::WorkspaceWrite, dir.path(), &[], Some(false));
    let Some(rules) = Rules::from_policy(&policy) else {
        return Err("Seatbelt not tried".to_string());
    };
    let profile = Profile::new(&rules);
    let out = Command::new(SANDBOX_EXEC)
        .args(profile.arguments())
        .arg("--")
        .arg("/usr/bin/true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("Seatbelt not available: {SANDBOX_EXEC} cannot run ({e})"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or("").trim();
    if first.contains("sandbox_apply") {
        Err(format!(
            "Seatbelt cannot start here: the agent itself runs inside a sandbox, and \
             sandbox-exec cannot nest ({first}); commands run unconfined"
        ))
    } else {
        Err(format!(
            "Seatbelt refused the generated profile ({}: {first}); commands run unconfined. \
             Please report this with `coding-agent doctor`'s output",
            out.status
        ))
    }
}
