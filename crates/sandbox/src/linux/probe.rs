//! What the Linux kernel offers for confining commands, found once at startup, in words a
//! user can act on.
//!
//! Probing is split in two so the wording can be tested for machines we do not have:
//! [`Facts::gather`] collects raw facts (the Landlock ABI version or the errno of asking for
//! it, the outcome of trying each mechanism in a throw-away forked child, a few `/proc/sys`
//! and `/sys` files), and [`Capabilities::assess`], a pure function, turns facts into what
//! can be used and a report (`coding-agent doctor` prints it line by line). Each mechanism is
//! tried for real in a child rather than inferred from the kernel version: a container's
//! seccomp profile, a disabled LSM or a sysctl can refuse what the version promises, and the
//! agent's own process must never be the one that gets confined or namespaced.

use crate::linux::child::{self, MountPlan, Trial, UserNs};
use crate::probe::{Backend, Capabilities, LANDLOCK_GAPS, MountNs, ReportLine, Status, line};

/// The raw facts the assessment works from; gathered by [`Facts::gather`], or made up by
/// tests to stand for another machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// `/proc/sys/kernel/osrelease`, e.g. `6.1.0-18-amd64`.
    pub kernel_release: String,
    /// Whether the agent runs as root (effective uid 0).
    pub root: bool,
    /// `landlock_create_ruleset(NULL, 0, VERSION)`: the ABI version, or the errno.
    pub landlock_abi: Result<u32, i32>,
    /// Restricting a child with a Landlock ruleset.
    pub landlock_restrict: Trial,
    /// `/sys/kernel/security/lsm`, when readable (securityfs is often not mounted).
    pub lsm: Option<String>,
    /// Installing a seccomp filter in a child.
    pub seccomp: Trial,
    /// The `Seccomp:` field of `/proc/self/status`: 2 means the agent already runs under a
    /// filter (a container's profile).
    pub seccomp_mode: Option<u32>,
    /// A container detected from `/.dockerenv`, `/run/.containerenv` or `/proc/1/cgroup`.
    pub container: Option<String>,
    /// `unshare(CLONE_NEWNS)` and a private `/` in a child (tried by root, when the user
    /// namespace below fails).
    pub mount_ns: Trial,
    /// The same inside a new user namespace: mapping every id for root, the user itself
    /// otherwise.
    pub user_ns: Trial,
    /// `/proc/sys/kernel/unprivileged_userns_clone` (Debian, Ubuntu kernels).
    pub userns_clone: Option<String>,
    /// `/proc/sys/user/max_user_namespaces`.
    pub max_user_namespaces: Option<String>,
    /// `/proc/sys/kernel/apparmor_restrict_unprivileged_userns` (Ubuntu 23.10+).
    pub apparmor_userns: Option<String>,
}

/// The first kernel with Landlock.
const LANDLOCK_KERNEL: (u32, u32) = (5, 13);

/// Probes this machine: [`Facts::gather`] then [`Capabilities::assess`]. Forks a few short
/// children; takes a few milliseconds.
pub(crate) fn probe() -> Capabilities {
    Capabilities::assess(&Facts::gather())
}

impl Facts {
    /// Gathers the facts of this machine, trying each mechanism in a forked child.
    pub fn gather() -> Facts {
        let root = child::effective_ids().0 == 0;
        let landlock_abi = landlock_version();
        let landlock_restrict = if landlock_abi.is_ok() {
            try_landlock()
        } else {
            Trial::NotTried
        };
        // Root first tries a user namespace mapping every id (commands then hold root's
        // capabilities only there), and the plain mount namespace only if that fails; any
        // other user needs a user namespace mapping itself.
        let (uid, gid) = child::effective_ids();
        let user_plan = MountPlan {
            user_ns: Some(if root {
                UserNs::All
            } else {
                UserNs::Own {
                    uid_map: child::self_map(uid),
                    gid_map: child::self_map(gid),
                }
            }),
            ..MountPlan::default()
        };
        let user_ns = child::trial(|| child::enter_mount_namespace(&user_plan));
        let mount_ns = if root && user_ns != Trial::Works {
            child::trial(|| child::enter_mount_namespace(&MountPlan::default()))
        } else {
            Trial::NotTried
        };
        Facts {
            kernel_release: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
            root,
            landlock_abi,
            landlock_restrict,
            lsm: read_trimmed("/sys/kernel/security/lsm"),
            seccomp: try_seccomp(),
            seccomp_mode: read_trimmed("/proc/self/status").and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Seccomp:"))
                    .and_then(|v| v.trim().parse().ok())
            }),
            container: detect_container(),
            mount_ns,
            user_ns,
            userns_clone: read_trimmed("/proc/sys/kernel/unprivileged_userns_clone"),
            max_user_namespaces: read_trimmed("/proc/sys/user/max_user_namespaces"),
            apparmor_userns: read_trimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        }
    }

    /// The kernel's major and minor version, if the release string has them.
    fn kernel_version(&self) -> Option<(u32, u32)> {
        let mut parts = self
            .kernel_release
            .split(|c: char| !c.is_ascii_digit())
            .map(str::parse::<u32>);
        match (parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
            _ => None,
        }
    }

    /// Whether a refusal may come from a container's seccomp profile.
    fn contained(&self) -> bool {
        self.container.is_some() || self.seccomp_mode == Some(2)
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn landlock_version() -> Result<u32, i32> {
    // SAFETY: with a null attribute and size 0, the VERSION flag only returns a number.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            child::LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS))
    } else {
        Ok(u32::try_from(version).unwrap_or(0))
    }
}

