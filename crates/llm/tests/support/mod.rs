//! Shared by the HTTP tests: a model per wire API pointed at mock-llm, a small context, and a
//! collector that waits on events (with a deadline that only catches hangs).

#![allow(dead_code)]

use std::time::Duration;

use futures_util::StreamExt;
use llm::{
    Api, AssistantMessage, Context, EventStream, Message, Model, ModelCost, Provider, RetryPolicy,
    Router, StreamEvent, StreamOptions, ToolSpec, UserMessage,
};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub const APIS: [Api; 3] = [
    Api::OpenaiCompletions,
    Api::OpenaiResponses,
    Api::AnthropicMessages,
];

pub fn model(server: &MockServer, api: Api) -> Model {
    Model {
        id: "mock-model".into(),
        provider: "mock".into(),
        api,
        base_url: server.url(),
        context_window: 32_000,
        max_output: 1_000,
        reasoning: true,
        images: false,
        cost: ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.5,
            cache_write: 4.0,
        },
    }
}

pub fn context() -> Context {
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

pub async fn serve(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script { replies }).await.unwrap()
}

/// Options for tests: a key, and failures final unless a test opts into retries.
pub fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some("sk-test".into()),
        retry: RetryPolicy::none(),
        ..Default::default()
    }
}

/// Retries that wait a millisecond, so retry tests run at full speed.
pub fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(5),
    }
}

pub fn start(model: &Model, options: StreamOptions, cancel: CancellationToken) -> EventStream {
    Router::new().stream(model, context(), options, cancel)
}

/// Drains a stream; checks it closed exactly once, last.
pub async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, AssistantMessage) {
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream must not hang")
    {
        events.push(event);
    }
    let closings = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. } | StreamEvent::Error { .. }))
        .count();
    assert_eq!(closings, 1, "exactly one closing event: {events:?}");
    let message = match events.last().cloned() {
        Some(StreamEvent::Done { message } | StreamEvent::Error { message }) => message,
        other => panic!("stream ended with {other:?}"),
    };
    (events, message)
}

/// Streams one call of `api` against `server` to its end.
pub async fn collect(
    server: &MockServer,
    api: Api,
    options: StreamOptions,
) -> (Vec<StreamEvent>, AssistantMessage) {
    drain(start(
        &model(server, api),
        options,
        CancellationToken::new(),
    ))
    .await
}

pub fn count<F: Fn(&StreamEvent) -> bool>(events: &[StreamEvent], f: F) -> usize {
    events.iter().filter(|e| f(e)).count()
}

/// The text the stream's deltas add up to (pieces that arrive together may be one delta).
pub fn streamed_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}
