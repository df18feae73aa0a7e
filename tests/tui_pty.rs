//! The real binary in a real pseudo-terminal against mock-llm: what a user types and sees.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::time::{Duration, Instant};

use common::pty::{Session, WAIT, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::{Value, json};

/// A bash call that holds until the test creates the flag file.
/// A bash call that runs until the test creates `flag`; it creates [`running`]'s file first.
fn waiting_tool(flag: &std::path::Path) -> Reply {
    let command = format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.05; done; echo released",
        running(flag).display(),
        flag.display()
    );
    Reply::tool_call("bash", json!({"command": command}))
}

fn running(flag: &std::path::Path) -> std::path::PathBuf {
    flag.with_extension("running")
}

/// Waits until the waiting tool's command runs: "● bash" is shown as soon as the call is
/// streamed, before it starts, and a message sent before then skips it.
fn wait_until_running(session: &Session) {
    let deadline = Instant::now() + WAIT;
    while !running(&session.flag()).exists() {
        assert!(
            Instant::now() < deadline,
            "the tool never started; the screen shows:\n{}",
            session.contents()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn roles(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

fn last_content(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_prompt_streams_and_renders_markdown() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::text("## Done\n\nThe answer is **42**.\n\n- first\n- second\n")
                    .with_chunk_size(3),
            ],
        }))
        .unwrap();
    let mut session = Session::start(&server);
    session.wait_for("Type a message");
    session.type_text("what is the answer?");
    session.send("\r");
    session.wait_for("The answer is 42.");
    session.wait_for("• second");
    let screen = session.contents();
    assert!(screen.contains("› what is the answer?"), "{screen}");
    assert!(screen.contains("mock-model"), "status line: {screen}");
}

/// A prompt typed and sent while the program starts (before its terminal is in raw mode) is
/// sent, not left in the editor with a new line where the Enter was.
#[test]
fn a_prompt_typed_before_start_up_is_sent() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Typed ahead and answered.")],
        }))
        .unwrap();
    let session = Session::start_typed_ahead(&server, "early bird\r");
    session.wait_for("Typed ahead and answered.");
    let screen = session.contents();
    assert!(screen.contains("› early bird"), "{screen}");
    let requests = rt.block_on(server.wait_for_requests(1, WAIT)).unwrap();
    assert_eq!(last_content(&requests[0].body), "early bird");
}

#[test]
fn enter_during_a_tool_call_steers_the_next_request() {
    enter_during_a_tool_call_steers_the_next_request_in(&[]);
}

#[test]
fn enter_during_a_tool_call_steers_the_next_request_on_the_alternate_screen() {
    enter_during_a_tool_call_steers_the_next_request_in(&["--alt-screen"]);
}

fn enter_during_a_tool_call_steers_the_next_request_in(screen: &[&str]) {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, screen, |_| {});
    server.push(waiting_tool(&session.flag()));
    server.push(Reply::text("Steered."));
    session.wait_for("Type a message");
    session.type_text("start");
    session.send("\r");
    session.wait_for("● bash");
    wait_until_running(&session);
    session.type_text("use tabs instead");
    session.send("\r");
    session.wait_for("steer: use tabs instead");
    std::fs::write(session.flag(), "").unwrap();
    session.wait_for("Steered.");
    let requests = rt.block_on(server.wait_for_requests(2, WAIT)).unwrap();
    assert_eq!(
        roles(&requests[1].body),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert_eq!(last_content(&requests[1].body), "use tabs instead");
}

#[test]
fn alt_enter_queues_a_follow_up_until_the_run_ends() {
    alt_enter_queues_a_follow_up_until_the_run_ends_in(&[]);
}

#[test]
fn alt_enter_queues_a_follow_up_until_the_run_ends_on_the_alternate_screen() {
    alt_enter_queues_a_follow_up_until_the_run_ends_in(&["--alt-screen"]);
}

