//! Inline mode in a real pseudo-terminal (portable-pty + vt100 with a scrollback): the
//! conversation goes into the terminal's own history, only the live region is redrawn.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::time::{Duration, Instant};

use common::pty::{Session, WAIT, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

/// Sequences inline mode never writes: the alternate screen and every mouse-reporting mode.
const FULL_SCREEN: [&str; 6] = [
    "\x1b[?1049h",
    "\x1b[?47h",
    "\x1b[?1000h",
    "\x1b[?1002h",
    "\x1b[?1003h",
    "\x1b[?1006h",
];

fn wait_exit(session: &mut Session) {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = session.child.try_wait().unwrap() {
            assert!(status.success());
            return;
        }
        assert!(
            Instant::now() < deadline,
            "did not quit:\n{}",
            session.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where each of `wanted` is in `lines`; every one must be there exactly once, in order.
fn once_in_order(lines: &[String], wanted: &[String]) {
    let mut last = None;
    for text in wanted {
        let at: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains(text.as_str()))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            at.len(),
            1,
            "{text:?} should be in the terminal once, found at {at:?}:\n{}",
            lines.join("\n")
        );
        assert!(
            last < Some(at[0]),
            "{text:?} is out of order:\n{}",
            lines.join("\n")
        );
        last = Some(at[0]);
    }
}

fn paragraphs(count: usize) -> (String, Vec<String>) {
    let names: Vec<String> = (1..=count).map(|i| format!("Paragraph {i:03}.")).collect();
    let text = names
        .iter()
        .map(|n| format!("{n} Some words follow it.\n\n"))
        .collect::<String>()
        + "The end of the answer.\n";
    (text, names)
}

#[test]
fn the_conversation_is_in_the_scrollback_after_exit() {
    let rt = runtime();
    let (answer, names) = paragraphs(60);
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(answer).with_chunk_size(40)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    session.type_text("tell me a long story");
    session.send("\r");
    session.wait_for("The end of the answer.");
    // The editor draws its caret; the terminal's own cursor would blink on the editor's
    // corner, where each frame leaves it.
    assert!(
        session.screen.lock().unwrap().screen().hide_cursor(),
        "the terminal's cursor is hidden while the UI runs"
    );
    session.send("\x04");
    wait_exit(&mut session);
    session.wait_for("Resume this session with");
    let history = session.history();
    let mut wanted = vec!["› tell me a long story".to_string()];
    wanted.extend(names);
    wanted.push("The end of the answer.".into());
    wanted.push("Resume this session with".into());
    once_in_order(&history, &wanted);
    for sequence in FULL_SCREEN {
        assert!(!session.wrote(sequence), "wrote {sequence:?}");
    }
    let parser = session.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor(), "cursor visible again");
}

/// Rows of the terminal (scrollback, then screen) with `marker` in them whose cells after the
/// text hold written spaces: copied from the terminal, such a row brings a tail of blanks.
fn rows_with_written_blanks(session: &Session, marker: &str) -> Vec<String> {
    let mut parser = session.screen.lock().unwrap();
    let (rows, cols) = parser.screen().size();
    let kept = parser.screen().scrollback_len();
    let mut padded = Vec::new();
    let mut check = |screen: &vt100::Screen, row: u16| {
        let text = screen
            .rows(0, cols.get())
            .nth(usize::from(row))
            .unwrap_or_default();
        if !text.contains(marker) {
            return;
        }
        let shows = |col: u16| {
            screen
                .cell(row, col)
                .is_some_and(|c| !c.contents().trim().is_empty())
        };
        let end = (0..cols.get())
            .rev()
            .find(|&col| shows(col))
            .map_or(0, |c| c + 1);
        let written = |col: u16| screen.cell(row, col).is_some_and(|c| c.has_contents());
        if (end..cols.get()).any(written) {
            padded.push(text);
        }
    };
    for offset in (1..=kept).rev() {
        parser.screen_mut().set_scrollback(offset);
        check(parser.screen(), 0);
    }
    parser.screen_mut().set_scrollback(0);
    for row in 0..rows.get() {
        check(parser.screen(), row);
    }
    padded
}

