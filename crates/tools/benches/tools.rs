//! `cargo bench -p tools`: grep over a generated 20,000-file, ~200 MB tree against ripgrep
//! (or `grep -r` when `rg` is absent), and one edit of a 10 MB file.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agent_core::ToolContext;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FILES: usize = 20_000;
const FILE_BYTES: usize = 10_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tree = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let bytes = generate(tree.path());
    println!(
        "tree: {FILES} files, {:.0} MB, generated in {:.1}s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let pattern = "needle_[a-z]+_[0-9]+";
    let ours = median(5, || {
        let started = Instant::now();
        let out = runtime.block_on(call(
            tree.path(),
            "grep",
            json!({"pattern": pattern, "limit": 1_000_000}),
        ));
        assert!(out.contains("needle_"), "grep found nothing");
        started.elapsed()
    });
    let (baseline, name) = match Command::new("rg").arg("--version").output() {
        Ok(_) => (
            median(5, || {
                time(
                    Command::new("rg")
                        .args(["-n", "-c", pattern])
                        .arg(tree.path()),
                )
            }),
            "rg",
        ),
        Err(_) => (
            median(5, || {
                time(
                    Command::new("grep")
                        .args(["-rnEc", pattern])
                        .arg(tree.path()),
                )
            }),
            "grep -r",
        ),
    };
    println!(
        "grep tool: {:.0} ms; {name}: {:.0} ms; ratio {:.2}x (target <= 1.5x)",
        ms(ours),
        ms(baseline),
        ours.as_secs_f64() / baseline.as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.txt");
    let big: String = (0..200_000)
        .map(|i| format!("line {i:>8} of a ten megabyte file, padded out\n"))
        .collect();
    let edit = median(9, || {
        std::fs::write(&file, &big).unwrap();
        let started = Instant::now();
        let args = json!({"path": "big.txt", "edits": [{"old_text": "line   100000 of", "new_text": "LINE 100000 of"}]});
        let out = runtime.block_on(call(dir.path(), "edit", args));
        assert!(out.starts_with("Edited"), "{out}");
        started.elapsed()
    });
    println!(
        "edit: one replacement in a {:.1} MB file: {:.1} ms (target < 50 ms)",
        big.len() as f64 / 1e6,
        ms(edit)
    );
}

async fn call(dir: &Path, name: &str, args: Value) -> String {
    let tool = tools::build(dir, &tools::ToolOptions::default(), Some(&[name]))
        .unwrap()
        .remove(0);
    let ctx = ToolContext::new("bench", CancellationToken::new(), |_| {});
    match tool.execute(args, ctx).await {
        Ok(out) => match &out.content[0] {
            llm::UserContent::Text { text } => text.clone(),
            _ => String::new(),
        },
        Err(err) => err.0,
    }
}

/// Deterministic text: words from a small vocabulary, a needle in one file of 100.
fn generate(root: &Path) -> usize {
    const WORDS: [&str; 16] = [
        "alpha", "beta", "gamma", "delta", "fn", "let", "struct", "impl", "return", "match",
        "self", "value", "error", "result", "async", "await",
    ];
    let mut seed: u64 = 42;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut total = 0;
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}", i % 200));
        std::fs::create_dir_all(&dir).unwrap();
        let mut body = String::with_capacity(FILE_BYTES + 100);
        while body.len() < FILE_BYTES {
            for _ in 0..10 {
                body.push_str(WORDS[next() % WORDS.len()]);
                body.push(' ');
            }
            body.push('\n');
        }
        if i % 100 == 0 {
            body.push_str(&format!("needle_found_{i}\n"));
        }
        total += body.len();
        std::fs::write(dir.join(format!("f{i}.txt")), body).unwrap();
    }
    total
}

fn time(command: &mut Command) -> Duration {
    let started = Instant::now();
    let status = command.output().unwrap().status;
    assert!(status.success(), "{command:?} failed");
    started.elapsed()
}

fn median(runs: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    times[runs / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
