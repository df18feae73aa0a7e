//! Every character arrives: CJK and emoji typed into the editor and answered by the model, in
//! a real pseudo-terminal 40 and 80 columns wide (portable-pty + vt100, scrollback included).
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::time::{Duration, Instant};

use common::pty::{Session, WAIT, runtime};
use mock_llm::{MockServer, Reply, Script};

const PROMPT: &str = "非常感谢你的帮助和耐心的解答，我学到了很多关于这个问题的知识。\
Could you also explain how the wrapping works 🎉🚀 in every language? \
希望以后还能继续向你请教，祝你一切顺利！";

const ANSWER: &str = "当然可以。换行的位置由 Unicode 换行算法决定：汉字之间都可以断开，\
英文单词在空格处断开，表情符号 🎉✨🚀 和组合字符永远不会被拆开。\
Nothing is lost at a wrap point, whatever the width of the terminal.\n\n\
最后一行。";

/// The text the editor shows, its rows joined (what is between the rounded borders).
fn editor_rows(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(top) = lines.iter().rposition(|l| l.starts_with('╭')) else {
        return Vec::new();
    };
    lines[top + 1..]
        .iter()
        .take_while(|l| !l.starts_with('╰'))
        .map(|l| {
            l.trim_matches(|c: char| c == '│' || c.is_whitespace())
                .to_string()
        })
        .collect()
}

fn without_spaces(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Waits until `ready` holds for the screen.
fn wait_until(session: &Session, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let screen = session.contents();
        if ready(&screen) {
            return screen;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{screen}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn every_character_arrives(cols: u16, args: &[&str]) {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script {
            replies: vec![Reply::text(ANSWER).with_chunk_size(7)],
        }))
        .unwrap();
    let mut session = Session::start_sized(&server, args, (30, cols), |_| {});
    session.wait_for("Type a message");

    // The editor wraps what is typed and grows with it; its beginning stays in sight.
    session.send(PROMPT);
    let screen = wait_until(
        &session,
        "showed the whole prompt in the editor",
        |screen| without_spaces(&editor_rows(screen).concat()) == without_spaces(PROMPT),
    );
    let rows = editor_rows(&screen);
    let inner = usize::from(cols) - 2;
    let columns: usize = PROMPT
        .chars()
        .map(|c| if c.is_ascii() { 1 } else { 2 })
        .sum();
    let needed = columns / inner;
    assert!(
        rows.len() > 1 && rows.len() >= needed.min(10),
        "the editor did not grow: {rows:?}"
    );
    assert!(rows[0].starts_with("非常感谢"), "{rows:?}");

    session.send("\r");
    session.wait_for("最后一行。");
    let body = &server.requests()[0].body;
    let sent = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sent, PROMPT);

    // In the transcript (scrollback and screen): the user cell starts after its marker and
    // both it and the answer hold every character, in order.
    let history = session.history();
    let first = history
        .iter()
        .position(|l| l.starts_with("› 非常感谢"))
        .unwrap_or_else(|| panic!("no user cell:\n{}", history.join("\n")));
    assert!(
        history[first + 1].starts_with("  "),
        "continuation under the marker:\n{}",
        history.join("\n")
    );
    let all = without_spaces(&history.join("\n"));
    let prompt_at = all.find(&without_spaces(&format!("›{PROMPT}")));
    let answer_at = all.find(&without_spaces(ANSWER));
    assert!(
        prompt_at.is_some() && answer_at.is_some() && prompt_at < answer_at,
        "prompt at {prompt_at:?}, answer at {answer_at:?}:\n{}",
        history.join("\n")
    );
}

#[test]
fn cjk_and_emoji_arrive_whole_at_40_columns() {
    every_character_arrives(40, &[]);
}

#[test]
fn cjk_and_emoji_arrive_whole_at_40_columns_on_the_alternate_screen() {
    every_character_arrives(40, &["--alt-screen"]);
}

#[test]
fn cjk_and_emoji_arrive_whole_at_80_columns() {
    every_character_arrives(80, &[]);
}

#[test]
fn a_prompt_longer_than_the_editor_scrolls_and_comes_back_to_its_beginning() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script { replies: vec![] }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (30, 40), |_| {});
    session.wait_for("Type a message");
    // 26 words of 18 letters, two to a row of 38 columns: 13 rows, more than the 10 the
    // editor grows to.
    let words: Vec<String> = ('a'..='z').map(|c| c.to_string().repeat(18)).collect();
    session.send(&words.join(" "));
    let screen = wait_until(&session, "showed the end of the prompt", |screen| {
        editor_rows(screen)
            .last()
            .is_some_and(|l| l.ends_with(&words[25]))
    });
    assert_eq!(editor_rows(&screen).len(), 10, "{screen}");
    // Up walks the rows back to the first.
    session.send(&"\x1b[A".repeat(12));
    let screen = wait_until(&session, "scrolled back to the beginning", |screen| {
        editor_rows(screen)
            .first()
            .is_some_and(|l| l.starts_with(&words[0]))
    });
    assert_eq!(editor_rows(&screen).len(), 10, "{screen}");
}

#[test]
fn the_editor_wraps_again_when_the_terminal_narrows() {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(Script { replies: vec![] }))
        .unwrap();
    let mut session = Session::start_sized(&server, &[], (30, 80), |_| {});
    session.wait_for("Type a message");
    session.send(PROMPT);
    let screen = wait_until(&session, "showed the prompt at 80 columns", |screen| {
        without_spaces(&editor_rows(screen).concat()) == without_spaces(PROMPT)
    });
    let wide = editor_rows(&screen).len();
    session.resize(30, 40);
    let screen = wait_until(
        &session,
        "wrapped the prompt again at 40 columns",
        |screen| {
            let rows = editor_rows(screen);
            rows.len() > wide && without_spaces(&rows.concat()) == without_spaces(PROMPT)
        },
    );
    assert!(
        screen.lines().all(|l| !l.contains('│') || l.ends_with('│')),
        "a row of the editor runs past its border:\n{screen}"
    );
}
