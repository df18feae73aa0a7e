//! What a snapshot holds and leaves out, against the real git binary: a plain directory,
//! ignored build output, the size cap, nested repositories, the user's `.git`, global
//! excludes, byte-exact line endings, the store's file modes, and a missing git.

mod common;

use std::fs;
use std::path::Path;

use checkpoint::{CheckpointError, Excludes, Limits, Resolution, SkipReason, Store, StoreOptions};
use common::{Fixture, shown, tree_paths};

#[test]
fn a_directory_that_is_not_a_repository_is_snapshotted_and_left_without_git() {
    let f = Fixture::new();
    f.write("notes.txt", "hello\n");
    f.write("deep/er/file.rs", "fn main() {}\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    assert_eq!(
        tree_paths(&store, &before.tree),
        ["deep/er/file.rs", "notes.txt"]
    );
    f.sh("rm -r deep");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    assert_eq!(shown(&cp.changed), ["D deep/er/file.rs"]);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("deep/er/file.rs"), b"fn main() {}\n");
    assert!(
        !f.exists(".git"),
        "no repository was created in the workspace"
    );
}

#[test]
fn ignored_build_output_is_not_copied_and_the_users_git_is_untouched() {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/main.rs", "fn main() {}\n");
    f.init_user_repo();
    // 40 MB of ignored build output, and an ignored log.
    let chunk = vec![7u8; 200_000];
    for i in 0..200 {
        f.write(&format!("target/debug/deps/obj{i}.o"), &chunk);
    }
    f.write("run.log", "log\n");
    f.write("untracked.txt", "not committed, not ignored\n");
    let user_state = f.user_git_state();
    let store = f.store("s1");
    let snap = store.snapshot().unwrap();
    assert_eq!(
        tree_paths(&store, &snap.tree),
        [".gitignore", "src/main.rs", "untracked.txt"]
    );
    let size = store.size().unwrap();
    assert!(size < 2 << 20, "the store holds {size} bytes");
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn a_file_over_the_cap_is_skipped_listed_and_never_deleted_by_undo() {
    let f = Fixture::new();
    f.write("small.txt", "small\n");
    f.write("grows.bin", "tiny\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    assert!(before.skipped.is_empty());
    // Over the default 10 MiB cap: one created, one that grew.
    f.write("big.bin", vec![1u8; 11 << 20]);
    f.write("grows.bin", vec![2u8; (10 << 20) + 1]);
    f.write("small.txt", "changed\n");
    let after = store.snapshot().unwrap();
    let listed: Vec<String> = after.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed,
        [
            "big.bin: 11.0 MiB over the 10.0 MiB cap, not checkpointed",
            "grows.bin: 10.0 MiB over the 10.0 MiB cap, not checkpointed"
        ]
    );
    assert_eq!(
        after.skipped[0].reason,
        SkipReason::TooLarge {
            size: 11 << 20,
            limit: 10 << 20
        }
    );
    assert_eq!(tree_paths(&store, &after.tree), ["small.txt"]);
    let cp = store.checkpoint(&before, &after).unwrap();
    assert_eq!(shown(&cp.changed), ["M small.txt"]);
    assert_eq!(cp.skipped.len(), 2);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::RestoreAnyway)
        .unwrap();
    assert_eq!(f.read("small.txt"), b"small\n");
    assert_eq!(fs::metadata(f.path("big.bin")).unwrap().len(), 11 << 20);
    assert_eq!(
        fs::metadata(f.path("grows.bin")).unwrap().len(),
        (10 << 20) + 1
    );
    // Nothing of them reached the store.
    assert!(store.size().unwrap() < 1 << 20);
}

