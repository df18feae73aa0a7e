//! Reading a streamed body in batches.
//!
//! A model paced like a real one sends a chunk every 10–50 ms. Waking the whole chain (HTTP
//! connection, SSE parse, agent loop, event owner, UI) once per chunk cost more than everything
//! else a stream does. So once the reader has caught up with the server it pauses for
//! [`READ_PAUSE`]: what arrives meanwhile is read, parsed and forwarded together, and consecutive
//! deltas of one content block leave as one event. The first chunk after a quiet spell is read
//! at once, so the time to the first token is unchanged; a chunk that comes during a pause waits
//! at most the pause. The pause is as long as the UI's streaming frame, which draws a batch in
//! the wake-up it arrives in: one wake-up per frame, not one for the batch and one for the
//! frame. A server that keeps up with reading (a fast local model, a reply sent all at once)
//! is never paused: once a stretch of reading found [`FLOOD_CHUNKS`] chunks at hand, the reader
//! waits only on the network, so the last byte is read as soon as it lands instead of up to a
//! pause later.

use std::task::Poll;
use std::time::Duration;

use futures_util::{Stream, StreamExt};

use crate::StreamEvent;
use crate::http::Sender;

/// How long reading waits, once caught up, before it reads again.
pub(crate) const READ_PAUSE: Duration = Duration::from_millis(50);

/// A stretch of reading that found this many chunks at hand means the server sends faster than
/// a model paced like a real one (one chunk per 10–50 ms fills a 50 ms pause with 1–5).
pub(crate) const FLOOD_CHUNKS: usize = 8;

/// A batch is sent on after this many chunks even if more are at hand, so a flood (a fast
/// local server, a replay) still reaches the consumer in steps.
const MAX_CHUNKS: usize = 64;

/// Events parsed since the last send, consecutive deltas of one block merged.
pub(crate) struct Batch<'a> {
    sender: &'a Sender,
    events: Vec<StreamEvent>,
    chunks: usize,
}

impl<'a> Batch<'a> {
    pub(crate) fn new(sender: &'a Sender) -> Self {
        Self {
            sender,
            events: Vec::new(),
            chunks: 0,
        }
    }

    pub(crate) fn push(&mut self, event: StreamEvent) {
        use StreamEvent::{TextDelta, ThinkingDelta, ToolcallDelta};
        let (into, more) = match (self.events.last_mut(), &event) {
            (
                Some(TextDelta { index: a, delta }),
                TextDelta {
                    index: b,
                    delta: more,
                },
            )
            | (
                Some(ThinkingDelta { index: a, delta }),
                ThinkingDelta {
                    index: b,
                    delta: more,
                },
            )
            | (
                Some(ToolcallDelta { index: a, delta }),
                ToolcallDelta {
                    index: b,
                    delta: more,
                },
            ) if a == b => (delta, more),
            _ => {
                self.events.push(event);
                return;
            }
        };
        into.push_str(more);
    }

    /// Counts one body chunk read into the batch.
    pub(crate) fn chunk_read(&mut self) {
        self.chunks += 1;
    }

    pub(crate) fn is_full(&self) -> bool {
        self.chunks >= MAX_CHUNKS
    }

    /// Whether the chunks read into this batch come from a server faster than a paced model.
    pub(crate) fn is_flood(&self) -> bool {
        self.chunks >= FLOOD_CHUNKS
    }

    /// Sends the batch on; false when the consumer went away.
    pub(crate) async fn flush(&mut self) -> bool {
        self.chunks = 0;
        for event in self.events.drain(..) {
            if !self.sender.send(event).await {
                return false;
            }
        }
        true
    }
}

/// The body's next item if getting it needs no wait on the server: `None` once the body waits
/// for the network. The HTTP connection runs as a task of its own that hands the body one
/// chunk at a time, so an empty poll yields twice to let it pass on what it has already read
/// (or read what the socket holds) before concluding the server is behind.
pub(crate) async fn at_hand<S: Stream + Unpin>(body: &mut S) -> Option<Option<S::Item>> {
    let mut yields = 0;
    std::future::poll_fn(|cx| match body.poll_next_unpin(cx) {
        Poll::Ready(item) => Poll::Ready(Some(item)),
        Poll::Pending if yields < 2 => {
            yields += 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(index: usize, delta: &str) -> StreamEvent {
        StreamEvent::TextDelta {
            index,
            delta: delta.into(),
        }
    }

    #[test]
    fn consecutive_deltas_of_one_block_merge_and_nothing_else_does() {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let sender = Sender::new(tx);
        let mut batch = Batch::new(&sender);
        batch.push(text(0, "Hel"));
        batch.push(text(0, "lo"));
        batch.push(text(1, " other block"));
        batch.push(StreamEvent::ThinkingDelta {
            index: 1,
            delta: "not text".into(),
        });
        batch.push(StreamEvent::ToolcallDelta {
            index: 2,
            delta: "{\"a\"".into(),
        });
        batch.push(StreamEvent::ToolcallDelta {
            index: 2,
            delta: ":1}".into(),
        });
        batch.push(StreamEvent::Start);
        batch.push(text(0, "after"));
        let shown: Vec<String> = batch.events.iter().map(|e| format!("{e:?}")).collect();
        assert_eq!(
            shown,
            [
                format!("{:?}", text(0, "Hello")),
                format!("{:?}", text(1, " other block")),
                "ThinkingDelta { index: 1, delta: \"not text\" }".to_string(),
                "ToolcallDelta { index: 2, delta: \"{\\\"a\\\":1}\" }".to_string(),
                "Start".to_string(),
                format!("{:?}", text(0, "after")),
            ]
        );
    }

    #[tokio::test]
    async fn a_ready_item_is_at_hand_and_a_silent_body_is_not() {
        let mut ready = futures_util::stream::iter([1, 2]);
        assert_eq!(at_hand(&mut ready).await, Some(Some(1)));
        assert_eq!(at_hand(&mut ready).await, Some(Some(2)));
        assert_eq!(
            at_hand(&mut ready).await,
            Some(None),
            "the end is at hand too"
        );
        let mut silent = futures_util::stream::pending::<u8>();
        assert_eq!(at_hand(&mut silent).await, None);
    }
}