fn alt_enter_queues_a_follow_up_until_the_run_ends_in(screen: &[&str]) {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, screen, |_| {});
    server.push(waiting_tool(&session.flag()));
    server.push(Reply::text("First task done."));
    server.push(Reply::text("Follow-up done."));
    session.wait_for("Type a message");
    session.type_text("first task");
    session.send("\r");
    session.wait_for("● bash");
    wait_until_running(&session);
    session.type_text("then write docs");
    session.send("\x1b\r");
    session.wait_for("follow-up: then write docs");
    std::fs::write(session.flag(), "").unwrap();
    session.wait_for("Follow-up done.");
    let requests = rt.block_on(server.wait_for_requests(3, WAIT)).unwrap();
    assert_eq!(
        roles(&requests[1].body),
        ["system", "user", "assistant", "tool"],
        "not before the run would end"
    );
    assert_eq!(
        roles(&requests[2].body),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(last_content(&requests[2].body), "then write docs");
}

#[test]
fn esc_kills_a_running_command_within_a_second() {
    esc_kills_a_running_command_within_a_second_in(&[]);
}

#[test]
fn esc_kills_a_running_command_within_a_second_on_the_alternate_screen() {
    esc_kills_a_running_command_within_a_second_in(&["--alt-screen"]);
}

fn esc_kills_a_running_command_within_a_second_in(screen: &[&str]) {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, screen, |_| {});
    let pid_file = session.dir.path().join("pid");
    let command = format!("echo $$ > {}; sleep 30", pid_file.display());
    server.push(Reply::tool_call("bash", json!({"command": command})));
    session.wait_for("Type a message");
    session.type_text("sleep please");
    session.send("\r");
    let deadline = Instant::now() + WAIT;
    let pgid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let pressed = Instant::now();
    session.send("\x1b");
    while tools::group_alive(pgid as u32) && pressed.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !tools::group_alive(pgid as u32),
        "sleep 30 outlived Esc by a second"
    );
    session.wait_for("Interrupted");
    session.wait_for("Aborted; the command and its children were killed.");
}

#[test]
fn exit_from_the_alternate_screen_restores_the_terminal_and_says_how_to_resume() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Hello there.")],
        }))
        .unwrap();
    let mut session = Session::start_with(&server, &["--alt-screen"], |_| {});
    session.wait_for("Type a message");
    assert!(
        session.screen.lock().unwrap().screen().alternate_screen(),
        "the UI runs on the alternate screen"
    );
    session.type_text("hi");
    session.send("\r");
    session.wait_for("Hello there.");
    session.send("\x04");
    wait_exit(&mut session);
    let files = session_files(session.home.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_stem().unwrap().to_string_lossy().into_owned();
    let id = name.rsplit_once('_').unwrap().1.to_string();
    session.wait_for(&format!(
        "Resume this session with: coding-agent --session {id}"
    ));
    let parser = session.screen.lock().unwrap();
    let screen = parser.screen();
    assert!(!screen.alternate_screen(), "back on the normal screen");
    assert!(!screen.hide_cursor(), "cursor visible again");
}

#[test]
fn quitting_before_anything_was_said_saves_nothing_and_says_so() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start(&server);
    session.wait_for("Type a message");
    session.send("\x04");
    wait_exit(&mut session);
    session.wait_for("Nothing was said yet, so nothing is saved.");
    assert!(session_files(session.home.path()).is_empty());
    assert!(!session.contents().contains("Resume this session"));
}

fn wait_exit(session: &mut Session) {
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = session.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "ctrl+d did not quit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

/// The session files under a home.
fn session_files(home: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(home.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for entry in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.path().extension().is_some_and(|e| e == "jsonl") {
                out.push(entry.path());
            }
        }
    }
    out
}

/// A session whose first task runs a command that waits, with "use tabs" queued to steer it;
/// `answer` is the next reply.
fn steering_a_running_command(server: &MockServer, screen: &[&str], answer: &str) -> Session {
    let mut session = Session::start_with(server, screen, |_| {});
    server.push(waiting_tool(&session.flag()));
    server.push(Reply::text(answer));
    session.wait_for("Type a message");
    session.type_text("first task");
    session.send("\r");
    session.wait_for("● bash");
    wait_until_running(&session);
    session.type_text("use tabs");
    session.send("\r");
    session.wait_for("steer: use tabs");
    session
}

