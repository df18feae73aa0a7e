//! The chat-completions client over real HTTP against mock-llm: streams, captures of real
//! servers, and every fault the foundation must survive.

mod support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use llm::{
    Api, AssistantMessage, Context, Message, Model, ModelCost, Provider, RetryPolicy, StopReason,
    StreamEvent, StreamOptions, ToolSpec, UserMessage,
};
use mock_llm::{Fault, MockServer, Reply, Script, ScriptUsage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn model(server: &MockServer) -> Model {
    Model {
        id: "mock-model".into(),
        provider: "mock".into(),
        api: Api::OpenaiCompletions,
        base_url: server.url(),
        context_window: 32_000,
        max_output: 1_000,
        reasoning: false,
        images: false,
        cost: ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.5,
            cache_write: 0.0,
        },
    }
}

fn context() -> Context {
    Context {
        system_prompt: "sys".into(),
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

async fn serve(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script { replies }).await.unwrap()
}

/// Streams one reply to its end; returns all events and the closing message.
async fn collect(
    server: &MockServer,
    cancel: CancellationToken,
) -> (Vec<StreamEvent>, AssistantMessage) {
    // Retries have their own tests (retries_http.rs): here every failure is final.
    let options = StreamOptions {
        api_key: Some("sk-test".into()),
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let mut stream = llm::Router::new().stream(&model(server), context(), options, cancel);
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
    {
        events.push(event);
    }
    let last = match events.last().cloned() {
        Some(StreamEvent::Done { message } | StreamEvent::Error { message }) => message,
        other => panic!("stream ended with {other:?}"),
    };
    let closings = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. } | StreamEvent::Error { .. }))
        .count();
    assert_eq!(closings, 1, "exactly one closing event");
    (events, last)
}

#[tokio::test]
async fn streams_text_thinking_and_usage() {
    let reply = Reply::text("Hello, world")
        .with_thinking("let me see")
        .with_chunk_size(3)
        .with_usage(ScriptUsage {
            input: 100,
            output: 20,
            cache_read: 50,
        });
    let server = serve(vec![reply]).await;
    let (events, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "Hello, world");
    assert!(
        matches!(&message.content[0], llm::AssistantContent::Thinking { thinking, .. } if thinking == "let me see")
    );
    assert_eq!(
        support::streamed_text(&events),
        "Hello, world",
        "12 characters in pieces of 3"
    );
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read
        ),
        (100, 20, 50)
    );
    let expected_cost = (100.0 * 1.0 + 20.0 * 2.0 + 50.0 * 0.5) / 1e6;
    assert!((message.usage.cost - expected_cost).abs() < 1e-12);

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.body["model"], "mock-model");
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["messages"][0],
        json!({"role": "system", "content": "sys"})
    );
    assert_eq!(
        request.body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
    assert_eq!(request.body["tools"][0]["function"]["name"], "read");
}

#[tokio::test]
async fn pieces_that_arrive_while_reading_pauses_go_on_as_one_delta() {
    // 24 pieces 5 ms apart: reading pauses 50 ms once caught up, so most pieces are read
    // together with others. One delta per piece would mean every piece woke the whole chain.
    let text = "abcdefghijklmnopqrstuvwx".repeat(2);
    let server = serve(vec![Reply::text(&text).with_chunk_size(2).with_delay_ms(5)]).await;
    let (events, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(message.text(), text);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.concat(), text);
    assert!(
        deltas.len() <= 12,
        "{} deltas for 24 pieces: {deltas:?}",
        deltas.len()
    );
}

#[tokio::test]
async fn streams_tool_calls_by_index() {
    let reply = Reply::tool_call("read", json!({"path": "src/main.rs"}))
        .with_tool_call("read", json!({"path": "Cargo.toml"}))
        .with_chunk_size(4);
    let server = serve(vec![reply]).await;
    let (_, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(calls[1].arguments, json!({"path": "Cargo.toml"}));
    assert_ne!(calls[0].id, calls[1].id);
}

#[tokio::test]
async fn broken_tool_arguments_are_flagged_not_fatal() {
    let reply = Reply::tool_call("read", json!("{\"path\": \"a"));
    let server = serve(vec![reply]).await;
    let (_, message) = collect(&server, CancellationToken::new()).await;
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        call.invalid_arguments.as_ref().unwrap().raw,
        "{\"path\": \"a"
    );
}

