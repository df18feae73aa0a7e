//! The assessment's decisions and wording for machines we do not run on: old kernels,
//! Landlock left out of the LSM list, containers, no user namespaces.

use std::path::Path;

use super::*;
use crate::policy::{Policy, SandboxMode};
use crate::probe::Level;

/// A recent kernel where everything works, as root (which gets a user namespace mapping
/// every id, so the plain mount namespace is not tried).
fn healthy() -> Facts {
    Facts {
        kernel_release: "6.15.2-arch1-1".into(),
        root: true,
        landlock_abi: Ok(7),
        landlock_restrict: Trial::Works,
        lsm: Some("lockdown,capability,landlock,yama,apparmor".into()),
        seccomp: Trial::Works,
        seccomp_mode: Some(0),
        container: None,
        mount_ns: Trial::NotTried,
        user_ns: Trial::Works,
        userns_clone: None,
        max_user_namespaces: Some("63614".into()),
        apparmor_userns: None,
    }
}

/// The same machine, as an unprivileged user.
fn healthy_user() -> Facts {
    Facts {
        root: false,
        ..healthy()
    }
}

fn texts(caps: &Capabilities) -> Vec<String> {
    caps.report.iter().map(|l| l.to_string()).collect()
}

fn has_line(caps: &Capabilities, status: Status, needle: &str) -> bool {
    caps.report
        .iter()
        .any(|l| l.status == status && l.text.contains(needle))
}

fn policy(mode: SandboxMode, network: Option<bool>) -> Policy {
    Policy::new(mode, Path::new("/"), &[], network)
}

#[test]
fn everything_works_on_a_recent_kernel() {
    let caps = Capabilities::assess(&healthy());
    assert_eq!(caps.landlock_abi, Some(7));
    assert!(caps.seccomp);
    assert_eq!(caps.mount_ns, MountNs::User);
    assert!(
        caps.report.iter().all(|l| l.status == Status::Ok),
        "{:?}",
        texts(&caps)
    );
    assert!(has_line(&caps, Status::Ok, "Landlock ABI 7"));
    assert!(has_line(
        &caps,
        Status::Ok,
        "root's commands hold its capabilities only in their own user namespace"
    ));
    let full = caps.summary(&policy(SandboxMode::WorkspaceWrite, Some(false)));
    assert_eq!(full.level, Level::Full);
    assert_eq!(full.label, "sandbox: landlock+seccomp+mountns");
    assert!(full.missing.is_empty());
}

#[test]
fn an_unprivileged_user_gets_mount_namespaces_through_a_user_namespace() {
    let caps = Capabilities::assess(&healthy_user());
    assert_eq!(caps.mount_ns, MountNs::User);
    assert!(has_line(
        &caps,
        Status::Ok,
        "through an unprivileged user namespace"
    ));
}

#[test]
fn a_kernel_older_than_5_13_has_no_landlock() {
    let facts = Facts {
        kernel_release: "5.10.0-28-amd64".into(),
        landlock_abi: Err(libc::ENOSYS),
        landlock_restrict: Trial::NotTried,
        ..healthy()
    };
    let caps = Capabilities::assess(&facts);
    assert_eq!(caps.landlock_abi, None);
    assert!(
        has_line(
            &caps,
            Status::Missing,
            "Landlock not available: kernel 5.10 < 5.13"
        ),
        "{:?}",
        texts(&caps)
    );
    let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite, None));
    assert_eq!(summary.level, Level::Partial);
    assert_eq!(summary.label, "sandbox: seccomp+mountns (partial)");
    assert!(
        summary.missing[0].contains("commands can write wherever your user can"),
        "{:?}",
        summary.missing
    );
}

#[test]
fn a_new_kernel_without_the_syscall_was_built_without_landlock() {
    let facts = Facts {
        landlock_abi: Err(libc::ENOSYS),
        ..healthy()
    };
    let caps = Capabilities::assess(&facts);
    assert!(has_line(
        &caps,
        Status::Missing,
        "Landlock not available: the kernel was built without it (CONFIG_SECURITY_LANDLOCK)"
    ));
}

