//! Confining one command on Linux: everything is prepared in the parent ([`prepare`]), and
//! the forked child only makes system calls on it ([`Prepared::apply_in_child`]) before
//! `exec`.
//!
//! The layers, in the order the child applies them:
//!
//! 1. **User and mount namespaces.** Landlock rules only ever *add* rights beneath a
//!    directory, so they cannot make `.git/hooks` read-only inside a writable workspace. In
//!    `workspace-write`, when a protected path exists, the child enters a mount namespace of
//!    its own, makes `/` private so nothing propagates back to the agent, and bind-mounts
//!    each protected path onto itself read-only: writes there fail with EROFS. A path that
//!    does not exist yet (no `.coding-agent/`) cannot be bind-mounted: the command may
//!    create it, which is reported in [`Prepared::left_out`] and refused after the command
//!    ([`crate::planted`]). The git directories are bound
//!    onto themselves first (writable): a mount point cannot be renamed, so `.git` cannot be
//!    moved aside and replaced by a copy with hooks. A user that is not root gets
//!    the mount namespace through a user namespace that maps it to itself. Root enters a
//!    user namespace that maps every id to itself for *every* confined command when the
//!    kernel allows it: the command keeps root's rights over files but holds its
//!    capabilities only inside that namespace, which matters because Landlock lets a
//!    capable root still read other processes' `/proc/<pid>/environ` (the agent's API
//!    keys). Without user namespaces root uses a plain `unshare(CLONE_NEWNS)`.
//! 2. **`no_new_privs`**: exec can no longer grant privileges (no `sudo`, no setuid); both
//!    following layers require it of an unprivileged process.
//! 3. **Landlock**: reads (and execution) everywhere, writes only beneath the writable roots
//!    and to the harmless devices ([`crate::policy::WRITABLE_DEVICES`]). Handled: every
//!    file-system right up to ABI 5, and ABI 6's scopes: a command can signal, and connect to
//!    an abstract Unix socket of, only processes inside its own sandbox (not the agent, not
//!    the user's editor or a local server); an older kernel enforces what it knows (best
//!    effort) and the gaps are reported. A Landlock domain also forbids ptrace and `/proc/<pid>/mem`,
//!    `/proc/<pid>/root` (and, for a non-root user, `/proc/<pid>/environ`) of processes
//!    outside it, so a command cannot reach the agent's mount namespace through
//!    `/proc/<agent>/root`, and it forbids mount/umount, so the read-only binds cannot be
//!    undone.
//! 4. **seccomp**: no set-user-ID or set-group-ID bit may be set and no file given to another
//!    owner ([`command_filter`]); with the network off, `socket(2)` with any family but
//!    `AF_UNIX` fails with EPERM, and so does `io_uring_setup(2)` (io_uring can open sockets without the `socket`
//!    system call). seccomp sees the arguments of a call, never the address a socket will
//!    reach, so loopback is refused too: a command cannot talk to a local server over
//!    TCP/UDP while the network is off. Unix sockets still work (X11, D-Bus, ssh-agent,
//!    docker). 32-bit (i386) system calls are killed by the filter's architecture check.
//!
//! Every layer applies to the command and everything it starts, background jobs and
//! daemons included: namespaces, `no_new_privs`, Landlock domains and seccomp filters are
//! inherited across fork and exec and cannot be dropped.
//!
//! The mount namespace also hides the agent's own files and `deny_read` (an empty tmpfs, or
//! `/dev/null`, over each), and remounts read-only every mount holding files outside the
//! writable roots ([`metadata_plan`]), so modes, owners and times cannot change there.
//!
//! What this does not protect against: reading what is not hidden (`~/.ssh` unless listed in
//! `deny_read`; with the network on it can be sent away), writes through file descriptors
//! inherited from the agent (stdout, stderr), Unix sockets to daemons that act with more
//! privileges (docker), and kernel bugs. Without Landlock the mounts alone are a guard
//! against mistakes, not against a hostile command (it can reach the agent's namespace
//! through `/proc/<agent>/root`).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::confine::{Prepared, SandboxError};
use crate::linux::child::{self, Bind, Hide, MountPlan, Remount, UserNs};
use crate::policy::{Policy, WRITABLE_DEVICES};
use crate::probe::{Capabilities, MountNs};