/// The live region's rows that end up in the conversation were drawn over the editor's box and
/// the status line as the region moved down: what was there is erased, not overwritten with
/// spaces.
#[test]
fn rows_left_in_the_conversation_have_no_trailing_blanks() {
    let rt = runtime();
    let (answer, names) = paragraphs(40);
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(answer).with_chunk_size(7).with_delay_ms(1)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    session.type_text("tell me a story");
    session.send("\r");
    session.wait_for("The end of the answer.");
    session.wait_for("Type a message");
    let history = session.history();
    let mut wanted = vec!["› tell me a story".to_string()];
    wanted.extend(names);
    once_in_order(&history, &wanted);
    let padded = rows_with_written_blanks(&session, "Paragraph");
    assert!(padded.is_empty(), "rows with written blanks: {padded:#?}");
}

#[test]
fn a_long_code_block_streams_with_the_editor_always_on_screen() {
    let rt = runtime();
    let lines: Vec<String> = (1..=500)
        .map(|i| format!("let line_{i:03} = {i};"))
        .collect();
    let answer = format!("```rust\n{}\n```\nAfter the code.\n", lines.join("\n"));
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(answer).with_chunk_size(64).with_delay_ms(1)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (60, 200), |_| {});
    session.wait_for("Type a message");
    session.type_text("show me code");
    session.send("\r");
    // While it streams, the status line stays on the last row: the live region never grows
    // past the screen.
    let deadline = Instant::now() + WAIT;
    let mut seen_midway = false;
    loop {
        let screen = session.contents();
        let last = screen.lines().last().unwrap_or_default().to_string();
        assert!(last.contains("mock-model"), "status line gone:\n{screen}");
        if screen.contains("let line_250") {
            seen_midway = true;
        }
        if screen.contains("After the code.") {
            break;
        }
        assert!(Instant::now() < deadline, "never finished:\n{screen}");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(seen_midway || session.history().iter().any(|l| l.contains("line_250")));
    let history = session.history();
    let mut wanted: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    wanted.push("After the code.".into());
    once_in_order(&history, &wanted);
}

/// Times the program erased the screen from its top row (it does on a resize, never the
/// scrollback). Never with `ESC[2J`, which tmux (`scroll-on-clear`) and VTE take for a clear
/// that moves the screen into the scrollback.
fn screen_clears(session: &Session) -> usize {
    let raw = session.raw.lock().unwrap();
    assert!(!raw.windows(4).any(|w| w == b"\x1b[2J"), "ESC[2J written");
    const FROM_THE_TOP: &[u8] = b"\x1b[1;1H\x1b[2K";
    raw.windows(FROM_THE_TOP.len())
        .filter(|w| *w == FROM_THE_TOP)
        .count()
}

/// Resizes and waits until the program has laid the screen out again.
fn resize(session: &mut Session, rows: u16, cols: u16) {
    let before = screen_clears(session);
    session.resize(rows, cols);
    let deadline = Instant::now() + WAIT;
    while screen_clears(session) == before {
        assert!(Instant::now() < deadline, "the resize was never handled");
        std::thread::sleep(Duration::from_millis(10));
    }
    session.wait_for("mock-model");
}

/// A 60-paragraph answer is printed, then the screen takes each of `sizes` while the command
/// it asked for runs, then 60 more paragraphs stream. The server outlives the run.
fn resized_while_a_command_runs(
    rt: &tokio::runtime::Runtime,
    sizes: &[(u16, u16)],
) -> (Session, MockServer, Vec<String>) {
    let (first, mut names) = paragraphs(60);
    let (second, _) = paragraphs(0);
    let more: Vec<String> = (61..=120).map(|i| format!("Paragraph {i:03}.")).collect();
    let second = more
        .iter()
        .map(|n| format!("{n} Some words follow it.\n\n"))
        .collect::<String>()
        + &second;
    names.extend(more);
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    let flag = session.flag();
    let command = format!("while [ ! -e {} ]; do sleep 0.05; done", flag.display());
    server.push(
        Reply::text(first.replace("The end of the answer.\n", ""))
            .with_tool_call("bash", json!({ "command": command })),
    );
    server.push(Reply::text(second).with_chunk_size(30));
    session.wait_for("Type a message");
    session.type_text("go");
    session.send("\r");
    session.wait_for("while [");
    for &(rows, cols) in sizes {
        resize(&mut session, rows, cols);
    }
    std::fs::write(&flag, "").unwrap();
    session.wait_for("The end of the answer.");
    (session, server, names)
}

