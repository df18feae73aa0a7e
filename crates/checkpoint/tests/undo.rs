//! Undo and redo of what the agent did, bash commands included, against a real shadow store
//! and the real git binary; conflicts with the user's own edits.

mod common;

use std::fs;

use checkpoint::{Checkpoint, Resolution};
use common::{Fixture, shown};

/// inode, mtime (ns), ctime (ns): any write or replacement changes one of them.
#[cfg(unix)]
fn identity(f: &Fixture, rel: &str) -> (u64, i64, i64, i64, i64) {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(f.path(rel)).unwrap();
    (
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    )
}

/// Elsewhere: the modification time and the length (Windows keeps no inode a test can read
/// from std).
#[cfg(not(unix))]
fn identity(f: &Fixture, rel: &str) -> (u64, i64, i64, i64, i64) {
    let m = fs::symlink_metadata(f.path(rel)).unwrap();
    let modified = m
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    (
        m.len(),
        modified.as_secs() as i64,
        modified.subsec_nanos() as i64,
        0,
        0,
    )
}

#[test]
fn rm_mv_sed_and_a_created_file_are_undone_and_redone() {
    let f = Fixture::new();
    f.write("keep.txt", "the user's file\n");
    f.write("doomed.txt", "doomed\n");
    f.write("moved.txt", "moved\n");
    f.write("edit.txt", "line one\nline two\n");
    f.init_user_repo();
    // A stash, so the user's stash list is part of what must not change.
    f.write("keep.txt", "stashed work\n");
    f.user_git(&["stash", "-q"]);
    let user_state = f.user_git_state();
    let keep = identity(&f, "keep.txt");

    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.sh("rm doomed.txt && mkdir dir && mv moved.txt dir/moved.txt \
          && sed -i 's/two/TWO/' edit.txt && echo created > created.txt");
    let after = store.snapshot().unwrap();
    let cp = store.checkpoint(&before, &after).unwrap();
    assert_eq!(
        shown(&cp.changed),
        [
            "A created.txt",
            "A dir/moved.txt",
            "D doomed.txt",
            "M edit.txt",
            "D moved.txt"
        ]
    );

    let plan = store.plan_undo(&cp).unwrap();
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    assert_eq!(
        shown(&plan.changes),
        [
            "D created.txt",
            "D dir/moved.txt",
            "A doomed.txt",
            "M edit.txt",
            "A moved.txt"
        ]
    );
    let undone = store.apply(&plan, Resolution::SkipConflicts).unwrap();
    assert_eq!(f.read("doomed.txt"), b"doomed\n");
    assert_eq!(f.read("moved.txt"), b"moved\n");
    assert_eq!(f.read("edit.txt"), b"line one\nline two\n");
    assert!(!f.exists("created.txt"));
    assert!(!f.exists("dir"), "the directory left empty is removed");
    assert_eq!(
        undone.summary(),
        "D created.txt\nD dir/moved.txt\nA doomed.txt\nM edit.txt\nA moved.txt"
    );
    assert!(undone.failed.is_empty() && undone.kept.is_empty());

    // Undoing the undo brings the agent's version back.
    let again = store.plan_undo(&undone.checkpoint).unwrap();
    store.apply(&again, Resolution::SkipConflicts).unwrap();
    let agent_version = |f: &Fixture| {
        assert!(!f.exists("doomed.txt") && !f.exists("moved.txt"));
        assert_eq!(f.read("dir/moved.txt"), b"moved\n");
        assert_eq!(f.read("edit.txt"), b"line one\nline TWO\n");
        assert_eq!(f.read("created.txt"), b"created\n");
    };
    agent_version(&f);

    // Undo, then redo of the same checkpoint.
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("doomed.txt"), b"doomed\n");
    let redo = store.plan_redo(&cp).unwrap();
    assert!(redo.conflicts.is_empty());
    store.apply(&redo, Resolution::SkipConflicts).unwrap();
    agent_version(&f);

    // A file the agent never touched was never written, and the user's git is as it was.
    assert_eq!(identity(&f, "keep.txt"), keep);
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn a_user_edit_after_the_agent_is_a_conflict_kept_or_overwritten_as_chosen() {
    let f = Fixture::new();
    f.write("a.txt", "v1\n");
    f.write("b.txt", "b1\n");
    f.init_user_repo();
    let user_state = f.user_git_state();
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.write("a.txt", "agent\n");
    f.write("b.txt", "b2\n");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    f.write("a.txt", "user\n"); // the user's editor, after the agent

    let plan = store.plan_undo(&cp).unwrap();
    assert_eq!(shown(&plan.conflicts), ["M a.txt"]);
    assert_eq!(
        shown(&store.conflicts(&cp.after, &cp.paths()).unwrap()),
        ["M a.txt"]
    );
    let skipped = store.apply(&plan, Resolution::SkipConflicts).unwrap();
    assert_eq!(f.read("a.txt"), b"user\n");
    assert_eq!(f.read("b.txt"), b"b1\n");
    assert_eq!(shown(&skipped.kept), ["M a.txt"]);
    assert_eq!(skipped.summary(), "M b.txt\nkept (changed since): a.txt");

    let plan = store.plan_undo(&cp).unwrap();
    assert_eq!(shown(&plan.conflicts), ["M a.txt"]);
    assert_eq!(
        shown(&plan.changes),
        ["M a.txt"],
        "b.txt is already restored"
    );
    let forced = store.apply(&plan, Resolution::RestoreAnyway).unwrap();
    assert_eq!(f.read("a.txt"), b"v1\n");
    assert!(forced.kept.is_empty());

    // The user's version is not lost: the undo itself can be undone.
    store
        .apply(
            &store.plan_undo(&forced.checkpoint).unwrap(),
            Resolution::SkipConflicts,
        )
        .unwrap();
    assert_eq!(f.read("a.txt"), b"user\n");
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn a_conflict_that_appears_after_planning_is_kept_even_when_restoring_anyway() {
    let f = Fixture::new();
    f.write("a.txt", "v1\n");
    f.write("b.txt", "b1\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.write("a.txt", "agent\n");
    f.write("b.txt", "agent\n");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    f.write("a.txt", "user\n");
    let plan = store.plan_undo(&cp).unwrap();
    assert_eq!(shown(&plan.conflicts), ["M a.txt"]);
    f.write("b.txt", "user, while the question was on screen\n");
    let applied = store.apply(&plan, Resolution::RestoreAnyway).unwrap();
    assert_eq!(f.read("a.txt"), b"v1\n", "confirmed: restored");
    assert_eq!(f.read("b.txt"), b"user, while the question was on screen\n");
    assert_eq!(shown(&applied.kept), ["M b.txt"]);
}

#[test]
fn several_steps_rewind_at_once_including_a_file_changed_and_changed_back() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    f.write("b.txt", "b0\n");
    let store = f.store("s1");
    let s0 = store.snapshot().unwrap();
    f.sh("echo a1 > a.txt && echo tmp > t.txt");
    let s1 = store.snapshot().unwrap();
    f.sh("rm t.txt && echo b1 > b.txt");
    let s2 = store.snapshot().unwrap();
    let steps = [
        store.checkpoint(&s0, &s1).unwrap(),
        store.checkpoint(&s1, &s2).unwrap(),
    ];
    let both = Checkpoint::merge(&steps).unwrap();
    let applied = store
        .apply(&store.plan_undo(&both).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("a.txt"), b"a0\n");
    assert_eq!(f.read("b.txt"), b"b0\n");
    assert!(!f.exists("t.txt"));
    assert_eq!(shown(&applied.restored), ["M a.txt", "M b.txt"]);
}

#[test]
fn an_unchanged_workspace_makes_no_new_checkpoint() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    let store = f.store("s1");
    let one = store.snapshot().unwrap();
    let two = store.snapshot().unwrap();
    assert_eq!(one.tree, two.tree);
    let cp = store.checkpoint(&one, &two).unwrap();
    assert!(cp.changed.is_empty());
    let plan = store.plan_undo(&cp).unwrap();
    assert!(plan.is_empty());
    assert_eq!(
        store
            .apply(&plan, Resolution::SkipConflicts)
            .unwrap()
            .summary(),
        "nothing to restore"
    );
}
