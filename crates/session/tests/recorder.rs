//! The recorder is a reader of the event stream like any other: every state change (messages,
//! model and thinking switches, a new session, a resumed one) arrives as an event, so replaying
//! a recorded stream into a fresh recorder writes the same files.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{Agent, AgentConfig, AgentEvent, AgentMessage, ResetReason};
use llm::{
    Api, AssistantBuilder, Context, EventStream, Model, ModelCost, Provider, StopReason,
    StreamOptions, ThinkingLevel,
};
use serde_json::Value;
use session::{Home, Recorder, RecorderSetup, SessionWriter, load_session};
use tokio_util::sync::CancellationToken;

fn model(id: &str) -> Model {
    Model {
        id: id.into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".into(),
        context_window: 100_000,
        max_output: 1_000,
        reasoning: true,
        images: false,
        cost: ModelCost::default(),
    }
}

/// Answers each request with the next text.
struct Answers(Mutex<VecDeque<&'static str>>);

impl Provider for Answers {
    fn stream(
        &self,
        model: &Model,
        _: Context,
        _: StreamOptions,
        _: CancellationToken,
    ) -> EventStream {
        let text = self
            .0
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or("out of answers");
        let mut builder = AssistantBuilder::new(&model.id, &model.provider);
        let events = vec![
            llm::StreamEvent::Start,
            builder.text_delta(text),
            builder.done(StopReason::Stop),
        ];
        Box::pin(futures_util::stream::iter(events))
    }
}

async fn prompt(agent: &Agent, text: &str) {
    agent.prompt(AgentMessage::user(text)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), agent.wait_idle())
        .await
        .expect("idle within 20 s")
        .unwrap();
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The file with entry ids numbered by first appearance and write times blanked: what must be
/// equal between two recordings of the same events.
fn normalized(path: &Path) -> Vec<Value> {
    let mut ids: HashMap<String, String> = HashMap::new();
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            let object = value.as_object_mut().unwrap();
            for key in ["created", "timestamp"] {
                if object.get(key).is_some_and(Value::is_string) {
                    object.insert(key.into(), Value::from("T"));
                }
            }
            if object.get("type").and_then(Value::as_str) != Some("session") {
                for key in ["id", "parent_id", "first_kept_id"] {
                    if let Some(Value::String(id)) = object.get(key) {
                        let n = ids.len();
                        let stable = ids.entry(id.clone()).or_insert(format!("e{n}")).clone();
                        object.insert(key.into(), Value::from(stable));
                    }
                }
            }
            value
        })
        .collect()
}

#[tokio::test]
async fn replaying_the_events_into_a_fresh_recorder_writes_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let cwd = tmp.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let answers = Answers(Mutex::new(
        ["one done", "two done", "three done", "four done"].into(),
    ));
    let first_model = model("first");
    let agent = Agent::spawn(AgentConfig::new(first_model.clone(), Arc::new(answers)));
    let mut events = agent.subscribe();
    let setup = RecorderSetup {
        home: home.clone(),
        cwd: cwd.clone(),
        model: first_model.clone(),
        thinking: ThinkingLevel::Off,
    };
    let writer = SessionWriter::create(&home, &cwd, &first_model, ThinkingLevel::Off);
    let first = writer.path().to_path_buf();
    let recorder = Recorder::spawn(agent.subscribe(), Some(writer), setup.clone());

    prompt(&agent, "one").await;
    agent.set_model(model("second"));
    agent.set_thinking(ThinkingLevel::High);
    prompt(&agent, "two").await;
    // `/new`: the host prepares the next file, then resets the agent.
    let next = SessionWriter::create(&home, &cwd, &model("second"), ThinkingLevel::High);
    let second = next.path().to_path_buf();
    recorder.prepare(next);
    let label = |p: &Path| Some(p.to_string_lossy().into_owned());
    agent
        .reset(Vec::new(), ResetReason::New, label(&second))
        .await
        .unwrap();
    prompt(&agent, "three").await;
    // `/resume` of the first session, once everything is written.
    recorder.flush().await;
    let loaded = load_session(&first).unwrap();
    recorder.prepare(SessionWriter::resume(&loaded).unwrap());
    agent
        .reset(loaded.messages.clone(), ResetReason::Resume, label(&first))
        .await
        .unwrap();
    prompt(&agent, "four").await;
    let errors = recorder.finish().await;
    assert!(errors.is_empty(), "{errors:?}");

    let mut recorded = Vec::new();
    while let Ok(event) = events.try_recv() {
        recorded.push(event);
    }
    assert!(
        recorded
            .iter()
            .any(|e| matches!(e, AgentEvent::ModelChange { .. }))
    );
    let sessions = home.sessions_dir();
    let originals = tmp.path().join("originals");
    std::fs::rename(&sessions, &originals).unwrap();
    let expected = session_files(&originals);
    assert_eq!(expected.len(), 2, "two sessions were written");

    // The same events, and nothing else, into a fresh recorder.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for event in recorded {
        tx.send(event).unwrap();
    }
    let initial = SessionWriter::create_at(&home, &first, &cwd, &first_model, ThinkingLevel::Off);
    let replay = Recorder::spawn(rx, Some(initial), setup);
    let errors = replay.finish().await;
    assert!(errors.is_empty(), "{errors:?}");
    let replayed = session_files(&sessions);
    assert_eq!(replayed.len(), 2);
    for (original, again) in expected.iter().zip(&replayed) {
        assert_eq!(original.file_name(), again.file_name());
        assert_eq!(
            normalized(original),
            normalized(again),
            "{}",
            original.display()
        );
    }
    // And what was written is the conversation: the first session holds runs one, two, four.
    let first_loaded = load_session(&first).unwrap();
    let prompts: Vec<String> = first_loaded
        .messages
        .iter()
        .filter(|m| matches!(m, AgentMessage::User(_)))
        .map(AgentMessage::preview)
        .collect();
    assert_eq!(prompts, ["one", "two", "four"]);
    assert_eq!(first_loaded.model, "second");
    assert_eq!(first_loaded.thinking, ThinkingLevel::High);
}