#[test]
fn resizing_mid_run_loses_nothing() {
    let rt = runtime();
    // Taller and wider, then smaller than at the start, while a command runs.
    let (session, _server, names) = resized_while_a_command_runs(&rt, &[(30, 100), (20, 60)]);
    let history = session.history();
    for name in &names {
        assert!(
            history.iter().any(|l| l.contains(name.as_str())),
            "{name} is missing:\n{}",
            history.join("\n")
        );
    }
    let screen = session.contents();
    assert!(
        screen
            .lines()
            .last()
            .unwrap_or_default()
            .contains("mock-model"),
        "status line at the bottom:\n{screen}"
    );
}

/// A wider or narrower screen prints again the conversation's rows the screen showed, not a
/// screenful: the rows above them are in the scrollback already and would be there twice.
/// (When the height changes, a screenful is: the terminal may have moved rows between the
/// screen and the scrollback.)
#[test]
fn resizing_prints_each_line_once() {
    let rt = runtime();
    let sizes = [(24, 100), (24, 60), (24, 70)];
    let (session, _server, names) = resized_while_a_command_runs(&rt, &sizes);
    once_in_order(&session.history(), &names);
}

/// The same while the answer streams: its finished rows are on the screen, its open block
/// in the live region.
#[test]
fn resizing_mid_stream_prints_each_line_once() {
    let rt = runtime();
    let (answer, names) = paragraphs(120);
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(answer).with_chunk_size(20).with_delay_ms(4)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    session.type_text("go");
    session.send("\r");
    session.wait_for("Paragraph 020.");
    resize(&mut session, 24, 100);
    resize(&mut session, 24, 60);
    resize(&mut session, 24, 90);
    session.wait_for("The end of the answer.");
    once_in_order(&session.history(), &names);
}

#[test]
fn ctrl_o_opens_the_transcript_and_esc_comes_back() {
    let rt = runtime();
    let command = "for i in $(seq 1 40); do echo row$i; done";
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![
                Reply::tool_call("bash", json!({ "command": command })),
                Reply::text("Listed them."),
            ],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    session.type_text("list rows");
    session.send("\r");
    session.wait_for("Listed them.");
    assert!(
        !session.history().iter().any(|l| l.trim() == "row1"),
        "tool output is shortened in the scrollback"
    );
    session.send("\x0f");
    session.wait_for("transcript ·");
    assert!(session.screen.lock().unwrap().screen().alternate_screen());
    // Home: the top of the conversation, with the whole tool output.
    session.send("\x1b[H");
    session.wait_for("⎿ row1 ");
    session.send("\x1b");
    session.wait_gone("transcript ·");
    assert!(!session.screen.lock().unwrap().screen().alternate_screen());
    session.wait_for("Type a message");
    let history = session.history();
    once_in_order(
        &history,
        &["› list rows".to_string(), "Listed them.".to_string()],
    );
}

#[test]
fn resuming_a_long_session_prints_its_last_turns() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: (1..=8)
                .map(|i| Reply::text(format!("Answer number {i}.")))
                .collect(),
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    for i in 1..=8 {
        session.type_text(&format!("question {i}"));
        session.send("\r");
        session.wait_for(&format!("Answer number {i}."));
    }
    session.send("\x04");
    wait_exit(&mut session);
    let dirs = session.into_dirs();
    let mut resumed = Session::start_in(&server, &["--continue"], (24, 80), dirs);
    resumed.wait_for("Answer number 8.");
    let history = resumed.history();
    assert!(
        history
            .iter()
            .any(|l| l.contains("earlier messages are not shown")),
        "{}",
        history.join("\n")
    );
    // The first turns are not printed again; the last ones are, once.
    assert!(!history.iter().any(|l| l.contains("question 1")));
    once_in_order(
        &history,
        &["› question 4".to_string(), "Answer number 8.".to_string()],
    );
    resumed.type_text("/redraw");
    resumed.send("\r");
    resumed.wait_for("printed again at this width");
    let history = resumed.history();
    assert!(history.iter().any(|l| l.contains("› question 1")));
}