/// The file-system rights we know and handle: all of them up to ABI 5 (ABI 6 and 7 add no
/// file-system right; ABI 9's `ResolveUnix` would forbid connecting to Unix sockets, which
/// the policy allows).
const HANDLED_ABI: landlock::ABI = landlock::ABI::V5;

/// The Linux layers of one command's confinement, ready to apply in its child.
#[derive(Debug, Default)]
pub(crate) struct Layers {
    /// The Landlock ruleset (close-on-exec: the command does not inherit it).
    landlock: Option<OwnedFd>,
    /// The seccomp program (network off).
    seccomp: Option<BpfProgram>,
    /// The mount namespace and its read-only binds.
    mounts: Option<MountPlan>,
}

/// Prepares the Linux layers of one command under `policy` with what `capabilities` says the
/// kernel offers, into `prepared`. Everything that allocates or reads the file system happens
/// here, in the parent.
pub(crate) fn prepare(
    policy: &Policy,
    capabilities: &Capabilities,
    prepared: &mut Prepared,
) -> Result<(), SandboxError> {
    let layers = &mut prepared.linux;
    if capabilities.mount_ns != MountNs::None {
        let (plan, absent) = mount_plan(policy, capabilities.mount_ns)?;
        prepared.left_out.extend(absent);
        if let Some(plan) = plan {
            if plan.user_ns.is_some() {
                prepared.layers.push("userns");
            }
            if !plan.binds.is_empty() || !plan.hides.is_empty() || !plan.read_only.is_empty() {
                prepared.layers.push("mountns");
            }
            layers.mounts = Some(plan);
        }
    }
    if capabilities.landlock_abi.is_some() {
        match landlock_ruleset(policy)? {
            Some(fd) => {
                layers.landlock = Some(fd);
                prepared.layers.push("landlock");
            }
            None => prepared
                .left_out
                .push("Landlock: the kernel refused to create a ruleset".into()),
        }
    }
    if capabilities.seccomp {
        let (uid, gid) = child::effective_ids();
        layers.seccomp = Some(cached_filter(policy.network, uid, gid)?);
        prepared.layers.push("seccomp");
    }
    Ok(())
}

impl Layers {
    /// Whether there is nothing to apply.
    pub(crate) fn is_empty(&self) -> bool {
        self.landlock.is_none() && self.seccomp.is_none() && self.mounts.is_none()
    }

    /// Applies the layers to the calling process; see [`Prepared::apply_in_child`].
    ///
    /// # Safety
    ///
    /// As [`Prepared::apply_in_child`]: only in a forked child before exec.
    pub(crate) unsafe fn apply_in_child(&self) -> io::Result<()> {
        if let Some(plan) = &self.mounts {
            child::enter_mount_namespace(plan)?;
        }
        if self.landlock.is_some() || self.seccomp.is_some() {
            child::no_new_privs()?;
        }
        if let Some(fd) = &self.landlock {
            child::landlock_restrict_self(fd.as_raw_fd())?;
        }
        if let Some(program) = &self.seccomp {
            child::seccomp_set_filter(program)?;
        }
        Ok(())
    }

    /// Records the command's working directory, entered again after the mounts (a cwd
    /// inside a protected path would otherwise still point at the writable mount).
    pub(crate) fn set_cwd(&mut self, cwd: Option<&Path>) {
        if let Some(plan) = self.mounts.as_mut() {
            let cwd = cwd
                .map(Path::to_path_buf)
                .or_else(|| std::env::current_dir().ok())
                .map(|dir| std::path::absolute(&dir).unwrap_or(dir));
            plan.cwd = cwd.and_then(|dir| CString::new(dir.as_os_str().as_bytes()).ok());
        }
    }
}

