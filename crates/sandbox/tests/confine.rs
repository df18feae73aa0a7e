//! Confined commands on the real kernel: what they may and may not write, the read-only git
//! and project config, the network switch, inheritance by background jobs and grandchildren.
//!
//! Every `scenario_*` test runs as the current user; as root (as in CI) again as `nobody`
//! (`scenarios_hold_for_a_user_that_is_not_root`), where the carve-outs go through a user
//! namespace; and again, whoever runs them, as on a machine whose kernel refuses Landlock and
//! namespaces (`scenarios_hold_without_landlock_or_namespaces`). A scenario checks what each
//! layer does where this machine has it, and where it does not, that the command really ran
//! unconfined in that respect and that the report (`coding-agent doctor`) says why.
//! `SANDBOX_TEST_EXPECT_LAYERS=landlock,seccomp,mounts` (set by `.ci/run`) makes a missing
//! layer a failure, so a probe that stops finding one cannot pass unnoticed.
//!
//! Linux's backend; macOS's is run by `seatbelt_run.rs`.
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::*;
use sandbox::{Capabilities, Confinement, MountNs, Policy, SandboxMode};

#[test]
fn scenarios_hold_for_a_user_that_is_not_root() {
    if is_root() {
        run_scenarios_as_nobody("scenario_");
    } else {
        // Not root: this run's own scenarios are an ordinary user's, the carve-outs going
        // through an unprivileged user namespace where the kernel allows one.
        // SAFETY: geteuid cannot fail.
        assert_ne!(unsafe { libc::geteuid() }, 0);
        assert_ne!(
            capabilities().mount_ns,
            MountNs::Plain,
            "only root unshares alone"
        );
    }
}

#[test]
fn scenarios_hold_without_landlock_or_namespaces() {
    run_scenarios_degraded("scenario_");
}

#[test]
fn scenario_the_probe_says_what_works_and_why_not() {
    expect_user();
    let caps = capabilities();
    for layer in [Layer::Landlock, Layer::Seccomp, Layer::Mounts] {
        if !has(layer) {
            missing_is_reported(layer);
        }
    }
    if caps.mount_ns == MountNs::User && is_root() {
        // Root's commands hold its capabilities only in a user namespace of their own.
        assert!(
            caps.report
                .iter()
                .any(|l| l.text.contains("root's commands"))
        );
    }
    if let Ok(expected) = std::env::var("SANDBOX_TEST_EXPECT_LAYERS")
        && std::env::var_os(DEGRADED).is_none()
    {
        for (name, layer) in [
            ("landlock", Layer::Landlock),
            ("seccomp", Layer::Seccomp),
            ("mounts", Layer::Mounts),
        ] {
            if expected.split(',').any(|e| e.trim() == name) {
                assert!(
                    has(layer),
                    "this machine should have {name}: {:#?}",
                    caps.report
                );
            }
        }
    }
}

#[test]
fn scenario_workspace_write_allows_the_workspace_and_temp_but_nothing_outside() {
    expect_user();
    let scene = Scene::new();
    // Without the sandbox the outside dir is writable: the refusal below is the sandbox's.
    assert_ok(&run_unconfined(&scene, "touch \"$OUT/unconfined\""));
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    assert_label(&sandbox, &["landlock", "seccomp", "mountns"]);

    assert_ok(&run(
        &sandbox,
        &scene,
        "touch inside.txt && mkdir -p a/b && echo x > a/b/c",
    ));
    assert!(scene.ws.join("a/b/c").exists());
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    assert_ok(&run(
        &sandbox,
        &scene,
        &format!("echo x > {}/scratch", tmp.path().display()),
    ));
    // POSIX shared memory (Python's multiprocessing semaphores live there).
    assert_ok(&run(
        &sandbox,
        &scene,
        "f=/dev/shm/sandbox-test-$$ && echo x > $f && rm $f",
    ));

    let out = run(&sandbox, &scene, "touch \"$OUT/outside\"");
    write_refused(&out);
    assert_eq!(scene.outside.join("outside").exists(), !writes_held());
    // Nor through a symlink planted in the workspace.
    std::os::unix::fs::symlink(&scene.outside, scene.ws.join("escape")).unwrap();
    write_refused(&run(&sandbox, &scene, "echo x > escape/through-link"));
    assert_eq!(scene.outside.join("through-link").exists(), !writes_held());
    // Deleting outside is a write too.
    write_refused(&run(&sandbox, &scene, "rm \"$OUT/unconfined\""));
    // /dev/null stays usable.
    assert_ok(&run(
        &sandbox,
        &scene,
        "echo x > /dev/null && ls / > /dev/null",
    ));
}

