//! `cargo bench -p tools --bench bash_sandbox`: the per-command cost of the sandbox. The
//! median wall time of running `/bin/true` through the bash tool, 200 times unconfined and
//! 200 times confined with every layer (a workspace whose `.git/hooks`, `.git/config` and
//! `.coding-agent/` exist, so the read-only binds are made; network off, so the seccomp
//! filter is installed), interleaved so that load changes hit both alike. Also: preparing a
//! confinement alone, and the startup probe.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Tool, ToolContext};
use sandbox::{Policy, Sandbox, SandboxMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tools::{BashOptions, BashTool};

const RUNS: usize = 200;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir_in("/var/tmp").unwrap();
    for dir in [".git/hooks", ".coding-agent"] {
        std::fs::create_dir_all(ws.path().join(dir)).unwrap();
    }
    std::fs::write(ws.path().join(".git/config"), "").unwrap();

    let started = Instant::now();
    let capabilities = sandbox::probe();
    let probe = started.elapsed();
    let policy = Policy::new(SandboxMode::WorkspaceWrite, ws.path(), &[], Some(false));
    let sandbox = Arc::new(Sandbox::new(policy, capabilities));
    println!("probe: {:.2} ms ({})", ms(probe), sandbox.summary().label);

    let unconfined = BashTool::new(ws.path().to_path_buf());
    let confined = BashTool::with_options(
        ws.path().to_path_buf(),
        BashOptions {
            sandbox: Some(sandbox.clone()),
            ..BashOptions::default()
        },
    );
    let check = runtime.block_on(run(&confined));
    let layers = check.1;
    assert_eq!(
        layers.matches('+').count() + 1,
        sandbox.prepare().unwrap().layers().len()
    );

    let mut free = Vec::with_capacity(RUNS);
    let mut boxed = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        free.push(runtime.block_on(run(&unconfined)).0);
        boxed.push(runtime.block_on(run(&confined)).0);
    }
    let prepare = median(
        (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let prepared = sandbox.prepare().unwrap();
                let took = started.elapsed();
                drop(prepared);
                took
            })
            .collect(),
    );
    let free = median(free);
    let boxed = median(boxed);
    println!("bash `/bin/true`, median of {RUNS}:");
    println!("  unconfined: {:.2} ms", ms(free));
    println!("  confined ({layers}): {:.2} ms", ms(boxed));
    println!(
        "  difference: {:+.2} ms per command (of which preparing: {:.3} ms)",
        ms(boxed) - ms(free),
        ms(prepare)
    );
}

/// One `/bin/true` through the tool: its wall time and the layers it was confined with.
async fn run(tool: &BashTool) -> (Duration, String) {
    let ctx = ToolContext::new("bench", CancellationToken::new(), |_| {});
    let started = Instant::now();
    let out = tool
        .execute(json!({"command": "/bin/true"}), ctx)
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(!out.is_error, "{out:?}");
    let layers = out
        .details
        .as_ref()
        .and_then(|d| d["sandbox"]["layers"].as_str())
        .unwrap_or("none")
        .to_string();
    (took, layers)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