/// The namespaces of one command: the protected paths that exist now (a sentence for each
/// that does not: it cannot be bind-mounted, so a command may create it), and the user
/// namespace to enter first. Root always enters one when it can, even with nothing to
/// bind: holding its capabilities only there, a root command cannot read other processes'
/// `/proc/<pid>/environ` (Landlock alone lets root do that) nor act on the rest of the
/// system (modules, sysctls, the host's network configuration). `None` when there is
/// nothing to do.
fn mount_plan(
    policy: &Policy,
    method: MountNs,
) -> Result<(Option<MountPlan>, Vec<String>), SandboxError> {
    let mut binds = Vec::new();
    let mut absent = Vec::new();
    let protected = policy.protected_paths();
    if !protected.is_empty() {
        // The git directories become mount points (writable) first, so they cannot be
        // renamed away and replaced; the read-only binds inside them follow.
        let mut dirs = policy.git_dirs();
        // An enclosing directory first (a worktree's common dir holds its git dir): a bind
        // made later on an enclosing path would hide the earlier one.
        dirs.sort_by_key(|d| d.components().count());
        dirs.dedup();
        for dir in dirs {
            if dir.is_dir() {
                binds.push(Bind {
                    path: c_path(&dir)?,
                    remount_flags: None,
                });
            }
        }
    }
    for path in protected {
        if std::fs::symlink_metadata(&path).is_err() {
            // Normally absent, and said once in the docs rather than for every command.
            let expected = ["config.worktree", "commondir", "gitdir", "info"]
                .iter()
                .any(|name| path.file_name() == Some(std::ffi::OsStr::new(name)));
            if !expected {
                absent.push(format!(
                    "{} does not exist yet, so it cannot be made read-only: a command may \
                     create it",
                    path.display()
                ));
            }
            continue;
        }
        let path = c_path(&path)?;
        let Some(flags) = child::mount_flags(&path) else {
            continue;
        };
        binds.push(Bind {
            path,
            remount_flags: Some(libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags),
        });
    }
    // Only writable binds (no protected path exists): nothing worth a namespace.
    if binds.iter().all(|b| b.remount_flags.is_none()) {
        binds.clear();
    }
    let mut hides = Vec::new();
    for path in policy.hidden_paths() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // A symlink is hidden where it leads (a mount follows it).
        let dir = if meta.file_type().is_symlink() {
            path.is_dir()
        } else {
            meta.is_dir()
        };
        hides.push(Hide {
            path: c_path(&path)?,
            dir,
        });
    }
    let (writable, read_only) = metadata_plan(policy)?;
    let (uid, gid) = child::effective_ids();
    let user_ns = match method {
        MountNs::User if uid == 0 => Some(UserNs::All),
        MountNs::User => Some(UserNs::Own {
            uid_map: child::self_map(uid),
            gid_map: child::self_map(gid),
        }),
        MountNs::Plain | MountNs::None => None,
    };
    let needed = !binds.is_empty()
        || !hides.is_empty()
        || !read_only.is_empty()
        || matches!(user_ns, Some(UserNs::All));
    if !needed {
        return Ok((None, absent));
    }
    Ok((
        Some(MountPlan {
            user_ns,
            writable,
            binds,
            hides,
            read_only,
            cwd: None,
        }),
        absent,
    ))
}