#[test]
fn scenario_git_hooks_and_config_are_read_only_but_git_commits() {
    expect_user();
    let scene = Scene::new();
    std::fs::write(scene.ws.join("file.txt"), "one\n").unwrap();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    // No .git yet when this command is prepared: init works.
    assert_ok(&run(
        &sandbox,
        &scene,
        "git init -q && git add file.txt && git commit -qm first",
    ));
    let config_before = std::fs::read_to_string(scene.ws.join(".git/config")).unwrap();

    // Prepared again: now .git/hooks and .git/config exist and are protected.
    let prepared = sandbox.prepare().unwrap();
    assert_eq!(
        prepared.layers(),
        available(&["userns", "mountns", "landlock", "seccomp"])
    );
    if !has(Layer::Mounts) {
        // Nothing makes them read-only here: the report says so, and the hook is written.
        missing_is_reported(Layer::Mounts);
        assert_ok(&run_with(
            prepared,
            &scene,
            &scene.ws,
            "echo 'echo pwned' > .git/hooks/pre-commit",
        ));
        assert!(scene.ws.join(".git/hooks/pre-commit").exists());
        return;
    }
    assert_refused(
        &run_with(
            prepared,
            &scene,
            &scene.ws,
            "echo 'echo pwned' > .git/hooks/pre-commit",
        ),
        "Read-only file system",
    );
    assert!(!scene.ws.join(".git/hooks/pre-commit").exists());
    assert_refused(
        &run(
            &sandbox,
            &scene,
            "echo '[core] fsmonitor = evil' >> .git/config",
        ),
        "Read-only file system",
    );
    assert!(
        !run(&sandbox, &scene, "git config core.fsmonitor evil")
            .status
            .success()
    );
    assert!(!run(&sandbox, &scene, "rm -rf .git/hooks").status.success());
    assert_eq!(
        std::fs::read_to_string(scene.ws.join(".git/config")).unwrap(),
        config_before
    );

    // Objects, refs, index and logs stay writable: commits work.
    assert_ok(&run(
        &sandbox,
        &scene,
        "echo two >> file.txt && git commit -qam second && git log --oneline | wc -l",
    ));
    let log = run(&sandbox, &scene, "git log --oneline | wc -l");
    assert_eq!(stdout(&log).trim(), "2");

    // The read-only binds live in the command's namespace only: the agent still writes.
    std::fs::write(scene.ws.join(".git/hooks/agent-wrote-this"), "").unwrap();
}

#[test]
fn scenario_a_cwd_inside_a_protected_path_sees_it_read_only() {
    expect_user();
    let scene = Scene::new();
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    let hooks = scene.ws.join(".git/hooks");
    let out = run_with(
        sandbox.prepare().unwrap(),
        &scene,
        &hooks,
        "echo x > pre-push",
    );
    refused_by(Layer::Mounts, &out, "Read-only file system");
    assert_eq!(hooks.join("pre-push").exists(), !has(Layer::Mounts));
}

#[test]
fn scenario_the_project_config_is_read_only() {
    expect_user();
    let scene = Scene::new();
    let config = scene.ws.join(".coding-agent");
    std::fs::create_dir(&config).unwrap();
    std::fs::write(config.join("config.toml"), "model = \"a\"\n").unwrap();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        assert_ok(&run(&sandbox, &scene, "touch .coding-agent/new.toml"));
        return;
    }
    assert_refused(
        &run(
            &sandbox,
            &scene,
            "echo 'model = \"b\"' > .coding-agent/config.toml",
        ),
        "Read-only file system",
    );
    assert!(
        !run(&sandbox, &scene, "rm -rf .coding-agent")
            .status
            .success()
    );
    assert!(
        !run(&sandbox, &scene, "mv .coding-agent elsewhere")
            .status
            .success()
    );
    assert_refused(
        &run(&sandbox, &scene, "touch .coding-agent/new.toml"),
        "Read-only file system",
    );
    assert_eq!(
        std::fs::read_to_string(config.join("config.toml")).unwrap(),
        "model = \"a\"\n"
    );
}

#[test]
fn scenario_a_protected_path_that_does_not_exist_is_reported() {
    expect_user();
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    let prepared = sandbox.prepare().unwrap();
    // Nothing to bind, but the mounts outside the workspace are made read-only.
    assert_eq!(
        prepared.layers(),
        available(&["userns", "mountns", "landlock", "seccomp"])
    );
    if !has(Layer::Mounts) {
        // No namespaces at all: that is what is left out, and said.
        missing_is_reported(Layer::Mounts);
        assert!(
            prepared
                .left_out()
                .iter()
                .any(|l| l.contains("mount namespaces")),
            "{:?}",
            prepared.left_out()
        );
        return;
    }
    assert!(
        prepared
            .left_out()
            .iter()
            .any(|l| l.contains(".coding-agent does not exist yet")),
        "{:?}",
        prepared.left_out()
    );
}

