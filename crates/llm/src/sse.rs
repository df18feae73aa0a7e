//! Drives one streamed response through a wire parser: the part every wire API shares.
//!
//! The request (with retries), the `Start` event, the idle timeout on the body, SSE framing,
//! malformed data, a stream that ends before its terminal event, cancellation and a consumer
//! that went away are handled here once; each wire API only maps its own events.

use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::http::{self, Failure, Sender, WireRequest};
use crate::{
    Api, AssistantBuilder, EventStream, Model, StopReason, StreamEvent, StreamOptions, anthropic,
    openai_completions, openai_responses,
};

/// Whether the wire stream goes on after an event.
pub(crate) enum Flow {
    Continue,
    /// The terminal event arrived: the reply is complete.
    Finished,
}

/// Maps one wire API's events onto [`StreamEvent`]s.
pub(crate) trait WireParser: Send {
    /// The terminal event's name, for the error when a stream ends without it.
    fn terminal(&self) -> &'static str;

    /// Handles one SSE event (`name` is the `event:` field, `message` when absent). Events to
    /// emit go to `out`; an `Err` ends the stream with that failure.
    fn event(
        &mut self,
        name: &str,
        data: &str,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, Failure>;

    /// The closing event once the terminal event arrived; may emit final events (tool-call
    /// ends) to `out` first.
    fn finish(
        &mut self,
        model: &Model,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> StreamEvent;
}

/// The parser of `model.api`.
fn parser_for(model: &Model) -> Box<dyn WireParser> {
    let provider = model.provider.clone();
    match model.api {
        Api::OpenaiCompletions => Box::new(openai_completions::Parser::new(provider)),
        Api::OpenaiResponses => Box::new(openai_responses::Parser::new(provider)),
        Api::AnthropicMessages => Box::new(anthropic::Parser::new(provider)),
    }
}

/// Parses `data` as JSON; anything else is a malformed stream.
pub(crate) fn json(data: &str, provider: &str) -> Result<Value, Failure> {
    serde_json::from_str(data).map_err(|err| Failure {
        reason: format!(
            "{provider} sent malformed data ({err}): {}",
            http::snippet(data)
        ),
        kind: None,
    })
}

/// Sends `request` and streams the response through the parser of `model.api`.
pub(crate) fn spawn(
    client: reqwest::Client,
    model: &Model,
    options: StreamOptions,
    request: WireRequest,
    cancel: CancellationToken,
) -> EventStream {
    let (tx, rx) = mpsc::channel(64);
    let model = model.clone();
    tokio::spawn(async move {
        let mut builder = AssistantBuilder::new(&model.id, &model.provider);
        let sender = Sender::new(tx);
        let run = request_and_drive(&client, &model, &options, &request, &mut builder, &sender);
        let last = tokio::select! {
            biased;
            _ = cancel.cancelled() => builder.failed(StopReason::Aborted, http::ABORTED),
            last = run => last,
        };
        sender.send(last).await;
    });
    http::receiver_stream(rx)
}

async fn request_and_drive(
    client: &reqwest::Client,
    model: &Model,
    options: &StreamOptions,
    request: &WireRequest,
    builder: &mut AssistantBuilder,
    sender: &Sender,
) -> StreamEvent {
    let response =
        match http::send_with_retry(client, request, &model.provider, options, sender).await {
            Ok(response) => response,
            Err(failure) => {
                return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
            }
        };
    if !sender.send(StreamEvent::Start).await {
        return builder.failed(StopReason::Aborted, http::ABORTED);
    }
    let mut parser = parser_for(model);
    let body = response.bytes_stream();
    drive(
        body,
        parser.as_mut(),
        model,
        options.idle_timeout,
        builder,
        sender,
    )
    .await
}

/// Runs the parser of `model.api` over a body already in memory, as if a server had streamed
/// it: replays recorded streams (tests, benchmarks, bug reports) without a network.
pub fn replay(model: &Model, chunks: Vec<Bytes>) -> EventStream {
    let (tx, rx) = mpsc::channel(64);
    let model = model.clone();
    tokio::spawn(async move {
        let mut builder = AssistantBuilder::new(&model.id, &model.provider);
        let sender = Sender::new(tx);
        sender.send(StreamEvent::Start).await;
        let body = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        let mut parser = parser_for(&model);
        let idle = StreamOptions::default().idle_timeout;
        let last = drive(body, parser.as_mut(), &model, idle, &mut builder, &sender).await;
        sender.send(last).await;
    });
    http::receiver_stream(rx)
}

/// Why the body stopped delivering bytes.
#[derive(Debug)]
enum BodyError {
    Idle,
    Transport(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Idle => f.write_str("idle"),
            BodyError::Transport(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for BodyError {}

/// The body with a deadline on every chunk: a server that goes quiet ends the stream with
/// [`BodyError::Idle`] instead of hanging it.
fn with_idle_timeout<S, E>(body: S, idle: Duration) -> impl Stream<Item = Result<Bytes, BodyError>>
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: std::error::Error,
{
    futures_util::stream::unfold(Some(Box::pin(body)), move |body| async move {
        let mut body = body?;
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(body))),
            Ok(Some(Err(err))) => {
                let reason = BodyError::Transport(http::error_chain(&err));
                Some((Err(reason), None))
            }
            Ok(None) => None,
            Err(_) => Some((Err(BodyError::Idle), None)),
        }
    })
}

/// Feeds the body's SSE events to the parser, forwarding what it emits; returns the closing
/// event.
async fn drive<S, E>(
    body: S,
    parser: &mut dyn WireParser,
    model: &Model,
    idle: Duration,
    builder: &mut AssistantBuilder,
    sender: &Sender,
) -> StreamEvent
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: std::error::Error,
{
    let provider = &model.provider;
    let mut events = Box::pin(with_idle_timeout(body, idle).eventsource());
    let mut out = Vec::new();
    let mut finished = false;
    while let Some(item) = events.next().await {
        let event = match item {
            Ok(event) => event,
            Err(EventStreamError::Transport(BodyError::Idle)) => {
                let failure = http::idle_failure(provider, idle);
                return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
            }
            Err(err) => {
                let reason = format!("stream from {provider} broke off: {err}");
                return builder.failed(StopReason::Error, reason);
            }
        };
        if event.data.trim().is_empty() {
            continue;
        }
        let flow = parser.event(&event.event, event.data.trim(), builder, &mut out);
        for emitted in out.drain(..) {
            if !sender.send(emitted).await {
                return builder.failed(StopReason::Aborted, http::ABORTED);
            }
        }
        match flow {
            Ok(Flow::Continue) => {}
            Ok(Flow::Finished) => {
                finished = true;
                break;
            }
            Err(failure) => {
                return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
            }
        }
    }
    if !finished {
        let reason = format!(
            "stream from {provider} ended before {}; the reply is incomplete",
            parser.terminal()
        );
        return builder.failed(StopReason::Error, reason);
    }
    let last = parser.finish(model, builder, &mut out);
    for emitted in out.drain(..) {
        sender.send(emitted).await;
    }
    last
}
