//! The mounts a command sees, read from `/proc/self/mountinfo` in the agent before the fork:
//! which of them hold files a command could change the metadata of (modes, owners, times).
//!
//! Landlock governs writing files, not `chmod(2)`, `chown(2)` or `utimensat(2)`. Outside the
//! writable roots those are refused by remounting, in the command's own mount namespace, every
//! mount that holds ordinary files read-only (the writable roots bound onto themselves first,
//! so they stay writable): the kernel then answers EROFS. Pseudo file systems (`/proc`, `/sys`,
//! devices, cgroups) are left alone: they hold no user files, and some cannot be remounted
//! from a user namespace.

use std::path::{Path, PathBuf};

/// File system types that hold no user files.
const PSEUDO: &[&str] = &[
    "proc",
    "sysfs",
    "devpts",
    "devtmpfs",
    "cgroup",
    "cgroup2",
    "mqueue",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "binfmt_misc",
    "configfs",
    "fusectl",
    "hugetlbfs",
    "autofs",
    "efivarfs",
    "nsfs",
    "selinuxfs",
    "rpc_pipefs",
    "nfsd",
];

/// Trees of pseudo files, whatever their mounts' types.
const PSEUDO_TREES: &[&str] = &["/proc", "/sys", "/dev"];

/// Every mount point of `mountinfo`, and whether it holds ordinary files, without
/// duplicates.
pub(crate) fn mount_points(mountinfo: &str) -> Vec<(PathBuf, bool)> {
    let mut points: Vec<(PathBuf, bool)> = Vec::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        // `ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER`
        let Some(separator) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(point), Some(kind)) = (fields.get(4), fields.get(separator + 1)) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        let files = !PSEUDO.contains(kind)
            && !PSEUDO_TREES
                .iter()
                .any(|tree| point.starts_with(Path::new(tree)));
        // A later mount on the same point covers the earlier: its kind counts.
        match points.iter_mut().find(|(p, _)| *p == point) {
            Some(known) => known.1 = files,
            None => points.push((point, files)),
        }
    }
    points
}

/// The mount point `path` lies in: the longest of `points` that is a prefix of it.
pub(crate) fn containing<'a>(points: &'a [(PathBuf, bool)], path: &Path) -> Option<&'a Path> {
    points
        .iter()
        .map(|(point, _)| point.as_path())
        .filter(|point| path.starts_with(point))
        .max_by_key(|point| point.components().count())
}

/// A mount point as the kernel writes it: space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
            out.push(value as u8);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_file_systems_hold_no_files_and_names_are_unescaped() {
        let info = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
23 1 0:22 / /sys rw - sysfs sysfs rw
30 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
31 30 0:26 / /dev/shm rw - tmpfs tmpfs rw
40 30 0:30 / /sys/fs/cgroup ro - tmpfs tmpfs ro
41 30 8:2 / /home/me/my\\040disk rw master:3 - xfs /dev/sdb1 rw
42 30 0:31 / /tmp rw - tmpfs tmpfs rw
43 30 8:1 /x / rw - ext4 /dev/sda1 rw
";
        let files: Vec<PathBuf> = mount_points(info)
            .into_iter()
            .filter_map(|(point, files)| files.then_some(point))
            .collect();
        assert_eq!(
            files,
            vec![
                PathBuf::from("/"),
                PathBuf::from("/home/me/my disk"),
                PathBuf::from("/tmp")
            ]
        );
        let points = mount_points(info);
        assert_eq!(
            containing(&points, Path::new("/tmp/ws/src")),
            Some(Path::new("/tmp"))
        );
        assert_eq!(
            containing(&points, Path::new("/home/me/project")),
            Some(Path::new("/"))
        );
        assert_eq!(
            containing(&points, Path::new("/dev/shm")),
            Some(Path::new("/dev/shm"))
        );
    }
}
