//! Keeping a file's byte order mark and line endings when the tools change it. Models write
//! `\n`; files on Windows, and many in repositories everywhere, use `\r\n`, some both. Text
//! is matched and edited with `\n` only, and written back so that every line the change did
//! not touch keeps its own ending and every new line gets the file's usual one: a CRLF file
//! stays CRLF, an LF file stays LF, a mixed file stays as mixed as it was, and a BOM stays.

use std::ops::Range;

pub(crate) const BOM: &str = "\u{feff}";

/// A file's text as the tools work on it: without its BOM, with `\n` endings.
#[derive(Debug)]
pub(crate) struct Text {
    /// The text after the BOM, as on disk.
    original: String,
    /// The same with every `\r\n` made `\n`.
    pub normalized: String,
    bom: bool,
    /// Offsets in `normalized` of the `\n`s whose `\r` was taken off, ascending.
    carriage_returns: Vec<usize>,
    /// Whether new lines get `\r\n`: the file's endings are mostly CRLF.
    crlf: bool,
}

impl Text {
    pub(crate) fn new(content: &str) -> Text {
        let (bom, body) = match content.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, content),
        };
        let mut normalized = String::with_capacity(body.len());
        let mut carriage_returns = Vec::new();
        let mut rest = body;
        while let Some(at) = rest.find("\r\n") {
            normalized.push_str(&rest[..at]);
            carriage_returns.push(normalized.len());
            normalized.push('\n');
            rest = &rest[at + 2..];
        }
        normalized.push_str(rest);
        let lf_only = normalized.matches('\n').count() - carriage_returns.len();
        Text {
            crlf: carriage_returns.len() > lf_only,
            original: body.to_string(),
            normalized,
            bom,
            carriage_returns,
        }
    }

    /// Whether new lines are written with `\r\n`.
    pub(crate) fn uses_crlf(&self) -> bool {
        self.crlf
    }

    /// Whether the file starts with a BOM.
    pub(crate) fn has_bom(&self) -> bool {
        self.bom
    }

    /// The offset in the text on disk (after the BOM) of `offset` in [`Text::normalized`]. An
    /// offset at a `\n` that had a `\r` maps to the `\r`, so a range that starts or ends at
    /// a line ending takes or leaves the whole ending.
    fn original_offset(&self, offset: usize) -> usize {
        offset + self.carriage_returns.partition_point(|&n| n < offset)
    }

    /// The file's new bytes once each range of [`Text::normalized`] is replaced by its text
    /// (ranges sorted and disjoint): the BOM, the untouched text byte for byte, the
    /// replacements with the file's usual line ending.
    pub(crate) fn replace(&self, edits: &[(Range<usize>, &str)]) -> Vec<u8> {
        let mut out = String::with_capacity(self.original.len() + 64);
        if self.bom {
            out.push_str(BOM);
        }
        let mut at = 0;
        for (range, text) in edits {
            let (start, end) = (
                self.original_offset(range.start),
                self.original_offset(range.end),
            );
            out.push_str(&self.original[at..start]);
            out.push_str(&self.ending(text));
            at = end;
        }
        out.push_str(&self.original[at..]);
        out.into_bytes()
    }

    /// `text` (with `\n` endings) with the file's usual ending.
    pub(crate) fn ending(&self, text: &str) -> String {
        if self.crlf {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text.to_string()
        }
    }
}

/// What `write` puts on disk for `content` replacing a file that held `old`: when the model
/// wrote plain `\n` lines over a file that had a BOM or CRLF endings, the file keeps them.
/// Content that has a `\r` or a BOM of its own is written as it is, and so is a new file.
pub(crate) fn like_old(content: &str, old: Option<&str>) -> String {
    let Some(old) = old else {
        return content.to_string();
    };
    let old = Text::new(old);
    let mut out = String::new();
    if old.has_bom() && !content.starts_with(BOM) {
        out.push_str(BOM);
    }
    if old.uses_crlf() && !content.contains('\r') {
        out.push_str(&old.ending(content));
    } else {
        out.push_str(content);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(content: &str, old: &str, new: &str) -> String {
        let text = Text::new(content);
        let start = text.normalized.find(old).expect("found");
        String::from_utf8(text.replace(&[(start..start + old.len(), new)])).unwrap()
    }

    #[test]
    fn a_crlf_file_stays_crlf_and_keeps_its_bom() {
        assert_eq!(
            replaced("\u{feff}a\r\nb\r\nc\r\n", "b\n", "B\nB2\n"),
            "\u{feff}a\r\nB\r\nB2\r\nc\r\n"
        );
        // A range ending just before a line ending leaves the ending whole.
        assert_eq!(replaced("a\r\nb\r\n", "b", "x\ny"), "a\r\nx\r\ny\r\n");
        // One starting at a line ending takes it whole.
        assert_eq!(replaced("a\r\nb\r\nc", "\nb", ""), "a\r\nc");
    }

    #[test]
    fn an_lf_file_stays_lf() {
        assert_eq!(replaced("a\nb\nc\n", "b\n", "B\nB2\n"), "a\nB\nB2\nc\n");
    }

    #[test]
    fn a_mixed_file_keeps_each_untouched_line_s_ending_and_new_lines_take_the_usual_one() {
        // Mostly CRLF, one LF line: the LF line is left as it is.
        let content = "one\r\ntwo\nthree\r\nfour\r\n";
        assert_eq!(
            replaced(content, "three\nfour", "3\n4\n5"),
            "one\r\ntwo\n3\r\n4\r\n5\r\n"
        );
        // An `old_text` written with LF matches lines that end in CRLF.
        assert_eq!(
            replaced(content, "one\ntwo", "1\n2"),
            "1\r\n2\nthree\r\nfour\r\n"
        );
        // Mostly LF: new lines get LF.
        assert_eq!(replaced("a\r\nb\nc\n", "b\nc", "x\ny"), "a\r\nx\ny\n");
    }

    #[test]
    fn several_ranges_are_replaced_in_one_pass() {
        let text = Text::new("a\r\nb\r\nc\r\nd\r\n");
        let b = text.normalized.find("b").unwrap();
        let d = text.normalized.find("d").unwrap();
        let out = text.replace(&[(b..b + 1, "B\nB"), (d..d + 1, "D")]);
        assert_eq!(out, b"a\r\nB\r\nB\r\nc\r\nD\r\n");
    }

    #[test]
    fn write_keeps_a_file_s_endings_and_bom_unless_the_content_has_its_own() {
        assert_eq!(like_old("x\ny\n", Some("a\r\nb\r\n")), "x\r\ny\r\n");
        assert_eq!(
            like_old("x\ny\n", Some("\u{feff}a\r\n")),
            "\u{feff}x\r\ny\r\n"
        );
        assert_eq!(like_old("x\r\ny\n", Some("a\r\nb\r\n")), "x\r\ny\n");
        assert_eq!(like_old("x\ny\n", Some("a\nb\n")), "x\ny\n");
        assert_eq!(like_old("x\ny\n", None), "x\ny\n");
        assert_eq!(
            like_old("\u{feff}x\n", Some("\u{feff}a\n")),
            "\u{feff}x\n",
            "one BOM, not two"
        );
    }
}