/// Quits the agent started from the shell, then the shell. `exit` waits for the shell's
/// prompt: typed while the agent still reads the terminal, the agent would take it.
fn quit_to_the_shell(session: &mut Session) {
    session.send("\x03\x03");
    session.wait_for("Resume this session");
    let deadline = Instant::now() + WAIT;
    while session.contents().trim_end().lines().last() != Some("$") {
        assert!(
            Instant::now() < deadline,
            "no prompt from the shell:\n{}",
            session.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    session.send("exit\r");
    wait_exit(session);
}

/// The agent started from an interactive shell, "half a prompt" typed in its editor; the
/// mock answers "Back, and answering.".
fn half_a_prompt_under_a_shell() -> (tokio::runtime::Runtime, MockServer, Session) {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text("Back, and answering.")],
        }))
        .unwrap();
    let mut session = Session::start_in_shell(&server, (24, 80));
    session.wait_for("Type a message");
    session.type_text("half a prompt");
    (rt, server, session)
}

/// Ctrl+Z under a shell with job control: the agent gives the terminal back as it found it
/// and stops; the shell runs a command; `fg` brings the agent back with the prompt being
/// typed still in the editor, and it carries on.
#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_comes_back() {
    let (_rt, server, mut session) = half_a_prompt_under_a_shell();
    let before = session.raw.lock().unwrap().len();
    session.send("\x1a");
    session.wait_for("Stopped");
    session.wait_gone("half a prompt");
    let given_back = String::from_utf8_lossy(&session.raw.lock().unwrap()[before..]).into_owned();
    for mode_off in ["\x1b[?2004l", "\x1b[?25h"] {
        assert!(
            given_back.contains(mode_off),
            "{mode_off:?} not in {given_back:?}"
        );
    }
    session.send("echo shell-$((6*7))\r");
    session.wait_for("shell-42");
    session.send("fg\r");
    session.wait_for("half a prompt");
    session.send("\r");
    session.wait_for("Back, and answering.");
    let calls: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].body.to_string().contains("half a prompt"));
    quit_to_the_shell(&mut session);
}

/// Started through a parent in the same job (`cargo run`, here a shell script), Ctrl+Z stops
/// the parent too: the shell waits on it, and gives its prompt back only once it has stopped.
#[test]
fn ctrl_z_stops_a_parent_in_the_job_too() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script { replies: vec![] }))
        .unwrap();
    let mut session = Session::start_in_shell_as(&server, (24, 80), |agent| {
        format!("sh -c '\"$@\"; echo after-the-agent' wrapper {agent}")
    });
    session.wait_for("Type a message");
    session.type_text("half a prompt");
    session.send("\x1a");
    session.wait_for("Stopped");
    session.send("fg\r");
    session.wait_for("half a prompt");
    session.send("\x03\x03");
    session.wait_for("after-the-agent");
    session.send("exit\r");
    wait_exit(&mut session);
}

/// A SIGTSTP from elsewhere (`kill -TSTP`, a shell's `kill -TSTP %1`) suspends as Ctrl+Z does:
/// the terminal is given back as it was found before the agent stops, and `fg` brings it back
/// with the prompt being typed.
#[test]
fn a_tstp_from_elsewhere_gives_the_terminal_back_first() {
    let (_rt, server, mut session) = half_a_prompt_under_a_shell();
    let before = session.raw.lock().unwrap().len();
    session.signal_foreground(libc::SIGTSTP);
    session.wait_for("Stopped");
    session.wait_gone("half a prompt");
    let given_back = String::from_utf8_lossy(&session.raw.lock().unwrap()[before..]).into_owned();
    assert!(
        given_back.contains("\x1b[?25h"),
        "the cursor is not shown again: {given_back:?}"
    );
    session.send("fg\r");
    session.wait_for("half a prompt");
    session.send("\r");
    session.wait_for("Back, and answering.");
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        1
    );
    quit_to_the_shell(&mut session);
}

