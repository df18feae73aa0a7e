//! Restoring paths as a snapshot has them: bytes, executable bits, symlinks as symlinks,
//! never through a symlink out of the workspace, and only the given paths.
//!
//! Unix only: executable bits, symbolic links and inodes are what it checks.
#![cfg(unix)]

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::PathBuf;

use checkpoint::{CheckpointError, Resolution};
use common::{Fixture, shown, tree_paths};

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_binary_file_comes_back_byte_for_byte_with_its_executable_bit() {
    let f = Fixture::new();
    let mut binary: Vec<u8> = (0..=255).collect();
    binary.extend(pseudo_random(300_000, 42));
    binary.extend(b"\r\n\0\r");
    f.write("blob.bin", &binary);
    f.write("run.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(f.path("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    f.write("plain.txt", "p\n");
    fs::set_permissions(f.path("plain.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.sh("printf 'garbage' > blob.bin && chmod -x run.sh && chmod +x plain.txt");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    assert_eq!(
        shown(&cp.changed),
        ["M blob.bin", "M plain.txt", "M run.sh"]
    );
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("blob.bin"), binary);
    let mode = |rel: &str| fs::metadata(f.path(rel)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(mode("plain.txt"), 0o640, "other permission bits are kept");
}

#[test]
fn symlinks_come_back_as_symlinks_and_are_never_followed() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    f.write("target.txt", "t\n");
    symlink("target.txt", f.path("link")).unwrap();
    symlink(outside.path(), f.path("out")).unwrap();
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    // Stored as links: nothing of the outside directory is read.
    assert_eq!(
        tree_paths(&store, &before.tree),
        ["link", "out", "target.txt"]
    );
    f.sh("rm link && echo 'now a file' > link && rm out");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    assert_eq!(shown(&cp.changed), ["T link", "D out"]);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(
        fs::read_link(f.path("link")).unwrap(),
        PathBuf::from("target.txt")
    );
    assert_eq!(fs::read_link(f.path("out")).unwrap(), outside.path());
    assert_eq!(
        fs::read(outside.path().join("secret.txt")).unwrap(),
        b"outside\n"
    );
}

#[test]
fn a_path_under_a_symlink_pointing_outside_is_refused() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("f.txt"), "outside\n").unwrap();
    f.write("d/f.txt", "inside\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    // The agent swaps the directory for a link to the outside directory.
    f.sh(&format!("rm -r d && ln -s {} d", outside.path().display()));
    let after = store.snapshot().unwrap();
    // Restoring d/f.txt alone (its parent is the link): refused, in both directions.
    for tree in [&before.tree, &after.tree] {
        let done = store.restore(tree, &[PathBuf::from("d/f.txt")]).unwrap();
        assert_eq!(done.failed.len(), 1, "{done:?}");
        assert!(done.failed[0].reason.contains("symlink"), "{done:?}");
    }
    assert_eq!(
        fs::read(outside.path().join("f.txt")).unwrap(),
        b"outside\n"
    );
    // Undoing the step removes the link itself first, then writes the directory back.
    let cp = store.checkpoint(&before, &after).unwrap();
    assert_eq!(shown(&cp.changed), ["A d", "D d/f.txt"]);
    let applied = store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert!(applied.failed.is_empty(), "{:?}", applied.failed);
    assert!(fs::symlink_metadata(f.path("d")).unwrap().is_dir());
    assert_eq!(f.read("d/f.txt"), b"inside\n");
    assert_eq!(
        fs::read(outside.path().join("f.txt")).unwrap(),
        b"outside\n"
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn only_the_given_paths_are_written_and_unchanged_ones_not_at_all() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    f.write("b.txt", "b0\n");
    f.write("c.txt", "c0\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.write("a.txt", "a1\n");
    f.write("b.txt", "b1\n");
    let identity = |rel: &str| {
        let m = fs::metadata(f.path(rel)).unwrap();
        (
            m.ino(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    };
    let (b, c) = (identity("b.txt"), identity("c.txt"));
    let done = store
        .restore(
            &before.tree,
            &[PathBuf::from("a.txt"), PathBuf::from("c.txt")],
        )
        .unwrap();
    assert_eq!(done.written, [PathBuf::from("a.txt")]);
    assert_eq!(done.unchanged, [PathBuf::from("c.txt")]);
    assert_eq!(f.read("a.txt"), b"a0\n");
    assert_eq!(f.read("b.txt"), b"b1\n");
    assert_eq!(identity("b.txt"), b, "not in the list: untouched");
    assert_eq!(
        identity("c.txt"),
        c,
        "already as in the snapshot: not rewritten"
    );
}

#[test]
fn paths_outside_the_workspace_or_in_git_are_refused_before_anything_is_touched() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    let store = f.store("s1");
    let snap = store.snapshot().unwrap();
    f.write("a.txt", "a1\n");
    for bad in ["../escape", "/etc/hostname", ".git/HEAD", "x/.git/config"] {
        let err = store
            .restore(&snap.tree, &[PathBuf::from("a.txt"), PathBuf::from(bad)])
            .unwrap_err();
        assert!(
            matches!(err, CheckpointError::InvalidPath { .. }),
            "{bad}: {err}"
        );
    }
    assert_eq!(f.read("a.txt"), b"a1\n", "nothing was restored");
}

#[test]
fn a_file_replaced_by_a_directory_and_back() {
    let f = Fixture::new();
    f.write("thing", "a file\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.sh("rm thing && mkdir -p thing/inner && echo x > thing/inner/x.txt");
    let after = store.snapshot().unwrap();
    let cp = store.checkpoint(&before, &after).unwrap();
    assert_eq!(shown(&cp.changed), ["D thing", "A thing/inner/x.txt"]);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("thing"), b"a file\n");
    store
        .apply(&store.plan_redo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("thing/inner/x.txt"), b"x\n");
}

#[test]
fn a_directory_the_user_filled_is_never_removed_to_make_room() {
    let f = Fixture::new();
    f.write("thing", "a file\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.sh("rm thing && mkdir thing && echo agent > thing/a.txt");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    f.write("thing/user.txt", "the user's\n");
    let applied = store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::RestoreAnyway)
        .unwrap();
    assert_eq!(f.read("thing/user.txt"), b"the user's\n");
    assert_eq!(applied.failed.len(), 1, "{:?}", applied.failed);
    assert_eq!(applied.failed[0].path, PathBuf::from("thing"));
    assert!(
        applied
            .summary()
            .contains("not restored: thing: a directory is in the way")
    );
}
