//! The macOS sandbox for real: commands run by `sandbox-exec` with the generated profile,
//! the Linux scenarios' rules checked by what the commands can and cannot do. Compiled for
//! macOS in CI (`scripts/cross-check.sh`); run on a Mac with `cargo test -p sandbox`.
//! docs/sandbox.md says which of these have been run on a real Mac.
#![cfg(target_os = "macos")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use sandbox::{Policy, Sandbox, SandboxMode};

/// A workspace and a directory beside it, outside every writable root (not in `$TMPDIR` nor
/// `/tmp`: under the user's home).
struct Scene {
    _dirs: [tempfile::TempDir; 2],
    ws: PathBuf,
    outside: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let home = std::env::var_os("HOME").expect("HOME is set on a Mac");
        let base = PathBuf::from(home).join("Library/Caches");
        std::fs::create_dir_all(&base).unwrap();
        let ws = tempfile::tempdir_in(&base).unwrap();
        let outside = tempfile::tempdir_in(&base).unwrap();
        Scene {
            ws: ws.path().canonicalize().unwrap(),
            outside: outside.path().canonicalize().unwrap(),
            _dirs: [ws, outside],
        }
    }

    fn sandbox(&self, mode: SandboxMode, network: Option<bool>) -> Sandbox {
        let caps = sandbox::probe();
        assert!(caps.seatbelt, "{:?}", caps.report);
        Sandbox::new(Policy::new(mode, &self.ws, &[], network), caps)
    }

    fn run(&self, sandbox: &Sandbox, script: &str) -> Output {
        let prepared = sandbox.prepare().unwrap();
        assert_eq!(prepared.layers(), ["seatbelt"]);
        prepared
            .command("/bin/bash", ["-c", script], &self.ws)
            .env("OUT", &self.outside)
            .output()
            .unwrap()
    }
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn refused(out: &Output) {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Operation not permitted") || stderr.contains("Permission denied"),
        "{stderr}"
    );
}

#[test]
fn the_probe_runs_the_profile() {
    let caps = sandbox::probe();
    assert_eq!(caps.backend, sandbox::Backend::Seatbelt);
    assert!(caps.seatbelt, "{:?}", caps.report);
}

#[test]
fn workspace_write_allows_the_workspace_and_temp_but_nothing_outside() {
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    ok(&scene.run(&sandbox, "touch inside && mkdir -p a/b && echo x > a/b/c"));
    ok(&scene.run(
        &sandbox,
        "echo x > \"$TMPDIR/sandbox-test-$$\" && rm \"$TMPDIR/sandbox-test-$$\"",
    ));
    ok(&scene.run(&sandbox, "echo x > /dev/null"));
    refused(&scene.run(&sandbox, "touch \"$OUT/outside\""));
    assert!(!scene.outside.join("outside").exists());
    std::os::unix::fs::symlink(&scene.outside, scene.ws.join("escape")).unwrap();
    refused(&scene.run(&sandbox, "echo x > escape/through-link"));
    assert!(!scene.outside.join("through-link").exists());
}

#[test]
fn git_hooks_config_and_the_project_config_are_read_only() {
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    ok(&scene.run(
        &sandbox,
        "git init -q && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m x",
    ));
    refused(&scene.run(&sandbox, "echo evil > .git/hooks/pre-commit"));
    refused(&scene.run(&sandbox, "echo '[core] fsmonitor = evil' >> .git/config"));
    refused(&scene.run(&sandbox, "mkdir .coding-agent"));
    refused(&scene.run(&sandbox, "mv .git .git-aside"));
    assert!(!scene.ws.join(".coding-agent").exists());
    assert!(scene.ws.join(".git/config").exists());
    ok(&scene.run(
        &sandbox,
        "touch f && git add f && git -c user.name=t -c user.email=t@e commit -q -m f",
    ));
}

#[test]
fn read_only_writes_nothing() {
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::ReadOnly, None);
    refused(&scene.run(&sandbox, "touch inside"));
    ok(&scene.run(&sandbox, "cat /etc/hosts > /dev/null"));
}

#[test]
fn the_network_switch_holds_and_background_jobs_are_confined_too() {
    let scene = Scene::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let off = scene.sandbox(SandboxMode::WorkspaceWrite, Some(false));
    assert!(!scene.run(&off, &connect).status.success());
    let on = scene.sandbox(SandboxMode::WorkspaceWrite, Some(true));
    ok(&scene.run(&on, &connect));
    ok(&scene.run(&off, "(sleep 0.2; touch \"$OUT/late\") & wait"));
    assert!(!Path::new(&scene.outside.join("late")).exists());
}
