//! Hostile and broken servers over real HTTP against mock-llm: absurd `retry-after` values,
//! one enormous event, keep-alives that never end, answers that are not event streams, and
//! the output limit every request must carry.

mod support;

use std::time::Duration;

use llm::{Api, ErrorKind, RetryPolicy, StopReason, StreamEvent, StreamOptions};
use mock_llm::{Fault, Reply};
use support::{APIS, collect, options, serve};

/// Retries whose own backoff (an hour) could never pass the test's deadline.
fn slow_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_secs(3600),
        max_delay: Duration::from_secs(60),
    }
}

fn retry_delays(events: &[StreamEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_absurd_retry_after_fails_at_once_and_names_the_wait() {
    for (header, shown) in [("retry-after", "1e30 s"), ("retry-after-ms", "1e30 ms")] {
        let server = serve(vec![
            Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header(header, "1e30"),
            Reply::text("never"),
        ])
        .await;
        let opts = StreamOptions {
            retry: slow_retries(),
            ..options()
        };
        let (events, message) = collect(&server, Api::OpenaiCompletions, opts).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{header}");
        assert!(retry_delays(&events).is_empty(), "{header}: no retry");
        assert_eq!(server.requests().len(), 1, "{header}");
        assert_eq!(
            message.error_message.as_deref(),
            Some(
                format!(
                    "429 Too Many Requests: slow down (mock); mock asked to retry after {shown}, \
                     more than the 60 s limit (retry.max_delay_ms)"
                )
                .as_str()
            )
        );
    }
}

#[tokio::test]
async fn a_sane_retry_after_is_still_honoured() {
    for (header, value, expected_ms) in [("retry-after", "0.05", 50), ("retry-after-ms", "30", 30)]
    {
        let server = serve(vec![
            Reply::status(503, "").with_header(header, value),
            Reply::text("second time"),
        ])
        .await;
        let opts = StreamOptions {
            retry: slow_retries(),
            ..options()
        };
        let (events, message) = collect(&server, Api::AnthropicMessages, opts).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{header}");
        assert_eq!(message.text(), "second time");
        assert_eq!(retry_delays(&events), [expected_ms], "{header}");
    }
}

#[tokio::test]
async fn one_event_over_16_mb_fails_naming_the_limit() {
    for api in APIS {
        let reply = Reply::text("before the flood").with_fault(Fault::HugeEvent {
            after: 2,
            bytes: 17 * 1024 * 1024,
        });
        let server = serve(vec![reply]).await;
        let (_, message) = collect(&server, api, options()).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        assert_eq!(
            message.error_message.as_deref(),
            Some(
                "mock sent one event larger than 16 MB, the most one event may hold; the reply \
                 was stopped"
            ),
            "{api:?}"
        );
    }
}

/// Comments, empty events, and each API's own keep-alive event (Anthropic's `event: ping`,
/// the Responses API's `response.in_progress`, issue 45) hold nothing off: a server that only
/// keeps the connection busy times out like a silent one.
#[tokio::test]
async fn keep_alives_alone_time_out_like_silence() {
    for (empty_events, native) in [(false, false), (true, false), (false, true)] {
        for api in APIS {
            let reply = Reply::text("a reply that stops halfway")
                .with_chunk_size(2)
                .with_fault(Fault::KeepAlive {
                    after: 3,
                    every_ms: 5,
                    empty_events,
                    native,
                });
            let server = serve(vec![reply]).await;
            let opts = StreamOptions {
                idle_timeout: Duration::from_millis(300),
                ..options()
            };
            let (_, message) = collect(&server, api, opts).await;
            let what = format!("{api:?}, empty events: {empty_events}, native: {native}");
            assert_eq!(message.stop_reason, StopReason::Error, "{what}");
            assert_eq!(message.error_kind, Some(ErrorKind::IdleTimeout), "{what}");
            assert_eq!(
                message.error_message.as_deref(),
                Some("mock sent nothing for 300 ms; the request timed out"),
                "{what}"
            );
            server
                .wait_for_disconnects(1, Duration::from_secs(5))
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn slow_content_is_not_idle() {
    // Each piece arrives well within the idle timeout, the whole reply well after it.
    let reply = Reply::text("0123456789")
        .with_chunk_size(1)
        .with_delay_ms(60);
    let server = serve(vec![reply]).await;
    let opts = StreamOptions {
        idle_timeout: Duration::from_millis(400),
        ..options()
    };
    let (_, message) = collect(&server, Api::OpenaiCompletions, opts).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "0123456789");
}

#[tokio::test]
async fn a_200_that_is_not_an_event_stream_says_what_came_back() {
    let page = "<!doctype html>\n<html><head><title>Login required</title></head>\n<body>Sign in</body></html>\n";
    let json = r#"{"id":"x","choices":[{"message":{"content":"hi"}}]}"#;
    let server = serve(vec![
        Reply::raw_sse(page).with_header("content-type", "text/html; charset=utf-8"),
        Reply::raw_sse(json).with_header("content-type", "application/json"),
    ])
    .await;
    let url = format!("{}/chat/completions", server.url());
    let (_, message) = collect(&server, Api::OpenaiCompletions, options()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.unwrap(),
        format!(
            "{url} answered 200 with text/html; charset=utf-8, not an event stream: \
             <!doctype html> <html><head><title>Login required</title></head> <body>Sign \
             in</body></html>"
        )
    );
    let (_, message) = collect(&server, Api::OpenaiCompletions, options()).await;
    assert_eq!(
        message.error_message.unwrap(),
        format!("{url} answered 200 with application/json, not an event stream: {json}")
    );
}

#[tokio::test]
async fn an_event_stream_without_its_content_type_still_works() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = serve(vec![
        Reply::raw_sse(body).with_header("content-type", "text/plain"),
    ])
    .await;
    let (_, message) = collect(&server, Api::OpenaiCompletions, options()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "hi");
}

#[tokio::test]
async fn an_empty_event_stream_gets_its_own_message() {
    for body in ["", ": ping\n\n: ping\n\n"] {
        let server = serve(vec![Reply::raw_sse(body)]).await;
        let (_, message) = collect(&server, Api::AnthropicMessages, options()).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some(
                "mock sent an empty stream (no events): the server may have rejected the \
                 prompt, e.g. because it exceeds its context window; check the server's log"
            ),
            "{body:?}"
        );
    }
}

#[tokio::test]
async fn every_request_carries_the_output_limit() {
    let server = serve(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]).await;
    for api in APIS {
        // The support model's max_output is 1000; the options set none.
        collect(&server, api, options()).await;
    }
    let requests = server.requests();
    assert_eq!(requests[0].body["max_tokens"], 1000, "chat-completions");
    assert_eq!(requests[1].body["max_output_tokens"], 1000, "responses");
    assert_eq!(requests[2].body["max_tokens"], 1000, "anthropic");

    let server = serve(vec![Reply::text("a"), Reply::text("b")]).await;
    for api in [Api::OpenaiCompletions, Api::OpenaiResponses] {
        let opts = StreamOptions {
            max_tokens: Some(77),
            ..options()
        };
        collect(&server, api, opts).await;
    }
    let requests = server.requests();
    assert_eq!(
        requests[0].body["max_tokens"], 77,
        "the caller's limit wins"
    );
    assert_eq!(requests[1].body["max_output_tokens"], 77);
}

#[tokio::test]
async fn a_length_stop_is_length_on_every_api() {
    for api in APIS {
        let server = serve(vec![Reply::text("cut off").with_finish_reason("length")]).await;
        let (_, message) = collect(&server, api, options()).await;
        assert_eq!(message.stop_reason, StopReason::Length, "{api:?}");
        assert_eq!(message.text(), "cut off");
    }
}