/// Restricts a child with a small real ruleset: the kernel may answer the version query yet
/// refuse `landlock_restrict_self` (a seccomp profile that filters it).
fn try_landlock() -> Trial {
    use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr};
    use std::os::fd::{AsRawFd, OwnedFd};
    let fd: Option<OwnedFd> = match Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
    {
        Ok(created) => created.into(),
        Err(_) => None,
    };
    let Some(fd) = fd else {
        return Trial::Errno(libc::EOPNOTSUPP);
    };
    let raw = fd.as_raw_fd();
    child::trial(|| {
        child::no_new_privs()?;
        child::landlock_restrict_self(raw)
    })
}

/// Installs an allow-everything filter in a child.
fn try_seccomp() -> Trial {
    let Ok(program) = crate::linux::confine::allow_all_filter() else {
        return Trial::Errno(libc::EINVAL);
    };
    child::trial(|| {
        child::no_new_privs()?;
        child::seccomp_set_filter(&program)
    })
}

fn detect_container() -> Option<String> {
    if std::path::Path::new("/.dockerenv").exists() {
        return Some("docker".into());
    }
    if std::path::Path::new("/run/.containerenv").exists() {
        return Some("podman".into());
    }
    let cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    ["docker", "kubepods", "containerd", "lxc", "libpod"]
        .into_iter()
        .find(|kind| cgroup.contains(kind))
        .map(str::to_string)
}

fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

impl Capabilities {
    /// Decides from `facts` what can be used and words the report. Pure: tests feed it the
    /// facts of machines they are not running on.
    pub fn assess(facts: &Facts) -> Capabilities {
        let mut report = Vec::new();
        let landlock_abi = assess_landlock(facts, &mut report);
        let seccomp = assess_seccomp(facts, &mut report);
        let mount_ns = assess_mount(facts, &mut report);
        Capabilities {
            backend: Backend::Linux,
            landlock_abi,
            seccomp,
            mount_ns,
            report,
            ..Capabilities::default()
        }
    }
}

fn assess_landlock(facts: &Facts, report: &mut Vec<ReportLine>) -> Option<u32> {
    let kernel = facts.kernel_version();
    let abi = match facts.landlock_abi {
        Ok(abi) if abi > 0 => abi,
        Ok(_) | Err(libc::ENOSYS) => {
            let text = match kernel {
                Some(k) if k < LANDLOCK_KERNEL => format!(
                    "Landlock not available: kernel {}.{} < {}.{}",
                    k.0, k.1, LANDLOCK_KERNEL.0, LANDLOCK_KERNEL.1
                ),
                _ if facts.contained() => "Landlock not available: the landlock system calls \
                     are missing (the container's seccomp profile hides them, or the kernel \
                     was built without CONFIG_SECURITY_LANDLOCK)"
                    .to_string(),
                _ => "Landlock not available: the kernel was built without it \
                      (CONFIG_SECURITY_LANDLOCK)"
                    .to_string(),
            };
            line(report, Status::Missing, text);
            return None;
        }
        Err(libc::EOPNOTSUPP) => {
            let text = match &facts.lsm {
                Some(list) => format!(
                    "Landlock disabled: not in the kernel's LSM list \
                     (/sys/kernel/security/lsm: {list}); add landlock to the lsm= boot parameter"
                ),
                None => "Landlock disabled: built into the kernel but not enabled at boot; \
                         add landlock to the lsm= boot parameter"
                    .to_string(),
            };
            line(report, Status::Missing, text);
            return None;
        }
        Err(errno) => {
            let why = if facts.contained() {
                " (the container's seccomp profile blocks it)"
            } else {
                ""
            };
            line(
                report,
                Status::Missing,
                format!("Landlock refused: {}{why}", errno_text(errno)),
            );
            return None;
        }
    };
    match facts.landlock_restrict {
        Trial::Works | Trial::NotTried => {}
        Trial::Errno(errno) => {
            let why = if facts.contained() {
                " (the container's seccomp profile blocks landlock_restrict_self)"
            } else {
                ""
            };
            line(
                report,
                Status::Missing,
                format!(
                    "Landlock ABI {abi} is there but restricting a process failed: {}{why}",
                    errno_text(errno)
                ),
            );
            return None;
        }
        Trial::Signal(signal) => {
            line(
                report,
                Status::Missing,
                format!(
                    "Landlock ABI {abi} is there but a test process was killed by signal \
                     {signal} when restricted"
                ),
            );
            return None;
        }
    }
    let scoped = if abi >= 6 {
        "; they cannot signal, nor connect to the abstract Unix sockets of, processes outside \
         their sandbox"
    } else {
        ""
    };
    line(
        report,
        Status::Ok,
        format!(
            "Landlock ABI {abi}: commands read everywhere and write only where the policy \
             allows{scoped}"
        ),
    );
    for (_, gap) in LANDLOCK_GAPS.iter().filter(|(needs, _)| abi < *needs) {
        line(
            report,
            Status::Limited,
            format!("Landlock ABI {abi}: {gap}"),
        );
    }
    Some(abi)
}