#[test]
fn scenario_read_only_refuses_every_write_but_the_null_devices() {
    expect_user();
    let scene = Scene::new();
    std::fs::write(scene.ws.join("existing.txt"), "keep\n").unwrap();
    let sandbox = scene.sandbox(SandboxMode::ReadOnly, None);
    assert_label(&sandbox, &["landlock", "seccomp", "mountns"]);
    if !writes_held() {
        // Nothing confines writes here: the report says so, and they happen.
        missing_is_reported(Layer::Landlock);
        assert_ok(&run(&sandbox, &scene, "touch new.txt"));
        assert!(scene.ws.join("new.txt").exists());
        return;
    }
    for write in [
        "touch new.txt",
        "echo x >> existing.txt",
        "rm existing.txt",
        "mkdir /tmp/ro-$$",
        "touch \"$OUT/x\"",
        // Metadata too: a mode, a time.
        "chmod 600 existing.txt",
        "touch -d 2001-01-01 existing.txt",
    ] {
        write_refused(&run(&sandbox, &scene, write));
    }
    let out = run(
        &sandbox,
        &scene,
        "cat existing.txt && echo gone > /dev/null && head -c 3 /dev/zero | wc -c",
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), "keep\n3\n");
    assert_eq!(
        std::fs::read_to_string(scene.ws.join("existing.txt")).unwrap(),
        "keep\n"
    );
}

const PERL_SOCKET: &str = "perl -MSocket -e '\
    socket(my $s, AF_INET, SOCK_STREAM, 0) or die \"socket: $!\\n\"; \
    connect($s, pack_sockaddr_in($ENV{PORT}, inet_aton(\"127.0.0.1\"))) or die \"connect: $!\\n\"; \
    print $s \"hello\\n\"; print \"connected\\n\"'";

const PERL_UNIX: &str = "perl -MSocket -e '\
    socket(my $l, AF_UNIX, SOCK_STREAM, 0) or die \"socket: $!\\n\"; \
    bind($l, pack_sockaddr_un(\"sock\")) or die \"bind: $!\\n\"; listen($l, 1) or die; \
    socket(my $c, AF_UNIX, SOCK_STREAM, 0) or die \"client: $!\\n\"; \
    connect($c, pack_sockaddr_un(\"sock\")) or die \"connect: $!\\n\"; print \"unix ok\\n\"'";

#[test]
fn scenario_network_off_refuses_ip_sockets_even_to_localhost() {
    expect_user();
    let scene = Scene::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, Some(false));
    assert_label(&sandbox, &["landlock", "seccomp", "mountns"]);
    let script = format!("PORT={port} {PERL_SOCKET}");
    if !has(Layer::Seccomp) {
        missing_is_reported(Layer::Seccomp);
        assert_ok(&run(&sandbox, &scene, &script));
        return;
    }
    // socket() itself is refused: nothing is ever sent.
    assert_refused(
        &run(&sandbox, &scene, &script),
        "socket: Operation not permitted",
    );
    // So is IPv6, UDP and netlink.
    for family in [
        "AF_INET6, SOCK_STREAM",
        "AF_INET, SOCK_DGRAM",
        "AF_NETLINK, SOCK_RAW",
    ] {
        let script =
            format!("perl -MSocket -e 'socket(my $s, {family}, 0) or die \"socket: $!\\n\"'");
        assert_refused(
            &run(&sandbox, &scene, &script),
            "socket: Operation not permitted",
        );
    }
    // Unix sockets still work.
    let out = run(&sandbox, &scene, PERL_UNIX);
    assert_ok(&out);
    assert_eq!(stdout(&out), "unix ok\n");
}

#[test]
fn scenario_network_on_is_not_filtered() {
    expect_user();
    let scene = Scene::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, Some(true));
    let accept = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut line = String::new();
        stream.read_to_string(&mut line).unwrap();
        let _ = stream.write_all(b"");
        line
    });
    let out = run(&sandbox, &scene, &format!("PORT={port} {PERL_SOCKET}"));
    assert_ok(&out);
    assert_eq!(stdout(&out), "connected\n");
    assert_eq!(accept.join().unwrap(), "hello\n");
}

