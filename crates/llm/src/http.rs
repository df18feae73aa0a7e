//! HTTP plumbing shared by the provider clients.

use std::sync::Once;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::retry;
use crate::{ErrorKind, EventStream, StreamEvent, StreamOptions};

/// The reason given when a request is cancelled.
pub(crate) const ABORTED: &str = "Request was aborted";

/// A reqwest client on rustls with the ring provider whose trust roots load at the first
/// certificate it checks (`platform::tls`): building it reads no file, and a run that only
/// talks plain HTTP (a local server) never loads them.
pub(crate) fn client() -> reqwest::Client {
    client_builder()
        .build()
        .expect("reqwest client with rustls+ring builds")
}

/// A reqwest client builder with the TLS of [`client`], for a client that needs more (the
/// `fetch` tool's resolver and redirect policy).
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    match platform::tls::client_config(provider) {
        Ok(config) => reqwest::Client::builder().tls_backend_preconfigured(config),
        // Not expected (ring supports the default protocol versions): reqwest's own setup,
        // which loads the roots now, still works.
        Err(_) => reqwest::Client::builder(),
    }
}

/// Loads the trust roots in the background when `base_url` is HTTPS, so that the first
/// request does not wait for them.
pub(crate) fn warm_trust(base_url: &str) {
    if base_url
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
    {
        platform::tls::warm(std::sync::Arc::new(rustls::crypto::ring::default_provider()));
    }
}

/// Installs the process-wide TLS provider reqwest needs before any client is built.
pub(crate) fn install_tls() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another part of the process installed one first: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The sending half of a provider stream.
pub(crate) struct Sender(mpsc::Sender<StreamEvent>);

impl Sender {
    pub(crate) fn new(tx: mpsc::Sender<StreamEvent>) -> Self {
        Self(tx)
    }

    /// False when the consumer dropped the stream.
    pub(crate) async fn send(&self, event: StreamEvent) -> bool {
        self.0.send(event).await.is_ok()
    }
}

pub(crate) fn receiver_stream(mut rx: mpsc::Receiver<StreamEvent>) -> EventStream {
    Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

/// One request, kept as data so that every retry rebuilds it identically.
pub(crate) struct WireRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl WireRequest {
    /// A JSON POST to `url` with the caller's extra headers.
    pub(crate) fn post(url: String, body: serde_json::Value, options: &StreamOptions) -> Self {
        Self {
            url,
            headers: options.headers.clone(),
            body,
        }
    }

    /// A JSON POST to `{base_url}/{path}` with the key, if any, as a bearer token (the OpenAI
    /// style every compatible server follows).
    pub(crate) fn bearer(
        model: &crate::Model,
        path: &str,
        body: serde_json::Value,
        options: &StreamOptions,
    ) -> Self {
        let url = format!("{}/{path}", model.base_url.trim_end_matches('/'));
        let mut request = Self::post(url, body, options);
        if let Some(key) = &options.api_key {
            request.header("authorization", format!("Bearer {key}"));
        }
        request
    }

    /// Adds a header unless the caller's options already set one of that name.
    pub(crate) fn header(&mut self, name: &str, value: String) {
        if !self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            self.headers.insert(0, (name.to_string(), value));
        }
    }
}

/// The provider as errors name it: a one-off endpoint (`--base-url`, provider `custom`) by
/// its URL, which says more than "custom".
pub(crate) fn shown_provider(model: &crate::Model) -> String {
    if model.provider == "custom" {
        model.base_url.clone()
    } else {
        model.provider.clone()
    }
}

/// A request that failed, as the user will read it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub reason: String,
    pub kind: Option<ErrorKind>,
}

impl Failure {
    /// A failure reported by the provider; recognises context overflow from its wording.
    pub(crate) fn from_provider(reason: String) -> Self {
        let kind = is_context_overflow(&reason).then_some(ErrorKind::ContextOverflow);
        Self { reason, kind }
    }
}

