//! Drives one streamed response through a wire parser: the part every wire API shares.
//!
//! The request (with retries), the `Start` event, the idle timeout on the body, SSE framing,
//! a body that is not an event stream, malformed data, a stream that ends before its terminal
//! event, cancellation and a consumer that went away are handled here once; each wire API only
//! maps its own events.

use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::batch::{self, Batch};
use crate::eventsource::{Decoder, TooLarge};
use crate::http::{self, Failure, Sender, WireRequest};
use crate::parse::{Flow, WireParser};
use crate::{
    AssistantBuilder, ErrorKind, EventStream, Model, StopReason, StreamEvent, StreamOptions, wire,
};

/// Sends `request` and streams the response through `parser`.
pub(crate) fn spawn(
    client: reqwest::Client,
    model: &Model,
    options: StreamOptions,
    request: WireRequest,
    parser: Box<dyn WireParser>,
    cancel: CancellationToken,
) -> EventStream {
    let (tx, rx) = mpsc::channel(64);
    let model = model.clone();
    tokio::spawn(async move {
        let mut builder = AssistantBuilder::new(&model.id, &model.provider);
        let sender = Sender::new(tx);
        let run = request_and_drive(
            &client,
            &model,
            &options,
            &request,
            parser,
            &mut builder,
            &sender,
        );
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
    mut parser: Box<dyn WireParser>,
    builder: &mut AssistantBuilder,
    sender: &Sender,
) -> StreamEvent {
    let response = match http::send_with_retry(
        client,
        request,
        &http::shown_provider(model),
        options,
        sender,
    )
    .await
    {
        Ok(response) => response,
        Err(failure) => {
            return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
        }
    };
    if !sender.send(StreamEvent::Start).await {
        return builder.failed(StopReason::Aborted, http::ABORTED);
    }
    let origin = Origin::of(&response);
    let body = response.bytes_stream();
    drive(
        body,
        parser.as_mut(),
        model,
        options.idle_timeout,
        Some(&origin),
        builder,
        sender,
    )
    .await
}

/// Runs the parser of `model.api` over a body already in memory, as if a server had streamed
/// it: replays recorded streams (tests, benchmarks, bug reports) without a network.
pub fn replay(model: &Model, chunks: Vec<Bytes>) -> EventStream {
    let body = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    replay_body(model, body)
}

/// [`replay`] over a body that arrives as `body` yields it.
fn replay_body<S, E>(model: &Model, body: S) -> EventStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let (tx, rx) = mpsc::channel(64);
    let model = model.clone();
    tokio::spawn(async move {
        let mut builder = AssistantBuilder::new(&model.id, &model.provider);
        let sender = Sender::new(tx);
        sender.send(StreamEvent::Start).await;
        let mut parser = (wire::of(model.api).parser)(model.provider.clone());
        let idle = StreamOptions::default().idle_timeout;
        let last = drive(
            body,
            parser.as_mut(),
            &model,
            idle,
            None,
            &mut builder,
            &sender,
        )
        .await;
        sender.send(last).await;
    });
    http::receiver_stream(rx)
}

/// Where a body came from, for the message when it is not an event stream.
pub(crate) struct Origin {
    pub url: String,
    pub status: u16,
    /// The `content-type` header, if any.
    pub content_type: Option<String>,
}

impl Origin {
    fn of(response: &reqwest::Response) -> Self {
        Self {
            url: response.url().to_string(),
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        }
    }

    fn is_event_stream(&self) -> bool {
        self.content_type.as_deref().is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/event-stream"))
        })
    }

    /// The failure for a body that is not an event stream: what came back, in its words.
    fn not_a_stream(&self, head: &[u8]) -> Failure {
        let kind = self.content_type.as_deref().unwrap_or("no content type");
        let text = String::from_utf8_lossy(head);
        let words: Vec<&str> = text.split_whitespace().collect();
        let shown = if words.is_empty() {
            "an empty body".to_string()
        } else {
            http::snippet(&words.join(" "))
        };
        Failure {
            reason: format!(
                "{} answered {} with {kind}, not an event stream: {shown}",
                self.url, self.status
            ),
            kind: None,
        }
    }
}

/// Bytes read before deciding whether a body without the event-stream type is one anyway.
const SNIFF_BYTES: usize = 1024;