#[test]
fn scenario_background_jobs_and_grandchildren_stay_confined() {
    expect_user();
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, Some(false));
    // The job outlives the command: the command exits before the job tries to write.
    let out = run(
        &sandbox,
        &scene,
        "(sleep 0.2; touch \"$OUT/outside2\" 2> bg.err; \
          perl -MSocket -e 'socket(my $s, AF_INET, SOCK_STREAM, 0) or die \"socket: $!\\n\"' \
            2>> bg.err; echo done > bg.done) > /dev/null 2>&1 &",
    );
    assert_ok(&out);
    assert!(
        wait_for(&scene.ws.join("bg.done"), Duration::from_secs(30)),
        "the background job never finished"
    );
    let errors = std::fs::read_to_string(scene.ws.join("bg.err")).unwrap();
    assert_eq!(errors.contains(write_refusal()), writes_held(), "{errors}");
    assert_eq!(
        errors.contains("socket: Operation not permitted"),
        has(Layer::Seccomp),
        "{errors}"
    );
    assert_eq!(scene.outside.join("outside2").exists(), !writes_held());
    if !writes_held() {
        missing_is_reported(Layer::Landlock);
        return;
    }

    // A child of a child, and a new session, are held the same.
    let out = run(
        &sandbox,
        &scene,
        "sh -c 'sh -c \"touch \\\"$OUT/grandchild\\\"\"'",
    );
    assert_refused(&out, write_refusal());
    let out = run(&sandbox, &scene, "setsid sh -c 'touch \"$OUT/session\"'");
    assert_refused(&out, write_refusal());
    assert!(!scene.outside.join("grandchild").exists());
    assert!(!scene.outside.join("session").exists());
}

#[test]
fn scenario_a_command_cannot_read_the_agent_s_environment() {
    expect_user();
    let scene = Scene::new();
    let agent = std::process::id();
    let script = format!("cat /proc/{agent}/environ > /dev/null");
    // Unconfined, a process of the same user can.
    assert_ok(&run_unconfined(&scene, &script));
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    // Landlock scopes ptrace-like access to the agent, and for root the user namespace
    // drops the capabilities that would get around it.
    let held = has(Layer::Landlock) && (!is_root() || capabilities().mount_ns == MountNs::User);
    if held {
        assert_refused(&run(&sandbox, &scene, &script), "Permission denied");
    } else {
        missing_is_reported(if has(Layer::Landlock) {
            Layer::Mounts
        } else {
            Layer::Landlock
        });
        assert_ok(&run(&sandbox, &scene, &script));
    }
}

#[test]
fn scenario_the_mount_layer_alone_protects_hooks_without_landlock() {
    expect_user();
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        return;
    }
    let scene = Scene::new();
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    // As on a kernel without Landlock or seccomp: only the carve-outs remain.
    let caps = Capabilities {
        landlock_abi: None,
        seccomp: false,
        ..capabilities()
    };
    let policy = Policy::new(SandboxMode::WorkspaceWrite, &scene.ws, &[], Some(false));
    let prepared = Confinement::prepare(&policy, &caps).unwrap();
    assert_eq!(prepared.layers(), available(&["userns", "mountns"]));
    assert!(
        prepared.left_out().iter().any(|l| l.contains("Landlock")),
        "{:?}",
        prepared.left_out()
    );
    assert!(
        prepared.left_out().iter().any(|l| l.contains("network")),
        "{:?}",
        prepared.left_out()
    );
    let out = run_with(
        prepared,
        &scene,
        &scene.ws,
        "echo x > .git/hooks/pre-commit; touch \"$OUT/written\"",
    );
    assert!(
        stderr(&out).contains("Read-only file system"),
        "{}",
        stderr(&out)
    );
    // Outside the writable roots every mount is read-only too: without Landlock the mounts
    // alone refuse the write (a hostile command could still reach the agent's view through
    // `/proc/<agent>/root`, which only Landlock closes; the report says Landlock is missing).
    assert!(!scene.outside.join("written").exists());
    assert!(stderr(&out).matches("Read-only file system").count() >= 2);
}

#[test]
fn scenario_danger_full_access_confines_nothing() {
    expect_user();
    let scene = Scene::new();
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    let sandbox = scene.sandbox(SandboxMode::DangerFullAccess, None);
    let prepared = sandbox.prepare().unwrap();
    assert!(prepared.is_empty());
    assert_eq!(sandbox.summary().label, "sandbox: off");
    assert_ok(&run(
        &sandbox,
        &scene,
        "touch \"$OUT/free\" && echo x > .git/hooks/pre-commit",
    ));
    assert!(scene.outside.join("free").exists());
}

