//! Checkpoints, undo, redo, rewind and the tree, end to end over RPC: real files changed by
//! real bash commands and the write tool, a real shadow store, and the user's own `.git` left
//! exactly as it was.
//!
//! Unix only: these drive the binary through shell commands, pseudo-terminals and
//! signals as a user on Linux or macOS would (see README, Windows).
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;

use common::rpc::Rpc;
use common::*;
use mock_llm::Reply;
use serde_json::{Value, json};

/// Runs git in `dir` (with no user config) and returns its output.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Everything of the user's repository state that must never change: HEAD, the index, every
/// ref, the stash, the status.
fn repo_state(dir: &Path) -> Vec<u8> {
    let dot = dir.join(".git");
    let mut state = Vec::new();
    for file in ["HEAD", "index", "packed-refs", "ORIG_HEAD"] {
        state.extend(std::fs::read(dot.join(file)).unwrap_or_default());
        state.push(0);
    }
    state.extend(git(dir, &["for-each-ref"]).into_bytes());
    state.extend(git(dir, &["stash", "list"]).into_bytes());
    state.extend(git(dir, &["status", "--porcelain", "--ignored"]).into_bytes());
    state
}

/// A repository with one commit, a stash, an ignored `target/` and untracked work.
fn user_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(dir.join("tracked.txt"), "committed\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    std::fs::write(dir.join("tracked.txt"), "stashed change\n").unwrap();
    git(dir, &["stash", "-q"]);
    std::fs::create_dir(dir.join("target")).unwrap();
    // Big and ignored: never copied into the store.
    std::fs::write(dir.join("target/big.bin"), vec![7u8; 12 << 20]).unwrap();
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

fn read(dir: &Path, name: &str) -> Option<Vec<u8>> {
    std::fs::read(dir.join(name)).ok()
}

/// The response's data, after checking it succeeded.
fn ok(response: Value) -> Value {
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

fn prompt(rpc: &mut Rpc, id: u64, text: &str) {
    ok(rpc.call(id, json!({"type": "prompt", "message": text})));
    rpc.event("agent_end");
}

fn store_size(home: &Path) -> u64 {
    fn walk(path: &Path) -> u64 {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return 0;
        };
        if meta.is_dir() {
            std::fs::read_dir(path)
                .unwrap()
                .flatten()
                .map(|e| walk(&e.path()))
                .sum()
        } else {
            meta.len()
        }
    }
    walk(&home.join("checkpoints"))
}

// What bash did (rm, mv, sed -i, a created file, a binary overwritten, a symlink replaced)
// is all taken back by one undo, brought back by redo, and taken back again; a file the agent
// never touched is never written; the user's repository is untouched throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_changes_are_undone_redone_and_undone_again() {
    let env = Env::new();
    let work = env.work.path();
    user_repo(work);
    std::fs::write(work.join("gone.txt"), "remove me\n").unwrap();
    std::fs::write(work.join("moved.txt"), "move me\n").unwrap();
    std::fs::write(work.join("edited.txt"), "x marks the spot\n").unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(work.join("data.bin"), &binary).unwrap();
    std::os::unix::fs::symlink("tracked.txt", work.join("link")).unwrap();
    std::fs::write(work.join("untouched.txt"), "never written\n").unwrap();
    let untouched_before = std::fs::metadata(work.join("untouched.txt")).unwrap();
    let before = repo_state(work);

    let server = serve(vec![
        bash(
            "rm gone.txt && mv moved.txt renamed.txt && sed -i 's/x/y/' edited.txt && \
             echo fresh > created.txt && printf 'zz' > data.bin && rm link && ln -s /etc/passwd link",
        ),
        Reply::text("Done."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    prompt(&mut rpc, 1, "change things");
    let taken = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "checkpoint_taken")
        .cloned()
        .expect("a checkpoint_taken event");
    let changed: Vec<String> = taken["record"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["kind"].as_str().unwrap(),
                c["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            "added created.txt",
            "modified data.bin",
            "modified edited.txt",
            "deleted gone.txt",
            "modified link",
            "deleted moved.txt",
            "added renamed.txt",
        ],
        "{taken}"
    );
    assert!(
        store_size(env.home.path()) < 4 << 20,
        "the ignored 12 MB target/ was not copied ({} bytes)",
        store_size(env.home.path())
    );

    let undone = ok(rpc.call(2, json!({"type": "undo"})));
    assert_eq!(undone["restore"]["status"], "restored", "{undone}");
    rpc.event("checkpoint_restored");
    let check_original = || {
        assert_eq!(read(work, "gone.txt").unwrap(), b"remove me\n");
        assert_eq!(read(work, "moved.txt").unwrap(), b"move me\n");
        assert!(read(work, "renamed.txt").is_none());
        assert_eq!(read(work, "edited.txt").unwrap(), b"x marks the spot\n");
        assert!(read(work, "created.txt").is_none());
        assert_eq!(read(work, "data.bin").unwrap(), binary, "byte for byte");
        assert_eq!(
            std::fs::read_link(work.join("link")).unwrap(),
            Path::new("tracked.txt"),
            "a symlink comes back as the same symlink"
        );
    };
    check_original();

    let redone = ok(rpc.call(3, json!({"type": "redo"})));
    assert_eq!(redone["restore"]["status"], "restored", "{redone}");
    assert_eq!(read(work, "created.txt").unwrap(), b"fresh\n");
    assert_eq!(read(work, "data.bin").unwrap(), b"zz");
    assert!(read(work, "gone.txt").is_none());
    assert_eq!(
        std::fs::read_link(work.join("link")).unwrap(),
        Path::new("/etc/passwd")
    );
    assert_eq!(read(work, "edited.txt").unwrap(), b"y marks the spot\n");

    let again = ok(rpc.call(4, json!({"type": "undo"})));
    assert_eq!(again["restore"]["status"], "restored", "{again}");
    check_original();
    let nothing = ok(rpc.call(5, json!({"type": "undo"})));
    assert_eq!(nothing["restore"]["status"], "nothing", "{nothing}");

    let untouched_after = std::fs::metadata(work.join("untouched.txt")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(untouched_before.ino(), untouched_after.ino());
    assert_eq!(untouched_before.mtime_nsec(), untouched_after.mtime_nsec());
    assert_eq!(repo_state(work), before, "the user's .git is untouched");
    assert!(
        !work.join(".git/refs/checkpoints").exists(),
        "nothing of ours in the user's repository"
    );
    // The store is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.home.path().join("checkpoints"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    rpc.finish();
}

// An edit by the agent, then the user's own edit of the same file: undo asks first and
// changes nothing; "keep" leaves the user's file and restores the rest; an undo of a
// directory that is not a git repository works the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_since_the_checkpoint_is_a_conflict() {
    let env = Env::new();
    let work = env.work.path();
    std::fs::write(work.join("mine.txt"), "original\n").unwrap();
    let server = serve(vec![
        Reply::tool_call("write", json!({"path": "mine.txt", "content": "agent's\n"}))
            .with_tool_call(
                "write",
                json!({"path": "other.txt", "content": "new file\n"}),
            ),
        Reply::text("Written."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    prompt(&mut rpc, 1, "write them");
    assert_eq!(read(work, "mine.txt").unwrap(), b"agent's\n");
    // The user's editor changes the file afterwards.
    std::fs::write(work.join("mine.txt"), "the user's own edit\n").unwrap();

    let asked = ok(rpc.call(2, json!({"type": "undo"})));
    assert_eq!(asked["restore"]["status"], "conflicts", "{asked}");
    assert_eq!(asked["restore"]["paths"], json!(["mine.txt"]));
    assert_eq!(
        read(work, "mine.txt").unwrap(),
        b"the user's own edit\n",
        "asking changes nothing"
    );
    assert!(read(work, "other.txt").is_some(), "asking changes nothing");

    let kept = ok(rpc.call(3, json!({"type": "undo", "on_conflict": "keep"})));
    assert_eq!(kept["restore"]["status"], "restored", "{kept}");
    assert_eq!(kept["restore"]["record"]["kept"], json!(["mine.txt"]));
    assert_eq!(read(work, "mine.txt").unwrap(), b"the user's own edit\n");
    assert!(read(work, "other.txt").is_none(), "the rest was undone");

    // Redo, then the user edits again; this time the undo overwrites (the user's text stays
    // in the snapshot taken first).
    ok(rpc.call(4, json!({"type": "redo", "on_conflict": "overwrite"})));
    assert_eq!(read(work, "other.txt").unwrap(), b"new file\n");
    std::fs::write(work.join("other.txt"), "edited again\n").unwrap();
    let overwritten = ok(rpc.call(5, json!({"type": "undo", "on_conflict": "overwrite"})));
    assert_eq!(
        overwritten["restore"]["status"], "restored",
        "{overwritten}"
    );
    assert!(read(work, "other.txt").is_none());
    let pre = overwritten["restore"]["record"]["pre_restore"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!pre.is_empty(), "the state before the undo was kept");
    let list = ok(rpc.call(6, json!({"type": "checkpoints"})));
    assert_eq!(list["checkpoints"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["checkpoints"][0]["undone"], true);
    // "Restore anyway" is taken back by /redo: the user's overwritten text comes back, not
    // the agent's version of the file (issue 45).
    let redone = ok(rpc.call(7, json!({"type": "redo"})));
    assert_eq!(redone["restore"]["status"], "restored", "{redone}");
    assert_eq!(read(work, "other.txt").unwrap(), b"edited again\n");
    assert_eq!(read(work, "mine.txt").unwrap(), b"the user's own edit\n");
    let list = ok(rpc.call(8, json!({"type": "checkpoints"})));
    assert_eq!(list["checkpoints"][0]["undone"], false, "{list}");
    // And /undo after it takes the step back again, asking first about the file the user
    // changed since the agent wrote it.
    let again = ok(rpc.call(9, json!({"type": "undo"})));
    assert_eq!(again["restore"]["status"], "conflicts", "{again}");
    rpc.finish();
}

fn tree(rpc: &mut Rpc, id: u64) -> Value {
    ok(rpc.call(id, json!({"type": "get_tree"})))["tree"].clone()
}

fn node_id(tree: &Value, text: &str) -> String {
    tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["text"] == text)
        .unwrap_or_else(|| panic!("no node {text} in {tree:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn message_count(rpc: &mut Rpc, id: u64) -> usize {
    ok(rpc.call(id, json!({"type": "get_state"})))["messages"]
        .as_u64()
        .unwrap() as usize
}

// Three prompts, each changing a file; then rewinds with each of the three choices: code
// only, conversation only, both. Two conversation rewinds make three branches, and resuming
// the session loads the branch chosen last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_code_conversation_or_both_and_the_tree_it_leaves() {
    let env = Env::new();
    let work = env.work.path();
    let server = serve(vec![
        bash("echo one > one.txt"),
        Reply::text("ONE"),
        bash("echo two > two.txt"),
        Reply::text("TWO"),
        bash("echo three > three.txt"),
        Reply::text("THREE"),
        Reply::text("TWO AGAIN"),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    prompt(&mut rpc, 1, "first");
    prompt(&mut rpc, 2, "second");
    prompt(&mut rpc, 3, "third");
    assert_eq!(message_count(&mut rpc, 4), 12);
    let t = tree(&mut rpc, 5);
    let third = node_id(&t, "third");
    let second = node_id(&t, "second");

    // Code only: three.txt goes, the conversation stays.
    let r = ok(rpc.call(
        6,
        json!({"type": "rewind", "entry_id": third, "restore": "code"}),
    ));
    assert_eq!(r["rewind"]["code"]["status"], "restored", "{r}");
    assert_eq!(r["rewind"]["conversation"], false);
    assert!(read(work, "three.txt").is_none());
    assert!(read(work, "two.txt").is_some());
    assert_eq!(message_count(&mut rpc, 7), 12);

    // Conversation only: back to before "third"; the files stay as they are.
    let r = ok(rpc.call(
        8,
        json!({"type": "rewind", "entry_id": third, "restore": "conversation"}),
    ));
    assert_eq!(r["rewind"]["conversation"], true, "{r}");
    assert_eq!(r["rewind"]["text"], "third");
    rpc.event("rewound");
    assert_eq!(message_count(&mut rpc, 9), 8);
    assert!(read(work, "two.txt").is_some());

    // Both: back to before "second"; two.txt goes too.
    let r = ok(rpc.call(
        10,
        json!({"type": "rewind", "entry_id": second, "restore": "both"}),
    ));
    assert_eq!(r["rewind"]["code"]["status"], "restored", "{r}");
    assert!(read(work, "two.txt").is_none());
    assert!(
        read(work, "one.txt").is_some(),
        "before the rewind point: kept"
    );
    assert_eq!(message_count(&mut rpc, 11), 4);
    prompt(&mut rpc, 12, "second again");

    let t = tree(&mut rpc, 13);
    assert_eq!(t["branches"], 3, "{t:#}");
    assert_eq!(t["current"], node_id(&t, "TWO AGAIN"));
    // The model saw the rewound history: first, its answer, then the new prompt.
    let last = server.requests().last().unwrap().body.clone();
    let users: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("second again"), "{users:?}");

    // A jump back to the end of the first branch; a restart resumes there.
    let three_end = node_id(&t, "THREE");
    let r = ok(rpc.call(
        14,
        json!({"type": "rewind", "entry_id": three_end, "restore": "conversation"}),
    ));
    assert_eq!(r["rewind"]["conversation"], true, "{r}");
    assert_eq!(message_count(&mut rpc, 15), 12);
    rpc.finish();
    let session = env.sessions().into_iter().next().unwrap();
    let out = env
        .run(
            None,
            &["--mode", "rpc", "--session", session.to_str().unwrap()],
            "{\"type\":\"get_state\",\"id\":1}\n",
        )
        .await;
    let response: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "response")
        .unwrap();
    assert_eq!(response["data"]["messages"], 12, "{response}");
}

// Without git on the PATH, checkpoints are off with a message saying so, and the agent
// works on: the command runs, and undo says why there is nothing to undo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_git_checkpoints_are_off_with_a_notice_not_a_crash() {
    let env = Env::new();
    // Every program of the system but git.
    let bin = tempfile::tempdir().unwrap();
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with("git") {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), bin.path().join(&name));
        }
    }
    let server = serve(vec![bash("echo made > made.txt"), Reply::text("Made.")]).await;
    let path = bin.path().to_path_buf();
    let mut rpc = Rpc::start_with(&env, &server, |command| {
        command
            .env("PATH", &path)
            .stderr(std::process::Stdio::piped());
    });
    prompt(&mut rpc, 1, "make it");
    assert_eq!(read(env.work.path(), "made.txt").unwrap(), b"made\n");
    assert!(
        !rpc.seen.iter().any(|v| v["type"] == "checkpoint_taken"),
        "{:#?}",
        rpc.seen
    );
    let undo = ok(rpc.call(2, json!({"type": "undo"})));
    assert_eq!(undo["restore"]["status"], "nothing");
    assert!(
        undo["restore"]["reason"]
            .as_str()
            .unwrap()
            .contains("git not found"),
        "{undo}"
    );
    // Said at the start (RPC mode writes its notes to stderr).
    let mut stderr = rpc.child.stderr.take().unwrap();
    rpc.finish();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert!(
        said.contains("Checkpoints are off: git not found"),
        "{said}"
    );
}

// /fork: the conversation goes on in a new session file that starts as a copy of the branch,
// checkpoints included (undo works in the fork); the original file is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_goes_on_in_a_copy_and_can_still_undo() {
    let env = Env::new();
    let work = env.work.path();
    let server = serve(vec![bash("echo one > one.txt"), Reply::text("ONE")]).await;
    let mut rpc = Rpc::start(&env, &server);
    prompt(&mut rpc, 1, "first");
    let state = ok(rpc.call(2, json!({"type": "get_state"})));
    let original = state["session"]["path"].as_str().unwrap().to_string();
    let forked = ok(rpc.call(3, json!({"type": "fork"})));
    // The fork wrote everything said so far to the original first; nothing goes there after.
    let before = std::fs::read(&original).unwrap();
    let copy = forked["session"]["path"].as_str().unwrap().to_string();
    assert_ne!(copy, original);
    let reset = rpc.event("history_reset");
    assert_eq!(reset["messages"].as_array().unwrap().len(), 4, "{reset}");
    // Said as what it is, not as a resume (issue 46).
    assert_eq!(reset["reason"], "fork", "{reset}");
    assert_eq!(message_count(&mut rpc, 4), 4);
    let undone = ok(rpc.call(5, json!({"type": "undo"})));
    assert_eq!(undone["restore"]["status"], "restored", "{undone}");
    assert!(read(work, "one.txt").is_none());
    rpc.finish();
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "the original is untouched"
    );
    let copied = std::fs::read_to_string(&copy).unwrap();
    assert!(copied.contains("\"type\":\"checkpoint\""), "{copied}");
    assert!(copied.contains("\"type\":\"restore\""), "{copied}");
}

