//! Compaction policy and summary: cuts keep tool calls with their results and the recent turns
//! whole; a failed summary changes nothing; an agent compacts before a call near the window.

use std::sync::{Arc, Mutex};

use agent_core::{Agent, AgentConfig, AgentEvent, AgentMessage, CompactReason};
use llm::{
    Api, AssistantBuilder, Context, EventStream, Model, ModelCost, Provider, StopReason,
    StreamEvent, StreamOptions, ThinkingLevel, ToolCall, ToolResultMessage, Usage, UserContent,
};
use session::compaction::{estimate_context_tokens, find_cut, plan, summarize};
use session::{
    CompactionSettings, Home, Recorder, RecorderSetup, SessionCompactor, SessionWriter,
    load_session,
};
use tokio_util::sync::CancellationToken;

fn model(window: u64) -> Model {
    Model {
        id: "m".into(),
        provider: "test".into(),
        api: Api::OpenaiCompletions,
        base_url: "http://127.0.0.1:9".into(),
        context_window: window,
        max_output: 4_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

/// A provider that answers every request with the next scripted reply (text, or an error)
/// and records what it was sent.
struct Scripted {
    replies: Mutex<Vec<Result<String, String>>>,
    contexts: Mutex<Vec<Context>>,
}

impl Scripted {
    fn new(replies: Vec<Result<&str, &str>>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(
                replies
                    .into_iter()
                    .rev()
                    .map(|r| r.map(String::from).map_err(String::from))
                    .collect(),
            ),
            contexts: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Scripted {
    fn stream(
        &self,
        m: &Model,
        context: Context,
        _: StreamOptions,
        _: CancellationToken,
    ) -> EventStream {
        self.contexts.lock().unwrap().push(context);
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop()
            .unwrap_or(Err("script exhausted".into()));
        let mut builder = AssistantBuilder::new(&m.id, &m.provider);
        let events = match reply {
            Ok(text) => {
                let delta = builder.text_delta(&text);
                vec![StreamEvent::Start, delta, builder.done(StopReason::Stop)]
            }
            // "EMPTY" plays llama-cpp-python's answer to a prompt past its window.
            Err(reason) if reason == "EMPTY" => vec![builder.failed_with(
                StopReason::Error,
                "empty stream",
                Some(llm::ErrorKind::EmptyStream),
            )],
            Err(reason) => vec![builder.failed(StopReason::Error, &reason)],
        };
        Box::pin(futures_util::stream::iter(events))
    }
}

fn text(n: usize) -> String {
    "word ".repeat(n)
}

fn assistant_calling(id: &str, tokens: usize) -> AgentMessage {
    let mut a = llm::AssistantMessage::empty("m", "test");
    a.stop_reason = StopReason::ToolUse;
    a.content = vec![
        llm::AssistantContent::Text { text: text(tokens) },
        llm::AssistantContent::ToolCall(ToolCall::from_raw(id.into(), "read".into(), "{}")),
    ];
    AgentMessage::Assistant(a)
}

fn result(id: &str, tokens: usize) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![UserContent::Text { text: text(tokens) }],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

/// Turns of: user prompt, assistant call, tool result, assistant call, tool result — each
/// message ~5k tokens (a "word " is 5 chars ≈ 1.25 tokens).
fn long_history(turns: usize) -> Vec<AgentMessage> {
    let mut out = Vec::new();
    for t in 0..turns {
        out.push(AgentMessage::user(text(4_000)));
        out.push(assistant_calling(&format!("a{t}"), 4_000));
        out.push(result(&format!("a{t}"), 4_000));
        out.push(assistant_calling(&format!("b{t}"), 4_000));
        out.push(result(&format!("b{t}"), 4_000));
    }
    out
}

#[test]
fn cuts_keep_pairs_and_the_recent_tokens() {
    let messages = long_history(6);
    for keep in [1, 4_000, 9_000, 20_000, 33_000] {
        let cut = find_cut(&messages, keep).unwrap();
        assert!(
            !matches!(messages[cut], AgentMessage::ToolResult(_)),
            "never before a tool result (keep {keep})"
        );
        let kept: u64 = messages[cut..]
            .iter()
            .map(session::compaction::estimate_message_tokens)
            .sum();
        assert!(kept >= keep, "kept {kept} < {keep}");
    }
    // Too little history to keep that much: no cut.
    assert_eq!(find_cut(&messages[..3], 100_000), None);
}

#[test]
fn plans_only_near_the_window_and_trusts_reported_usage() {
    let settings = CompactionSettings::default();
    let messages = long_history(6); // ~150k tokens estimated
    assert!(estimate_context_tokens(&messages) > 140_000);
    assert!(plan(&messages, 1_000_000, &settings, CompactReason::Threshold).is_none());
    let cut = plan(&messages, 160_000, &settings, CompactReason::Threshold).unwrap();
    assert!(cut > 0 && cut < messages.len());

    // The last answer reported a small context: believe it.
    let mut small = messages.clone();
    let mut a = llm::AssistantMessage::empty("m", "test");
    a.usage = Usage {
        input: 1_000,
        output: 10,
        ..Usage::default()
    };
    small.push(AgentMessage::Assistant(a));
    assert_eq!(estimate_context_tokens(&small), 1_010);
    assert!(plan(&small, 160_000, &settings, CompactReason::Threshold).is_none());
    // By hand, a short history still compacts; a lone prompt cannot.
    let short = long_history(1);
    assert!(plan(&short, 1_000_000, &settings, CompactReason::Manual).is_some());
    assert!(plan(&short[..1], 1_000_000, &settings, CompactReason::Manual).is_none());
}

#[tokio::test]
async fn a_failed_summary_is_an_error_and_a_good_one_is_structured() {
    let messages = long_history(2);
    let provider = Scripted::new(vec![Err("500 boom"), Ok("## Goal\nship it")]);
    let compactor = SessionCompactor {
        provider: provider.clone(),
        options: StreamOptions::default(),
        settings: CompactionSettings::default(),
        fixed_tokens: 0,
    };
    let m = model(200_000);
    let err = summarize(&compactor, &m, &messages, 5, None, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err, agent_core::CompactionError::Request("500 boom".into()));
    let ok = summarize(
        &compactor,
        &m,
        &messages,
        5,
        Some("focus on tests"),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(ok.summary, "## Goal\nship it");
    assert!(ok.tokens_before > 20_000);
    let contexts = provider.contexts.lock().unwrap();
    let llm::Message::User(request) = &contexts[1].messages[0] else {
        panic!("one user message")
    };
    let request = request.plain_text();
    for section in [
        "## Goal",
        "## Constraints",
        "### Blocked",
        "## Key decisions",
        "## Next steps",
        "## Critical context",
    ] {
        assert!(request.contains(section), "asks for {section}");
    }
    assert!(request.contains("focus on tests"));
    assert!(request.contains("[Tool call read]"));
    assert!(contexts[1].tools.is_empty(), "the summariser gets no tools");
}

/// An agent near its window, resuming a session of `history` (in `tmp`), prompted once: it
/// compacts before the call. Returns the provider (what it was sent), the agent, the session
/// file and its size before the prompt.
async fn prompted_near_the_window(
    tmp: &std::path::Path,
    history: Vec<AgentMessage>,
) -> (Arc<Scripted>, Agent, std::path::PathBuf, u64) {
    let home = Home::new(tmp);
    let provider = Scripted::new(vec![Ok("## Goal\nsummary text"), Ok("answer")]);
    let m = model(150_000);
    let mut config = AgentConfig::new(m.clone(), provider.clone());
    config.messages = history.clone();
    config.compactor = Some(Arc::new(SessionCompactor {
        provider: provider.clone(),
        options: StreamOptions::default(),
        settings: CompactionSettings::default(),
        fixed_tokens: 0,
    }));
    let agent = Agent::spawn(config);
    // A resumed session's writer knows the ids of the history it starts from.
    let mut writer = SessionWriter::create(&home, tmp, &m, ThinkingLevel::Off);
    for message in history {
        writer.record(&AgentEvent::MessageEnd { message }).unwrap();
    }
    let path = writer.path().to_path_buf();
    let before = std::fs::metadata(&path).unwrap().len();
    let setup = RecorderSetup {
        home: home.clone(),
        cwd: tmp.to_path_buf(),
        model: m,
        thinking: ThinkingLevel::Off,
    };
    let recorder = Recorder::spawn(agent.subscribe(), Some(writer), setup);
    agent.prompt(AgentMessage::user("next")).await.unwrap();
    agent.wait_idle().await.unwrap();
    let errors = recorder.finish().await;
    assert!(errors.is_empty(), "{errors:?}");
    (provider, agent, path, before)
}

#[tokio::test]
async fn an_agent_near_the_window_compacts_before_its_next_call_and_the_session_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    // Built once: its user messages carry the time they were made.
    let (provider, agent, path, _) = prompted_near_the_window(tmp.path(), long_history(6)).await;

    let contexts = provider.contexts.lock().unwrap().clone();
    assert_eq!(contexts.len(), 2, "summary request, then the model call");
    let call = &contexts[1].messages;
    let llm::Message::User(first) = &call[0] else {
        panic!()
    };
    assert!(first.plain_text().contains("summary text"));
    assert!(call.len() < 31, "older turns replaced");
    let snapshot = agent.snapshot().await.unwrap().messages;
    assert!(matches!(snapshot[0], AgentMessage::CompactionSummary(_)));
    let loaded = load_session(&path).unwrap();
    assert_eq!(
        loaded.messages, snapshot,
        "the session rebuilds the compacted history"
    );
}

#[tokio::test]
async fn a_compacted_image_is_never_sent_again_nor_copied_into_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    // The first prompt carries a 1 MB screenshot; the turns after it fill the window.
    let screenshot = llm::ImageContent::new("QUJD".repeat(350_000), "image/png");
    let mut history = vec![AgentMessage::User(llm::UserMessage::with_images(
        "see the screenshot".into(),
        vec![screenshot],
    ))];
    history.extend(long_history(6));
    let (provider, _agent, path, before) = prompted_near_the_window(tmp.path(), history).await;

    let has_image = |context: &Context| {
        context.messages.iter().any(|m| match m {
            llm::Message::User(u) => u.content.iter().any(|c| matches!(c, UserContent::Image(_))),
            llm::Message::ToolResult(r) => {
                r.content.iter().any(|c| matches!(c, UserContent::Image(_)))
            }
            llm::Message::Assistant(_) => false,
        })
    };
    let contexts = provider.contexts.lock().unwrap().clone();
    assert_eq!(contexts.len(), 2, "summary request, then the model call");
    assert!(
        !has_image(&contexts[0]),
        "the summary is asked for from text"
    );
    assert!(
        !has_image(&contexts[1]),
        "the summarised image is not sent again"
    );
    // The compaction and the new turn added a few lines, not the image again.
    let grown = std::fs::metadata(&path).unwrap().len() - before;
    assert!(grown < 100_000, "the session grew by {grown} bytes");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(
        !file.contains("QUJDQUJD"),
        "the image itself is not in the file"
    );
    let stored = std::fs::read_dir(session::images_dir(&path))
        .unwrap()
        .count();
    assert_eq!(stored, 1);
    let loaded = load_session(&path).unwrap();
    assert!(matches!(
        loaded.messages[0],
        AgentMessage::CompactionSummary(_)
    ));
}

#[test]
fn small_windows_scale_the_reserve_and_still_compact() {
    let settings = CompactionSettings::default();
    let small = settings.for_window(4_096);
    assert_eq!(small.reserve_tokens, 1_024);
    assert_eq!(small.keep_recent_tokens, 1_024);
    assert_eq!(
        settings.for_window(200_000),
        settings,
        "large windows keep the defaults"
    );
    // ~3,200 tokens in a 4k window: past the scaled threshold, and a cut exists (the default
    // reserve and recent part, 16k and 20k, would never have found one).
    let mut messages = Vec::new();
    for i in 0..4 {
        messages.push(AgentMessage::user(text(320)));
        messages.push(assistant_calling(&format!("c{i}"), 160));
        messages.push(result(&format!("c{i}"), 160));
    }
    let tokens = estimate_context_tokens(&messages);
    assert!((3_072..4_096).contains(&tokens), "{tokens}");
    assert!(plan(&messages, 4_096, &settings, CompactReason::Threshold).is_some());
    let budget = session::compaction::transcript_budget(4_096, &settings);
    assert!(budget > 0 && budget / 3 < 4_096 - 1_024, "{budget}");
    // The defaults never saturate the budget to nothing (every window ≤ 18,432 did).
    for window in [2_048, 8_192, 18_432] {
        assert!(session::compaction::transcript_budget(window, &settings) >= window as usize / 2);
    }
}

#[test]
fn the_system_prompt_and_tools_count_when_the_server_reports_no_usage() {
    let settings = CompactionSettings::default();
    let messages = vec![AgentMessage::user(text(400))];
    assert!(plan(&messages, 4_096, &settings, CompactReason::Threshold).is_none());
    let tokens = session::compaction::estimate_context_tokens_with(&messages, 3_000);
    assert_eq!(tokens, 3_000 + estimate_context_tokens(&messages));
    let with_prompt = session::compaction::plan_with(
        &messages,
        4_096,
        &settings,
        CompactReason::Threshold,
        3_000,
    );
    // Past the threshold, but a lone prompt has nothing to cut.
    assert!(with_prompt.is_none());
    let mut two = messages.clone();
    two.push(assistant_calling("x", 500));
    two.push(result("x", 500));
    two.push(AgentMessage::user(text(40)));
    assert!(plan(&two, 4_096, &settings, CompactReason::Threshold).is_none());
    assert!(
        session::compaction::plan_with(&two, 4_096, &settings, CompactReason::Threshold, 3_000)
            .is_some()
    );
}

/// An agent with automatic compaction off, whose provider answers with an empty stream.
async fn empty_stream_run(history: Vec<AgentMessage>, window: u64) -> (usize, Vec<AgentMessage>) {
    let provider = Scripted::new(vec![Err("EMPTY"), Ok("## Goal\nsummary"), Ok("answer")]);
    let mut config = AgentConfig::new(model(window), provider.clone());
    config.messages = history;
    config.compactor = Some(Arc::new(SessionCompactor {
        provider: provider.clone(),
        options: StreamOptions::default(),
        settings: CompactionSettings {
            enabled: false,
            ..CompactionSettings::default()
        },
        fixed_tokens: 0,
    }));
    let agent = Agent::spawn(config);
    agent.prompt(AgentMessage::user("next")).await.unwrap();
    agent.wait_idle().await.unwrap();
    let calls = provider.contexts.lock().unwrap().len();
    (calls, agent.snapshot().await.unwrap().messages)
}

#[tokio::test]
async fn an_empty_stream_near_the_window_compacts_once_and_retries() {
    // ~6,500 tokens of an 8k window: the empty stream was an overflow.
    let mut history = Vec::new();
    for i in 0..5 {
        history.push(AgentMessage::user(text(400)));
        history.push(assistant_calling(&format!("e{i}"), 300));
        history.push(result(&format!("e{i}"), 350));
    }
    let (calls, messages) = empty_stream_run(history, 8_192).await;
    assert_eq!(calls, 3, "failed call, summary, retried call");
    assert!(matches!(messages[0], AgentMessage::CompactionSummary(_)));
    let AgentMessage::Assistant(last) = messages.last().unwrap() else {
        panic!("ends with the answer")
    };
    assert_eq!(last.text(), "answer");
}

#[tokio::test]
async fn an_empty_stream_far_from_the_window_is_reported_not_retried() {
    let (calls, messages) = empty_stream_run(vec![AgentMessage::user("hello")], 200_000).await;
    assert_eq!(calls, 1);
    let AgentMessage::Assistant(last) = messages.last().unwrap() else {
        panic!("ends with the failed answer")
    };
    assert_eq!(last.error_kind, Some(llm::ErrorKind::EmptyStream));
}
