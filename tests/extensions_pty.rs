//! Prompt templates, skills and hook runs in the real TUI (pty + vt100) against mock-llm.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::pty::{Session, WAIT, runtime};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

#[test]
fn a_template_is_offered_in_the_popup_and_expands_with_its_arguments() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start(Script::default())).unwrap();
    server.push(Reply::text("Reviewed it."));
    server.push(Reply::tool_call("bash", json!({"command": "echo hi"})));
    server.push(Reply::text("Ran it."));
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let prompts = home.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review a file carefully\n---\nReview $1 for $2.\n",
    )
    .unwrap();
    let skill = home.path().join("skills/deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Ship to staging.\n---\nRun make deploy.\n",
    )
    .unwrap();
    // Where the README says hook scripts go: the rest of the agent's home is hidden from
    // commands, hooks included.
    std::fs::create_dir_all(home.path().join("hooks")).unwrap();
    let hook = home.path().join("hooks/check.sh");
    std::fs::write(&hook, "#!/bin/sh\ncat > /dev/null\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[[hooks]]\nevent = \"pre_tool_use\"\nmatcher = \"bash\"\ncommand = \"{}\"\n",
            hook.display()
        ),
    )
    .unwrap();
    let mut session = Session::start_in(&server, &[], (30, 100), (dir, home));
    session.wait_for("Type a message");

    session.type_text("/rev");
    session.wait_for("Review a file carefully");
    // Tab takes the popup's choice, and a space: the arguments follow.
    session.send("\t");
    session.wait_for("/review");
    session.type_text("src/lib.rs 'null checks'");
    session.send("\r");
    session.wait_for("Reviewed it.");
    let requests = rt.block_on(server.wait_for_requests(1, WAIT)).unwrap();
    assert_eq!(
        requests[0].body["messages"][1]["content"],
        "Review src/lib.rs for null checks."
    );

    session.type_text("/skills");
    session.send("\r");
    session.wait_for("deploy  [user]");

    session.type_text("run it");
    session.send("\r");
    session.wait_for("Ran it.");
    session.wait_for("hook pre_tool_use ran");
}