#[test]
fn scenario_the_agent_s_namespace_is_out_of_reach_through_proc() {
    expect_user();
    let scene = Scene::new();
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    let agent = std::process::id();
    // /proc/<agent>/root is the agent's view of the file system, where .git/hooks is not a
    // read-only mount.
    let script = format!(
        "echo x > /proc/{agent}/root{}/.git/hooks/pre-commit",
        scene.ws.display()
    );
    assert_ok(&run_unconfined(&scene, &script));
    std::fs::remove_file(scene.ws.join(".git/hooks/pre-commit")).unwrap();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    let out = run(&sandbox, &scene, &script);
    if !has(Layer::Landlock) {
        // Without Landlock the carve-outs guard against mistakes, not a hostile command
        // (docs/sandbox.md): the agent's view is reachable, as the report warns.
        missing_is_reported(Layer::Landlock);
        return;
    }
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(!scene.ws.join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_permission_error_gets_the_note_and_other_failures_do_not() {
    let ws = std::path::Path::new("/var/tmp");
    // Made up: a machine with every layer (the note is about what the sandbox refused).
    let every_layer = Capabilities {
        backend: sandbox::Backend::Linux,
        landlock_abi: Some(6),
        seccomp: true,
        mount_ns: MountNs::User,
        ..Capabilities::none()
    };
    let sandbox = |mode, network| {
        sandbox::Sandbox::new(Policy::new(mode, ws, &[], network), every_layer.clone())
    };
    // Where nothing confined the command, nothing was refused by the sandbox: no note.
    let unconfined = sandbox::Sandbox::new(
        Policy::new(SandboxMode::WorkspaceWrite, ws, &[], None),
        Capabilities::none(),
    );
    assert_eq!(unconfined.explain_failure("Permission denied"), None);
    let write = sandbox(SandboxMode::WorkspaceWrite, Some(true));
    for output in [
        "touch: cannot touch '/etc/x': Permission denied",
        "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system",
        "socket: Operation not permitted",
        "error: EACCES while writing",
    ] {
        let note = write.explain_failure(output).expect(output);
        assert!(note.contains("workspace-write"), "{note}");
        assert!(note.contains("the network is on"), "{note}");
    }
    assert_eq!(
        write.explain_failure("error[E0308]: mismatched types"),
        None
    );
    // A host name that cannot be resolved is the sandbox's doing only with the network off.
    let resolve = "curl: (6) Could not resolve host: example.com";
    assert_eq!(write.explain_failure(resolve), None);
    let offline = sandbox(SandboxMode::WorkspaceWrite, Some(false));
    let note = offline.explain_failure(resolve).unwrap();
    assert!(note.contains("the network is off"), "{note}");
    let read_only = sandbox(SandboxMode::ReadOnly, None);
    let note = read_only.explain_failure("Permission denied").unwrap();
    assert!(
        note.contains("(read-only): it may not write any file"),
        "{note}"
    );
    let full = sandbox(SandboxMode::DangerFullAccess, None);
    assert_eq!(full.explain_failure("Permission denied"), None);
}

#[test]
fn scenario_git_dir_cannot_be_moved_aside_and_replaced() {
    expect_user();
    let scene = Scene::new();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    assert_ok(&run(
        &sandbox,
        &scene,
        "git init -q && git commit -q --allow-empty -m one",
    ));
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        assert_ok(&run(
            &sandbox,
            &scene,
            "mv .git .git-old && mv .git-old .git",
        ));
        return;
    }
    // Moving .git away to put a copy with a hook in its place: .git is a mount point.
    let out = run(
        &sandbox,
        &scene,
        "mv .git .git-old && cp -r .git-old .git && echo 'echo pwned' > .git/hooks/pre-commit",
    );
    assert_refused(&out, "busy");
    assert!(scene.ws.join(".git/HEAD").exists());
    assert!(!scene.ws.join(".git-old").exists());
    assert!(!scene.ws.join(".git/hooks/pre-commit").exists());
    assert!(
        !run(&sandbox, &scene, "mv .git/hooks hooks-old")
            .status
            .success()
    );
}

#[test]
fn scenario_a_worktree_commits_but_its_common_hooks_stay_read_only() {
    expect_user();
    let scene = Scene::new();
    let main = scene.ws.join("main");
    std::fs::create_dir(&main).unwrap();
    let setup = shell(
        &main,
        &scene.outside,
        "git init -q && git commit -q --allow-empty -m one && git worktree add -q ../wt",
    )
    .output()
    .unwrap();
    assert_ok(&setup);
    // The workspace is the worktree; the main repository is beside it, outside.
    let wt = scene.ws.join("wt");
    let sandbox = sandbox::Sandbox::new(
        Policy::new(SandboxMode::WorkspaceWrite, &wt, &[], None),
        capabilities(),
    );
    let run_wt = |script: &str| run_with(sandbox.prepare().unwrap(), &scene, &wt, script);
    assert_ok(&run_wt("echo x > f && git add f && git commit -qm two"));
    write_refused(&run_wt("touch ../main/file"));
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        return;
    }
    let out = run_wt("echo 'echo pwned' > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\"");
    assert_refused(&out, "Read-only file system");
    assert!(!main.join(".git/hooks/pre-commit").exists());
    assert!(!run_wt("git config user.name evil").status.success());
    // Neither pointer that leads git to its config and hooks can be redirected.
    assert_refused(
        &run_wt("echo 'gitdir: /tmp/evil' > .git"),
        "Read-only file system",
    );
    assert_refused(
        &run_wt("echo /tmp/evil > \"$(git rev-parse --git-dir)/commondir\""),
        "Read-only file system",
    );
    assert!(
        !run_wt("mv ../main/.git/worktrees/wt ../main/.git/worktrees/x")
            .status
            .success()
    );
}

