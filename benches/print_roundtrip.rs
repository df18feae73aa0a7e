//! `cargo bench --bench print_roundtrip`: `coding-agent -p` with one bash round trip against
//! mock-llm, start to exit: wall time (median of 20 runs) and peak RSS. `BENCH_AGENT=path`
//! measures another build of the binary (a before and an after).

use std::process::Command;
use std::time::{Duration, Instant};

use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

const RUNS: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // S1: a command known to only read: no checkpoint is taken.
    let empty = tempfile::tempdir().unwrap();
    scenario(&runtime, "echo hello", empty.path(), "S1 (echo hello)", "");
    // S1w: a command that writes, in a repository-sized workspace (2,000 files, 16 MB): the
    // workspace is snapshotted before and after, and the change recorded.
    let repo = tempfile::tempdir().unwrap();
    for i in 0..2_000 {
        let dir = repo.path().join(format!("src/m{}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), vec![b'x'; 8_000]).unwrap();
    }
    scenario(
        &runtime,
        "echo hello >> hello.txt",
        repo.path(),
        "S1w (echo hello >> hello.txt, 2,000-file workspace, checkpointed)",
        "",
    );
    scenario(
        &runtime,
        "echo hello >> hello.txt",
        repo.path(),
        "S1w with checkpoints off",
        "[checkpoints]\nenabled = false\n",
    );
}

fn scenario(
    runtime: &tokio::runtime::Runtime,
    command: &str,
    work: &std::path::Path,
    name: &str,
    config: &str,
) {
    let mut replies = Vec::new();
    for _ in 0..RUNS {
        replies.push(Reply::tool_call("bash", json!({"command": command})));
        replies.push(Reply::text("It printed hello."));
    }
    let server = runtime
        .block_on(MockServer::start(Script { replies }))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let agent = std::env::var_os("BENCH_AGENT")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_coding-agent").into());
        let out = Command::new(agent)
            .args([
                "-p",
                "run echo hello",
                "--base-url",
                &server.url(),
                "--model",
                "bench",
            ])
            .current_dir(work)
            .env("CODING_AGENT_HOME", home.path())
            .env("CODING_AGENT_LOCAL_PROBES", "")
            .output()
            .unwrap();
        times.push(started.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "It printed hello.\n");
    }
    let checkpoints = home.path().join("checkpoints").is_dir();
    times.sort();
    // SAFETY: getrusage only fills the struct.
    #[cfg(unix)]
    let rss_kb = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    };
    // Not measured elsewhere: the figures in BENCHMARKS.md are Linux's.
    #[cfg(not(unix))]
    let rss_kb = 0;
    println!(
        "{name}: median {:.1} ms, min {:.1} ms, max {:.1} ms wall (target < 60 ms); checkpoint store written: {checkpoints}",
        times[RUNS / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[RUNS - 1].as_secs_f64() * 1000.0
    );
    println!(
        "  peak RSS of the largest run so far: {:.1} MB (target < 25 MB)",
        rss_kb as f64 / 1024.0
    );
}