fn assess_seccomp(facts: &Facts, report: &mut Vec<ReportLine>) -> bool {
    let text = match facts.seccomp {
        Trial::Works | Trial::NotTried => {
            line(
                report,
                Status::Ok,
                "seccomp filters work: commands cannot set setuid/setgid bits nor chown files \
                 to another owner, and with the network off cannot open non-Unix sockets"
                    .to_string(),
            );
            return true;
        }
        Trial::Errno(libc::EINVAL) if !facts.contained() => {
            "seccomp not available: the kernel was built without seccomp filters \
             (CONFIG_SECCOMP_FILTER); the network cannot be turned off for commands"
                .to_string()
        }
        Trial::Errno(_) if facts.contained() => {
            "seccomp refused: the container's seccomp profile blocks it; the network cannot be \
             turned off for commands (allow seccomp(2) in the container's profile)"
                .to_string()
        }
        Trial::Errno(errno) => format!(
            "seccomp refused: {}; the network cannot be turned off for commands",
            errno_text(errno)
        ),
        Trial::Signal(signal) => format!(
            "seccomp refused: a test process was killed by signal {signal}; the network \
             cannot be turned off for commands"
        ),
    };
    line(report, Status::Missing, text);
    false
}

/// Why the user namespace trial failed, in words a user can act on.
fn userns_reason(facts: &Facts) -> String {
    match facts.user_ns {
        // These two only hold back users that are not root.
        _ if !facts.root && facts.userns_clone.as_deref() == Some("0") => {
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0; \
             set it to 1 with sysctl)"
                .to_string()
        }
        _ if !facts.root && facts.apparmor_userns.as_deref() == Some("1") => {
            "AppArmor restricts unprivileged user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns=1; allow it with an AppArmor \
             profile for coding-agent or set the sysctl to 0)"
                .to_string()
        }
        _ if facts.max_user_namespaces.as_deref() == Some("0") => {
            "user namespaces are disabled (user.max_user_namespaces=0)".to_string()
        }
        Trial::Errno(libc::EINVAL) => {
            "the kernel was built without user namespaces (CONFIG_USER_NS)".to_string()
        }
        Trial::Errno(libc::EPERM | libc::EACCES | libc::ENOSYS) if facts.contained() => {
            "the container's seccomp profile or missing CAP_SYS_ADMIN blocks unshare(2)".to_string()
        }
        Trial::Errno(errno) => format!(
            "unshare(CLONE_NEWUSER|CLONE_NEWNS) failed: {}",
            errno_text(errno)
        ),
        Trial::Signal(signal) => format!("a test process was killed by signal {signal}"),
        Trial::Works | Trial::NotTried => "not tried".to_string(),
    }
}

fn assess_mount(facts: &Facts, report: &mut Vec<ReportLine>) -> MountNs {
    const NEEDS: &str = "read-only .git/hooks, .git/config and .coding-agent/ need mount \
                         namespaces";
    if facts.user_ns == Trial::Works {
        let text = if facts.root {
            "user and mount namespaces work: .git/hooks, .git/config and .coding-agent/ are \
             read-only for commands, so is file metadata outside the writable paths, the \
             agent's own files are hidden, and root's commands hold its capabilities only in \
             their own user namespace"
        } else {
            "mount namespaces work through an unprivileged user namespace: .git/hooks, \
             .git/config and .coding-agent/ are read-only for commands, so is file metadata \
             outside the writable paths, and the agent's own files are hidden"
        };
        line(report, Status::Ok, text.to_string());
        return MountNs::User;
    }
    if facts.mount_ns == Trial::Works {
        line(
            report,
            Status::Ok,
            "mount namespaces work (as root): .git/hooks, .git/config and .coding-agent/ are \
             read-only for commands, so is file metadata outside the writable paths, and the \
             agent's own files are hidden"
                .to_string(),
        );
        line(
            report,
            Status::Limited,
            format!(
                "no user namespace for root's commands ({}): they keep root's capabilities \
                 and can read other processes' /proc/<pid>/environ",
                userns_reason(facts)
            ),
        );
        return MountNs::Plain;
    }
    let userns_why = userns_reason(facts);
    let text = match facts.mount_ns {
        Trial::Errno(errno) => format!(
            "{NEEDS}: unshare(CLONE_NEWNS) failed as root ({}; the container lacks \
             CAP_SYS_ADMIN or its seccomp profile blocks unshare), and through a user \
             namespace: {userns_why}",
            errno_text(errno)
        ),
        _ => format!("{NEEDS}: {userns_why}"),
    };
    line(report, Status::Missing, text);
    MountNs::None
}

#[cfg(test)]
mod tests;