#[test]
fn scenario_a_step_that_fails_in_the_child_stops_the_command() {
    expect_user();
    let scene = Scene::new();
    // An `unshare` the kernel refuses stops the command (as a user that is not root, or in a
    // container that forbids it, the plain mount namespace below is refused).
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    // A plain mount namespace: what root gets without user namespaces. A user that is not
    // root may not unshare(CLONE_NEWNS), so the step fails in the child.
    let caps = Capabilities {
        mount_ns: MountNs::Plain,
        ..capabilities()
    };
    let policy = Policy::new(SandboxMode::WorkspaceWrite, &scene.ws, &[], None);
    let prepared = Confinement::prepare(&policy, &caps).unwrap();
    assert_eq!(
        prepared.layers(),
        available(&["landlock", "seccomp"])
            .iter()
            .fold(vec!["mountns"], |mut v, l| {
                v.push(l);
                v
            })
    );
    let mut command = shell(
        &scene.ws,
        &scene.outside,
        "touch ran; echo x > .git/hooks/x",
    );
    prepared.install(&mut command);
    // Only root, on a kernel that lets it, unshares a mount namespace without a user one.
    let can_unshare = is_root() && has(Layer::Mounts);
    match command.output() {
        Ok(out) => {
            assert!(
                can_unshare,
                "only root may unshare a mount namespace without a user one"
            );
            assert!(scene.ws.join("ran").exists());
            assert!(
                stderr(&out).contains("Read-only file system"),
                "{}",
                stderr(&out)
            );
        }
        Err(error) => {
            assert!(!can_unshare, "{error}");
            assert_eq!(error.raw_os_error(), Some(libc::EPERM), "{error}");
            // Never half-confined: the command did not run at all.
            assert!(!scene.ws.join("ran").exists());
        }
    }
}

/// The git directories inside `.git` are git directories too: a submodule's (under
/// `modules/`, nested ones included) and a linked worktree's (under `worktrees/`). Their
/// config and hooks, the files that send git elsewhere, and `info/` are as read-only as
/// `.git`'s own: written, the user's next `git status` in the submodule, or in the worktree,
/// would run the command's choice outside the sandbox.
#[test]
fn scenario_submodule_and_worktree_git_files_are_read_only() {
    expect_user();
    let scene = Scene::new();
    let origin = scene.outside.join("origin");
    std::fs::create_dir(&origin).unwrap();
    assert_ok(
        &shell(
            &origin,
            &scene.outside,
            "git init -q && git commit -q --allow-empty -m sub",
        )
        .output()
        .unwrap(),
    );
    assert_ok(
        &shell(
            &scene.ws,
            &scene.outside,
            &format!(
                "git init -q && git commit -q --allow-empty -m one && \
                 git -c protocol.file.allow=always submodule -q add {} sub && \
                 git commit -qm sub && git worktree add -q wt",
                origin.display()
            ),
        )
        .output()
        .unwrap(),
    );
    let git = scene.ws.join(".git");
    for made in [
        "modules/sub/config",
        "modules/sub/hooks",
        "worktrees/wt/commondir",
        "worktrees/wt/gitdir",
        "info",
    ] {
        assert!(git.join(made).exists(), "git made no {made}");
    }
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    let attacks = [
        "echo '[core] fsmonitor = evil' >> .git/modules/sub/config",
        "echo 'echo pwned' > .git/modules/sub/hooks/pre-commit",
        "echo /tmp/evil > .git/worktrees/wt/commondir",
        "echo /tmp/evil/.git > .git/worktrees/wt/gitdir",
        "echo '* filter=evil' > .git/info/attributes",
    ];
    if !has(Layer::Mounts) {
        missing_is_reported(Layer::Mounts);
        assert_ok(&run(&sandbox, &scene, attacks[0]));
        return;
    }
    for attack in attacks {
        refused_by(
            Layer::Mounts,
            &run(&sandbox, &scene, attack),
            "Read-only file system",
        );
    }
    assert!(!git.join("modules/sub/hooks/pre-commit").exists());
    assert!(
        !std::fs::read_to_string(git.join("modules/sub/config"))
            .unwrap()
            .contains("evil")
    );
    // The submodule still commits: its objects, refs and index are writable.
    assert_ok(&run(
        &sandbox,
        &scene,
        "cd sub && git commit -q --allow-empty -m two",
    ));
    // A submodule's `commondir` does not exist to be bound: made, it is a redirection the
    // sandbox reports after the command (and the bash tool refuses).
    assert_ok(&run(
        &sandbox,
        &scene,
        "echo /tmp/evil > .git/modules/sub/commondir",
    ));
    assert_eq!(
        sandbox
            .planted()
            .into_iter()
            .map(|p| p.path)
            .collect::<Vec<_>>(),
        [git.join("modules/sub/commondir")]
    );
}