#[test]
fn landlock_left_out_of_the_lsm_list_says_where_to_add_it() {
    let facts = Facts {
        landlock_abi: Err(libc::EOPNOTSUPP),
        landlock_restrict: Trial::NotTried,
        lsm: Some("lockdown,capability,yama,apparmor".into()),
        ..healthy()
    };
    let caps = Capabilities::assess(&facts);
    assert_eq!(caps.landlock_abi, None);
    assert!(
        has_line(
            &caps,
            Status::Missing,
            "Landlock disabled: not in the kernel's LSM list (/sys/kernel/security/lsm: \
             lockdown,capability,yama,apparmor); add landlock to the lsm= boot parameter"
        ),
        "{:?}",
        texts(&caps)
    );
    // securityfs not mounted: the list is unknown, the advice the same.
    let caps = Capabilities::assess(&Facts { lsm: None, ..facts });
    assert!(has_line(
        &caps,
        Status::Missing,
        "Landlock disabled: built into the kernel but not enabled at boot; add landlock to \
         the lsm= boot parameter"
    ));
}

#[test]
fn older_landlock_abis_name_what_they_leave_out() {
    let caps = Capabilities::assess(&Facts {
        kernel_release: "6.1.0-18-amd64".into(),
        landlock_abi: Ok(2),
        ..healthy()
    });
    assert_eq!(caps.landlock_abi, Some(2));
    assert!(has_line(&caps, Status::Ok, "Landlock ABI 2"));
    assert!(has_line(
        &caps,
        Status::Limited,
        "truncate(2) of files outside the writable paths is not blocked (needs Landlock ABI \
         3, Linux 6.2)"
    ));
    assert!(has_line(
        &caps,
        Status::Limited,
        "needs Landlock ABI 5, Linux 6.10"
    ));
    assert!(!has_line(&caps, Status::Limited, "EXDEV"));
    let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite, None));
    assert_eq!(summary.level, Level::Partial);
    assert_eq!(summary.label, "sandbox: landlock+seccomp+mountns (partial)");
    assert_eq!(summary.missing.len(), 3, "{:?}", summary.missing);
    assert!(has_line(
        &caps,
        Status::Limited,
        "can send signals to your other processes"
    ));

    let abi1 = Capabilities::assess(&Facts {
        landlock_abi: Ok(1),
        ..healthy()
    });
    assert!(has_line(&abi1, Status::Limited, "always fails (EXDEV)"));

    // ABI 6 scopes signals and abstract sockets: nothing is left out.
    let abi6 = Capabilities::assess(&Facts {
        landlock_abi: Ok(6),
        ..healthy()
    });
    assert!(!abi6.report.iter().any(|l| l.status == Status::Limited));
    assert!(has_line(&abi6, Status::Ok, "cannot signal"));
}

#[test]
fn a_container_profile_that_blocks_seccomp_is_named() {
    let facts = Facts {
        seccomp: Trial::Errno(libc::EPERM),
        seccomp_mode: Some(2),
        container: Some("docker".into()),
        ..healthy()
    };
    let caps = Capabilities::assess(&facts);
    assert!(!caps.seccomp);
    assert!(
        has_line(
            &caps,
            Status::Missing,
            "seccomp refused: the container's seccomp profile blocks it"
        ),
        "{:?}",
        texts(&caps)
    );
    let summary = caps.summary(&policy(SandboxMode::ReadOnly, None));
    assert_eq!(summary.level, Level::Partial);
    assert!(
        summary
            .missing
            .iter()
            .any(|m| m.contains("commands can still open network connections")),
        "{:?}",
        summary.missing
    );
    // With the network on, seccomp is still what refuses setuid bits and chown.
    let net_on = caps.summary(&policy(SandboxMode::WorkspaceWrite, Some(true)));
    assert_eq!(net_on.level, Level::Partial);
    assert_eq!(net_on.label, "sandbox: landlock+mountns (partial)");
    assert!(
        net_on.missing.iter().any(|m| m.contains("no setuid bits")),
        "{:?}",
        net_on.missing
    );
}

#[test]
fn a_kernel_without_seccomp_filters_says_so() {
    let caps = Capabilities::assess(&Facts {
        seccomp: Trial::Errno(libc::EINVAL),
        ..healthy()
    });
    assert!(has_line(
        &caps,
        Status::Missing,
        "seccomp not available: the kernel was built without seccomp filters \
         (CONFIG_SECCOMP_FILTER)"
    ));
}

