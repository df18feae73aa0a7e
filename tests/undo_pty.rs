//! Taking it back as a user does, in a real terminal: `/undo` asking about a file the user
//! changed since, Esc twice to rewind with the message back in the editor, `/tree` and
//! `!cmd` checkpoints.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use common::pty::{Session, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

const DOWN: &str = "\x1b[B";
const UP: &str = "\x1b[A";

fn read(session: &Session, name: &str) -> Option<String> {
    std::fs::read_to_string(session.dir.path().join(name)).ok()
}

#[test]
fn undo_asks_about_the_users_edit_and_esc_twice_rewinds() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    // 80×24: the conflict's question and its choices must all be on a small screen.
    let mut session = Session::start_sized(&server, &[], (24, 80), |dir| {
        std::fs::write(dir.join("notes.txt"), "original\n").unwrap();
        std::fs::write(dir.join("plan.txt"), "plan A\n").unwrap();
    });
    server.push(Reply::tool_call(
        "bash",
        json!({"command": "echo agent > notes.txt && echo 'plan B' > plan.txt"}),
    ));
    server.push(Reply::text("Both rewritten."));
    session.wait_for("Type a message");
    session.type_text("rewrite them");
    session.send("\r");
    session.wait_for("Both rewritten.");
    session.wait_for("Checkpoint: M notes.txt, M plan.txt");
    assert_eq!(read(&session, "plan.txt").unwrap(), "plan B\n");

    // The user's editor changes one of them afterwards.
    std::fs::write(session.dir.path().join("notes.txt"), "my own words\n").unwrap();
    session.type_text("/undo");
    session.send("\r");
    session.wait_for("overwrite the changes made since to notes.txt");
    session.wait_for("Skip those files");
    // The question itself is on the popup, not only in the transcript it covers (issue 46).
    session.wait_for("Files changed since the agent's checkpoint: restore them anyway?");
    assert_eq!(
        read(&session, "plan.txt").unwrap(),
        "plan B\n",
        "nothing yet"
    );
    // Cancel is selected first; one up is "Skip those files".
    session.send(UP);
    session.send("\r");
    session.wait_for("Undone: M plan.txt; kept as you left them: notes.txt");
    assert_eq!(read(&session, "plan.txt").unwrap(), "plan A\n");
    assert_eq!(read(&session, "notes.txt").unwrap(), "my own words\n");
    // /redo takes that undo back: the agent's plan returns, and the user's file, which the
    // undo left alone, is not touched, so there is nothing to ask.
    session.type_text("/redo");
    session.send("\r");
    session.wait_for("Redone: M plan.txt");
    assert_eq!(read(&session, "plan.txt").unwrap(), "plan B\n");
    assert_eq!(read(&session, "notes.txt").unwrap(), "my own words\n");

    // Esc twice on an empty editor: the rewind list, newest message first.
    session.send("\x1b");
    session.wait_for("Press Esc again to rewind");
    session.send("\x1b");
    session.wait_for("1 checkpoint after it");
    session.send("\r");
    session.wait_for("Code and conversation");
    session.send(DOWN); // Conversation only
    session.send("\r");
    session.wait_for("The conversation goes on from the point chosen");
    // The message is back in the editor, to edit and send again.
    session.wait_for("│rewrite them");
    assert_eq!(
        read(&session, "plan.txt").unwrap(),
        "plan B\n",
        "files stay"
    );
    // Inline, what was printed stays in the terminal's history; the history shown again after
    // the rewind (printed once more) lacks the rewound answer.
    let history = session.history().join("\n");
    assert_eq!(history.matches("Both rewritten.").count(), 1, "{history}");
}

#[test]
fn a_shell_command_is_checkpointed_and_the_tree_shows_the_branches() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    let mut session = Session::start(&server);
    server.push(Reply::text("First answer."));
    server.push(Reply::text("Second answer."));
    session.wait_for("Type a message");
    session.type_text("!echo mine > shell.txt");
    session.send("\r");
    session.wait_for("Checkpoint: A shell.txt");
    session.type_text("/undo");
    session.send("\r");
    session.wait_for("Undone: D shell.txt");
    assert!(read(&session, "shell.txt").is_none());

    session.type_text("first question");
    session.send("\r");
    session.wait_for("First answer.");
    session.type_text("/label start");
    session.send("\r");
    session.wait_for("Labelled the latest message `start`");
    // Rewind to before the question, conversation only, and ask something else.
    session.type_text("/rewind");
    session.send("\r");
    session.wait_for("no file changes after it");
    session.send("\r");
    session.wait_for("Conversation only");
    session.send(DOWN);
    session.send("\r");
    session.wait_for("The conversation goes on from the point chosen");
    session.wait_for("│first question");
    // The editor holds the old question: replace it.
    for _ in 0.."first question".len() {
        session.send("\x7f");
    }
    session.type_text("other question");
    session.send("\r");
    session.wait_for("Second answer.");
    session.type_text("/tree");
    session.send("\r");
    session.wait_for("[start]");
    session.wait_for("you are here");
    let screen = session.contents();
    assert!(screen.contains("you: first question"), "{screen}");
    assert!(screen.contains("you: other question"), "{screen}");
    session.send("\x1b");
    session.wait_gone("you are here");
    session.type_text("/resume");
    session.send("\r");
    session.wait_for("2 branches");
}
