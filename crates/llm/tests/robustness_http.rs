//! Shared robustness over real HTTP, for every wire API: retries before the first byte, the
//! idle timeout, context-overflow detection, cancellation, and the Router's key handling.

mod support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use llm::{
    Api, ErrorKind, Provider, RetryPolicy, Router, StopReason, StreamEvent, StreamOptions,
    ThinkingLevel,
};
use mock_llm::{Fault, Reply};
use support::{APIS, collect, fast_retries, model, options, serve, start};
use tokio_util::sync::CancellationToken;

fn retries(events: &[StreamEvent]) -> Vec<(u32, u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry {
                attempt,
                max,
                delay_ms,
                reason,
            } => Some((*attempt, *max, *delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_503_is_retried_and_the_stream_then_succeeds() {
    for api in APIS {
        let server = serve(vec![Reply::status(503, ""), Reply::text("second time")]).await;
        let opts = StreamOptions {
            retry: fast_retries(3),
            ..options()
        };
        let (events, message) = collect(&server, api, opts).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api:?}");
        assert_eq!(message.text(), "second time");
        assert_eq!(server.requests().len(), 2, "{api:?}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1);
        let (attempt, max, _, reason) = &retries[0];
        assert_eq!((*attempt, *max), (1, 3));
        assert!(reason.starts_with("503 Service Unavailable"), "{reason}");
        assert!(
            matches!(events[0], StreamEvent::Retry { .. }),
            "retry before start"
        );
        assert!(matches!(events[1], StreamEvent::Start));
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = serve(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "0"),
        Reply::text("ok"),
    ])
    .await;
    // A base delay far beyond the test's deadline: only retry-after can make this pass.
    let opts = StreamOptions {
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(7200),
        },
        ..options()
    };
    let (events, message) = collect(&server, Api::OpenaiCompletions, opts).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].2, 0, "waited as the server asked");
    assert!(retries[0].3.contains("slow down"));
}

#[tokio::test]
async fn retries_stop_at_the_maximum_and_say_so() {
    let server = serve(vec![Reply::status(500, ""); 3]).await;
    let opts = StreamOptions {
        retry: fast_retries(2),
        ..options()
    };
    let (events, message) = collect(&server, Api::AnthropicMessages, opts).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(server.requests().len(), 3, "one try and two retries");
    assert_eq!(retries(&events).len(), 2);
    let reason = message.error_message.unwrap();
    assert!(reason.ends_with("(gave up after 2 retries)"), "{reason}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = serve(vec![Reply::status(400, "bad"), Reply::text("never")]).await;
    let opts = StreamOptions {
        retry: fast_retries(3),
        ..options()
    };
    let (events, message) = collect(&server, Api::OpenaiResponses, opts).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(server.requests().len(), 1);
    assert!(retries(&events).is_empty());
}

#[tokio::test]
async fn faults_after_the_first_byte_are_not_retried() {
    let server = serve(vec![
        Reply::text("lorem ipsum dolor").with_fault(Fault::Drop { after: 2 }),
        Reply::text("never"),
    ])
    .await;
    let opts = StreamOptions {
        retry: fast_retries(3),
        ..options()
    };
    let (_, message) = collect(&server, Api::OpenaiCompletions, opts).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        server.remaining(),
        1,
        "the second reply was never asked for"
    );
}

