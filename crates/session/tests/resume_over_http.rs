//! Resume rebuilds the exact context: a session written during a conversation with tool calls,
//! loaded into a fresh agent, makes the next request byte-identical to the one the
//! uninterrupted agent sends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, AgentConfig, AgentMessage, Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;

use llm::{Api, Model, ModelCost, ThinkingLevel};
use mock_llm::{MockServer, Reply, Script};
use serde_json::{Value, json};
use session::{
    Home, PromptInputs, Recorder, RecorderSetup, SessionWriter, SystemPrompt, load_session,
};

struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echoes its text"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn execute(&self, args: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("echo: {}", args["text"])))
    }
}

fn model(url: String) -> Model {
    Model {
        id: "mock-model".into(),
        provider: "mock".into(),
        api: Api::OpenaiCompletions,
        base_url: url,
        context_window: 128_000,
        max_output: 4_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

/// The first turns: a tool call, its result, an answer; then a plain question and answer.
fn first_replies() -> Vec<Reply> {
    vec![
        Reply::tool_call("echo", json!({"text": "hi"})).with_text("Calling echo."),
        Reply::text("Echo said hi.").with_thinking("the tool worked"),
        Reply::text("Second answer."),
    ]
}

fn agent(url: String, system_prompt: &str, messages: Vec<AgentMessage>) -> Agent {
    let mut config = AgentConfig::new(model(url), Arc::new(llm::Router::new()));
    config.system_prompt = system_prompt.to_string();
    config.tools.push(Arc::new(Echo));
    config.messages = messages;
    Agent::spawn(config)
}

async fn prompt(agent: &Agent, text: &str) {
    agent.prompt(AgentMessage::user(text)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), agent.wait_idle())
        .await
        .expect("idle within 20 s")
        .unwrap();
}

fn setup(home: &Home, cwd: &Path, url: &str) -> RecorderSetup {
    RecorderSetup {
        home: home.clone(),
        cwd: cwd.to_path_buf(),
        model: model(url.to_string()),
        thinking: ThinkingLevel::Off,
    }
}

fn system_prompt(home: &Home, cwd: &Path, date: &str) -> String {
    SystemPrompt::load(home, cwd, session::RepoFiles::Read).render(&PromptInputs::gather(
        home,
        cwd,
        date,
        "- echo: echoes".into(),
        session::RepoFiles::Read,
    ))
}

#[tokio::test]
async fn resumed_session_sends_a_byte_identical_next_request() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let cwd = tmp.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "Always answer briefly.").unwrap();

    let recording_server = MockServer::start(Script {
        replies: first_replies(),
    })
    .await
    .unwrap();
    let writer = SessionWriter::create(
        &home,
        &cwd,
        &model(recording_server.url()),
        ThinkingLevel::Off,
    );
    // The session's start date, used by every run of the session.
    let date = writer.header().created[..10].to_string();

    // The uninterrupted conversation.
    let mut replies = first_replies();
    replies.push(Reply::text("Third answer."));
    let server = MockServer::start(Script { replies }).await.unwrap();
    let uninterrupted = agent(server.url(), &system_prompt(&home, &cwd, &date), Vec::new());
    prompt(&uninterrupted, "Echo hi please").await;
    prompt(&uninterrupted, "And now?").await;
    prompt(&uninterrupted, "One more thing").await;
    let expected = server
        .wait_for_requests(4, Duration::from_secs(10))
        .await
        .unwrap()[3]
        .body
        .clone();

    // The same conversation recorded, and the process gone after the second answer.
    let recorded = agent(
        recording_server.url(),
        &system_prompt(&home, &cwd, &date),
        Vec::new(),
    );
    let path = writer.path().to_path_buf();
    let recorder = Recorder::spawn(
        recorded.subscribe(),
        Some(writer),
        setup(&home, &cwd, &recording_server.url()),
    );
    prompt(&recorded, "Echo hi please").await;
    prompt(&recorded, "And now?").await;
    let errors = recorder.finish().await;
    drop(recorded);
    assert!(errors.is_empty(), "{errors:?}");

    // A fresh start: find the session, load it, continue.
    let latest = session::latest_session(&home, &cwd)
        .unwrap()
        .expect("the session is listed");
    assert_eq!(latest.path, path);
    assert_eq!(latest.first_prompt, "Echo hi please");
    assert_eq!(latest.message_count, 6);
    let loaded = load_session(&latest.path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let server = MockServer::start(Script {
        replies: vec![Reply::text("Third answer.")],
    })
    .await
    .unwrap();
    let resumed_prompt = system_prompt(&home, &cwd, loaded.start_date().unwrap());
    let resumed = agent(server.url(), &resumed_prompt, loaded.messages.clone());
    let recorder = Recorder::spawn(
        resumed.subscribe(),
        Some(SessionWriter::resume(&loaded).unwrap()),
        setup(&home, &cwd, &server.url()),
    );
    prompt(&resumed, "One more thing").await;
    let actual = server
        .wait_for_requests(1, Duration::from_secs(10))
        .await
        .unwrap()[0]
        .body
        .clone();
    assert_eq!(
        serde_json::to_string(&actual).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    assert!(
        actual.to_string().contains("Always answer briefly."),
        "the project context is in the prompt"
    );

    // The resumed run was appended to the same file.
    let errors = recorder.finish().await;
    drop(resumed);
    assert!(errors.is_empty(), "{errors:?}");
    let reloaded = load_session(&latest.path).unwrap();
    assert_eq!(reloaded.messages.len(), 8);
    assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
}
