//! The binary's sessions end to end against mock-llm: crash repair, locking and --fork,
//! private files, refused paths, diagnostics.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use mock_llm::Reply;
use serde_json::{Value, json};

// Sessions: crash repair, locking and --fork, private files, refused paths, diagnostics.

fn session_text(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Polls `check` every 20 ms until it holds, failing after `secs` seconds.
async fn wait_until(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each tool call of the request's assistant messages is answered by the tool messages right
/// after it.
fn assert_calls_paired(body: &Value) {
    let messages = body["messages"].as_array().unwrap();
    for (i, message) in messages.iter().enumerate() {
        let Some(calls) = message["tool_calls"].as_array() else {
            continue;
        };
        let answered: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        for call in calls {
            let id = call["id"].as_str().unwrap();
            assert!(answered.contains(&id), "call {id} unanswered in {body}");
        }
    }
}

// The test polls the file while the child runs, so the server needs its own worker thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_during_a_tool_run_continues_with_the_call_closed() {
    let env = Env::new();
    let pid_file = env.work.path().join("pid");
    let command = format!("echo $$ > {}; sleep 60", pid_file.display());
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": command})),
        Reply::text("Going on."),
    ])
    .await;
    let mut child = env
        .command(Some(&server), &["-p", "run it"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(30, "the assistant message in the session file", || {
        env.sessions()
            .first()
            .is_some_and(|path| session_text(path).contains("\"tool_call\""))
    })
    .await;
    // The shell's pid written, not only the file created: the redirect creates it before
    // `echo` writes, and a command killed with the agent in between never would.
    let pgid = command_pid(&mut child, &pid_file).await;
    child.kill().unwrap(); // SIGKILL: no clean-up runs.
    child.wait().unwrap();
    // The command may outlive the agent: end its whole group so nothing outlives the test.
    // SAFETY: a plain signal to the process group of the command this test had started.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let path = env.sessions()[0].clone();
    assert!(!session_text(&path).contains("\"tool_result\""));

    let out = env
        .run(Some(&server), &["--continue", "-p", "go on"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Going on.\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("closed 1 unfinished tool call"), "{stderr}");
    let body = &server.requests()[1].body;
    assert_eq!(roles(body), ["system", "user", "assistant", "tool", "user"]);
    assert_calls_paired(body);
    assert_eq!(
        body["messages"][3]["content"],
        "interrupted: the agent stopped before this tool finished"
    );
    let saved = session_text(&path);
    assert!(
        saved.contains("interrupted: the agent stopped before this tool finished"),
        "{saved}"
    );
    let loaded = session::load_session(&path).unwrap();
    assert_eq!(loaded.repaired, 0, "the file holds the repair");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

// Five processes block on their children at once: the server needs its own worker thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_concurrent_continues_never_interleave_in_one_session() {
    let env = Env::new();
    let server = serve(vec![Reply::text("First answer.")]).await;
    let out = env.run(Some(&server), &["-p", "first"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    for _ in 0..5 {
        // Slow answers keep the winner's lock held while the others try.
        server.push(Reply::text("An answer.").with_delay_ms(300));
    }
    // All five started before any is waited for.
    let children: Vec<_> = (0..5)
        .map(|i| {
            env.command(
                Some(&server),
                &["--continue", "-p", &format!("question {i}")],
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outs: Vec<Output> = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect()
    })
    .await
    .unwrap();
    let mut succeeded = Vec::new();
    for (i, out) in outs.iter().enumerate() {
        match out.status.code() {
            Some(0) => succeeded.push(format!("question {i}")),
            Some(2) => {
                let stderr = text(&out.stderr);
                assert!(
                    stderr.contains("is in use by another coding-agent process")
                        && stderr.contains("--fork"),
                    "{stderr}"
                );
            }
            other => panic!("run {i} exited {other:?}: {}", text(&out.stderr)),
        }
    }
    assert!(!succeeded.is_empty());
    eprintln!(
        "{} of 5 continued, the others were refused",
        succeeded.len()
    );
    let sessions = env.sessions();
    assert_eq!(sessions.len(), 1);
    // One chain, in file order: nobody appended to another's branch.
    let saved = session_text(&sessions[0]);
    let lines: Vec<Value> = saved
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parent_id"], pair[0]["id"], "{saved}");
    }
    let loaded = session::load_session(&sessions[0]).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let previews: Vec<String> = loaded.messages.iter().map(|m| m.preview()).collect();
    assert_eq!(previews.len(), 2 + 2 * succeeded.len(), "{previews:?}");
    assert_eq!(previews[..2], ["first", "First answer."]);
    for pair in previews[2..].chunks(2) {
        assert!(succeeded.contains(&pair[0]), "{previews:?}");
        assert_eq!(pair[1], "An answer.", "{previews:?}");
    }
}

#[tokio::test]
async fn a_session_in_use_is_refused_and_fork_continues_in_a_copy() {
    let env = Env::new();
    let server = serve(vec![
        Reply::text("First answer."),
        Reply::text("Forked answer."),
    ])
    .await;
    let out = env.run(Some(&server), &["-p", "first"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let original = env.sessions()[0].clone();
    let before = std::fs::read(&original).unwrap();
    // Another process holds the session.
    let held = std::fs::File::open(&original).unwrap();
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);

    let out = env
        .run(Some(&server), &["--continue", "-p", "second"], "")
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let id = session::load_session(&original).unwrap().header.id;
    assert!(
        stderr.contains(&format!(
            "session {id} is in use by another coding-agent process"
        )) && stderr.contains(&*original.to_string_lossy())
            && stderr.contains("--fork"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "refused: untouched"
    );

    let out = env
        .run(Some(&server), &["--continue", "--fork", "-p", "second"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Forked answer.\n");
    assert!(
        text(&out.stderr).contains("forked"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "forked: untouched"
    );
    let body = &server.requests()[1].body;
    assert_eq!(roles(body), ["system", "user", "assistant", "user"]);
    let sessions = env.sessions();
    assert_eq!(sessions.len(), 2);
    let fork = sessions.iter().find(|p| **p != original).unwrap();
    let previews: Vec<String> = session::load_session(fork)
        .unwrap()
        .messages
        .iter()
        .map(|m| m.preview())
        .collect();
    assert_eq!(
        previews,
        ["first", "First answer.", "second", "Forked answer."]
    );
    drop(held);

    let out = env.run(Some(&server), &["--fork", "-p", "x"], "").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--fork needs"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn session_path_to_a_file_that_is_not_a_session_is_refused() {
    let env = Env::new();
    let notes = env.work.path().join("notes.txt");
    std::fs::write(&notes, "line one\nline two\n").unwrap();
    let server = serve(vec![Reply::text("never")]).await;
    let out = env
        .run(
            Some(&server),
            &["--session", notes.to_str().unwrap(), "-p", "hi"],
            "",
        )
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a session file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "line one\nline two\n"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn session_files_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // A home and sessions directory an older version left open.
    std::fs::create_dir(env.home.path().join("sessions")).unwrap();
    for dir in [
        env.home.path().to_path_buf(),
        env.home.path().join("sessions"),
    ] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let server = serve(vec![Reply::text("Private.")]).await;
    let mut command = env.command(Some(&server), &["-p", "hi"]);
    // SAFETY: umask is async-signal-safe and only changes the child's creation mask.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let out = tokio::task::spawn_blocking(move || command.stdin(Stdio::null()).output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = env.sessions()[0].clone();
    assert_eq!(mode(env.home.path()), 0o700);
    assert_eq!(mode(&env.home.path().join("sessions")), 0o700);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(mode(&file), 0o600);
}

#[tokio::test]
async fn continue_names_the_session_it_cannot_read_and_prints_warnings_once() {
    let env = Env::new();
    let server = serve(vec![Reply::text("One."), Reply::text("Two.")]).await;
    let out = env.run(Some(&server), &["-p", "first"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = env.sessions()[0].clone();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "not json").unwrap();
    drop(file);
    let out = env
        .run(Some(&server), &["--continue", "-p", "second"], "")
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let warning = stderr
        .lines()
        .find(|l| l.contains("skipped a damaged line"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(
        warning.matches(&*path.to_string_lossy()).count(),
        1,
        "{warning}"
    );

    // The session exists but cannot be read: a mode of 000 keeps out anyone but root, so as
    // root the agent runs as nobody.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let mut command = if running_as_root() {
        for dir in [env.home.path(), env.work.path()] {
            let status = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(dir)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(binary_for_nobody());
        command
    } else {
        Command::new(env!("CARGO_BIN_EXE_coding-agent"))
    };
    command
        .args(["--continue", "-p", "third"])
        .current_dir(env.work.path())
        .env("CODING_AGENT_HOME", env.home.path())
        .stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&*path.to_string_lossy()) && stderr.contains("Permission denied"),
        "{stderr}"
    );
    assert!(!stderr.contains("no session"), "{stderr}");
}

fn running_as_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `coding-agent export`: the latest session of the directory as a private HTML page by
/// default, markdown to standard output with `--format md -o -`, the key the agent knows
/// never in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_exports_as_a_private_page_or_markdown() {
    let env = Env::new();
    let key = "sk-export-cli-key-9876543210";
    let server = serve(vec![
        Reply::tool_call("bash", json!({"command": format!("echo {key}")})),
        Reply::text("Done: the <b>answer</b>."),
    ])
    .await;
    let mut command = env.command(Some(&server), &["-p", "show it"]);
    command.env("OPENAI_API_KEY", key);
    let out = env.run_command(command, "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    // The user exports with their key set, as they run the agent.
    let export = |args: &[&str]| {
        let mut command = env.command(None, args);
        command.env("OPENAI_API_KEY", key);
        env.run_command(command, "")
    };
    let page = env.work.path().join("out/page.html");
    let out = export(&["export", "-o", page.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("Exported 4 messages to "),
        "{}",
        text(&out.stdout)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    // The answer's markdown is rendered; the key the command echoed is redacted.
    assert!(
        html.contains("Done: the &lt;b&gt;answer&lt;/b&gt;."),
        "{html}"
    );
    assert!(html.contains("echo [redacted]"), "{html}");
    assert!(!html.contains(key));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&page).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let out = export(&["export", "--format", "md", "-o", "-"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.contains("## You\n\nshow it"), "{md}");
    assert!(md.contains("**bash**"), "{md}");
    assert!(!md.contains(key));

    let out = env.run(None, &["export", "no-such-session"], "").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no session `no-such-session`"));
}