/// Whether the start of a body reads as server-sent events; `None` until enough has come.
fn looks_like_sse(head: &[u8], complete: bool) -> Option<bool> {
    let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let Some(start) = start else {
        return complete.then_some(false);
    };
    let rest = &body[start..];
    let line_end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
    let line = match line_end {
        Some(end) => &rest[..end],
        None if complete || head.len() >= SNIFF_BYTES => rest,
        None => return None,
    };
    let field = |name: &[u8]| {
        line == name || (line.starts_with(name) && line.get(name.len()) == Some(&b':'))
    };
    Some(
        line.starts_with(b":")
            || [&b"data"[..], b"event", b"id", b"retry"]
                .into_iter()
                .any(field),
    )
}

/// Feeds the body's SSE events to the parser, forwarding what it emits in batches; returns the
/// closing event. `origin` (none for a replay) lets a body that is not an event stream say what
/// it is.
async fn drive<S, E>(
    body: S,
    parser: &mut dyn WireParser,
    model: &Model,
    idle: Duration,
    origin: Option<&Origin>,
    builder: &mut AssistantBuilder,
    sender: &Sender,
) -> StreamEvent
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: std::error::Error,
{
    let mut batch = Batch::new(sender);
    let last = read_events(body, parser, model, idle, origin, builder, &mut batch).await;
    // What was read before the end goes out ahead of it.
    batch.flush().await;
    last
}