#[tokio::test]
async fn replays_a_llama_cpp_tool_call_capture() {
    // llama-cpp-python repeats id and name in every delta and sends a legacy function_call.
    let capture = include_str!("fixtures/lcp_tools_forced.sse");
    let server = serve(vec![Reply::raw_sse(capture).with_chunk_size(97)]).await;
    let (_, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1, "one call, not one per delta");
    assert_eq!(calls[0].name, "read_file");
    assert!(calls[0].invalid_arguments.is_none(), "{:?}", calls[0]);
    assert!(
        calls[0].arguments.get("path").is_some(),
        "{}",
        calls[0].arguments
    );
}

#[tokio::test]
async fn replays_plain_captures_with_and_without_usage() {
    for (capture, has_usage) in [
        (include_str!("fixtures/lcp_plain_rerun.sse"), false),
        (include_str!("fixtures/ls_plain.sse"), false),
        (include_str!("fixtures/ls_usage.sse"), true),
    ] {
        let server = serve(vec![Reply::raw_sse(capture).with_chunk_size(61)]).await;
        let (_, message) = collect(&server, CancellationToken::new()).await;
        assert_eq!(message.stop_reason, StopReason::Stop);
        assert!(!message.text().is_empty());
        assert_eq!(
            message.usage.output > 0,
            has_usage,
            "usage in {}",
            &capture[..80]
        );
    }
}

#[tokio::test]
async fn http_errors_become_readable_error_events() {
    let body = r#"{"error":{"message":"invalid API key","type":"invalid_request_error"}}"#;
    let server = serve(vec![Reply::status(401, body), Reply::status(500, "")]).await;
    let (events, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(events.len(), 1, "no start before the failure");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("401 Unauthorized: invalid API key (mock)")
    );
    let (_, message) = collect(&server, CancellationToken::new()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("500 Internal Server Error: no details (mock)")
    );
}

#[tokio::test]
async fn stream_faults_become_error_events() {
    let long = "lorem ipsum ".repeat(20);
    let server = serve(vec![
        Reply::text(&long).with_fault(Fault::Drop { after: 3 }),
        Reply::text(&long).with_fault(Fault::Malformed { after: 3 }),
        Reply::text(&long).with_fault(Fault::NoDone),
    ])
    .await;
    let expectations = ["broke off", "malformed data", "ended before [DONE]"];
    for expected in expectations {
        let (_, message) = collect(&server, CancellationToken::new()).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        let reason = message.error_message.unwrap();
        assert!(reason.contains(expected), "{reason}");
    }
}

#[tokio::test]
async fn unreachable_servers_are_an_error_event() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut m = model(&serve(vec![]).await);
    m.base_url = format!("http://127.0.0.1:{port}/v1");
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let mut stream = llm::Router::new().stream(&m, context(), options, CancellationToken::new());
    let Some(StreamEvent::Error { message }) = stream.next().await else {
        panic!()
    };
    assert!(
        message
            .error_message
            .unwrap()
            .starts_with("could not reach mock")
    );
}