/// Sends the request, retrying transient failures (before any byte of the body) as `policy`
/// allows and telling the consumer about each wait. Returns a response with a 2xx status.
pub(crate) async fn send_with_retry(
    client: &reqwest::Client,
    request: &WireRequest,
    provider: &str,
    options: &StreamOptions,
    sender: &Sender,
) -> Result<reqwest::Response, Failure> {
    let mut attempt = 0;
    loop {
        let (failure, retry_after) = match send_once(client, request, provider, options).await {
            Ok(response) => return Ok(response),
            Err(Attempt::Final(failure)) => return Err(failure),
            Err(Attempt::Transient(failure, retry_after)) => (failure, retry_after),
        };
        attempt += 1;
        let delay = match options.retry.delay(attempt, retry_after.as_ref()) {
            retry::Delay::Wait(delay) => delay,
            retry::Delay::Exhausted => {
                let mut failure = failure;
                if attempt > 1 {
                    failure.reason += &format!(" (gave up after {} retries)", attempt - 1);
                }
                return Err(failure);
            }
            retry::Delay::TooLong => {
                let mut failure = failure;
                let asked = retry_after.map(|r| r.shown).unwrap_or_default();
                failure.reason += &format!(
                    "; {provider} asked to retry after {asked}, more than the {} limit \
                     (retry.max_delay_ms)",
                    human_duration(options.retry.max_delay)
                );
                return Err(failure);
            }
        };
        let retry = StreamEvent::Retry {
            attempt,
            max: options.retry.max_retries,
            delay_ms: delay.as_millis() as u64,
            reason: failure.reason,
        };
        if !sender.send(retry).await {
            return Err(Failure {
                reason: ABORTED.to_string(),
                kind: None,
            });
        }
        tokio::time::sleep(delay).await;
    }
}

enum Attempt {
    /// Worth another try after the server's `retry-after`, if it sent one.
    Transient(Failure, Option<retry::RetryAfter>),
    Final(Failure),
}

