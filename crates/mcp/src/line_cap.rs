//! A stdio server's output on its way to rmcp, with messages too large to take answered at
//! once instead of lost.
//!
//! rmcp drops a line longer than its limit (16 MiB) and only logs it: the call it answered
//! then waits out its whole timeout and the user never learns why. [`LineCap`] sits between
//! the server's stdout and rmcp: it passes every line through untouched, follows each one's
//! top-level `"id"` as the bytes go by, and when a line grows past the limit it stops passing
//! it, counts the rest, and in its place hands rmcp a JSON-RPC error for that id saying how
//! large the answer was. Memory stays bounded whatever the server sends.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest line rmcp takes (without its newline); a longer one is answered with an error.
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH - 1;

/// The id's text is never longer than this (ids are numbers or short strings).
const MAX_ID: usize = 128;

pub(crate) struct LineCap<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line so far, passed or not.
    line_len: usize,
    /// The current line went past the limit: the rest of it is counted, not passed.
    swallowing: bool,
    scan: IdScan,
    /// Bytes ready for rmcp, from `at` on.
    out: Vec<u8>,
    at: usize,
    scratch: Box<[u8]>,
}

impl<R> LineCap<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE)
    }

    pub(crate) fn with_limit(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            line_len: 0,
            swallowing: false,
            scan: IdScan::default(),
            out: Vec::new(),
            at: 0,
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
        }
    }

    /// Takes `bytes` from the server into `out`, cutting oversized lines.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let (part, newline) = match end {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            bytes = &bytes[part.len() + usize::from(newline)..];
            self.scan.feed(part);
            if !self.swallowing {
                let room = self.limit - self.line_len;
                if part.len() <= room {
                    self.out.extend_from_slice(part);
                } else {
                    self.out.extend_from_slice(&part[..room]);
                    self.swallowing = true;
                }
            }
            self.line_len += part.len();
            if newline {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        self.out.push(b'\n');
        if self.swallowing {
            // What rmcp got of the line is cut short, so it drops it (as invalid JSON or as too
            // long); the error stands in for it.
            if let Some(id) = self.scan.id.take() {
                self.out
                    .extend_from_slice(&too_large(&id, self.line_len, self.limit));
                self.out.push(b'\n');
            }
        }
        self.line_len = 0;
        self.swallowing = false;
        self.scan = IdScan::default();
    }
}

/// The JSON-RPC error that answers request `id` in place of an answer of `size` bytes.
fn too_large(id: &[u8], size: usize, limit: usize) -> Vec<u8> {
    let message = format!(
        "the server's answer was {}, over the {} an MCP message may be; ask for less (a \
         narrower query, a page at a time)",
        megabytes(size),
        megabytes(limit + 1)
    );
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(b",\"error\":{\"code\":-32603,\"message\":");
    line.extend_from_slice(serde_json::Value::from(message).to_string().as_bytes());
    line.extend_from_slice(b"}}");
    line
}

fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.at < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.at);
                buf.put_slice(&this.out[this.at..this.at + n]);
                this.at += n;
                if this.at == this.out.len() {
                    this.out.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut scratch = ReadBuf::new(&mut this.scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut scratch) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let filled = scratch.filled().len();
                    if filled == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    let scratch = std::mem::take(&mut this.scratch);
                    this.take(&scratch[..filled]);
                    this.scratch = scratch;
                    // A swallowed chunk leaves nothing to hand on: read again.
                }
            }
        }
    }
}

/// Follows one line of JSON byte by byte and keeps the value of its top-level `"id"` (its
/// text as sent: a number or a quoted string), wherever in the object it comes.
#[derive(Default)]
struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The next string at depth 1 is a key.
    expect_key: bool,
    in_key: bool,
    key: Vec<u8>,
    key_is_id: bool,
    capturing: bool,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
}

impl IdScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn push(&mut self, b: u8) {
        if self.in_key {
            if self.key.len() < 3 {
                self.key.push(b);
            } else {
                // Longer than "id": not it.
                self.key.push(b'?');
                self.key.truncate(3);
            }
        } else if self.capturing && self.value.len() < MAX_ID {
            self.value.push(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
                self.push(b);
            } else if b == b'\\' {
                self.escaped = true;
                self.push(b);
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.key_is_id = self.key == b"id";
                } else {
                    self.push(b);
                }
            } else {
                self.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.key.clear();
                    self.expect_key = false;
                } else {
                    self.push(b);
                }
            }
            b'{' | b'[' => {
                if self.depth == 1 && self.capturing {
                    // An id is never an object or an array.
                    self.capturing = false;
                }
                self.depth += 1;
                if self.depth == 1 && b == b'{' {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                self.capturing = self.key_is_id;
                self.key_is_id = false;
                self.value.clear();
            }
            b',' if self.depth == 1 => {
                self.finish();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' => {}
            _ => self.push(b),
        }
    }

    fn finish(&mut self) {
        if self.capturing {
            self.capturing = false;
            if !self.value.is_empty() && self.value.len() < MAX_ID {
                self.id = Some(std::mem::take(&mut self.value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn id_of(line: &str) -> Option<String> {
        let mut scan = IdScan::default();
        scan.feed(line.as_bytes());
        scan.id.map(|id| String::from_utf8(id).unwrap())
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"result":{"id":99}}"#).as_deref(),
            Some("7")
        );
        // The TypeScript SDK puts the result first.
        assert_eq!(
            id_of(r#"{"result":{"content":[{"id":1,"text":"a\"id\":3"}]},"jsonrpc":"2.0","id":"req-4"}"#)
                .as_deref(),
            Some(r#""req-4""#)
        );
        assert_eq!(id_of(r#"{"method":"notifications/progress"}"#), None);
    }

    async fn through(input: &[u8], limit: usize) -> String {
        let mut capped = LineCap::with_limit(input, limit);
        let mut out = Vec::new();
        capped.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_untouched() {
        let input = "{\"id\":1,\"result\":{}}\n{\"id\":2,\"result\":{}}\n";
        assert_eq!(through(input.as_bytes(), 64).await, input);
    }

    #[tokio::test]
    async fn an_oversized_answer_becomes_an_error_for_its_id() {
        let big = format!(
            "{{\"result\":{{\"text\":\"{}\"}},\"id\":5}}\n",
            "x".repeat(500)
        );
        let input = format!("{big}{{\"id\":6,\"result\":{{}}}}\n");
        let out = through(input.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0].len(), 100, "the cut line is at most the limit");
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 5);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("0.0 MB"), "{message}");
        assert_eq!(lines[2], r#"{"id":6,"result":{}}"#);
    }
}
