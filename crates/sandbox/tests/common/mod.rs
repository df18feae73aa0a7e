//! Helpers for confinement tests on the real kernel: workspaces outside the temp dirs,
//! confined shell commands, and re-running a test binary's scenarios as `nobody`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sandbox::{Policy, Prepared, Sandbox, SandboxMode};

/// Set by [`run_scenarios_as_nobody`] for the inner run: the uid the scenarios must run as.
pub const EXPECT_UID: &str = "SANDBOX_TEST_EXPECT_UID";

#[path = "../support/layers.rs"]
mod layers;
pub use layers::*;

/// Checks that a scenario runs as the user the outer test asked for (so the `nobody` run
/// cannot silently run as root).
pub fn expect_user() {
    // The kernel "refuses" what the outer test's filter refuses: the probe must see it.
    expect_degraded_if_asked();
    if let Ok(uid) = std::env::var(EXPECT_UID) {
        // SAFETY: getuid cannot fail.
        let actual = unsafe { libc::getuid() };
        assert_eq!(
            actual.to_string(),
            uid,
            "the scenario runs as the wrong user"
        );
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A directory outside every writable root: under `/var/tmp`, which is neither the system
/// temp dir nor `/tmp`, and writable by every user (so `nobody` can make one too).
pub fn outside_temp_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap();
    let policy = Policy::new(
        SandboxMode::WorkspaceWrite,
        Path::new("/nonexistent"),
        &[],
        None,
    );
    let real = dir.path().canonicalize().unwrap();
    assert!(
        policy.temp_dirs().iter().all(|t| !real.starts_with(t)),
        "{} is inside a temp dir the sandbox allows",
        real.display()
    );
    dir
}

/// A workspace and a directory beside it that commands must not write.
pub struct Scene {
    _ws: tempfile::TempDir,
    _outside: tempfile::TempDir,
    pub ws: PathBuf,
    pub outside: PathBuf,
}

impl Scene {
    pub fn new() -> Scene {
        let ws_dir = outside_temp_dir("ws-");
        let outside_dir = outside_temp_dir("outside-");
        Scene {
            ws: ws_dir.path().canonicalize().unwrap(),
            outside: outside_dir.path().canonicalize().unwrap(),
            _ws: ws_dir,
            _outside: outside_dir,
        }
    }

    pub fn sandbox(&self, mode: SandboxMode, network: Option<bool>) -> Sandbox {
        Sandbox::new(Policy::new(mode, &self.ws, &[], network), capabilities())
    }
}

/// A `/bin/sh -c script` in `cwd`, with `OUT` naming the outside dir and git's identity set
/// (so git needs no config file).
pub fn shell(cwd: &Path, outside: &Path, script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("OUT", outside)
        .env("HOME", cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    command
}

/// Runs `script` confined by `prepared`.
pub fn run_with(prepared: Prepared, scene: &Scene, cwd: &Path, script: &str) -> Output {
    let mut command = shell(cwd, &scene.outside, script);
    prepared.install(&mut command);
    command.output().unwrap()
}

/// Runs `script` in the workspace, confined by `sandbox` (prepared just before).
pub fn run(sandbox: &Sandbox, scene: &Scene, script: &str) -> Output {
    run_with(sandbox.prepare().unwrap(), scene, &scene.ws, script)
}

/// Runs `script` in the workspace without any confinement.
pub fn run_unconfined(scene: &Scene, script: &str) -> Output {
    shell(&scene.ws, &scene.outside, script).output().unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "expected success, got {}\nstdout: {}\nstderr: {}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

#[track_caller]
pub fn assert_refused(out: &Output, message: &str) {
    assert!(
        !out.status.success(),
        "expected a failure, got success\nstdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    assert!(
        stderr(out).contains(message),
        "expected {message:?} in stderr: {}",
        stderr(out)
    );
}

/// Waits up to `limit` for `path` to exist.
pub fn wait_for(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    path.exists()
}

/// Re-runs this test binary's tests whose names contain `filter` as `nobody` (uid and gid
/// 65534, no supplementary groups), from a copy in a 0755 directory (the build directory may
/// not be readable by others), and fails with their output if any failed.
pub fn run_scenarios_as_nobody(filter: &str) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("scenarios");
    copy_executable(&std::env::current_exe().unwrap(), &copy);
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(&copy)
        .arg(filter)
        .arg("--test-threads=2")
        .current_dir(dir.path())
        .env(EXPECT_UID, "65534")
        .env("HOME", "/nonexistent")
        .env_remove("TMPDIR")
        .output()
        .expect("setpriv runs");
    let text = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(
        out.status.success(),
        "the scenarios failed as nobody:\n{text}"
    );
    // The filter matched something: an empty run would prove nothing.
    assert!(
        text.contains("test result: ok") && !text.contains("running 0 tests"),
        "no scenario ran as nobody:\n{text}"
    );
}

/// Copies the executable `from` to `to` (mode 0755) with `install`, in its own process: a file
/// this process had open for writing would be inherited by any child another test thread
/// forks meanwhile, and running the copy then fails with "Text file busy".
pub fn copy_executable(from: &std::path::Path, to: &std::path::Path) {
    let status = std::process::Command::new("install")
        .args(["-m", "0755"])
        .arg(from)
        .arg(to)
        .status()
        .expect("install runs (coreutils)");
    assert!(
        status.success(),
        "install {} {}",
        from.display(),
        to.display()
    );
}