// What the write tool changes is undone even where git looks away: a git-ignored `.env`, a
// new file in an ignored `build/` (issue 45). A file it writes inside a nested repository
// cannot be captured, and the undo says so, naming it, instead of claiming the files are
// as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_s_writes_to_ignored_files_are_undone_and_what_cannot_be_is_said() {
    let env = Env::new();
    let work = env.work.path();
    user_repo(work);
    std::fs::write(work.join(".gitignore"), "target/\n.env\nbuild/\n").unwrap();
    std::fs::write(work.join(".env"), "TOKEN=original\n").unwrap();
    let nested = work.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q", "-b", "main"]);
    std::fs::write(nested.join("code.rs"), "fn original() {}\n").unwrap();
    // The user's index and refs (the status changes: the redo below leaves `build/`).
    let user_git = |dir: &Path| (read(dir, ".git/index"), git(dir, &["for-each-ref"]));
    let before = user_git(work);

    let server = serve(vec![
        Reply::tool_call("write", json!({"path": ".env", "content": "TOKEN=agent\n"}))
            .with_tool_call(
                "write",
                json!({"path": "build/out.txt", "content": "built\n"}),
            ),
        Reply::text("Written."),
        Reply::tool_call(
            "write",
            json!({"path": "vendor/lib/code.rs", "content": "fn agent() {}\n"}),
        ),
        Reply::text("Changed the vendored code."),
    ])
    .await;
    let mut rpc = Rpc::start(&env, &server);
    prompt(&mut rpc, 1, "set the token");
    assert_eq!(read(work, ".env").unwrap(), b"TOKEN=agent\n");
    let undone = ok(rpc.call(2, json!({"type": "undo"})));
    assert_eq!(undone["restore"]["status"], "restored", "{undone}");
    assert_eq!(read(work, ".env").unwrap(), b"TOKEN=original\n");
    assert!(
        read(work, "build/out.txt").is_none(),
        "the new file is gone"
    );
    let redone = ok(rpc.call(3, json!({"type": "redo"})));
    assert_eq!(redone["restore"]["status"], "restored", "{redone}");
    assert_eq!(read(work, ".env").unwrap(), b"TOKEN=agent\n");
    assert_eq!(read(work, "build/out.txt").unwrap(), b"built\n");

    prompt(&mut rpc, 4, "change the vendored code");
    assert_eq!(read(&nested, "code.rs").unwrap(), b"fn agent() {}\n");
    let undone = ok(rpc.call(5, json!({"type": "undo"})));
    let said = undone["restore"].to_string();
    assert_eq!(undone["restore"]["status"], "nothing", "{undone}");
    assert!(
        said.contains("vendor/lib/code.rs") && said.contains("nested repository vendor/lib/"),
        "{said}"
    );
    assert!(!said.contains("already as they were"), "{said}");
    assert_eq!(
        read(&nested, "code.rs").unwrap(),
        b"fn agent() {}\n",
        "a nested repository's file is its own git's business"
    );
    rpc.finish();
    assert!(
        user_git(work) == before,
        "the user's repository is untouched"
    );
}
