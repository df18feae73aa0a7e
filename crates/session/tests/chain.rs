//! One session, one writer, one history: loading follows the `parent_id` chain of the last
//! entry, a second writer is refused while the first holds the file, ids never repeat, and
//! files that are not sessions are never taken for one.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_core::{AgentEvent, AgentMessage};
use llm::{Api, Model, ModelCost, ThinkingLevel};
use session::{Home, ResumeError, SessionWriter, find_session, latest_session, load_session};

fn model() -> Model {
    Model {
        id: "m".into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".into(),
        context_window: 100_000,
        max_output: 4_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

fn user(writer: &mut SessionWriter, text: &str) {
    writer
        .record(&AgentEvent::MessageEnd {
            message: AgentMessage::user(text),
        })
        .unwrap();
}

fn previews(messages: &[AgentMessage]) -> Vec<String> {
    messages.iter().map(|m| m.preview()).collect()
}

const HEADER: &str = r#"{"type":"session","version":1,"id":"0123456789abcdef","cwd":"/p","created":"2025-01-02T03:04:05.678Z","provider":"test","model":"m","thinking":"off"}"#;

fn line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parent_id":{parent},"timestamp":"2025-01-02T03:04:05.678Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#
    )
}

fn file(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("2025-01-02T03-04-05-678Z_0123456789abcdef.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}\n", lines.join("\n"))).unwrap();
    path
}

#[test]
fn a_file_with_two_branches_loads_the_branch_of_its_last_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = vec![
        line("e1", None, "one"),
        line("e2", Some("e1"), "two on a"),
        line("e3", Some("e2"), "three on a"),
        line("e4", Some("e1"), "two on b"),
    ];
    let path = file(tmp.path(), &lines);
    let loaded = load_session(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(previews(&loaded.messages), ["one", "two on b"]);
    assert_eq!(loaded.message_ids, ["e1", "e4"]);
    assert_eq!(loaded.leaf_id.as_deref(), Some("e4"));
    assert_eq!(loaded.entries, 4, "every entry was read");

    // Going on from branch a again: its entries were kept in the file.
    lines.push(line("e5", Some("e3"), "four on a"));
    let path = file(tmp.path(), &lines);
    let loaded = load_session(&path).unwrap();
    assert_eq!(
        previews(&loaded.messages),
        ["one", "two on a", "three on a", "four on a"]
    );
}

#[test]
fn a_missing_parent_falls_back_to_the_entry_before_it_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = vec![
        line("e1", None, "one"),
        "{\"type\":\"message\",\"id\":\"e2\" damaged".to_string(),
        line("e3", Some("e2"), "three"),
        line("e4", Some("e3"), "four"),
    ];
    let path = file(tmp.path(), &lines);
    let loaded = load_session(&path).unwrap();
    assert_eq!(previews(&loaded.messages), ["one", "three", "four"]);
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[1].contains("parent e2 of entry e3 is missing"));
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.contains(&*path.to_string_lossy())),
        "each warning names the file"
    );

    // A parent named after its child (damage again) cannot make a cycle.
    let lines = vec![line("e1", Some("e2"), "one"), line("e2", Some("e1"), "two")];
    let path = file(tmp.path(), &lines);
    let loaded = load_session(&path).unwrap();
    assert_eq!(previews(&loaded.messages), ["one", "two"]);
}

#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let mut first = SessionWriter::create(&home, Path::new("/p"), &model(), ThinkingLevel::Off);
    user(&mut first, "one");
    let loaded = load_session(first.path()).unwrap();
    // A new session is locked from its first entry.
    match SessionWriter::resume(&loaded) {
        Err(ResumeError::Locked(path)) => assert_eq!(path, first.path()),
        other => panic!(
            "expected Locked, got {:?}",
            other.map(|w| w.path().to_owned())
        ),
    }
    let message = SessionWriter::resume(&loaded).err().unwrap().to_string();
    assert!(message.contains("in use by another"), "{message}");
    // The first writer goes on; a writer of what was loaded before is stale.
    user(&mut first, "two");
    drop(first);
    assert!(matches!(
        SessionWriter::resume(&loaded),
        Err(ResumeError::Changed(_))
    ));
    let fresh = load_session(&loaded.path).unwrap();
    let mut second = SessionWriter::resume(&fresh).unwrap();
    user(&mut second, "three");
    assert!(matches!(
        SessionWriter::resume(&load_session(&loaded.path).unwrap()),
        Err(ResumeError::Locked(_))
    ));
    drop(second);
    let last = load_session(&loaded.path).unwrap();
    assert_eq!(previews(&last.messages), ["one", "two", "three"]);
}