/// Landlock's scopes (ABI 6): a confined command cannot signal a process outside its sandbox
/// (here one the test started, standing in for the agent or the user's editor), nor connect
/// to its abstract Unix socket; where the kernel is older, it can, and the report says so
/// (issue 45).
#[test]
fn scenario_a_command_cannot_signal_or_reach_processes_outside_it() {
    expect_user();
    let scene = Scene::new();
    let mut victim = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let script = format!("kill -TERM {}", victim.id());
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    let out = run(&sandbox, &scene, &script);
    let scoped = capabilities().landlock_abi.is_some_and(|abi| abi >= 6);
    let alive = victim.try_wait().unwrap().is_none();
    if scoped {
        assert_refused(&out, "Operation not permitted");
        assert!(alive, "the command killed a process outside its sandbox");
    } else {
        assert_ok(&out);
        if has(Layer::Landlock) {
            assert!(
                capabilities()
                    .report
                    .iter()
                    .any(|l| l.text.contains("can send signals to your other processes")),
                "{:#?}",
                capabilities().report
            );
        } else {
            missing_is_reported(Layer::Landlock);
        }
    }
    // Ours to end, by its PID.
    let _ = victim.kill();
    let _ = victim.wait();
    // Inside its own sandbox a command still signals what it started.
    assert_ok(&run(
        &sandbox,
        &scene,
        "sleep 30 & kill $!; wait $! || true",
    ));

    // An abstract socket of a process outside (X11 and D-Bus use them; so could anything).
    use std::os::linux::net::SocketAddrExt;
    let name = format!("coding-agent-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let connect = format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\")'"
    );
    assert_ok(&run_unconfined(&scene, &connect));
    let out = run(&sandbox, &scene, &connect);
    if scoped {
        assert_refused(&out, "PermissionError");
    } else {
        assert_ok(&out);
    }
    drop(listener);
}

/// The agent's own files — its keys, its sessions and checkpoints of every project — and the
/// `deny_read` paths cannot be read by a command, in either confined mode; what the user wrote
/// for the model (skills and their scripts) stays readable. Where there are no mount
/// namespaces a command can read them, and the summary says so (issue 45).
#[test]
fn scenario_the_agent_s_own_files_are_hidden_from_commands() {
    expect_user();
    let scene = Scene::new();
    let home = scene.outside.join("agent-home");
    std::fs::create_dir_all(home.join("sessions/--p--")).unwrap();
    std::fs::create_dir_all(home.join("skills/pdf")).unwrap();
    std::fs::write(home.join("auth.toml"), "[keys]\nopenai = \"sk-secret-1\"\n").unwrap();
    std::fs::write(home.join("sessions/--p--/s.jsonl"), "transcript-secret\n").unwrap();
    std::fs::write(home.join("skills/pdf/run.sh"), "echo skill-ok\n").unwrap();
    let ssh = scene.outside.join("dot-ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE-KEY\n").unwrap();
    let script = format!(
        "cat {home}/auth.toml {home}/sessions/--p--/s.jsonl {ssh}/id_ed25519 2>&1; \
         sh {home}/skills/pdf/run.sh",
        home = home.display(),
        ssh = ssh.display()
    );
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let policy =
            Policy::new(mode, &scene.ws, &[], None).hiding(Some(&home), std::slice::from_ref(&ssh));
        let sandbox = sandbox::Sandbox::new(policy, capabilities());
        let out = run(&sandbox, &scene, &script);
        let seen = stdout(&out);
        assert!(seen.contains("skill-ok"), "{mode}: {seen}{}", stderr(&out));
        let leaked = ["sk-secret-1", "transcript-secret", "PRIVATE-KEY"]
            .iter()
            .filter(|secret| seen.contains(*secret))
            .count();
        if has(Layer::Mounts) {
            assert_eq!(leaked, 0, "{mode}: {seen}");
        } else {
            assert_eq!(leaked, 3, "{mode}: {seen}");
            assert!(
                sandbox
                    .summary()
                    .missing
                    .iter()
                    .any(|m| m.contains("hiding the agent's own files")),
                "{:?}",
                sandbox.summary().missing
            );
        }
    }
    // Nothing was changed by hiding: the agent still reads its own files.
    assert!(
        std::fs::read_to_string(home.join("auth.toml"))
            .unwrap()
            .contains("sk-secret-1")
    );
}