#[test]
fn esc_with_queued_messages_sends_the_steer_and_gives_the_follow_up_back() {
    esc_with_queued_messages_sends_the_steer_and_gives_the_follow_up_back_in(&[]);
}

#[test]
fn esc_with_queued_messages_sends_the_steer_and_gives_the_follow_up_back_on_the_alternate_screen() {
    esc_with_queued_messages_sends_the_steer_and_gives_the_follow_up_back_in(&["--alt-screen"]);
}

fn esc_with_queued_messages_sends_the_steer_and_gives_the_follow_up_back_in(screen: &[&str]) {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = steering_a_running_command(&server, screen, "Steered answer.");
    session.type_text("then write docs");
    session.send("\x1b\r");
    session.wait_for("follow-up: then write docs");
    session.send("\x1b");
    // The steer starts the next run (after a moment a second Esc could keep it), the
    // follow-up comes back.
    session.wait_for("Interrupted — sending your queued message next");
    session.wait_for("Steered answer.");
    let requests = rt.block_on(server.wait_for_requests(2, WAIT)).unwrap();
    assert_eq!(last_content(&requests[1].body), "use tabs");
    session.wait_for("│then write docs");
    assert!(!session.contents().contains("follow-up: then write docs"));
}

/// Esc Esc with a steer queued: the second Esc, within the moment the notice offers, keeps
/// the message in the editor instead of sending it; Enter then sends it once.
#[test]
fn a_second_esc_keeps_the_queued_steer_in_the_editor() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = steering_a_running_command(&server, &[], "Sent when I chose.");
    session.send("\x1b");
    session.wait_for("Interrupted — sending your queued message next");
    session.send("\x1b");
    session.wait_for("Kept in the editor, not sent");
    session.wait_for("│use tabs");
    // Sent now, by the user, once: the second request is this message and no other came.
    session.send("\r");
    session.wait_for("Sent when I chose.");
    let requests = rt.block_on(server.wait_for_requests(2, WAIT)).unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(last_content(&requests[1].body), "use tabs");
}

#[test]
fn a_new_repository_asks_to_be_trusted_once() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Hello.")],
        }))
        .unwrap();
    let mut session = Session::start_with(&server, &[], |dir| {
        std::fs::write(dir.join("AGENTS.md"), "Answer in haiku.").unwrap();
    });
    session.wait_for("Trust this repository");
    assert!(session.contents().contains("AGENTS.md"));
    session.send("y\r");
    session.wait_for("Type a message");
    session.type_text("hi");
    session.send("\r");
    session.wait_for("Hello.");
    let requests = rt.block_on(server.wait_for_requests(1, WAIT)).unwrap();
    assert!(requests[0].body.to_string().contains("Answer in haiku."));
    let trusted = session.home.path().join("trusted.toml");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&trusted).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn an_untrusted_command_asks_and_always_allow_is_remembered() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, &["-a", "untrusted"], |_| {});
    server.push(Reply::tool_call("bash", json!({"command": "touch made-1"})));
    server.push(Reply::tool_call("bash", json!({"command": "touch made-2"})));
    server.push(Reply::text("Both made."));
    session.wait_for("Type a message");
    session.type_text("make them");
    session.send("\r");
    session.wait_for("Allow bash?");
    session.wait_for("always allow `touch` here");
    assert!(
        !session.dir.path().join("made-1").exists(),
        "nothing runs before the answer"
    );
    session.send("a");
    // The second command has the same prefix: it runs without a question.
    session.wait_for("Both made.");
    assert!(session.dir.path().join("made-1").exists());
    assert!(session.dir.path().join("made-2").exists());
    let rules = std::fs::read_to_string(session.home.path().join("approvals.toml")).unwrap();
    assert!(rules.contains("touch"), "{rules}");
}

