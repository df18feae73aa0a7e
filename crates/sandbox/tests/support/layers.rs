//! What each layer of the Linux sandbox does on this machine, for tests that must hold on any
//! kernel: where a layer works they check what it refuses, where it does not they check the
//! command really ran and that the report says why. And a re-run of a test binary as on a
//! machine whose kernel refuses Landlock and namespaces, so the degraded path is tested here
//! too. Shared by the sandbox's scenarios and the bash tool's (`#[path]`).
#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::OnceLock;

use sandbox::{Capabilities, MountNs, Sandbox, Status};

/// Set by [`run_scenarios_degraded`] for the inner run, whose kernel refuses Landlock and
/// namespaces.
pub const DEGRADED: &str = "SANDBOX_TEST_DEGRADED";

/// What this machine offers, probed once per test binary.
pub fn capabilities() -> Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(sandbox::probe).clone()
}

/// In the degraded re-run, checks that the probe sees what the filter refuses.
pub fn expect_degraded_if_asked() {
    if std::env::var_os(DEGRADED).is_some() {
        assert!(!has(Layer::Landlock), "{:#?}", capabilities().report);
        assert!(!has(Layer::Mounts), "{:#?}", capabilities().report);
    }
}

/// A layer of the Linux sandbox, which a kernel or a container may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Landlock,
    Seccomp,
    /// Mount namespaces (the read-only carve-outs), through a user namespace or as root.
    Mounts,
}

/// Whether `layer` works on this machine (as the probe found).
pub fn has(layer: Layer) -> bool {
    let caps = capabilities();
    match layer {
        Layer::Landlock => caps.landlock_abi.is_some(),
        Layer::Seccomp => caps.seccomp,
        Layer::Mounts => caps.mount_ns != MountNs::None,
    }
}

/// The probe's report says `layer` is missing, with a reason: the line `coding-agent doctor`
/// prints.
#[track_caller]
pub fn missing_is_reported(layer: Layer) {
    let caps = capabilities();
    let start = match layer {
        Layer::Landlock => "Landlock",
        Layer::Seccomp => "seccomp",
        Layer::Mounts => {
            "read-only .git/hooks, .git/config and .coding-agent/ need mount namespaces"
        }
    };
    assert!(
        caps.report.iter().any(|l| l.status == Status::Missing
            && l.text.starts_with(start)
            && l.text.contains(": ")),
        "{layer:?} is missing but the report does not say why: {:#?}",
        caps.report
    );
}

/// What `layer` does to the command that gave `out`: where the layer works here, the command
/// was refused with `message`; where it does not (an older kernel, a container, Ubuntu's
/// AppArmor rule on user namespaces), the command ran, and the report says the layer is
/// missing. Either way the test checks what really happens.
#[track_caller]
pub fn refused_by(layer: Layer, out: &Output, message: &str) {
    if has(layer) {
        refused(out, message);
    } else {
        ok(out);
        missing_is_reported(layer);
    }
}