/// A SIGSTOP cannot be caught: the agent stops with the terminal in its modes, and the shell
/// takes the terminal back its own way. After `fg` the agent takes it again (raw mode: a key
/// reaches the editor without Enter) and draws the screen again under what the shell wrote.
#[test]
fn after_a_stop_from_elsewhere_fg_takes_the_terminal_again() {
    let (_rt, _server, mut session) = half_a_prompt_under_a_shell();
    session.signal_foreground(libc::SIGSTOP);
    session.wait_for("Stopped");
    session.send("echo shell-$((6*7))\r");
    session.wait_for("shell-42");
    session.send("fg\r");
    // The editor, drawn again whole under the shell's lines, with a key typed after `fg`.
    session.send("X");
    session.wait_for("half a promptX");
    // The shell's lines go up (into the scrollback, past the screen's height), and the editor
    // is drawn whole under them: its box's top, the prompt, its bottom, in that order.
    let deadline = Instant::now() + WAIT;
    loop {
        let rows = session.history();
        let shell = rows.iter().rposition(|r| r.contains("shell-42"));
        let drawn = shell.is_some_and(|shell| {
            let after = &rows[shell..];
            let top = after.iter().position(|r| r.starts_with('╭'));
            let prompt = after.iter().position(|r| r.contains("half a promptX"));
            let bottom = after.iter().position(|r| r.starts_with('╰'));
            top < prompt && prompt < bottom && top.is_some()
        });
        if drawn {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the editor is not drawn again under the shell's lines:\n{}",
            rows.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    session.send("\r");
    session.wait_for("Back, and answering.");
    quit_to_the_shell(&mut session);
}

/// An answer whose paragraphs are one row each at 80 columns, each ending past the 60th
/// column with a word of its own; the session idle after it, at 24 × 80.
fn answered_at_80_columns() -> (Session, Vec<String>) {
    let rt = runtime();
    let names: Vec<String> = (1..=30).map(|i| format!("Paragraph {i:03}.")).collect();
    let answer = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{n} Some words follow it and run on past sixty columns to end-{:03}.\n\n",
                i + 1
            )
        })
        .collect::<String>()
        + "The end of the answer.\n";
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(answer)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (24, 80), |_| {});
    session.wait_for("Type a message");
    session.type_text("a long answer please");
    session.send("\r");
    session.wait_for("The end of the answer.");
    // The server is needed no more: the rest is the terminal's.
    drop(server);
    drop(rt);
    let mut wanted = vec!["› a long answer please".to_string()];
    wanted.extend(names);
    wanted.push("The end of the answer.".to_string());
    (session, wanted)
}

/// After a resize to 20 × 60: the screen laid out at 60 columns (the editor as wide, the last
/// paragraph whole: the terminal alone would have cut it), and every line of the conversation
/// in the terminal, in order. Rows may be there twice, as after any change of height (README,
/// "Resizing"), but none is lost.
fn nothing_lost_at_60_columns(session: &Session, wanted: &[String]) {
    let deadline = Instant::now() + WAIT;
    let screen = loop {
        let screen = session.contents();
        let editor = screen.lines().find(|l| l.starts_with('╭'));
        if editor.is_some_and(|l| l.chars().count() == 60) && screen.contains("end-030.") {
            break screen;
        }
        assert!(
            Instant::now() < deadline,
            "not laid out at 60 columns:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let history = session.history();
    let mut from = 0;
    for text in wanted {
        let at = history[from..]
            .iter()
            .position(|l| l.contains(text.as_str()))
            .unwrap_or_else(|| {
                panic!(
                    "{text:?} lost or out of order:\n{}\n(screen:\n{screen})",
                    history.join("\n")
                )
            });
        from += at + 1;
    }
}

/// Narrower and shorter at once: the rows the screen showed are printed again at the new
/// width, all of them, though a screenful at the new width holds less of the text.
#[test]
fn shrinking_the_terminal_loses_no_row_it_showed() {
    let (mut session, wanted) = answered_at_80_columns();
    session.resize(20, 60);
    nothing_lost_at_60_columns(&session, &wanted);
}

/// The same resize while the transcript overlay is open: closing it prints the normal screen
/// again, whole, at the new size.
#[test]
fn a_resize_under_the_overlay_is_printed_for_when_it_closes() {
    let (mut session, wanted) = answered_at_80_columns();
    session.send("\x0f");
    session.wait_for("transcript ·");
    let drawn = session.raw.lock().unwrap().len();
    session.resize(20, 60);
    // The overlay drawn again: the resize reached the agent while it was open.
    let deadline = Instant::now() + WAIT;
    while session.raw.lock().unwrap().len() == drawn {
        assert!(Instant::now() < deadline, "the overlay was not drawn again");
        std::thread::sleep(Duration::from_millis(20));
    }
    session.send("\x1b");
    session.wait_gone("transcript ·");
    nothing_lost_at_60_columns(&session, &wanted);
}
