//! The HTTP side: accept connections, record requests, stream scripted replies.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::emulate::Emulation;
use crate::script::{Fault, Reply, Script};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body; a string when the body was not JSON.
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Number of requests recorded so far.
    request_count: watch::Sender<usize>,
    /// Number of streams whose client went away before the stream ended.
    disconnects: watch::Sender<usize>,
    /// When each complete stream's last frame was taken by the connection.
    stream_ends: Mutex<Vec<std::time::Instant>>,
    /// The local server whose discovery endpoints are served, if any.
    emulation: Mutex<Option<Emulation>>,
    /// Discovery requests answered (they are not in `requests`).
    discovery: Mutex<Vec<String>>,
    /// The one API key taken, as a hosted provider would (`None`: any or none).
    key: Mutex<Option<String>>,
}

/// A running mock server; stops accepting connections when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl MockServer {
    /// Starts on a random free port of 127.0.0.1.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        Self::start_on(script, 0).await
    }

    pub async fn start_on(script: Script, port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            replies: Mutex::new(script.replies.into()),
            requests: Mutex::new(Vec::new()),
            request_count: watch::channel(0).0,
            disconnects: watch::channel(0).0,
            stream_ends: Mutex::new(Vec::new()),
            emulation: Mutex::new(None),
            discovery: Mutex::new(Vec::new()),
            key: Mutex::new(None),
        });
        let accept_state = state.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = accept_state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(req, state.clone()));
                    // A client that hangs up mid-stream is an expected event, not an error.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            state,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL of the OpenAI-style API, e.g. `http://127.0.0.1:4321/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Also answers the discovery endpoints of `emulation` (Ollama, llama.cpp), as the real
    /// server would; the script still answers chat requests.
    pub fn emulate(&self, emulation: Emulation) {
        *lock(&self.state.emulation) = Some(emulation);
    }

    /// Answers like a hosted provider: every request without `key` (a bearer token or
    /// `x-api-key`) gets 401 with OpenAI's error, and `GET …/models` with it lists the mock's
    /// models, as the key check of the setup screen and `/model` expects.
    pub fn require_key(&self, key: &str) {
        *lock(&self.state.key) = Some(key.to_string());
    }

    /// The origin, e.g. `http://127.0.0.1:4321`: what a local server probe is given.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Discovery requests answered so far, as `METHOD /path`.
    pub fn discovery_requests(&self) -> Vec<String> {
        lock(&self.state.discovery).clone()
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        lock(&self.state.replies).push_back(reply);
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        lock(&self.state.replies).len()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// Waits until `n` requests have arrived; errs after `timeout`.
    pub async fn wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, String> {
        wait_for_count(&self.state.request_count, n, timeout)
            .await
            .map_err(|seen| format!("expected {n} requests within {timeout:?}, got {seen}"))?;
        Ok(self.requests())
    }

    /// When each stream that ran to its end handed over its last frame (for latency benchmarks).
    pub fn stream_end_times(&self) -> Vec<std::time::Instant> {
        lock(&self.state.stream_ends).clone()
    }

    /// Streams whose client disconnected before the stream ended.
    pub fn disconnects(&self) -> usize {
        *self.state.disconnects.borrow()
    }

    pub async fn wait_for_disconnects(&self, n: usize, timeout: Duration) -> Result<(), String> {
        wait_for_count(&self.state.disconnects, n, timeout)
            .await
            .map_err(|seen| format!("expected {n} disconnects within {timeout:?}, got {seen}"))
    }
}