/// The writable roots to bind onto themselves, and every mount holding ordinary files outside
/// them to make read-only (see [`crate::linux::mounts`]): file metadata outside the writable
/// roots cannot change. Both empty if the mount table cannot be read.
fn metadata_plan(policy: &Policy) -> Result<(Vec<CString>, Vec<Remount>), SandboxError> {
    let roots = policy.writable_roots();
    let mut table = MOUNT_TABLE.lock().unwrap_or_else(|e| e.into_inner());
    if table.as_ref().is_none_or(MountTable::changed) {
        *table = MountTable::read();
    }
    let Some(table) = table.as_ref() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let remounted: Vec<&(PathBuf, Remount)> = table
        .remountable
        .iter()
        .filter(|(point, _)| !roots.iter().any(|root| point.starts_with(root)))
        .collect();
    let mut writable = Vec::new();
    for root in &roots {
        // A root inside another root is bound with it; one that is a mount point of its own,
        // or lies in a mount left as it is, keeps its own mount's flags.
        let nested = roots
            .iter()
            .any(|other| other != root && root.starts_with(other));
        let in_remounted =
            crate::linux::mounts::containing(&table.points, root).is_some_and(|mount| {
                mount != root.as_path() && remounted.iter().any(|(point, _)| point == mount)
            });
        // A file too (an extra writable path may be one): a bind works on either.
        if !nested && in_remounted && root.exists() {
            writable.push(c_path(root)?);
        }
    }
    let read_only = remounted.into_iter().map(|(_, r)| r.clone()).collect();
    Ok((writable, read_only))
}

/// The mounts this process sees, read once and again only when the kernel says the table
/// changed (`/proc/self/mountinfo` polls with `POLLPRI` then), so a command does not pay a
/// `statvfs` per mount.
static MOUNT_TABLE: std::sync::Mutex<Option<MountTable>> = std::sync::Mutex::new(None);

struct MountTable {
    /// Kept open: the handle `poll` watches.
    file: std::fs::File,
    points: Vec<(PathBuf, bool)>,
    /// The mounts holding files that are not read-only already, with their remount.
    remountable: Vec<(PathBuf, Remount)>,
}

impl MountTable {
    fn read() -> Option<MountTable> {
        use std::io::Read;
        let mut file = std::fs::File::open("/proc/self/mountinfo").ok()?;
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        let points = crate::linux::mounts::mount_points(&text);
        let mut remountable = Vec::new();
        for (point, files) in &points {
            let Ok(path) = c_path(point) else {
                continue;
            };
            if !files || child::is_read_only(&path) {
                continue;
            }
            let Some(flags) = child::mount_flags(&path) else {
                continue;
            };
            let remount = Remount {
                path,
                flags: libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags,
            };
            remountable.push((point.clone(), remount));
        }
        Some(MountTable {
            file,
            points,
            remountable,
        })
    }

    /// Whether a mount was made or removed since the table was read.
    fn changed(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        ready != 0
    }
}

/// [`command_filter`], compiled once per combination (a session uses one or two).
fn cached_filter(network: bool, uid: u32, gid: u32) -> Result<BpfProgram, SandboxError> {
    type Compiled = Vec<((bool, u32, u32), BpfProgram)>;
    static FILTERS: std::sync::Mutex<Compiled> = std::sync::Mutex::new(Vec::new());
    let key = (network, uid, gid);
    let mut filters = FILTERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, program)) = filters.iter().find(|(k, _)| *k == key) {
        return Ok(program.clone());
    }
    let program = command_filter(network, uid, gid)?;
    filters.push((key, program.clone()));
    Ok(program)
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Mount(format!("{} holds a NUL byte", path.display())))
}

/// The Landlock ruleset of `policy`: read and execute beneath `/`, everything beneath the
/// writable roots, and the harmless devices. `None` if the kernel has no Landlock after all.
fn landlock_ruleset(policy: &Policy) -> Result<Option<OwnedFd>, SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
    };
    let error = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let all = AccessFs::from_all(HANDLED_ABI);
    let writable: Vec<PathBuf> = policy.writable_roots();
    // `path_beneath_rules` skips paths that do not exist and keeps only file rights for a
    // file (the devices).
    let created = Ruleset::default()
        .handle_access(all)
        .map_err(error)?
        // Signals and abstract Unix sockets reach only processes inside the sandbox (ABI 6;
        // an older kernel drops this, best effort, and the report says so).
        .scope(Scope::from_all(ABI::V6))
        .map_err(error)?
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(HANDLED_ABI)))
        .map_err(error)?
        .add_rules(path_beneath_rules(&writable, all))
        .map_err(error)?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, all))
        .map_err(error)?;
    Ok(created.into())
}