#[test]
fn landlock_blocked_by_a_container_is_named() {
    let caps = Capabilities::assess(&Facts {
        landlock_abi: Err(libc::EPERM),
        landlock_restrict: Trial::NotTried,
        container: Some("docker".into()),
        ..healthy()
    });
    assert!(has_line(
        &caps,
        Status::Missing,
        "Landlock refused: Operation not permitted (os error 1) (the container's seccomp \
         profile blocks it)"
    ));
    let caps = Capabilities::assess(&Facts {
        landlock_restrict: Trial::Errno(libc::EPERM),
        container: Some("docker".into()),
        ..healthy()
    });
    assert_eq!(caps.landlock_abi, None);
    assert!(has_line(
        &caps,
        Status::Missing,
        "restricting a process failed: Operation not permitted (os error 1) (the container's \
         seccomp profile blocks landlock_restrict_self)"
    ));
}

#[test]
fn disabled_unprivileged_user_namespaces_name_the_sysctl() {
    let facts = Facts {
        userns_clone: Some("0".into()),
        user_ns: Trial::Errno(libc::EPERM),
        ..healthy_user()
    };
    let caps = Capabilities::assess(&facts);
    assert_eq!(caps.mount_ns, MountNs::None);
    assert!(
        has_line(
            &caps,
            Status::Missing,
            "read-only .git/hooks, .git/config and .coding-agent/ need mount namespaces: \
             unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0"
        ),
        "{:?}",
        texts(&caps)
    );
    let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite, None));
    assert_eq!(summary.level, Level::Partial);
    assert_eq!(summary.label, "sandbox: landlock+seccomp (partial)");
    assert!(summary.missing[0].contains("commands can write them"));
    // read-only mode needs no carve-outs, but file metadata is left open all the same.
    let read_only = caps.summary(&policy(SandboxMode::ReadOnly, None));
    assert_eq!(read_only.level, Level::Partial);
    assert_eq!(read_only.label, "sandbox: landlock+seccomp (partial)");
    assert!(
        read_only
            .missing
            .iter()
            .any(|m| m.contains("read-only file metadata")),
        "{:?}",
        read_only.missing
    );
}

#[test]
fn apparmor_and_max_user_namespaces_are_named() {
    let apparmor = Capabilities::assess(&Facts {
        apparmor_userns: Some("1".into()),
        user_ns: Trial::Errno(libc::EACCES),
        ..healthy_user()
    });
    assert!(has_line(
        &apparmor,
        Status::Missing,
        "AppArmor restricts unprivileged user namespaces \
         (kernel.apparmor_restrict_unprivileged_userns=1"
    ));
    let max = Capabilities::assess(&Facts {
        max_user_namespaces: Some("0".into()),
        user_ns: Trial::Errno(libc::ENOSPC),
        ..healthy_user()
    });
    assert!(has_line(
        &max,
        Status::Missing,
        "user namespaces are disabled (user.max_user_namespaces=0)"
    ));
}

#[test]
fn root_in_a_container_without_cap_sys_admin() {
    let caps = Capabilities::assess(&Facts {
        mount_ns: Trial::Errno(libc::EPERM),
        user_ns: Trial::Errno(libc::EPERM),
        seccomp_mode: Some(2),
        container: Some("docker".into()),
        ..healthy()
    });
    assert_eq!(caps.mount_ns, MountNs::None);
    assert!(
        has_line(
            &caps,
            Status::Missing,
            "unshare(CLONE_NEWNS) failed as root (Operation not permitted (os error 1); the \
             container lacks CAP_SYS_ADMIN or its seccomp profile blocks unshare), and through \
             a user namespace: the container's seccomp profile or missing CAP_SYS_ADMIN \
             blocks unshare(2)"
        ),
        "{:?}",
        texts(&caps)
    );
}