async fn wait_for_count(
    counter: &watch::Sender<usize>,
    n: usize,
    timeout: Duration,
) -> Result<(), usize> {
    let mut rx = counter.subscribe();
    match tokio::time::timeout(timeout, rx.wait_for(|&c| c >= n)).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(*counter.borrow()),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not poison every later assertion.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Response<Body>, Infallible> {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    if let Some(key) = lock(&state.key).clone() {
        let given =
            headers
                .iter()
                .find_map(|(name, value)| match name.to_ascii_lowercase().as_str() {
                    "authorization" => value.strip_prefix("Bearer ").map(str::to_string),
                    "x-api-key" => Some(value.clone()),
                    _ => None,
                });
        if given.as_deref() != Some(key.as_str()) {
            lock(&state.discovery).push(format!("{method} {path} (refused: no valid key)"));
            let body = json!({"error": {
                "message": "Incorrect API key provided. You can find your API key at \
                            https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error", "param": null, "code": "invalid_api_key"
            }});
            return Ok(Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header("content-type", "application/json")
                .body(full(body.to_string()))
                .expect("static response parts are valid"));
        }
        if method == "GET" && path.ends_with("/models") {
            lock(&state.discovery).push(format!("{method} {path}"));
            let body = json!({"object": "list", "data": [
                {"id": "mock-model", "object": "model", "owned_by": "mock"}
            ]});
            return Ok(Response::builder()
                .header("content-type", "application/json")
                .body(full(body.to_string()))
                .expect("static response parts are valid"));
        }
    }
    let discovered = lock(&state.emulation)
        .as_ref()
        .and_then(|e| e.answer(&method, &path, &body));
    if let Some(answer) = discovered {
        lock(&state.discovery).push(format!("{method} {path}"));
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .body(full(answer.to_string()))
            .expect("static response parts are valid"));
    }
    // Model calls are POSTs; a GET is a client looking around (`/props`, `/v1/models`), kept
    // apart so that scripts and request counts see only model calls.
    if method == "GET" {
        lock(&state.discovery).push(format!("{method} {path}"));
        let message = format!("mock-llm: nothing at {path}");
        return Ok(json_error(StatusCode::NOT_FOUND, &message));
    }
    let seq = {
        let mut requests = lock(&state.requests);
        requests.push(RecordedRequest {
            method,
            path: path.clone(),
            headers,
            body: body.clone(),
        });
        requests.len()
    };
    // Concurrent requests may get here out of order: the count only grows.
    state
        .request_count
        .send_modify(|count| *count = (*count).max(seq));

    let Some(wire) = WireApi::of_path(&path) else {
        let message = format!("mock-llm: no API at {path}");
        return Ok(json_error(StatusCode::NOT_FOUND, &message));
    };
    let refused = lock(&state.emulation)
        .as_ref()
        .and_then(|e| e.refusal(&path, &body));
    if let Some((status, answer)) = refused {
        return Ok(Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(full(answer.to_string()))
            .expect("static response parts are valid"));
    }
    let Some(reply) = take_reply(&mut lock(&state.replies), &body) else {
        let message = "mock-llm: script exhausted";
        return Ok(json_error(StatusCode::INTERNAL_SERVER_ERROR, message));
    };
    if let Some(status) = reply.status {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = reply.error_body.clone().unwrap_or_default();
        let mut response = Response::builder()
            .status(status)
            .header("content-type", "application/json");
        for (name, value) in &reply.headers {
            response = response.header(name, value);
        }
        return Ok(response
            .body(full(body))
            .unwrap_or_else(|_| json_error(StatusCode::INTERNAL_SERVER_ERROR, "bad header")));
    }
    let frames = match &reply.raw_sse {
        Some(raw) => raw_pieces(raw, reply.chunk_size),
        None => wire.frames(&reply, &body, seq),
    };
    Ok(sse_response(frames, reply, state, wire.keep_alive()))
}

/// The wire API a request path asks for.
#[derive(Clone, Copy)]
enum WireApi {
    ChatCompletions,
    Responses,
    AnthropicMessages,
}

impl WireApi {
    /// The API's own keep-alive event, as the real servers send it while a reply is slow.
    fn keep_alive(self) -> &'static str {
        match self {
            Self::ChatCompletions => ": ping\n\n",
            Self::Responses => {
                "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\
                 \"response\":{\"id\":\"resp_mock\",\"object\":\"response\",\
                 \"status\":\"in_progress\"}}\n\n"
            }
            Self::AnthropicMessages => "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        }
    }

    fn of_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::ChatCompletions)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.ends_with("/messages") {
            Some(Self::AnthropicMessages)
        } else {
            None
        }
    }

    fn frames(self, reply: &Reply, request: &Value, seq: usize) -> Vec<String> {
        match self {
            Self::ChatCompletions => crate::openai_chat::frames(reply, request, seq),
            Self::Responses => crate::openai_responses::frames(reply, request, seq),
            Self::AnthropicMessages => crate::anthropic::frames(reply, request, seq),
        }
    }
}

/// The SSE body the server streams for `reply` at `path` (a `…/chat/completions`,
/// `…/responses` or `…/messages` URL path), without pacing or faults; `None` for other paths.
/// For benchmarks and for writing fixtures.
pub fn render_sse(path: &str, reply: &Reply, request: &Value) -> Option<String> {
    let wire = WireApi::of_path(path)?;
    Some(wire.frames(reply, request, 1).concat())
}

/// Whether `frame` is a stream's terminal event, which `Fault::NoDone` leaves out.
fn is_terminal(frame: &str) -> bool {
    frame.starts_with("data: [DONE]")
        || frame.starts_with("event: response.completed")
        || frame.starts_with("event: message_stop")
}

fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn json_error(status: StatusCode, message: &str) -> Response<Body> {
    let body = json!({"error": {"message": message, "type": "mock_error"}}).to_string();
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(full(body))
        .expect("static response parts are valid")
}

