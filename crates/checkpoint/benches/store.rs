//! Figures for the checkpoint store, on real files and the real git binary:
//! `cargo bench -p checkpoint --bench store` (plain timing loops, printed).
//!
//! 1. A 10,000-file / 200 MB git repository (generated in a temporary directory): the first
//!    snapshot, then snapshots with one changed file (target: ≤ 100 ms), an unchanged one,
//!    and a second session's first snapshot (its index seeded from the first session's).
//! 2. Store growth over 1,000 checkpoints of a workspace where one 1 MB file changes by a
//!    few bytes each time, and the size after pruning with the default budget.
//!
//! `CHECKPOINT_BENCH_TURNS` shortens part 2 (default 1000).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use checkpoint::{Excludes, Store, StoreOptions};

/// Text-like content (compresses roughly as source code does).
fn text(len: usize, seed: &mut u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "fn", "let", "mut", "self", "impl", "return", "match", "Some", "None", "value", "index",
        "store", "path", "=>", "{", "}",
    ];
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        out.extend_from_slice(WORDS[(*seed % 16) as usize].as_bytes());
        out.push(if (*seed).is_multiple_of(11) {
            b'\n'
        } else {
            b' '
        });
        if (*seed).is_multiple_of(5) {
            out.extend_from_slice(format!("{}", *seed % 100_000).as_bytes());
            out.push(b' ');
        }
    }
    out.truncate(len);
    out
}

fn user_git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@x.invalid")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@x.invalid")
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn open(home: &Path, ws: &Path, session: &str) -> Store {
    let options = StoreOptions {
        excludes: Excludes::None,
        ..StoreOptions::default()
    };
    Store::open_with(home, ws, session, options).expect("open")
}

fn large_repository() {
    let ws = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let t = Instant::now();
    for d in 0..100 {
        let dir = ws.path().join(format!("module{d:03}/src"));
        fs::create_dir_all(&dir).expect("mkdir");
        for i in 0..100 {
            fs::write(dir.join(format!("file{i:03}.rs")), text(20_971, &mut seed)).expect("write");
        }
    }
    fs::write(ws.path().join(".gitignore"), "target/\n").expect("write");
    user_git(ws.path(), &["init", "-q"]);
    user_git(ws.path(), &["add", "-A"]);
    user_git(ws.path(), &["commit", "-q", "-m", "generated"]);
    println!(
        "repository: 10,000 files, {:.0} MiB, generated and committed in {:.1} s",
        mib(10_000 * 20_971),
        t.elapsed().as_secs_f64()
    );

    let store = open(home.path(), ws.path(), "first");
    let t = Instant::now();
    store.snapshot().expect("snapshot");
    println!(
        "first snapshot: {:.0} ms (store {:.1} MiB)",
        ms(t.elapsed()),
        mib(store.size().unwrap_or(0))
    );

    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for round in 0..30 {
        let file = ws
            .path()
            .join(format!("module{:03}/src/file{:03}.rs", round * 3, round));
        let mut content = fs::read(&file).expect("read");
        content.extend_from_slice(format!("// edit {round}\n").as_bytes());
        fs::write(&file, content).expect("write");
        let t = Instant::now();
        let before = store.snapshot().expect("snapshot");
        changed.push(ms(t.elapsed()));
        let t = Instant::now();
        let after = store.snapshot().expect("snapshot");
        unchanged.push(ms(t.elapsed()));
        assert_eq!(before.tree, after.tree);
    }
    for (name, list) in [
        ("one changed file", &mut changed),
        ("unchanged", &mut unchanged),
    ] {
        list.sort_by(f64::total_cmp);
        println!(
            "snapshot, {name}: median {:.1} ms, p90 {:.1} ms, max {:.1} ms ({} runs)",
            percentile(list, 0.5),
            percentile(list, 0.9),
            list[list.len() - 1],
            list.len()
        );
    }
    // A checkpoint = snapshot after + the diff of the two trees.
    let before = store.snapshot().expect("snapshot");
    let file = ws.path().join("module050/src/file050.rs");
    fs::write(&file, "changed\n").expect("write");
    let t = Instant::now();
    let after = store.snapshot().expect("snapshot");
    let cp = store.checkpoint(&before, &after).expect("checkpoint");
    println!(
        "checkpoint (snapshot + changes), one changed file: {:.1} ms, {} change(s)",
        ms(t.elapsed()),
        cp.changed.len()
    );
    let t = Instant::now();
    let plan = store.plan_undo(&cp).expect("plan");
    let planned = t.elapsed();
    let t = Instant::now();
    store
        .apply(&plan, checkpoint::Resolution::SkipConflicts)
        .expect("apply");
    println!(
        "undo of it: plan {:.1} ms, apply {:.1} ms",
        ms(planned),
        ms(t.elapsed())
    );
    let second = open(home.path(), ws.path(), "second");
    let t = Instant::now();
    second.snapshot().expect("snapshot");
    println!(
        "a second session's first snapshot (seeded index): {:.0} ms",
        ms(t.elapsed())
    );
    println!("store size: {:.1} MiB", mib(store.size().unwrap_or(0)));
}

fn growth() {
    let turns: usize = std::env::var("CHECKPOINT_BENCH_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let ws = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let mut seed = 0x2545_f491_4f6c_dd1d;
    let mut content = text(1 << 20, &mut seed);
    let file = ws.path().join("data.txt");
    fs::write(&file, &content).expect("write");
    let store = open(home.path(), ws.path(), "s1");
    store.snapshot().expect("snapshot");
    let mut times = Vec::new();
    let t = Instant::now();
    for turn in 0..turns {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = (seed % (content.len() as u64 - 16)) as usize;
        content[at..at + 12].copy_from_slice(format!("turn{turn:08}").as_bytes());
        fs::write(&file, &content).expect("write");
        let s = Instant::now();
        store.snapshot().expect("snapshot");
        times.push(ms(s.elapsed()));
        if [100, 500].contains(&(turn + 1)) {
            println!(
                "after {} checkpoints: store {:.1} MiB",
                turn + 1,
                mib(store.size().unwrap_or(0))
            );
        }
    }
    let total = t.elapsed();
    times.sort_by(f64::total_cmp);
    println!(
        "{turns} checkpoints of a 1 MiB file changing by 12 bytes: {:.1} s, snapshot median {:.1} ms, p99 {:.1} ms, max {:.1} ms (the slowest are the turns that pack loose objects)",
        total.as_secs_f64(),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times[times.len() - 1]
    );
    let size = store.size().unwrap_or(0);
    println!("store after {turns} checkpoints: {:.1} MiB", mib(size));
    let t = Instant::now();
    let report = checkpoint::prune(home.path(), &["s1".to_string()], checkpoint::DEFAULT_BUDGET)
        .expect("prune")
        .remove(0);
    println!(
        "prune (default budget {:.0} MiB): {:.1} -> {:.1} MiB, {} checkpoints kept, {} removed, {:.1} s",
        mib(checkpoint::DEFAULT_BUDGET),
        mib(report.size_before),
        mib(report.size_after),
        report.kept_checkpoints,
        report.removed_checkpoints,
        t.elapsed().as_secs_f64()
    );
    let budget = 4 << 20;
    let report = checkpoint::prune(home.path(), &["s1".to_string()], budget)
        .expect("prune")
        .remove(0);
    println!(
        "prune (budget 4 MiB): {:.1} -> {:.1} MiB, {} kept, {} removed",
        mib(report.size_before),
        mib(report.size_after),
        report.kept_checkpoints,
        report.removed_checkpoints
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    large_repository();
    growth();
}