#[tokio::test]
async fn cancelling_stops_the_stream_at_once_and_closes_the_connection() {
    let reply = Reply::text("a long answer that never finishes")
        .with_chunk_size(2)
        .with_fault(Fault::Stall { after: 4 });
    let server = serve(vec![reply]).await;
    let cancel = CancellationToken::new();
    let mut stream = llm::Router::new().stream(
        &model(&server),
        context(),
        StreamOptions::default(),
        cancel.clone(),
    );
    // Two pieces of two characters, before the server stalls.
    let mut streamed = String::new();
    while streamed.len() < 4 {
        match stream.next().await {
            Some(StreamEvent::TextDelta { delta, .. }) => streamed.push_str(&delta),
            Some(_) => {}
            None => panic!("the stream ended before the stall: {streamed:?}"),
        }
    }
    let started = Instant::now();
    cancel.cancel();
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event);
    }
    let Some(StreamEvent::Error { message }) = last else {
        panic!("{last:?}")
    };
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert!(
        message.text().starts_with("a "),
        "partial text kept: {}",
        message.text()
    );
    server
        .wait_for_disconnects(1, Duration::from_secs(5))
        .await
        .unwrap();
    // Generous bound: only catches a hang, not a slow machine.
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn history_is_sent_in_wire_format() {
    let server = serve(vec![Reply::text("ok")]).await;
    let mut builder = llm::AssistantBuilder::new("m", "p");
    builder.text_delta("I'll read it");
    let (i, _) = builder.toolcall_start("call_1", "read");
    builder.toolcall_delta(i, r#"{"path":"a"}"#);
    builder.end_open_toolcalls();
    let assistant = builder.snapshot(StopReason::ToolUse);
    let failed = AssistantMessage::empty("m", "p");
    let ctx = Context {
        system_prompt: String::new(),
        messages: vec![
            Message::User(UserMessage::text("read a")),
            Message::Assistant(assistant),
            Message::ToolResult(llm::ToolResultMessage {
                tool_call_id: "call_1".into(),
                tool_name: "read".into(),
                content: vec![llm::UserContent::Text {
                    text: "contents".into(),
                }],
                details: None,
                is_error: false,
                timestamp: 0,
            }),
            Message::Assistant(failed),
        ],
        tools: vec![],
    };
    let mut stream = llm::Router::new().stream(
        &model(&server),
        ctx,
        StreamOptions::default(),
        CancellationToken::new(),
    );
    while stream.next().await.is_some() {}
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "no system prompt, empty assistant dropped: {messages:?}"
    );
    assert_eq!(messages[1]["content"], "I'll read it");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a"}"#
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "contents"})
    );
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn parallel_calls_sharing_index_zero_stay_apart() {
    // Ollama numbers every parallel call 0; the new id is what tells them apart.
    let chunk = |delta: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let mut body = String::new();
    for (id, path) in [("call_a", "a.rs"), ("call_b", "b.rs")] {
        body += &chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "read", "arguments": format!("{{\"path\":\"{path}\"}}")}}]}),
        );
    }
    body += "data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let server = serve(vec![Reply::raw_sse(body)]).await;
    let (_, message) = collect(&server, CancellationToken::new()).await;
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1].id, "call_b");
    assert_eq!(calls[1].arguments, json!({"path": "b.rs"}));
}

#[tokio::test]
async fn inline_think_tags_from_a_local_model_stream_as_thinking() {
    // Cut into 3-byte chunks, so the tags arrive split across deltas.
    let server = MockServer::start(Script {
        replies: vec![
            Reply::text("<think>\nThe user greets me.\n</think>\n\nHello there.")
                .with_chunk_size(3),
        ],
    })
    .await
    .unwrap();
    let provider = llm::Router::new();
    let context = Context {
        system_prompt: String::new(),
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: Vec::new(),
    };
    let mut stream = provider.stream(
        &model(&server),
        context,
        StreamOptions::default(),
        CancellationToken::new(),
    );
    let mut streamed_thinking = String::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            StreamEvent::ThinkingDelta { delta, .. } => streamed_thinking.push_str(&delta),
            StreamEvent::TextDelta { delta, .. } => assert!(!delta.contains("think>"), "{delta}"),
            StreamEvent::Done { message } => last = Some(message),
            StreamEvent::Error { message } => panic!("{:?}", message.error_message),
            _ => {}
        }
    }
    let message = last.unwrap();
    assert!(
        streamed_thinking.contains("The user greets me."),
        "streamed as thinking: {streamed_thinking:?}"
    );
    assert_eq!(message.text(), "Hello there.");
    let thinking: Vec<&str> = message
        .content
        .iter()
        .filter_map(|c| match c {
            llm::AssistantContent::Thinking { thinking, .. } => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, ["\nThe user greets me.\n"]);
}
