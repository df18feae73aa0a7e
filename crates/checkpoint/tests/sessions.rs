//! Two sessions on one workspace, side by side and at the same time; pruning dead sessions
//! and the size budget.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use checkpoint::{Resolution, prune};
use common::{Fixture, shown};

fn refs(f: &Fixture, store: &checkpoint::Store) -> Vec<String> {
    let _ = f;
    let out = Command::new("git")
        .args(["for-each-ref", "--format=%(refname)", "refs/checkpoints/"])
        .env("GIT_DIR", store.dir().join("git"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn fsck(store: &checkpoint::Store) {
    let out = Command::new("git")
        .args(["fsck", "--full", "--no-dangling"])
        .env("GIT_DIR", store.dir().join("git"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_sessions_keep_their_own_index_and_undo_only_their_own_step() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    f.write("b.txt", "b0\n");
    f.init_user_repo();
    let user_state = f.user_git_state();
    let one = f.store("one");
    let two = f.store("two");
    assert_eq!(one.dir(), two.dir(), "one store per workspace");
    let one_before = one.snapshot().unwrap();
    f.write("a.txt", "a1 by session one\n");
    let one_cp = one
        .checkpoint(&one_before, &one.snapshot().unwrap())
        .unwrap();
    let two_before = two.snapshot().unwrap();
    f.write("b.txt", "b1 by session two\n");
    let two_cp = two
        .checkpoint(&two_before, &two.snapshot().unwrap())
        .unwrap();
    assert_eq!(shown(&one_cp.changed), ["M a.txt"]);
    assert_eq!(shown(&two_cp.changed), ["M b.txt"]);
    // Session one undoes its step: session two's change stays.
    let plan = one.plan_undo(&one_cp).unwrap();
    assert!(plan.conflicts.is_empty());
    one.apply(&plan, Resolution::SkipConflicts).unwrap();
    assert_eq!(f.read("a.txt"), b"a0\n");
    assert_eq!(f.read("b.txt"), b"b1 by session two\n");
    let index = one.dir().join("index");
    assert!(index.join("one").is_file() && index.join("two").is_file());
    let names = refs(&f, &one);
    assert!(names.iter().any(|r| r.starts_with("refs/checkpoints/one/")));
    assert!(names.iter().any(|r| r.starts_with("refs/checkpoints/two/")));
    assert_eq!(f.user_git_state(), user_state);
}

#[test]
fn two_sessions_snapshotting_at_the_same_time_do_not_corrupt_the_store() {
    let f = Fixture::new();
    for i in 0..50 {
        f.write(&format!("shared/f{i}.txt"), format!("{i}\n"));
    }
    let stores = [f.store("one"), f.store("two")];
    std::thread::scope(|scope| {
        for (k, store) in stores.iter().enumerate() {
            let f = &f;
            scope.spawn(move || {
                let mut last = store.snapshot().unwrap();
                for round in 0..15 {
                    f.write(&format!("s{k}/round{round}.txt"), format!("{k} {round}\n"));
                    f.write(&format!("shared/f{round}.txt"), format!("{k} {round}\n"));
                    let next = store.snapshot().unwrap();
                    let cp = store.checkpoint(&last, &next).unwrap();
                    assert!(
                        cp.changed.iter().any(
                            |c| c.path.as_os_str() == format!("s{k}/round{round}.txt").as_str()
                        ),
                        "{:?}",
                        cp.changed
                    );
                    last = next;
                }
            });
        }
    });
    fsck(&stores[0]);
    // Each session can still restore its first state exactly.
    let store = &stores[0];
    let first = store.snapshot().unwrap();
    assert!(common::tree_paths(store, &first.tree).len() >= 80);
}

#[test]
fn pruning_removes_dead_sessions_and_keeps_live_ones_working() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    let dead = f.store("dead");
    let live = f.store("live");
    let d0 = dead.snapshot().unwrap();
    f.write("a.txt", "a1\n");
    dead.snapshot().unwrap();
    let l0 = live.snapshot().unwrap();
    f.write("a.txt", "a2\n");
    let cp = live.checkpoint(&l0, &live.snapshot().unwrap()).unwrap();
    let reports = prune(
        f.home.path(),
        &["live".to_string()],
        checkpoint::DEFAULT_BUDGET,
    )
    .unwrap();
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    assert_eq!(report.removed_sessions, ["dead"]);
    assert_eq!(report.removed_checkpoints, 2);
    assert_eq!(report.kept_checkpoints, 2);
    assert!(!report.removed && !report.busy);
    assert_eq!(report.workspace.as_deref(), Some(live.workspace()));
    assert!(
        report.size_after > 0 && report.size_before > 0,
        "{report:?}"
    );
    assert!(
        refs(&f, &live)
            .iter()
            .all(|r| r.starts_with("refs/checkpoints/live/"))
    );
    assert!(!live.dir().join("index/dead").exists());
    fsck(&live);
    // The dead session's first tree is gone from the store; the live one still undoes.
    let err = live
        .restore(&d0.tree, &[PathBuf::from("a.txt")])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("checkpoint {} is no longer in the store (pruned)", d0.tree)
    );
    live.apply(&live.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("a.txt"), b"a1\n");
    // No session left: the store is emptied but stays while its workspace exists (a new
    // session may have opened it)...
    let report = prune(f.home.path(), &[], checkpoint::DEFAULT_BUDGET)
        .unwrap()
        .remove(0);
    assert_eq!(report.removed_sessions, ["live"]);
    assert!(
        !report.removed && report.kept_checkpoints == 0,
        "{report:?}"
    );
    assert!(refs(&f, &live).is_empty());
    assert!(report.size_after < report.size_before, "{report:?}");
    // ...and goes whole once the workspace is gone.
    let Fixture { home, ws } = f;
    ws.close().unwrap();
    let report = prune(home.path(), &[], checkpoint::DEFAULT_BUDGET)
        .unwrap()
        .remove(0);
    assert!(report.removed, "{report:?}");
    assert!(!live.dir().exists());
}

#[test]
fn over_the_budget_the_oldest_checkpoints_go_first() {
    let f = Fixture::new();
    let store = f.store("s1");
    // Ten checkpoints, each with 300 KB of incompressible content of its own.
    for i in 0..10u64 {
        let mut x = i + 1;
        let bytes: Vec<u8> = (0..300_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        f.write("data.bin", bytes);
        store.snapshot().unwrap();
    }
    let budget = 1_500_000;
    let report = prune(f.home.path(), &["s1".to_string()], budget)
        .unwrap()
        .remove(0);
    assert!(report.size_before > budget, "{report:?}");
    assert!(report.size_after <= budget, "{report:?}");
    assert!(report.removed_checkpoints >= 5, "{report:?}");
    // The survivors are the newest ones, numbered consecutively up to the last.
    let mut numbers: Vec<u64> = refs(&f, &store)
        .iter()
        .map(|r| r.rsplit('/').next().unwrap().parse().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(numbers.len(), report.kept_checkpoints);
    assert_eq!(*numbers.last().unwrap(), 9);
    assert_eq!(numbers, (10 - numbers.len() as u64..10).collect::<Vec<_>>());
    fsck(&store);
    // Snapshots go on after pruning.
    f.write("data.bin", "small now\n");
    store.snapshot().unwrap();
}

#[test]
fn a_store_in_use_is_skipped_and_reported_busy() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    let store = f.store("s1");
    store.snapshot().unwrap();
    // Another process holds the store's lock (as a snapshot in progress would).
    let mut holder = Command::new("flock")
        .arg("--shared")
        .arg(store.dir().join("lock"))
        .args(["-c", "echo held; exec sleep 60"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "held\n");
    let report = prune(f.home.path(), &[], 0).unwrap().remove(0);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(report.busy && !report.removed, "{report:?}");
    assert!(store.dir().exists());
}

#[test]
fn many_versions_of_a_changing_file_are_packed_as_deltas() {
    let f = Fixture::new();
    let store = f.store("s1");
    let mut content: Vec<u8> = (0..200_000u32)
        .map(|i| {
            b"abcdefghij klmnopqrstuvwxyz\n"[(i.wrapping_mul(2_654_435_761) >> 27) as usize % 28]
        })
        .collect();
    for turn in 0..110usize {
        let at = turn * 1_700 % (content.len() - 8);
        content[at..at + 8].copy_from_slice(format!("{turn:08}").as_bytes());
        f.write("data.txt", &content);
        store.snapshot().unwrap();
    }
    let packs: Vec<_> = std::fs::read_dir(store.dir().join("git/objects/pack"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
        .collect();
    assert!(!packs.is_empty(), "no pack after 110 snapshots");
    // Loose, 110 versions cost ~110 × their compressed size; packed, about one.
    let size = store.size().unwrap();
    assert!(size < 4 << 20, "store of {size} bytes");
    fsck(&store);
}
