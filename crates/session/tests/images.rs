//! Images in a session: stored once each beside the file and referred to by hash, read back
//! only when asked for, carried into a fork, and never looked for outside their directory.

use std::path::Path;

use agent_core::{AgentEvent, AgentMessage};
use base64::Engine as _;
use llm::{
    Api, ImageContent, Model, ModelCost, ThinkingLevel, ToolResultMessage, UserContent, UserMessage,
};
use session::{Home, SessionWriter, images_dir, load_session};

fn model() -> Model {
    Model {
        id: "m".into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".into(),
        context_window: 100_000,
        max_output: 4_000,
        reasoning: false,
        images: true,
        cost: ModelCost::default(),
    }
}

fn image(bytes: &[u8]) -> UserContent {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    UserContent::Image(ImageContent::new(data, "image/png"))
}

fn user_with(bytes: &[u8]) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: vec![UserContent::Text { text: "see".into() }, image(bytes)],
        timestamp: 1,
    })
}

fn record(writer: &mut SessionWriter, message: AgentMessage) {
    writer.record(&AgentEvent::MessageEnd { message }).unwrap();
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_image_is_stored_once_by_hash_and_read_back_when_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let cwd = Path::new("/work/project");
    let shot = vec![7u8; 300_000];
    let mut writer = SessionWriter::create(&home, cwd, &model(), ThinkingLevel::Off);
    record(&mut writer, user_with(&shot));
    record(&mut writer, user_with(&shot));
    record(
        &mut writer,
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            content: vec![image(b"other bytes")],
            details: None,
            is_error: false,
            timestamp: 2,
        }),
    );

    // The file holds hashes, not bytes: it stays small however many images the session has.
    let text = std::fs::read_to_string(writer.path()).unwrap();
    assert!(text.len() < 4_000, "{} bytes", text.len());
    assert!(!text.contains("BwcHBwcH"), "no base64 in the session file");
    let dir = images_dir(writer.path());
    let stored = files_in(&dir);
    assert_eq!(stored.len(), 2, "one file per distinct image: {stored:?}");
    #[cfg(unix)]
    for name in &stored {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{name} is private");
    }

    let loaded = load_session(writer.path()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let AgentMessage::User(first) = &loaded.messages[0] else {
        panic!("a user message first");
    };
    let UserContent::Image(first) = &first.content[1] else {
        panic!("its image");
    };
    assert!(first.data.is_empty(), "not read at load");
    assert_eq!(first.bytes().unwrap(), shot);
    assert_eq!(
        first.base64().unwrap(),
        base64::engine::general_purpose::STANDARD.encode(&shot)
    );

    // A fork is a session of its own: its images go with it, and outlive the original.
    drop(writer);
    let fork = SessionWriter::fork(&home, cwd, &loaded).unwrap();
    assert_eq!(files_in(&images_dir(fork.path())), stored);
    std::fs::remove_dir_all(&dir).unwrap();
    let forked = load_session(fork.path()).unwrap();
    let AgentMessage::User(user) = &forked.messages[1] else {
        panic!("a user message");
    };
    let UserContent::Image(image) = &user.content[1] else {
        panic!("its image");
    };
    assert_eq!(image.bytes().unwrap(), shot);
}

#[test]
fn a_reference_that_is_not_a_hash_is_never_looked_up() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let mut writer = SessionWriter::create(&home, Path::new("/p"), &model(), ThinkingLevel::Off);
    record(&mut writer, user_with(b"real"));
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, b"top secret").unwrap();
    // A hostile file points its image at a path outside the image directory.
    let text = std::fs::read_to_string(writer.path()).unwrap();
    let sha = files_in(&images_dir(writer.path())).remove(0);
    let hostile = text.replace(&sha, "../../../secret");
    let path = writer.path().to_path_buf();
    drop(writer);
    std::fs::write(&path, hostile).unwrap();
    let loaded = load_session(&path).unwrap();
    let AgentMessage::User(user) = &loaded.messages[0] else {
        panic!("a user message");
    };
    let UserContent::Image(image) = &user.content[1] else {
        panic!("its image");
    };
    assert_eq!(image.stored_at, None);
    let err = image.bytes().unwrap_err();
    assert!(err.contains("missing"), "{err}");
}