/// The body of [`drive`]: every event it parses goes into `batch`, which it sends on when the
/// server is behind, and the caller after the closing event is known.
///
/// The idle timeout counts content, not bytes: keep-alive comments and empty events do not
/// reset it, so a server that only pings times out like a silent one.
async fn read_events<S, E>(
    body: S,
    parser: &mut dyn WireParser,
    model: &Model,
    idle: Duration,
    origin: Option<&Origin>,
    builder: &mut AssistantBuilder,
    batch: &mut Batch<'_>,
) -> StreamEvent
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: std::error::Error,
{
    let provider = &http::shown_provider(model);
    let mut body = Box::pin(body);
    let mut decoder = Decoder::new();
    // Bodies not typed as event streams are read a little before trusting them.
    let mut sniff: Option<(&Origin, Vec<u8>)> = origin
        .filter(|o| !o.is_event_stream())
        .map(|o| (o, Vec::new()));
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut deadline = tokio::time::Instant::now() + idle;
    let mut progress = 0;
    let mut saw_event = false;
    let mut next_at_hand = None;
    let mut pause_until = None;
    loop {
        let next = match next_at_hand.take() {
            Some(next) => Ok(next),
            None => {
                if let Some(until) = pause_until.take() {
                    tokio::time::sleep_until(deadline.min(until)).await;
                }
                tokio::time::timeout_at(deadline, body.next()).await
            }
        };
        let chunk = match next {
            Err(_) => {
                let failure = http::idle_failure(provider, idle);
                return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
            }
            Ok(Some(Err(err))) => {
                let reason = format!(
                    "stream from {provider} broke off: {}",
                    http::error_chain(&err)
                );
                return builder.failed(StopReason::Error, reason);
            }
            Ok(Some(Ok(bytes))) => Some(bytes),
            Ok(None) => None,
        };
        let mut fed = Ok(());
        if let Some((origin, head)) = &mut sniff {
            if let Some(bytes) = &chunk {
                head.extend_from_slice(bytes);
                deadline = tokio::time::Instant::now() + idle;
            }
            match looks_like_sse(head, chunk.is_none()) {
                None => continue,
                Some(false) => {
                    let failure = origin.not_a_stream(head);
                    return builder.failed(StopReason::Error, failure.reason);
                }
                Some(true) => {
                    let head = std::mem::take(head);
                    sniff = None;
                    fed = decoder.feed(&head, &mut events);
                }
            }
        } else if let Some(bytes) = &chunk {
            fed = decoder.feed(bytes, &mut events);
        }
        if let Err(TooLarge { limit }) = fed {
            let reason = format!(
                "{provider} sent one event larger than {} MB, the most one event may hold; \
                 the reply was stopped",
                limit / (1024 * 1024)
            );
            return builder.failed(StopReason::Error, reason);
        }
        if chunk.is_none() {
            events.extend(decoder.finish());
        }
        let content = events
            .iter()
            .any(|e| !e.data.trim().is_empty() && !parser.keep_alive(&e.name, &e.data));
        if content || decoder.data_progress() != progress {
            deadline = tokio::time::Instant::now() + idle;
        }
        progress = decoder.data_progress();
        for event in events.drain(..) {
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            saw_event = true;
            let flow = parser.event(&event.name, data, builder, &mut out);
            out.drain(..).for_each(|emitted| batch.push(emitted));
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Finished) => {
                    let last = parser.finish(model, builder, &mut out);
                    out.drain(..).for_each(|emitted| batch.push(emitted));
                    return last;
                }
                Err(failure) => {
                    return builder.failed_with(StopReason::Error, failure.reason, failure.kind);
                }
            }
        }
        if chunk.is_none() {
            break;
        }
        batch.chunk_read();
        next_at_hand = batch::at_hand(&mut body).await;
        if next_at_hand.is_none() || batch.is_full() {
            let flood = batch.is_flood();
            if !batch.flush().await {
                return builder.failed(StopReason::Aborted, http::ABORTED);
            }
            if next_at_hand.is_none() && !flood {
                pause_until = Some(tokio::time::Instant::now() + batch::READ_PAUSE);
            }
        }
    }
    if saw_event {
        let reason = format!(
            "stream from {provider} ended before {}; the reply is incomplete",
            parser.terminal()
        );
        return builder.failed(StopReason::Error, reason);
    }
    let reason = format!(
        "{provider} sent an empty stream (no events): the server may have rejected the \
         prompt, e.g. because it exceeds its context window; check the server's log"
    );
    builder.failed_with(StopReason::Error, reason, Some(ErrorKind::EmptyStream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Api, ModelCost};
    use tokio::time::Instant;

    fn model() -> Model {
        Model {
            id: "m".into(),
            provider: "p".into(),
            api: Api::OpenaiCompletions,
            base_url: String::new(),
            context_window: 1000,
            max_output: 100,
            reasoning: false,
            images: false,
            cost: ModelCost::default(),
        }
    }

    fn piece(text: &str) -> Result<Bytes, std::io::Error> {
        let data = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
        Ok(Bytes::from(format!("data: {data}\n\n")))
    }

    /// Replays a body whose chunks the test sends as it goes.
    fn driven() -> (
        mpsc::UnboundedSender<Result<Bytes, std::io::Error>>,
        EventStream,
    ) {
        let (chunks, mut rx) = mpsc::unbounded_channel();
        let body = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        (chunks, replay_body(&model(), body))
    }

    /// Waits (in the test's virtual time) until the stream has delivered `text` in all.
    async fn text_until(stream: &mut EventStream, streamed: &mut String, text: &str) {
        while streamed.len() < text.len() {
            match stream.next().await {
                Some(StreamEvent::TextDelta { delta, .. }) => streamed.push_str(&delta),
                Some(StreamEvent::Error { message }) => panic!("{:?}", message.error_message),
                Some(_) => {}
                None => panic!("the stream ended at {streamed:?}"),
            }
        }
        assert_eq!(streamed, text);
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_server_is_read_after_a_pause_and_a_flood_without_one() {
        let (chunks, mut stream) = driven();
        let mut streamed = String::new();
        chunks.send(piece("a")).unwrap();
        text_until(&mut stream, &mut streamed, "a").await;
        // One piece at a time, as a model paced like a real one sends: reading pauses, so
        // what comes next waits for the pause to end.
        let sent = Instant::now();
        chunks.send(piece("b")).unwrap();
        text_until(&mut stream, &mut streamed, "ab").await;
        assert!(
            sent.elapsed() >= batch::READ_PAUSE,
            "a paced piece went on after {:?}, without the pause",
            sent.elapsed()
        );
        // A flood: reading found many pieces at hand, so it does not pause and the piece that
        // comes after is read as soon as it lands.
        let flood = "0123456789ab";
        for c in flood.chars() {
            chunks.send(piece(&c.to_string())).unwrap();
        }
        let read = format!("ab{flood}");
        text_until(&mut stream, &mut streamed, &read).await;
        let sent = Instant::now();
        chunks.send(piece("z")).unwrap();
        text_until(&mut stream, &mut streamed, &format!("{read}z")).await;
        assert!(
            sent.elapsed() < batch::READ_PAUSE,
            "after a flood, a piece waited {:?} for a pause",
            sent.elapsed()
        );
    }
}
