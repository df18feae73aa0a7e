//! `<think>…</think>` at the start of streamed content: local reasoning models (Qwen3,
//! DeepSeek-R1 distills on Ollama or llama.cpp) send their thinking inline in `content`; it is
//! split off here into thinking deltas. The tags may be cut anywhere across deltas, so a piece
//! that could be the start of a tag is held back until the next delta decides it.
//!
//! Only a reply that *begins* with `<think>` is split: a tag in the middle of an answer (code
//! that mentions one, say) is left as text.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// One piece of content, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Thinking(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace yet: the reply may still open with the tag.
    Start,
    Thinking,
    /// After `</think>`: leading newlines are dropped once.
    AfterThinking,
    Text,
}

#[derive(Debug)]
pub(crate) struct ThinkSplitter {
    state: State,
    held: String,
}

impl Default for ThinkSplitter {
    fn default() -> Self {
        Self {
            state: State::Start,
            held: String::new(),
        }
    }
}

impl ThinkSplitter {
    /// Sorts one content delta.
    pub(crate) fn push(&mut self, delta: &str) -> Vec<Piece> {
        self.held.push_str(delta);
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Start => {
                    let trimmed = self.held.trim_start();
                    if trimmed.starts_with(OPEN) {
                        let at = self.held.len() - trimmed.len() + OPEN.len();
                        self.held.drain(..at);
                        self.state = State::Thinking;
                    } else if OPEN.starts_with(trimmed) {
                        // Empty, or a prefix of the tag: wait for more.
                        return out;
                    } else {
                        self.state = State::Text;
                    }
                }
                State::Thinking => match self.held.find(CLOSE) {
                    Some(at) => {
                        let thinking: String = self.held.drain(..at).collect();
                        self.held.drain(..CLOSE.len());
                        push(&mut out, Piece::Thinking(thinking));
                        self.state = State::AfterThinking;
                    }
                    None => {
                        let keep = partial_suffix(&self.held, CLOSE);
                        let cut = self.held.len() - keep;
                        let thinking: String = self.held.drain(..cut).collect();
                        push(&mut out, Piece::Thinking(thinking));
                        return out;
                    }
                },
                State::AfterThinking => {
                    let trimmed = self.held.trim_start();
                    if trimmed.is_empty() {
                        self.held.clear();
                        return out;
                    }
                    let at = self.held.len() - trimmed.len();
                    self.held.drain(..at);
                    self.state = State::Text;
                }
                State::Text => {
                    let text = std::mem::take(&mut self.held);
                    push(&mut out, Piece::Text(text));
                    return out;
                }
            }
        }
    }

    /// The end of the stream: whatever was held back, as what it was.
    pub(crate) fn finish(&mut self) -> Vec<Piece> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        match self.state {
            State::Thinking => push(&mut out, Piece::Thinking(held)),
            State::AfterThinking => {}
            State::Start | State::Text => push(&mut out, Piece::Text(held)),
        }
        out
    }
}

fn push(out: &mut Vec<Piece>, piece: Piece) {
    match &piece {
        Piece::Text(t) | Piece::Thinking(t) if t.is_empty() => {}
        _ => out.push(piece),
    }
}

/// The length of the longest end of `text` that is a proper start of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `deltas` and joins the pieces of each kind.
    fn split(deltas: &[&str]) -> (String, String) {
        let mut splitter = ThinkSplitter::default();
        let mut pieces: Vec<Piece> = deltas.iter().flat_map(|d| splitter.push(d)).collect();
        pieces.extend(splitter.finish());
        let (mut thinking, mut text) = (String::new(), String::new());
        for piece in pieces {
            match piece {
                Piece::Thinking(t) => thinking.push_str(&t),
                Piece::Text(t) => text.push_str(&t),
            }
        }
        (thinking, text)
    }

    #[test]
    fn tags_split_anywhere_across_deltas_become_thinking() {
        let whole = "<think>\nLet me see.\n</think>\n\nThe answer is 4.";
        // Every way of cutting the reply in two, and one character at a time.
        for cut in 0..=whole.len() {
            let (thinking, text) = split(&[&whole[..cut], &whole[cut..]]);
            assert_eq!(thinking, "\nLet me see.\n", "cut at {cut}");
            assert_eq!(text, "The answer is 4.", "cut at {cut}");
        }
        let chars: Vec<String> = whole.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(
            split(&refs),
            ("\nLet me see.\n".into(), "The answer is 4.".into())
        );
    }

    #[test]
    fn only_a_leading_tag_counts_and_nothing_is_lost() {
        assert_eq!(
            split(&["Use <think> tags", " like this"]),
            (String::new(), "Use <think> tags like this".into())
        );
        assert_eq!(
            split(&["<thi"]),
            (String::new(), "<thi".into()),
            "held back, then given back"
        );
        assert_eq!(
            split(&["<think>cut off mid-thought </thi"]),
            ("cut off mid-thought </thi".into(), String::new())
        );
        assert_eq!(split(&["  <think>a</think>b"]), ("a".into(), "b".into()));
        assert_eq!(split(&["plain"]), (String::new(), "plain".into()));
    }
}