/// `layers` (in the order `Prepared::layers` gives them) without those this machine lacks:
/// `userns` needs a user namespace, `mountns` a mount namespace, `landlock` and `seccomp`
/// themselves.
pub fn available(layers: &[&'static str]) -> Vec<&'static str> {
    let caps = capabilities();
    layers
        .iter()
        .copied()
        .filter(|l| match *l {
            "userns" => caps.mount_ns == MountNs::User,
            "mountns" => caps.mount_ns != MountNs::None,
            "landlock" => caps.landlock_abi.is_some(),
            "seccomp" => caps.seccomp,
            _ => true,
        })
        .collect()
}

/// The status line's label for a policy that asks for `layers`: exactly that where the
/// machine has them all (and a Landlock with every right), else what is left, partial.
#[track_caller]
pub fn assert_label(sandbox: &Sandbox, layers: &[&'static str]) {
    let left = available(layers);
    let label = sandbox.summary().label;
    let whole =
        left.len() == layers.len() && capabilities().landlock_abi.is_none_or(|abi| abi >= 6);
    let confines_writes = left
        .iter()
        .any(|l| matches!(*l, "landlock" | "mountns" | "seatbelt"));
    let expected = if left.is_empty() {
        "sandbox: none".to_string()
    } else if !confines_writes {
        format!("sandbox: none (only {})", left.join("+"))
    } else if whole {
        format!("sandbox: {}", left.join("+"))
    } else {
        format!("sandbox: {} (partial)", left.join("+"))
    };
    assert_eq!(label, expected, "{:#?}", capabilities().report);
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[track_caller]
fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "expected success, got {}: {}",
        out.status,
        text(out)
    );
}

#[track_caller]
fn refused(out: &Output, message: &str) {
    assert!(!out.status.success(), "expected a failure: {}", text(out));
    assert!(
        text(out).contains(message),
        "expected {message:?}: {}",
        text(out)
    );
}

/// Re-runs this test binary's tests whose names contain `filter` as on a machine whose kernel
/// refuses Landlock and namespaces, as many containers do (Docker's default seccomp profile
/// hides `landlock_*` and refuses `unshare`): under a seccomp filter that fails the
/// `landlock_*` system calls with ENOSYS and `unshare` with EPERM. The scenarios then check
/// the degraded behaviour (what still holds, what the report says is missing) rather than
/// the full one. Fails with their output if any failed.
pub fn run_scenarios_degraded(filter: &str) {
    use std::os::unix::process::CommandExt;
    let programs = refusing_filters();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .arg(filter)
        .arg("--test-threads=2")
        .env(DEGRADED, "1");
    // SAFETY: prctl and seccomp are raw system calls on memory prepared before the fork
    // (the program lives in this frame until the spawn returns).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Two filters, stacked by the kernel: the stricter answer of the two wins.
            for program in &programs {
                let fprog = libc::sock_fprog {
                    len: program.len() as u16,
                    filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
                };
                let set = libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &fprog as *const libc::sock_fprog,
                );
                if set != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let out = command.output().expect("the test binary runs again");
    let text = text(&out);
    assert!(
        out.status.success(),
        "the scenarios failed without Landlock and namespaces:\n{text}"
    );
    assert!(
        text.contains("test result: ok") && !text.contains("running 0 tests"),
        "no scenario ran without Landlock and namespaces:\n{text}"
    );
}

/// The seccomp programs of [`run_scenarios_degraded`]: one fails `landlock_*` with ENOSYS,
/// the other `unshare` with EPERM (one program has one action for what it matches).
fn refusing_filters() -> [seccompiler::BpfProgram; 2] {
    let landlock = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
    ];
    [
        refusing(&landlock, libc::ENOSYS),
        refusing(&[libc::SYS_unshare], libc::EPERM),
    ]
}

/// A program failing `calls` with `errno`, allowing everything else.
fn refusing(calls: &[i64], errno: i32) -> seccompiler::BpfProgram {
    use seccompiler::{SeccompAction, SeccompFilter, SeccompRule};
    use std::collections::BTreeMap;
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).unwrap();
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        calls.iter().map(|&call| (call, Vec::new())).collect();
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .unwrap()
    .try_into()
    .unwrap()
}

/// Whether writes outside the writable roots are refused here: by the read-only mounts of
/// the command's mount namespace, or by Landlock.
pub fn writes_held() -> bool {
    has(Layer::Landlock) || has(Layer::Mounts)
}

/// The error a write outside the writable roots meets here: the read-only mounts answer
/// first (EROFS) where there are mount namespaces, else Landlock (EACCES).
pub fn write_refusal() -> &'static str {
    if has(Layer::Mounts) {
        "Read-only file system"
    } else {
        "Permission denied"
    }
}

/// A write outside the writable roots: refused where writes are held, with
/// [`write_refusal`]; elsewhere it ran, and the report says nothing confines writes.
#[track_caller]
pub fn write_refused(out: &Output) {
    if writes_held() {
        refused(out, write_refusal());
    } else {
        ok(out);
        missing_is_reported(Layer::Landlock);
    }
}