#[tokio::test]
async fn connection_failures_are_retried() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let server = serve(vec![]).await;
    let mut m = model(&server, Api::AnthropicMessages);
    m.base_url = format!("http://127.0.0.1:{port}/v1");
    let opts = StreamOptions {
        retry: fast_retries(1),
        ..options()
    };
    let (events, message) = support::drain(start(&m, opts, CancellationToken::new())).await;
    assert_eq!(retries(&events).len(), 1);
    let reason = message.error_message.unwrap();
    assert!(reason.starts_with("could not reach mock"), "{reason}");
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    for api in APIS {
        let reply = Reply::text("a reply that stops halfway")
            .with_chunk_size(2)
            .with_fault(Fault::Stall { after: 3 });
        let server = serve(vec![reply]).await;
        let opts = StreamOptions {
            idle_timeout: Duration::from_millis(300),
            ..options()
        };
        let (_, message) = collect(&server, api, opts).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(message.error_kind, Some(ErrorKind::IdleTimeout));
        let reason = message.error_message.unwrap();
        assert_eq!(
            reason,
            "mock sent nothing for 300 ms; the request timed out"
        );
        server
            .wait_for_disconnects(1, Duration::from_secs(5))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn context_overflow_is_flagged_for_each_provider_wording() {
    let bodies = [
        (
            Api::OpenaiCompletions,
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        ),
        (
            Api::OpenaiResponses,
            400,
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","code":"context_length_exceeded"}}"#,
        ),
        (
            Api::AnthropicMessages,
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#,
        ),
        (
            Api::OpenaiCompletions,
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
        ),
        (
            Api::AnthropicMessages,
            413,
            r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes: too many tokens"}}"#,
        ),
    ];
    for (api, status, body) in bodies {
        let server = serve(vec![Reply::status(status, body)]).await;
        let opts = StreamOptions {
            retry: fast_retries(3),
            ..options()
        };
        let (events, message) = collect(&server, api, opts).await;
        assert_eq!(
            message.error_kind,
            Some(ErrorKind::ContextOverflow),
            "{body}"
        );
        assert!(retries(&events).is_empty(), "overflow is not retried");
    }
    let server = serve(vec![Reply::status(401, "invalid key")]).await;
    let (_, message) = collect(&server, Api::OpenaiCompletions, options()).await;
    assert_eq!(message.error_kind, None);
}

#[tokio::test]
async fn cancelling_stops_every_api_at_once() {
    for api in APIS {
        let reply = Reply::text("a long answer that never finishes")
            .with_chunk_size(2)
            .with_fault(Fault::Stall { after: 6 });
        let server = serve(vec![reply]).await;
        let cancel = CancellationToken::new();
        let mut stream = start(&model(&server, api), options(), cancel.clone());
        // Two pieces of two characters, before the server stalls.
        let mut streamed = String::new();
        while streamed.len() < 4 {
            match stream.next().await {
                Some(StreamEvent::TextDelta { delta, .. }) => streamed.push_str(&delta),
                Some(_) => {}
                None => panic!("{api:?}: the stream ended before the stall: {streamed:?}"),
            }
        }
        let started = Instant::now();
        cancel.cancel();
        let (_, message) = support::drain(stream).await;
        assert_eq!(message.stop_reason, StopReason::Aborted, "{api:?}");
        assert!(
            message.text().starts_with("a "),
            "{api:?}: {}",
            message.text()
        );
        server
            .wait_for_disconnects(1, Duration::from_secs(5))
            .await
            .unwrap();
        // Generous bound: only catches a hang, not a slow machine.
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_ends_the_stream() {
    let server = serve(vec![Reply::status(503, "")]).await;
    let opts = StreamOptions {
        retry: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(7200),
        },
        ..options()
    };
    let cancel = CancellationToken::new();
    let mut stream = start(&model(&server, Api::OpenaiResponses), opts, cancel.clone());
    let Some(StreamEvent::Retry { .. }) = stream.next().await else {
        panic!("expected a retry event")
    };
    cancel.cancel();
    let (_, message) = support::drain(stream).await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn the_router_supplies_each_provider_its_key_in_its_header() {
    for api in APIS {
        let server = serve(vec![Reply::text("ok")]).await;
        let router = Router::new().with_key("mock", "configured-key");
        let opts = StreamOptions {
            api_key: None,
            ..options()
        };
        let stream = router.stream(
            &model(&server, api),
            support::context(),
            opts,
            CancellationToken::new(),
        );
        let (_, message) = support::drain(stream).await;
        assert_eq!(message.stop_reason, StopReason::Stop);
        let request = &server.requests()[0];
        match api {
            Api::AnthropicMessages => {
                assert_eq!(request.header("x-api-key"), Some("configured-key"))
            }
            _ => assert_eq!(
                request.header("authorization"),
                Some("Bearer configured-key")
            ),
        }
    }
}

#[tokio::test]
async fn completions_thinking_and_token_limits() {
    let server = serve(vec![Reply::text("a"), Reply::text("b")]).await;
    let mut m = model(&server, Api::OpenaiCompletions);
    let opts = StreamOptions {
        thinking: ThinkingLevel::Low,
        max_tokens: Some(300),
        ..options()
    };
    support::drain(start(&m, opts.clone(), CancellationToken::new())).await;
    m.provider = "openai".into();
    m.reasoning = false;
    support::drain(start(&m, opts, CancellationToken::new())).await;
    let requests = server.requests();
    assert_eq!(requests[0].body["reasoning_effort"], "low");
    assert_eq!(requests[0].body["max_tokens"], 300);
    assert!(
        requests[1].body.get("reasoning_effort").is_none(),
        "not a reasoning model"
    );
    assert_eq!(requests[1].body["max_completion_tokens"], 300);

    let server = serve(vec![Reply::text("a"), Reply::text("b")]).await;
    for provider in ["openai", "google"] {
        let mut m = model(&server, Api::OpenaiCompletions);
        m.provider = provider.into();
        let opts = StreamOptions {
            thinking: ThinkingLevel::Minimal,
            ..options()
        };
        support::drain(start(&m, opts, CancellationToken::new())).await;
    }
    let requests = server.requests();
    assert_eq!(requests[0].body["reasoning_effort"], "minimal");
    assert_eq!(
        requests[1].body["reasoning_effort"], "low",
        "only OpenAI knows minimal"
    );
}
