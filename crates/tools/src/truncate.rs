//! Output limits shared by the tools: what the model gets is capped in lines and bytes.

/// Most lines a tool returns.
pub const MAX_LINES: usize = 2_000;
/// Most bytes a tool returns.
pub const MAX_BYTES: usize = 50 * 1024;

/// The longest suffix of `text` within both limits, starting at a line start; and whether it
/// was cut.
pub(crate) fn tail(text: &str, max_lines: usize, max_bytes: usize) -> (&str, bool) {
    let mut start = text.len();
    for (lines, line) in text.split_inclusive('\n').rev().enumerate() {
        if lines == max_lines || text.len() - start + line.len() > max_bytes {
            return (&text[start..], true);
        }
        start -= line.len();
    }
    (text, false)
}

/// `line` cut to `max` characters with a marker.
pub(crate) fn cut_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [line cut at {max} chars]", &line[..at]).into(),
        None => line.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail("a\nb\nc\n", 2, 100), ("b\nc\n", true));
        assert_eq!(tail("aaaa\nbbbb\n", 10, 7), ("bbbb\n", true));
        assert_eq!(tail("x", 1, 100), ("x", false));
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        assert_eq!(cut_line("ééé", 2), "éé… [line cut at 2 chars]");
        assert_eq!(cut_line("ab", 2), "ab");
    }
}