#[test]
fn typing_while_a_question_waits_denies_it_and_steers() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, &["-a", "untrusted"], |_| {});
    server.push(Reply::tool_call("bash", json!({"command": "touch nope"})));
    server.push(Reply::text("Fine, I will not."));
    session.wait_for("Type a message");
    session.type_text("make it");
    session.send("\r");
    session.wait_for("Allow bash?");
    session.type_text("do not touch anything");
    session.send("\r");
    session.wait_for("Fine, I will not.");
    assert!(!session.dir.path().join("nope").exists());
    let requests = rt.block_on(server.wait_for_requests(2, WAIT)).unwrap();
    let body = requests[1].body.to_string();
    assert!(body.contains("denied by the user"), "{body}");
    assert_eq!(last_content(&requests[1].body), "do not touch anything");
}

/// The terminal goes away (the window closed, the SSH connection lost) under a session
/// leader that ignores SIGHUP and lives on (`trap '' HUP`), so no signal comes: the agent,
/// idle, notices by itself and ends cleanly, instead of outliving its terminal with its input
/// reader spinning on it (crossterm#793) and a core burnt until someone kills it. Its last
/// words to the terminal gone are dropped (`println!` there panicked).
#[test]
fn the_agent_ends_when_its_terminal_goes_away_while_idle() {
    ends_when_its_terminal_goes_away(false);
}

/// The same after a reply (the reader polled on the UI's own thread spun there, and kept the
/// UI from ever ending).
#[test]
fn the_agent_ends_when_its_terminal_goes_away_after_a_reply() {
    ends_when_its_terminal_goes_away(true);
}

fn ends_when_its_terminal_goes_away(after_a_reply: bool) {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;

    let rt = runtime();
    let paragraphs: String = (0..200)
        .map(|i| format!("Paragraph {i:03} of the answer.\n\n"))
        .collect();
    let mut reply = Reply::text(paragraphs);
    reply.chunk_size = 20;
    reply.delay_ms = 10;
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![reply],
        }))
        .unwrap();
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut master, mut slave) = (0, 0);
    let mut size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: the out-pointers are valid; no name is asked for, no termios given.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            // `*mut` on macOS, `*const` on Linux.
            (&raw mut size).cast(),
        )
    };
    assert_eq!(opened, 0, "openpty");
    // Not inherited: a child holding the terminal's master open would keep it from going.
    for fd in [master, slave] {
        // SAFETY: fcntl on a descriptor just opened.
        assert_eq!(
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) },
            0
        );
    }
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // A command after the agent's, or the shell would exec it and make it the leader.
    let ended = dir.path().join("ended");
    let script = format!(
        "trap '' HUP; '{}' --base-url {} --model mock-model; echo $? > '{}'",
        env!("CARGO_BIN_EXE_coding-agent"),
        server.url(),
        ended.display()
    );
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", &script])
        .current_dir(dir.path())
        .env("CODING_AGENT_HOME", home.path())
        .env("CODING_AGENT_LOCAL_PROBES", "")
        .env("TERM", "xterm-256color");
    for key in common::KEYS {
        command.env_remove(key);
    }
    command
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: setsid and ioctl are async-signal-safe; the terminal is the child's stdin.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut shell = command.spawn().unwrap();
    drop(slave);
    // Whatever happens next, nothing is left running.
    struct Reap(Vec<i32>);
    impl Drop for Reap {
        fn drop(&mut self) {
            for pid in &self.0 {
                // SAFETY: kill takes no pointers.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
        }
    }
    let mut reap = Reap(vec![shell.id() as i32]);
    let mut master = std::fs::File::from(master);
    // What is written comes in pieces (a frame writes only the cells that changed): read
    // through a terminal emulator.
    let size = |n| std::num::NonZeroU16::new(n).unwrap();
    let mut screen = vt100::Parser::new(size(24), size(80), 0);
    // Until the screen shows `text` (or, `gone`, no longer does).
    let mut wait_for = |text: &str, gone: bool, master: &mut std::fs::File| {
        let deadline = Instant::now() + WAIT;
        while screen.screen().contents().contains(text) == gone {
            assert!(
                Instant::now() < deadline,
                "{text:?} (gone: {gone}) never came:\n{}",
                screen.screen().contents()
            );
            read_some(master, &mut screen, 50);
        }
        // Quiet: what comes after, until nothing has for half a second (below, a frame drawn
        // after the terminal went would end the agent on its write error, and the test would
        // not see whether the hangup alone does).
        let deadline = Instant::now() + WAIT;
        while read_some(master, &mut screen, 500) {
            assert!(Instant::now() < deadline, "the agent never went quiet");
        }
    };
    wait_for("Type a message", false, &mut master);
    if after_a_reply {
        std::io::Write::write_all(&mut master, b"go\r").unwrap();
        wait_for("Paragraph 199 of the answer.", false, &mut master);
        wait_for("Working", true, &mut master);
    }
    let agent = children_of(shell.id())
        .pop()
        .expect("the agent, under the shell");
    reap.0.push(agent);
    drop(master);
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = shell.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the agent outlived its terminal ({:?})",
            std::fs::read_to_string(format!("/proc/{agent}/stat"))
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    // It ended by itself, on the terminal's error (not killed: a SIGHUP's default action
    // would be 129; and no panic writing to the terminal gone, which would be 101).
    assert_eq!(std::fs::read_to_string(&ended).unwrap().trim(), "1");
}