#[test]
fn entry_ids_are_long_and_unique_in_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let mut writer = SessionWriter::create(&home, Path::new("/p"), &model(), ThinkingLevel::Off);
    for i in 0..500 {
        user(&mut writer, &format!("m{i}"));
    }
    let path = writer.path().to_path_buf();
    drop(writer);
    let mut writer = SessionWriter::resume(&load_session(&path).unwrap()).unwrap();
    for i in 0..500 {
        user(&mut writer, &format!("n{i}"));
    }
    drop(writer);
    let text = std::fs::read_to_string(&path).unwrap();
    let ids: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 1000);
    assert!(ids.iter().all(|id| id.len() == 16), "{}", ids[0]);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 1000);
}

#[test]
fn a_path_to_a_file_that_is_not_a_session_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let notes = tmp.path().join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let err = find_session(&home, tmp.path(), notes.to_str().unwrap()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("not a session file"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    // A session file, and an empty file, are fine.
    let session = file(tmp.path(), &[line("e1", None, "one")]);
    assert_eq!(
        find_session(&home, tmp.path(), session.to_str().unwrap()).unwrap(),
        session
    );
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    assert!(find_session(&home, tmp.path(), empty.to_str().unwrap()).is_ok());
    // Continuing in it starts the file with a header.
    let mut writer = SessionWriter::resume(&load_session(&empty).unwrap()).unwrap();
    user(&mut writer, "into the empty file");
    drop(writer);
    let loaded = load_session(&empty).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(previews(&loaded.messages), ["into the empty file"]);
}

#[test]
fn latest_session_reports_what_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let cwd = Path::new("/p");
    assert!(
        latest_session(&home, cwd).unwrap().is_none(),
        "no session yet"
    );
    // The sessions directory of the cwd is a file: say so, naming it.
    let dir = home.sessions_dir_for(cwd);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(&dir, "").unwrap();
    let err = latest_session(&home, cwd).unwrap_err();
    assert!(err.to_string().contains(&*dir.to_string_lossy()), "{err}");
}

#[cfg(unix)]
#[test]
fn spill_dirs_sit_beside_their_session_and_orphans_are_pruned() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let cwd = Path::new("/p");
    assert_eq!(
        session::spill_dir(Path::new("/h/sessions/p/2025_ab.jsonl")),
        Path::new("/h/sessions/p/2025_ab.spill")
    );
    let mut kept = SessionWriter::create(&home, cwd, &model(), ThinkingLevel::Off);
    user(&mut kept, "kept");
    let kept_spill = session::create_spill_dir(kept.path()).unwrap();
    std::fs::write(kept_spill.join("out.txt"), "x").unwrap();
    let mut gone = SessionWriter::create(&home, cwd, &model(), ThinkingLevel::Off);
    user(&mut gone, "gone");
    let gone_spill = session::create_spill_dir(gone.path()).unwrap();
    // Links inside an orphan point outside the sessions directory: they must not be followed.
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), "keep me").unwrap();
    std::os::unix::fs::symlink(&outside, gone_spill.join("link")).unwrap();
    std::fs::remove_file(gone.path()).unwrap();
    // A link named like a spill directory is not a directory of ours.
    let dir = home.sessions_dir_for(cwd);
    std::os::unix::fs::symlink(&outside, dir.join("x_y.spill")).unwrap();

    assert_eq!(session::prune_orphan_spills(&home, cwd), 1);
    assert!(!gone_spill.exists());
    assert!(kept_spill.join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("precious")).unwrap(),
        "keep me"
    );
    assert!(dir.join("x_y.spill").symlink_metadata().is_ok());
    assert_eq!(session::prune_orphan_spills(&home, cwd), 0);
    assert_eq!(session::prune_orphan_spills(&home, Path::new("/none")), 0);
}