fn target_arch() -> Result<TargetArch, SandboxError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

/// On x86-64 the x32 ABI reaches the same system calls with this bit set in their number;
/// the filter refuses those numbers too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// `fchmodat2(2)` (Linux 6.6): the same number on every architecture, not in every libc yet.
const SYS_FCHMODAT2: i64 = 452;

/// The filter of every confined command, run as `uid`/`gid`: nothing may set the set-user-ID
/// or set-group-ID bit of a file (`chmod`, `fchmod`, `fchmodat`, `fchmodat2`), nor give a file
/// to another owner or group (the `chown` family; to one's own ids, or `-1`, is allowed: it
/// changes nothing another user could use). A root command could otherwise leave a setuid
/// binary behind for the user to run outside the sandbox, or take over another user's file.
/// With the network off, also: `socket(2)` with a family other than `AF_UNIX`, and
/// `io_uring_setup(2)`, fail with EPERM. Everything else is allowed.
pub(crate) fn command_filter(
    network: bool,
    uid: u32,
    gid: u32,
) -> Result<BpfProgram, SandboxError> {
    let error = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(error)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(error);
    // A mode with the setuid or the setgid bit: one rule each (rules of a call are ORed).
    let set_id_bits = |arg: u8| -> Result<Vec<SeccompRule>, SandboxError> {
        let bits = [libc::S_ISUID as u64, libc::S_ISGID as u64];
        bits.iter()
            .map(|&bit| rule(vec![condition(arg, SeccompCmpOp::MaskedEq(bit), bit)?]))
            .collect()
    };
    // An owner (or group) that is neither the caller's nor -1 ("leave it").
    let other_owner = |owner: u8, group: u8| -> Result<Vec<SeccompRule>, SandboxError> {
        let unchanged = u64::from(u32::MAX);
        Ok(vec![
            rule(vec![
                condition(owner, SeccompCmpOp::Ne, u64::from(uid))?,
                condition(owner, SeccompCmpOp::Ne, unchanged)?,
            ])?,
            rule(vec![
                condition(group, SeccompCmpOp::Ne, u64::from(gid))?,
                condition(group, SeccompCmpOp::Ne, unchanged)?,
            ])?,
        ])
    };
    let mut calls: Vec<(i64, Vec<SeccompRule>)> = vec![
        (libc::SYS_fchmod, set_id_bits(1)?),
        (libc::SYS_fchmodat, set_id_bits(2)?),
        (SYS_FCHMODAT2, set_id_bits(2)?),
        (libc::SYS_fchown, other_owner(1, 2)?),
        (libc::SYS_fchownat, other_owner(2, 3)?),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, set_id_bits(1)?),
        (libc::SYS_chown, other_owner(1, 2)?),
        (libc::SYS_lchown, other_owner(1, 2)?),
    ]);
    if !network {
        let not_unix = rule(vec![condition(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?;
        calls.push((libc::SYS_socket, vec![not_unix]));
        // An empty rule list matches every call.
        calls.push((libc::SYS_io_uring_setup, Vec::new()));
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (call, call_rules) in calls {
        // x32 reaches the same calls with a bit set in their number.
        #[cfg(target_arch = "x86_64")]
        rules.insert(X32_SYSCALL_BIT | call, call_rules.clone());
        rules.insert(call, call_rules);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target_arch()?,
    )
    .map_err(error)?;
    filter.try_into().map_err(error)
}

/// A filter that allows everything (after the architecture check): what the probe installs.
pub(crate) fn allow_all_filter() -> Result<BpfProgram, SandboxError> {
    let error = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    SeccompFilter::new(
        BTreeMap::new(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target_arch()?,
    )
    .map_err(error)?
    .try_into()
    .map_err(error)
}