/// No confined command sets a set-user-ID or set-group-ID bit (as root, that is a setuid
/// binary left for the user to run outside the sandbox), nor gives a file to another owner,
/// in the workspace or anywhere; ordinary modes and "chown to myself" still work (issue 45).
#[test]
fn scenario_setuid_bits_and_chown_to_another_owner_are_refused() {
    expect_user();
    let scene = Scene::new();
    std::fs::write(scene.ws.join("tool"), "#!/bin/sh\n").unwrap();
    let (uid, gid) = (unsafe { libc::geteuid() }, unsafe { libc::getegid() });
    // Without the sandbox these work (the file is ours; root may give it away).
    let probe = "cp tool probe && chmod u+s probe && chmod g+s probe";
    assert_ok(&run_unconfined(&scene, probe));
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let sandbox = scene.sandbox(mode, None);
        for attack in [
            "chmod u+s tool",
            "chmod 4755 tool",
            "chmod g+s tool",
            "python3 -c 'import os; os.chmod(\"tool\", 0o6755)'",
        ] {
            let out = run(&sandbox, &scene, attack);
            if has(Layer::Seccomp) {
                assert_refused(&out, "Operation not permitted");
            } else if mode == SandboxMode::WorkspaceWrite {
                assert_ok(&out);
                missing_is_reported(Layer::Seccomp);
            }
        }
        let meta = std::fs::metadata(scene.ws.join("tool")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        if has(Layer::Seccomp) {
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{mode}");
        }
        std::fs::set_permissions(
            scene.ws.join("tool"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        if mode == SandboxMode::WorkspaceWrite {
            assert_ok(&run(&sandbox, &scene, "chmod 755 tool && chmod -x tool"));
            assert_ok(&run(
                &sandbox,
                &scene,
                &format!("chown {uid}:{gid} tool && chown :{gid} tool"),
            ));
        }
        // Another owner: root could, a user never can (the kernel refuses it anyway).
        let other = if uid == 65534 { 1 } else { 65534 };
        let out = run(&sandbox, &scene, &format!("chown {other} tool"));
        if has(Layer::Seccomp) || !is_root() || mode == SandboxMode::ReadOnly {
            assert!(!out.status.success(), "{mode}: {}", stderr(&out));
        }
        let group = run(&sandbox, &scene, &format!("chgrp {other} tool"));
        if has(Layer::Seccomp) {
            assert!(!group.status.success(), "{mode}: {}", stderr(&group));
        }
        assert_eq!(
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(scene.ws.join("tool")).unwrap()),
            uid
        );
    }
}

/// Outside the writable roots a file's metadata cannot change either: a command cannot make
/// a private file of the user's readable by others, nor backdate it (Landlock does not
/// govern `chmod`, `chown` or `utimensat`; the mounts there are read-only for commands).
/// Inside the workspace modes and times change as usual (issue 45).
#[test]
fn scenario_file_metadata_outside_the_writable_roots_cannot_change() {
    expect_user();
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new();
    let secret = scene.outside.join("id_ed25519");
    std::fs::write(&secret, "PRIVATE\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mtime = std::fs::metadata(&secret).unwrap().modified().unwrap();
    std::fs::write(scene.ws.join("script.sh"), "echo hi\n").unwrap();
    let sandbox = scene.sandbox(SandboxMode::WorkspaceWrite, None);
    for attack in [
        "chmod 644 \"$OUT/id_ed25519\"",
        "touch -d 2001-01-01 \"$OUT/id_ed25519\"",
    ] {
        let out = run(&sandbox, &scene, attack);
        if has(Layer::Mounts) {
            assert_refused(&out, "Read-only file system");
        } else {
            assert_ok(&out);
            assert!(
                sandbox
                    .summary()
                    .missing
                    .iter()
                    .any(|m| m.contains("read-only file metadata")),
                "{:?}",
                sandbox.summary().missing
            );
        }
    }
    let meta = std::fs::metadata(&secret).unwrap();
    if has(Layer::Mounts) {
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.modified().unwrap(), mtime);
    }
    assert_ok(&run(
        &sandbox,
        &scene,
        "chmod +x script.sh && touch -d 2001-01-01 script.sh",
    ));
    assert_eq!(
        std::fs::metadata(scene.ws.join("script.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o100,
        0o100
    );
}
