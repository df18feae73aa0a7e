//! How long the checks take that run before every command (parse, read-only table, rules)
//! and at every start in a repository (fingerprint, trust state), on this machine:
//! `cargo bench -p sandbox --bench checks`. Plain timing loops: the figures are microseconds,
//! far from anything a person notices, so no statistics harness is pulled in.

use std::time::Instant;
fn main() {
    let lines = [
        "git status && git diff --stat",
        "cargo test -p sandbox 2>&1 | tail -n 20",
        "find . -name '*.rs' -type f | xargs wc -l | sort -n | tail",
    ];
    for line in lines {
        let n = 100_000;
        let t = Instant::now();
        let mut k = 0;
        for _ in 0..n {
            if sandbox::is_known_read_only(std::hint::black_box(line)) {
                k += 1;
            }
        }
        println!(
            "is_known_read_only {:?}: {:.2} us/call ({k})",
            line,
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    let long: String = (0..500)
        .map(|i| format!("echo \"item {i} $(git rev-parse HEAD)\" | grep x; "))
        .collect();
    let t = Instant::now();
    for _ in 0..100 {
        std::hint::black_box(sandbox::is_known_read_only(&long));
    }
    println!(
        "long line ({} bytes, 1000 commands): {:.1} us/call",
        long.len(),
        t.elapsed().as_secs_f64() * 1e6 / 100.0
    );
    let rules = sandbox::ProjectRules::new(
        (0..50)
            .map(|i| vec![format!("tool{i}"), "run".into()])
            .collect(),
    );
    let t = Instant::now();
    for _ in 0..100_000 {
        std::hint::black_box(rules.decide("tool49 run -x && git status"));
    }
    println!(
        "decide with 50 rules: {:.2} us/call",
        t.elapsed().as_secs_f64() * 1e6 / 100_000.0
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".coding-agent");
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::write(dir.join("config.toml"), "x = 1\n".repeat(100)).unwrap();
    std::fs::write(dir.join("SYSTEM.md"), "prompt text\n".repeat(2000)).unwrap();
    for i in 0..10 {
        std::fs::write(dir.join(format!("hooks/h{i}.sh")), "echo hi\n".repeat(50)).unwrap();
    }
    let t = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(sandbox::fingerprint(tmp.path()));
    }
    println!(
        "fingerprint of 12 files / 14 entries (~30 KB): {:.1} us/call",
        t.elapsed().as_secs_f64() * 1e6 / 1000.0
    );
    let store = sandbox::TrustStore::new(&tmp.path().join("home"));
    let fp = sandbox::fingerprint(tmp.path());
    let t = Instant::now();
    for _ in 0..100 {
        store.trust(tmp.path(), &fp).unwrap();
        store.revoke(tmp.path()).unwrap();
    }
    println!(
        "trust+revoke (2 atomic writes with fsync): {:.2} ms/pair",
        t.elapsed().as_secs_f64() * 1e3 / 100.0
    );
    store.trust(tmp.path(), &fp).unwrap();
    let t = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(store.state(tmp.path()).unwrap());
    }
    println!(
        "state (load + fingerprint): {:.1} us/call",
        t.elapsed().as_secs_f64() * 1e6 / 1000.0
    );
}