type FrameResult = Result<Frame<Bytes>, std::io::Error>;

/// A raw body cut into pieces of at most `size` bytes, on character boundaries.
fn raw_pieces(raw: &str, size: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let mut cut = size.max(1).min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        pieces.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    pieces
}

fn sse_response(
    frames: Vec<String>,
    reply: Reply,
    state: Arc<State>,
    native_keep_alive: &'static str,
) -> Response<Body> {
    let headers = reply.headers.clone();
    let (tx, mut rx) = mpsc::channel::<FrameResult>(16);
    tokio::spawn(async move {
        if !stream_frames(&tx, &frames, &reply, native_keep_alive).await {
            state.disconnects.send_modify(|n| *n += 1);
            return;
        }
        // The connection has taken every frame once the channel is empty again.
        while tx.capacity() < tx.max_capacity() && !tx.is_closed() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        lock(&state.stream_ends).push(std::time::Instant::now());
    });
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let mut response = Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(stream).boxed_unsync())
        .expect("static response parts are valid");
    for (name, value) in &headers {
        let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) else {
            continue;
        };
        response.headers_mut().insert(name, value);
    }
    response
}

/// One `data:` event of `bytes` payload bytes, in 64 KB frames made as they are sent; false
/// when the client went away.
async fn send_huge_event(tx: &mpsc::Sender<FrameResult>, bytes: usize) -> bool {
    const PIECE: usize = 64 * 1024;
    let piece = Bytes::from(vec![b'x'; PIECE]);
    if tx
        .send(Ok(Frame::data(Bytes::from_static(b"data: "))))
        .await
        .is_err()
    {
        return false;
    }
    let mut left = bytes;
    while left > 0 {
        let n = left.min(PIECE);
        if tx.send(Ok(Frame::data(piece.slice(..n)))).await.is_err() {
            return false;
        }
        left -= n;
    }
    tx.send(Ok(Frame::data(Bytes::from_static(b"\n\n"))))
        .await
        .is_ok()
}

/// Sends the frames with the reply's pacing and fault; false when the client went away.
async fn stream_frames(
    tx: &mpsc::Sender<FrameResult>,
    frames: &[String],
    reply: &Reply,
    native_keep_alive: &'static str,
) -> bool {
    let data = |text: &str| Ok(Frame::data(Bytes::from(text.to_string())));
    for (i, frame) in frames.iter().enumerate() {
        match reply.fault {
            Some(Fault::Drop { after }) if i == after => {
                // Let hyper take and write the frames before it, then cut: an error frame
                // makes hyper close the connection without ending the body.
                while tx.capacity() < tx.max_capacity() && !tx.is_closed() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                let dropped = std::io::Error::other("mock-llm: dropped");
                let _ = tx.send(Err(dropped)).await;
                return true;
            }
            Some(Fault::Malformed { after }) if i == after => {
                let broken = "data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n";
                let _ = tx.send(data(broken)).await;
                return true;
            }
            Some(Fault::Stall { after }) if i == after => {
                tx.closed().await;
                return false;
            }
            Some(Fault::NoDone) if is_terminal(frame) => return true,
            Some(Fault::KeepAlive {
                after,
                every_ms,
                empty_events,
                native,
            }) if i == after => {
                let ping = if native {
                    native_keep_alive
                } else if empty_events {
                    "data:\n\n"
                } else {
                    ": ping\n\n"
                };
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(every_ms)) => {}
                        _ = tx.closed() => return false,
                    }
                    if tx.send(data(ping)).await.is_err() {
                        return false;
                    }
                }
            }
            Some(Fault::HugeEvent { after, bytes })
                if i == after && !send_huge_event(tx, bytes).await =>
            {
                return false;
            }
            _ => {}
        }
        if reply.delay_ms > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(reply.delay_ms)) => {}
                _ = tx.closed() => return false,
            }
        }
        if tx.send(data(frame)).await.is_err() {
            return false;
        }
    }
    true
}

/// The reply for a request: the first one meant for its first user message, else the first
/// one meant for no request in particular.
fn take_reply(replies: &mut VecDeque<Reply>, body: &Value) -> Option<Reply> {
    let first = first_user_text(body);
    let mine = replies.iter().position(|r| {
        r.for_request
            .as_ref()
            .is_some_and(|key| first.contains(key.as_str()))
    });
    let index = mine.or_else(|| replies.iter().position(|r| r.for_request.is_none()))?;
    replies.remove(index)
}

/// The text of the first user message of a chat-completions, responses or Anthropic body.
fn first_user_text(body: &Value) -> String {
    let messages = body["messages"]
        .as_array()
        .or_else(|| body["input"].as_array())
        .cloned()
        .unwrap_or_default();
    let Some(user) = messages.iter().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &user["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