/// Reads what the terminal's master has within `wait_ms` into `screen`; false if nothing came.
fn read_some(master: &mut std::fs::File, screen: &mut vt100::Parser, wait_ms: i32) -> bool {
    use std::os::fd::AsRawFd;
    let mut ready = libc::pollfd {
        fd: master.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    if unsafe { libc::poll(&mut ready, 1, wait_ms) } <= 0 {
        return false;
    }
    let mut buf = [0u8; 8192];
    let n = std::io::Read::read(master, &mut buf).unwrap();
    screen.process(&buf[..n]);
    n > 0
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fourth field, after the command's name in parentheses.
        let parent = stat.rfind(')').and_then(|end| {
            stat[end + 1..]
                .split_whitespace()
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
        if parent == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// While a question waits, the live row says so (not "Working (20s)"); its keys never reach
/// the editor: `a` where no rule is offered names the keys that work instead of typing an `a`;
/// and a module run offers the longest prefix safe to remember (issue 46).
#[test]
fn a_waiting_question_says_so_and_keeps_its_keys_out_of_the_editor() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, &["-a", "untrusted"], |_| {});
    server.push(Reply::tool_call(
        "bash",
        json!({"command": "rm -f gone.txt"}),
    ));
    server.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 -m unittest discover -s nothing-here"}),
    ));
    server.push(Reply::text("Done."));
    session.wait_for("Type a message");
    session.type_text("clean up and test");
    session.send("\r");
    session.wait_for("Allow bash?");
    session.wait_for("Waiting for your approval");
    assert!(
        !session.contents().contains("Working ("),
        "{}",
        session.contents()
    );
    // `rm` never gets a rule: `a` is not an answer here, and not a letter for the editor.
    assert!(!session.contents().contains("always allow"));
    session.send("a");
    session.wait_for("No \"always allow\" for this one");
    assert!(
        !session.contents().contains("│a "),
        "the key reached the editor: {}",
        session.contents()
    );
    session.send("y");
    session.wait_for("always allow `python3 -m unittest` here");
    session.send("a");
    session.wait_for("Done.");
    let rules = std::fs::read_to_string(session.home.path().join("approvals.toml")).unwrap();
    assert!(rules.contains("unittest"), "{rules}");
}

/// `/status` says whether the repository steers the model, as `/help` promises: with
/// `--trust` its files are loaded for this run, and it says so (issue 46).
#[test]
fn status_shows_the_repository_s_trust() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_with(&server, &["--trust"], |dir| {
        std::fs::write(dir.join("AGENTS.md"), "Be brief.").unwrap();
    });
    session.wait_for("Type a message");
    session.type_text("/status");
    session.send("\r");
    session.wait_for("Repository:");
    session.wait_for("trusted for this run (--trust)");
    session.wait_for("AGENTS.md loaded");
}

/// Ctrl+T says what it did, and from when: inline, what is already printed stays (issue 46).
#[test]
fn ctrl_t_says_what_it_changed() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start(&server);
    session.wait_for("Type a message");
    session.send("\x14");
    session.wait_for("Thinking is hidden from now on (Ctrl+T shows it).");
    session.send("\x14");
    session.wait_for("Thinking is shown from now on (Ctrl+T hides it).");
}

