//! Transcripts are private whatever the umask: 0700 directories, 0600 files. Its own test
//! binary, because the umask is per process and this test sets it to 000. Unix only: on
//! Windows the profile's ACL makes them private (`platform::fs`).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agent_core::{AgentEvent, AgentMessage};
use llm::{Api, Model, ModelCost, ThinkingLevel};
use session::{Home, SessionWriter, load_session};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn session_files_and_directories_are_private_under_an_open_umask() {
    // SAFETY: umask only changes this process's file creation mask; this binary has one test.
    unsafe { libc::umask(0) };
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let cwd = Path::new("/p");
    let model = Model {
        id: "m".into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: String::new(),
        context_window: 1000,
        max_output: 100,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    };
    let mut writer = SessionWriter::create(&home, cwd, &model, ThinkingLevel::Off);
    writer
        .record(&AgentEvent::MessageEnd {
            message: AgentMessage::user("secret"),
        })
        .unwrap();
    assert_eq!(mode(home.root()), 0o700);
    assert_eq!(mode(&home.sessions_dir()), 0o700);
    assert_eq!(mode(&home.sessions_dir_for(cwd)), 0o700);
    assert_eq!(mode(writer.path()), 0o600);
    let spill = session::create_spill_dir(writer.path()).unwrap();
    assert_eq!(mode(&spill), 0o700);
    let loaded = load_session(writer.path()).unwrap();
    drop(writer);
    let fork = SessionWriter::fork(&home, cwd, &loaded).unwrap();
    assert_eq!(mode(fork.path()), 0o600);

    // Directories left open by an older version are closed at startup.
    let other = home.sessions_dir().join("other-dir");
    std::fs::create_dir(&other).unwrap();
    for dir in [home.root(), &home.sessions_dir(), &other] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert!(home.secure().is_empty());
    for dir in [home.root(), &home.sessions_dir(), &other] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    // And a new session in an open home closes it too.
    std::fs::set_permissions(home.root(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut writer = SessionWriter::create(&home, Path::new("/q"), &model, ThinkingLevel::Off);
    writer
        .record(&AgentEvent::MessageEnd {
            message: AgentMessage::user("secret"),
        })
        .unwrap();
    assert_eq!(mode(home.root()), 0o700);
}