#[test]
fn the_cap_is_configurable_and_an_unchanged_big_file_is_not_reported_again() {
    let f = Fixture::new();
    f.write("data.csv", vec![b'x'; 5000]);
    let limits = Limits {
        max_file_bytes: 4096,
        ..Limits::default()
    };
    let store = f.store_with(
        "s1",
        StoreOptions {
            limits,
            ..StoreOptions::default()
        },
    );
    let one = store.snapshot().unwrap();
    assert_eq!(one.skipped.len(), 1);
    f.write("a.txt", "a\n");
    let two = store.snapshot().unwrap();
    let cp = store.checkpoint(&one, &two).unwrap();
    assert!(cp.skipped.is_empty(), "the step did not touch data.csv");
    assert_eq!(shown(&cp.changed), ["A a.txt"]);
}

#[test]
fn too_much_new_content_refuses_the_snapshot_with_a_readable_error() {
    let f = Fixture::new();
    for i in 0..20 {
        f.write(&format!("f{i}.txt"), "x\n");
    }
    let limits = Limits {
        max_changed_files: 10,
        ..Limits::default()
    };
    let store = f.store_with(
        "s1",
        StoreOptions {
            limits,
            ..StoreOptions::default()
        },
    );
    let err = store.snapshot().unwrap_err();
    assert!(
        matches!(err, CheckpointError::TooLarge { files: 20, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("checkpoint skipped: 20 new or changed files")
    );
}

#[test]
fn nested_repositories_are_listed_never_copied_and_need_no_commit() {
    let f = Fixture::new();
    f.write("top.txt", "top\n");
    f.write("vendor/lib/src.c", "int x;\n");
    common::user_git(&f.path("vendor/lib"), &["init", "-q"]);
    common::user_git(&f.path("vendor/lib"), &["add", "-A"]);
    common::user_git(&f.path("vendor/lib"), &["commit", "-qm", "lib"]);
    // A submodule of the workspace's repository (a `.git` file, not a directory).
    f.init_user_repo();
    let library = tempfile::tempdir().unwrap();
    fs::write(library.path().join("lib.rs"), "// lib\n").unwrap();
    common::user_git(library.path(), &["init", "-q"]);
    common::user_git(library.path(), &["add", "-A"]);
    common::user_git(library.path(), &["commit", "-qm", "lib"]);
    f.user_git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        library.path().to_str().unwrap(),
        "modules/lib",
    ]);
    assert!(f.path("modules/lib/.git").is_file());
    // A repository without any commit (the agent just ran `git init` there).
    f.write("fresh/new.txt", "new\n");
    common::user_git(&f.path("fresh"), &["init", "-q"]);
    let user_state = f.user_git_state();
    let store = f.store("s1");
    let snap = store.snapshot().unwrap();
    assert_eq!(tree_paths(&store, &snap.tree), [".gitmodules", "top.txt"]);
    let listed: Vec<String> = snap.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed,
        [
            "fresh/: nested repository, not checkpointed",
            "modules/lib/: nested repository, not checkpointed",
            "vendor/lib/: nested repository, not checkpointed"
        ]
    );
    // A directory the store already holds that becomes a repository (`git init` there)
    // stays snapshotted file by file, as git itself keeps tracking it; its `.git` never is.
    f.write("later/a.txt", "a\n");
    let before = store.snapshot().unwrap();
    common::user_git(&f.path("later"), &["init", "-q"]);
    f.write("later/a.txt", "changed\n");
    let after = store.snapshot().unwrap();
    let paths = tree_paths(&store, &after.tree);
    assert!(paths.contains(&"later/a.txt".to_string()));
    assert!(!paths.iter().any(|p| p.contains(".git/")), "{paths:?}");
    let cp = store.checkpoint(&before, &after).unwrap();
    assert_eq!(shown(&cp.changed), ["M later/a.txt"]);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::RestoreAnyway)
        .unwrap();
    assert_eq!(f.read("later/a.txt"), b"a\n");
    assert!(f.exists("later/.git/HEAD"));
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn the_users_git_directory_and_worktree_file_are_never_in_a_snapshot() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    f.init_user_repo();
    f.user_git(&["branch", "side"]);
    let linked = tempfile::tempdir().unwrap();
    let linked_ws = linked.path().join("wt");
    f.user_git(&["worktree", "add", "-q", linked_ws.to_str().unwrap(), "side"]);
    let user_state = f.user_git_state();
    for ws in [f.ws(), linked_ws.as_path()] {
        let store = Store::open_with(
            f.home.path(),
            ws,
            "s1",
            StoreOptions {
                excludes: Excludes::None,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        let snap = store.snapshot().unwrap();
        assert_eq!(
            tree_paths(&store, &snap.tree),
            ["a.txt"],
            "{}",
            ws.display()
        );
    }
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn gitignore_info_exclude_and_the_global_excludes_file_are_honoured() {
    let f = Fixture::new();
    f.write("README", "r\n");
    f.init_user_repo();
    fs::write(f.path(".git/info/exclude"), "/local-notes/\n").unwrap();
    f.write("local-notes/todo.md", "mine\n");
    let excludes = tempfile::NamedTempFile::new().unwrap();
    fs::write(excludes.path(), "*.swp\n.DS_Store\n").unwrap();
    f.write(".gitignore", "/build\n");
    f.write("build/out", "o\n");
    f.write("a.txt.swp", "s\n");
    f.write("sub/.DS_Store", "d\n");
    f.write("a.txt", "a\n");
    let user_state = f.user_git_state();
    let store = f.store_with(
        "s1",
        StoreOptions {
            excludes: Excludes::File(excludes.path().to_path_buf()),
            ..StoreOptions::default()
        },
    );
    let snap = store.snapshot().unwrap();
    assert_eq!(
        tree_paths(&store, &snap.tree),
        [".gitignore", "README", "a.txt"]
    );
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn line_endings_and_attributes_never_change_the_bytes() {
    let f = Fixture::new();
    // Attributes that would make git convert CRLF and run a filter on add.
    f.write(".gitattributes", "* text=auto eol=lf\n*.dat filter=lfs\n");
    f.write("win.txt", "one\r\ntwo\r\n");
    f.write("x.dat", "raw\r\n");
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.sh("rm win.txt x.dat");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("win.txt"), b"one\r\ntwo\r\n");
    assert_eq!(f.read("x.dat"), b"raw\r\n");
}

#[cfg(unix)]
#[test]
fn the_store_is_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    let store = f.store("s1");
    store.snapshot().unwrap();
    f.write("a.txt", "b\n");
    store.snapshot().unwrap();
    let root = f.home.path().join("checkpoints");
    assert!(store.dir().starts_with(&root));
    let name = store
        .dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let tail = f
        .ws()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "-");
    assert!(name.contains(&tail), "{name} names the workspace");
    let mut checked = 0;
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let mode = meta.permissions().mode() & 0o777;
                assert_eq!(mode & 0o077, 0, "{} is {mode:o}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "{checked} files checked");
}

#[test]
fn without_git_opening_says_checkpoints_are_off() {
    let f = Fixture::new();
    let err = Store::open_with(
        f.home.path(),
        f.ws(),
        "s1",
        StoreOptions {
            git: "/nonexistent/bin/git".into(),
            ..StoreOptions::default()
        },
    )
    .unwrap_err();
    assert!(err.is_unavailable());
    assert_eq!(
        err.to_string(),
        "checkpoints are off: git not found (/nonexistent/bin/git)"
    );
    let err = checkpoint::prune_with(Path::new("/nonexistent/bin/git"), f.home.path(), &[], 0)
        .unwrap_err();
    assert!(err.is_unavailable());
}

#[test]
fn session_ids_that_cannot_name_a_ref_are_refused() {
    let f = Fixture::new();
    for bad in ["", "../x", "a/b", ".hidden", "x.lock", "a b"] {
        let err = Store::open(f.home.path(), f.ws(), bad).unwrap_err();
        assert!(
            matches!(err, CheckpointError::InvalidSession(_)),
            "{bad:?}: {err}"
        );
    }
}