/// `/copy` says what it did — sent to the terminal with OSC 52, which no terminal confirms —
/// and not that something was copied (issue 46).
#[test]
fn copy_says_what_it_did_and_no_more() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start(&server);
    server.push(Reply::text("Copy me."));
    session.wait_for("Type a message");
    session.type_text("say it");
    session.send("\r");
    session.wait_for("Copy me.");
    session.type_text("/copy");
    session.send("\r");
    session.wait_for("Sent 8 characters to the terminal's clipboard (OSC 52)");
    assert!(session.wrote("\x1b]52;c;"), "no OSC 52 was written");
    assert!(!session.contents().contains("Copied"));
}

/// The colours follow the terminal's background: the dark palette where the terminal says it
/// is dark (this harness answers the OSC 11 query as a dark terminal does), the light one
/// where the config says `theme = "light"`, and none at all with `NO_COLOR`.
#[test]
fn the_palette_follows_the_background_and_no_color() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    // The status line is dimmed: xterm colour 245 on dark, 243 on light.
    let dark = Session::start(&server);
    dark.wait_for("Type a message");
    assert!(dark.wrote("\x1b[38;5;245m"), "the dark palette");
    assert!(!dark.wrote("\x1b[38;5;243m"));

    let mut light = Session::start_with_home_config(&server, "theme = \"light\"\n");
    light.wait_for("Type a message");
    assert!(light.wrote("\x1b[38;5;243m"), "the light palette");
    assert!(!light.wrote("\x1b[38;5;245m"));
    light.send("\x04");

    let plain = Session::start_with_env(&server, &[], &[("NO_COLOR", "1")], |_| {});
    plain.wait_for("Type a message");
    assert!(!plain.wrote("\x1b[38;5;"), "no colour at all");
    assert!(plain.wrote("\x1b[2m"), "dimmed by the attribute instead");
}

/// On the user's own display `/copy` uses its clipboard tool (here a stand-in `wl-copy` that
/// keeps what it was given), and says so; over SSH it does not, whatever the display says.
#[test]
fn copy_uses_the_local_display_s_clipboard() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let bin = tempfile::tempdir().unwrap();
    let kept = bin.path().join("clipboard.txt");
    let tool = bin.path().join("wl-copy");
    std::fs::write(&tool, format!("#!/bin/sh\ncat > '{}'\n", kept.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let env = [("WAYLAND_DISPLAY", "wayland-0"), ("PATH", path.as_str())];
    let mut session = Session::start_with_env(&server, &[], &env, |_| {});
    server.push(Reply::text("Copy me."));
    session.wait_for("Type a message");
    session.type_text("say it");
    session.send("\r");
    session.wait_for("Copy me.");
    session.type_text("/copy");
    session.send("\r");
    session.wait_for("Copied 8 characters to the clipboard (wl-copy).");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "Copy me.");
    assert!(
        !session.wrote("\x1b]52;c;"),
        "the terminal was not asked as well"
    );
}

/// `/export notes.md` writes the conversation the agent has, as markdown, privately, and says
/// where; `/export` alone writes the HTML page.
#[test]
fn export_writes_the_conversation() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start(&server);
    server.push(Reply::text("Exported answer."));
    session.wait_for("Type a message");
    session.type_text("please answer");
    session.send("\r");
    session.wait_for("Exported answer.");
    session.type_text("/export notes.md");
    session.send("\r");
    session.wait_for("Exported 2 messages to");
    let md = std::fs::read_to_string(session.dir.path().join("notes.md")).unwrap();
    assert!(md.contains("## You\n\nplease answer"), "{md}");
    assert!(md.contains("Exported answer."), "{md}");
    session.type_text("/export");
    session.send("\r");
    session.wait_for(".html (mode 0600)");
    let page = std::fs::read_dir(session.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "html"))
        .expect("the page");
    let html = std::fs::read_to_string(page.path()).unwrap();
    assert!(html.contains("Exported answer."));
}
