//! HTTP plumbing shared by the provider clients.

use std::sync::Once;

use tokio::sync::mpsc;

use crate::{EventStream, StreamEvent};

/// The reason given when a request is cancelled.
pub(crate) const ABORTED: &str = "Request was aborted";

/// A reqwest client on rustls with the ring provider, installed once per process (reqwest
/// panics at build time without a process-wide provider).
pub(crate) fn client() -> reqwest::Client {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another part of the process installed one first: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .build()
        .expect("reqwest client with rustls+ring builds")
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

/// Sends the request; a transport failure or a non-2xx status becomes a readable reason.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    provider: &str,
) -> Result<reqwest::Response, String> {
    let response = request
        .send()
        .await
        .map_err(|err| format!("could not reach {provider}: {}", error_chain(&err)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    Err(format!(
        "{} {}: {} ({provider})",
        status.as_u16(),
        status.canonical_reason().unwrap_or("error"),
        error_body_message(&body)
    ))
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
        Some(message) => message,
        None if body.trim().is_empty() => "no details".to_string(),
        None => snippet(body),
    }
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

fn error_chain(err: &dyn std::error::Error) -> String {
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
    fn snippets_cut_on_char_boundaries() {
        let long = "é".repeat(300);
        assert_eq!(snippet(&long).chars().count(), 201);
    }
}