#[test]
fn root_without_user_namespaces_falls_back_to_a_plain_mount_namespace() {
    let caps = Capabilities::assess(&Facts {
        mount_ns: Trial::Works,
        user_ns: Trial::Errno(libc::EPERM),
        // Only users that are not root are held back by this sysctl: not the reason.
        userns_clone: Some("0".into()),
        ..healthy()
    });
    assert_eq!(caps.mount_ns, MountNs::Plain);
    assert!(has_line(
        &caps,
        Status::Ok,
        "mount namespaces work (as root)"
    ));
    assert!(
        has_line(
            &caps,
            Status::Limited,
            "no user namespace for root's commands (unshare(CLONE_NEWUSER|CLONE_NEWNS) failed: \
             Operation not permitted (os error 1)): they keep root's capabilities and can read \
             other processes' /proc/<pid>/environ"
        ),
        "{:?}",
        texts(&caps)
    );
    let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite, None));
    assert_eq!(summary.level, Level::Full);
}

#[test]
fn nothing_at_all_is_none_and_full_access_is_off() {
    let caps = Capabilities::assess(&Facts {
        kernel_release: "4.19.0".into(),
        landlock_abi: Err(libc::ENOSYS),
        landlock_restrict: Trial::NotTried,
        seccomp: Trial::Errno(libc::EINVAL),
        mount_ns: Trial::Errno(libc::EPERM),
        user_ns: Trial::Errno(libc::EINVAL),
        ..healthy()
    });
    let summary = caps.summary(&policy(SandboxMode::WorkspaceWrite, Some(false)));
    assert_eq!(summary.level, Level::None);
    assert_eq!(summary.label, "sandbox: none");
    assert_eq!(summary.missing.len(), 5, "{:?}", summary.missing);
    assert!(has_line(
        &caps,
        Status::Missing,
        "the kernel was built without user namespaces (CONFIG_USER_NS)"
    ));
    let off = caps.summary(&policy(SandboxMode::DangerFullAccess, None));
    assert_eq!(off.level, Level::Off);
    assert_eq!(off.label, "sandbox: off");
    assert_eq!(
        Capabilities::none()
            .summary(&policy(SandboxMode::ReadOnly, None))
            .level,
        Level::None
    );
}

#[test]
fn kernel_versions_parse_from_distribution_release_strings() {
    for (release, version) in [
        ("6.1.0-18-amd64", Some((6, 1))),
        ("5.15.0-1051-azure", Some((5, 15))),
        ("6.18.44-fc-v1098", Some((6, 18))),
        ("garbage", None),
    ] {
        let facts = Facts {
            kernel_release: release.into(),
            ..healthy()
        };
        assert_eq!(facts.kernel_version(), version, "{release}");
    }
}

/// The real probe of this machine: whatever the kernel offers (CI has every layer; a laptop
/// with Ubuntu's AppArmor default or a container may lack user namespaces or Landlock), each
/// mechanism has exactly one verdict in the report, and one that is missing says why in
/// words, which `coding-agent doctor` prints. What each verdict means for real commands is
/// checked by the scenarios in `tests/confine.rs`.
#[test]
fn this_machine_gets_one_verdict_per_mechanism() {
    let facts = Facts::gather();
    let caps = Capabilities::assess(&facts);
    assert_eq!(caps.backend, Backend::Linux);
    let verdicts = |words: &[&str]| -> Vec<&ReportLine> {
        caps.report
            .iter()
            .filter(|l| l.status != Status::Limited)
            .filter(|l| words.iter().any(|w| l.text.starts_with(w)))
            .collect()
    };
    let landlock = verdicts(&["Landlock"]);
    assert_eq!(landlock.len(), 1, "{:?}", texts(&caps));
    assert_eq!(
        landlock[0].status == Status::Ok,
        caps.landlock_abi.is_some(),
        "{facts:?}"
    );
    let seccomp = verdicts(&["seccomp"]);
    assert_eq!(seccomp.len(), 1, "{:?}", texts(&caps));
    assert_eq!(seccomp[0].status == Status::Ok, caps.seccomp, "{facts:?}");
    let mounts = verdicts(&["mount namespaces", "user and mount", "read-only .git"]);
    assert!(!mounts.is_empty(), "{:?}", texts(&caps));
    assert_eq!(
        mounts[0].status == Status::Ok,
        caps.mount_ns != MountNs::None,
        "{facts:?}"
    );
    for missing in caps.report.iter().filter(|l| l.status == Status::Missing) {
        assert!(missing.text.contains(": "), "no reason given: {missing}");
    }
}