async fn send_once(
    client: &reqwest::Client,
    request: &WireRequest,
    provider: &str,
    options: &StreamOptions,
) -> Result<reqwest::Response, Attempt> {
    let mut builder = client.post(&request.url).json(&request.body);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    let idle = options.idle_timeout;
    let response = match tokio::time::timeout(idle, builder.send()).await {
        Err(_) => return Err(Attempt::Final(idle_failure(provider, idle))),
        // A request that could not be built will not build next time either.
        Ok(Err(err)) if err.is_builder() => {
            let reason = format!("invalid request to {provider}: {}", error_chain(&err));
            return Err(Attempt::Final(Failure { reason, kind: None }));
        }
        Ok(Err(err)) => {
            let reason = format!("could not reach {provider}: {}", error_chain(&err));
            return Err(Attempt::Transient(Failure { reason, kind: None }, None));
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry::retry_after(response.headers());
    let body = tokio::time::timeout(idle, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let failure = Failure::from_provider(format!(
        "{} {}: {} ({provider})",
        status.as_u16(),
        status.canonical_reason().unwrap_or("error"),
        error_body_message(&body)
    ));
    // A server that rejects the request's shape (llama-cpp-python answers a message it cannot
    // template with a 500) will reject the same request again: retrying only delays the error.
    if retry::retryable_status(status.as_u16()) && !is_validation_error(&body) {
        Err(Attempt::Transient(failure, retry_after))
    } else {
        Err(Attempt::Final(failure))
    }
}

pub(crate) fn idle_failure(provider: &str, idle: Duration) -> Failure {
    Failure {
        reason: format!(
            "{provider} sent nothing for {}; the request timed out",
            human_duration(idle)
        ),
        kind: Some(ErrorKind::IdleTimeout),
    }
}

fn human_duration(d: Duration) -> String {
    if d.as_secs() >= 1 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Whether a provider's error message says the prompt did not fit the context window.
///
/// Providers word it differently: OpenAI `context_length_exceeded` / "maximum context length",
/// the responses API "exceeds the context window", Anthropic "prompt is too long", Gemini
/// "input token count … exceeds the maximum number of tokens", llama.cpp "exceeds the available
/// context size". Rate limits on tokens per minute mention tokens too and are not overflow.
pub fn is_context_overflow(message: &str) -> bool {
    let text = message.to_lowercase();
    if text.contains("per minute") || text.contains("rate limit") {
        return false;
    }
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "context size",
        "prompt is too long",
        "too many tokens",
        "maximum number of tokens",
        "input is too long",
    ]
    .iter()
    .any(|pattern| text.contains(pattern))
}

/// Whether an error body says the request itself is malformed (a schema or template error),
/// which no retry can fix.
pub(crate) fn is_validation_error(body: &str) -> bool {
    let text = body.to_lowercase();
    [
        "validation error",
        "validationerror",
        "invalid_request_error",
        "unprocessable",
        "\"loc\":",
        "template",
    ]
    .iter()
    .any(|pattern| text.contains(pattern))
}

/// The `message` of a JSON error body (`{"error": {"message": …}}` and friends), else a snippet.
fn error_body_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    match message {
        Some(message) => few_lines(&message),
        None if body.trim().is_empty() => "no details".to_string(),
        None => few_lines(&snippet(body)),
    }
}

/// At most a few lines of a long message (servers send whole tracebacks): the first lines say
/// what went wrong, the rest would push the conversation off the screen.
fn few_lines(text: &str) -> String {
    const LINES: usize = 4;
    const MAX: usize = 400;
    let lines: Vec<&str> = text
        .trim()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut out = lines
        .iter()
        .take(LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = lines.len() > LINES;
    if let Some((at, _)) = out.char_indices().nth(MAX) {
        out.truncate(at);
        cut = true;
    }
    if cut {
        out.push_str(" …");
    }
    out
}

/// The start of `text`, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = inner.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_become_their_message() {
        let body = r#"{"error":{"message":"invalid API key","type":"auth"}}"#;
        assert_eq!(error_body_message(body), "invalid API key");
        assert_eq!(error_body_message(""), "no details");
        assert_eq!(
            error_body_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn context_overflow_is_recognised_in_each_wording() {
        for message in [
            "400 Bad Request: This model's maximum context length is 128000 tokens. (openai)",
            "Your input exceeds the context window of this model.",
            "prompt is too long: 208310 tokens > 200000 maximum",
            "The input token count (1200000) exceeds the maximum number of tokens allowed",
            "the request exceeds the available context size, try increasing it",
            "context_length_exceeded",
        ] {
            assert!(is_context_overflow(message), "{message}");
        }
        for message in [
            "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000",
            "Request too large: too many tokens per minute",
            "invalid API key",
        ] {
            assert!(!is_context_overflow(message), "{message}");
        }
    }

    #[test]
    fn validation_errors_are_recognised_and_long_bodies_kept_short() {
        assert!(is_validation_error(
            r#"{"detail":[{"loc":["body","messages",1,"content"],"msg":"none is not an allowed value"}]}"#
        ));
        assert!(is_validation_error(
            "1 validation error for ChatCompletionRequest"
        ));
        assert!(!is_validation_error("upstream connect error"));
        assert!(!is_validation_error(""));
        let traceback = (0..40)
            .map(|i| format!("  File \"x.py\", line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let shown = error_body_message(&traceback);
        assert_eq!(shown.lines().count(), 4, "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        let long = error_body_message(&format!(
            r#"{{"error":{{"message":"{}"}}}}"#,
            "y".repeat(900)
        ));
        assert!(long.chars().count() < 420, "{}", long.len());
    }

    #[test]
    fn snippets_cut_on_char_boundaries() {
        let long = "é".repeat(300);
        assert_eq!(snippet(&long).chars().count(), 201);
    }
}
