//! Server-sent events framing: bytes in, events out, with a bound on the size of one event.
//!
//! Written here instead of using `eventsource-stream` because that crate buffers an event
//! without limit (a 50 MB event cost over 500 MB) and drops a final event that lacks its blank
//! line. This decoder follows the HTML standard's parsing rules: lines end in LF, CRLF or CR; a
//! leading BOM is skipped; `:` starts a comment; `field: value` loses one space after the colon;
//! `data` lines join with `\n`; a blank line dispatches; an event without data is not
//! dispatched. Comments are never stored, so keep-alive pings cost nothing.

/// Most bytes one event may hold (its `data` plus the line being read).
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; `message` when absent.
    pub name: String,
    pub data: String,
}

/// An event grew past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub limit: usize,
}

/// Incremental decoder; feed it the body's chunks in order.
pub(crate) struct Decoder {
    limit: usize,
    /// The line being read, without its terminator. Empty while skipping a comment.
    line: Vec<u8>,
    /// The line being read is a comment: its bytes are dropped as they come.
    in_comment: bool,
    /// At the start of a line (nothing of it seen yet).
    line_start: bool,
    /// The last byte was a CR: an LF right after it belongs to the same line end.
    after_cr: bool,
    /// Still at the very start of the stream (a BOM may come).
    at_start: bool,
    name: String,
    data: Vec<u8>,
    /// Whether any `data` field arrived for the pending event (even an empty one).
    has_data: bool,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }

    pub(crate) fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            in_comment: false,
            line_start: true,
            after_cr: false,
            at_start: true,
            name: String::new(),
            data: Vec::new(),
            has_data: false,
        }
    }

    /// Bytes of data held for the pending event, counting a `data` line still being read:
    /// grows whenever content arrives, and never for comments or empty events.
    pub(crate) fn data_progress(&self) -> usize {
        let partial = if self.line.starts_with(b"data") {
            self.line.len()
        } else {
            0
        };
        self.data.len() + partial
    }

    /// Decodes `bytes`, appending every event they complete to `out`.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), TooLarge> {
        if self.at_start && !bytes.is_empty() {
            // The BOM may be split across chunks: wait for its three bytes.
            const BOM: &[u8] = b"\xef\xbb\xbf";
            let seen = self.line.len();
            let want = BOM.len() - seen;
            let take = want.min(bytes.len());
            if BOM[seen..seen + take] == bytes[..take] {
                if take < want {
                    self.line.extend_from_slice(&bytes[..take]);
                    return Ok(());
                }
                self.line.clear();
                bytes = &bytes[take..];
            } else {
                // Not a BOM after all: what was held is the start of the first line.
                let held = std::mem::take(&mut self.line);
                self.at_start = false;
                self.feed_lines(&held, out)?;
            }
            self.at_start = false;
        }
        self.feed_lines(bytes, out)
    }

    fn feed_lines(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), TooLarge> {
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            if self.line_start {
                self.in_comment = bytes[0] == b':';
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.take_part(&bytes[..end])?;
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    self.end_line(out);
                }
                None => {
                    self.take_part(bytes)?;
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// Adds part of the current line.
    fn take_part(&mut self, part: &[u8]) -> Result<(), TooLarge> {
        if part.is_empty() {
            return Ok(());
        }
        self.line_start = false;
        if self.in_comment {
            return Ok(());
        }
        if self.data.len() + self.line.len() + part.len() > self.limit {
            return Err(TooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let blank = self.line_start;
        self.line_start = true;
        if self.in_comment {
            self.in_comment = false;
            return;
        }
        if blank {
            out.extend(self.dispatch());
            return;
        }
        let line = std::mem::take(&mut self.line);
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.name = String::from_utf8_lossy(value).into_owned(),
            // `id` and `retry` steer reconnection, which a one-shot request never does.
            _ => {}
        }
        // Reuse the line's allocation, but do not keep a huge one around.
        if line.capacity() <= 64 * 1024 {
            self.line = line;
            self.line.clear();
        }
    }

    /// The pending event, if it has data; resets for the next.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let name = std::mem::take(&mut self.name);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            name: if name.is_empty() {
                "message".to_string()
            } else {
                name
            },
            data: match String::from_utf8(data) {
                Ok(text) => text,
                Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
            },
        })
    }

    /// At the end of the body: the pending event, even without its closing blank line (some
    /// servers end with `data: [DONE]` and close).
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if self.at_start && !self.line.is_empty() {
            // A body shorter than a BOM.
            let held = std::mem::take(&mut self.line);
            self.at_start = false;
            let mut out = Vec::new();
            // Cannot exceed the limit: fewer than three bytes.
            let _ = self.feed_lines(&held, &mut out);
        }
        if !self.line_start {
            self.end_line(&mut Vec::new());
        }
        self.dispatch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `body` fed in pieces of `size` bytes, including the final event.
    fn decode(body: &[u8], size: usize) -> Vec<(String, String)> {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for piece in body.chunks(size) {
            decoder.feed(piece, &mut out).unwrap();
        }
        out.extend(decoder.finish());
        out.into_iter().map(|e| (e.name, e.data)).collect()
    }

    fn events(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_string()))
            .collect()
    }

    #[test]
    fn fields_comments_and_names_in_any_chunking() {
        let body = "\u{feff}: ping - 2024\n\nevent: delta\ndata: {\"a\":1}\n\ndata:x\ndata:  y\nid: 7\nretry: 10\nunknown\n\n: tail\n";
        let expected = events(&[("delta", "{\"a\":1}"), ("message", "x\n y")]);
        for size in [1, 2, 3, 5, 7, 64, 4096] {
            assert_eq!(decode(body.as_bytes(), size), expected, "pieces of {size}");
        }
    }

    #[test]
    fn every_line_ending_works() {
        for body in [
            "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
            "data: a\rdata: b\r\rdata: c\r\r",
            "data: a\ndata: b\n\ndata: c\n\n",
        ] {
            for size in [1, 2, 100] {
                assert_eq!(
                    decode(body.as_bytes(), size),
                    events(&[("message", "a\nb"), ("message", "c")]),
                    "{body:?} in pieces of {size}"
                );
            }
        }
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_empty_data_is() {
        let body = "event: ping\n\ndata:\n\nevent: x\ndata\n\n";
        assert_eq!(
            decode(body.as_bytes(), 3),
            events(&[("message", ""), ("x", "")])
        );
    }

    #[test]
    fn a_final_event_without_its_blank_line_is_kept() {
        assert_eq!(
            decode(b"data: a\n\ndata: [DONE]", 4),
            events(&[("message", "a"), ("message", "[DONE]")])
        );
        assert_eq!(
            decode(b"data: [DONE]\n", 4),
            events(&[("message", "[DONE]")])
        );
        assert!(decode(b"", 1).is_empty());
        assert!(decode(b"\xef\xbb", 1).is_empty());
    }

    #[test]
    fn a_bom_only_counts_at_the_start() {
        let body = "\u{feff}data: a\n\ndata: \u{feff}b\n\n";
        assert_eq!(
            decode(body.as_bytes(), 1),
            events(&[("message", "a"), ("message", "\u{feff}b")])
        );
        assert_eq!(decode(b"\xefdata", 1), vec![]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(
            decode(b"data: a\xffb\n\n", 2),
            events(&[("message", "a\u{fffd}b")])
        );
    }

    #[test]
    fn an_event_over_the_limit_fails_and_comments_never_count() {
        let mut decoder = Decoder::with_limit(20);
        let mut out = Vec::new();
        let ping = format!(": {}\n", "p".repeat(100));
        for _ in 0..10 {
            decoder.feed(ping.as_bytes(), &mut out).unwrap();
        }
        decoder
            .feed(b"data: 12345\ndata: 12\n\n", &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            decoder.feed(b"data: 1234\ndata: 1234567890123456", &mut out),
            Err(TooLarge { limit: 20 })
        );
        let mut decoder = Decoder::with_limit(20);
        assert!(
            decoder.feed(&[b'x'; 21], &mut out).is_err(),
            "one long line"
        );
    }

    #[test]
    fn progress_counts_data_only() {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        decoder.feed(b": ping\n\nevent: x\n", &mut out).unwrap();
        assert_eq!(decoder.data_progress(), 0);
        decoder.feed(b"data: abc", &mut out).unwrap();
        let partial = decoder.data_progress();
        assert!(partial > 0);
        decoder.feed(b"def", &mut out).unwrap();
        assert!(decoder.data_progress() > partial);
    }
}
