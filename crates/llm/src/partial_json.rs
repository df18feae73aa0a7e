//! Tolerant parsing of JSON that is still streaming, for showing tool-call arguments live.
//!
//! The strict parse at the end of a tool call ([`crate::ToolCall::from_raw`]) decides what runs;
//! this one only decides what the user sees meanwhile, so it prefers showing a little less over
//! guessing.

use serde_json::Value;

/// Parses a prefix of a JSON document: open strings, arrays and objects are closed, a trailing
/// incomplete token (a half key, a dangling `:` or `,`, a cut-off `tru`) is dropped. `None` when
/// nothing usable has arrived yet.
///
/// ```
/// let v = llm::parse_partial_json(r#"{"path": "src/ma"#).unwrap();
/// assert_eq!(v["path"], "src/ma");
/// ```
pub fn parse_partial_json(input: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(input) {
        return Some(value);
    }
    let scan = Scan::of(input);
    // First choice: everything so far, with the open string and containers closed.
    let mut text = String::with_capacity(input.len() + scan.open.len() + 1);
    text.push_str(&input[..scan.string_cut.unwrap_or(input.len())]);
    if scan.string_cut.is_some() || scan.in_string {
        text.push('"');
    }
    text.extend(scan.open.iter().rev());
    if let Ok(value) = serde_json::from_str(&text) {
        return Some(value);
    }
    // Else cut back to the last point where a value or container was complete.
    let (cut, open) = scan.last_cut?;
    let mut text = input[..cut].trim_end().to_string();
    text.extend(open.chars().rev());
    serde_json::from_str(&text).ok()
}

/// What a single pass over the input learned.
struct Scan {
    /// Closers needed for the containers still open, innermost last.
    open: Vec<char>,
    in_string: bool,
    /// Where to cut an escape sequence left unfinished inside the open string.
    string_cut: Option<usize>,
    /// The last byte offset after which the input, closed with these closers (innermost
    /// last), is complete JSON.
    last_cut: Option<(usize, String)>,
}

impl Scan {
    fn of(input: &str) -> Self {
        let mut open: Vec<char> = Vec::new();
        let mut in_string = false;
        let mut escape_at: Option<usize> = None;
        // In an object, a string after `{` or `,` is a key: cutting right after it would
        // leave a key without a value.
        let mut expect_key = false;
        let mut string_is_key = false;
        let mut last_cut = None;
        let closers = |open: &Vec<char>| open.iter().collect::<String>();
        for (i, c) in input.char_indices() {
            if in_string {
                if let Some(start) = escape_at {
                    let len = i - start;
                    let unicode = input[start..].starts_with("\\u");
                    if !unicode || len >= 5 {
                        escape_at = None;
                    }
                    continue;
                }
                match c {
                    '\\' => escape_at = Some(i),
                    '"' => {
                        in_string = false;
                        if !string_is_key {
                            last_cut = Some((i + 1, closers(&open)));
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => {
                    in_string = true;
                    string_is_key = expect_key;
                    expect_key = false;
                }
                '{' | '[' => {
                    open.push(if c == '{' { '}' } else { ']' });
                    expect_key = c == '{';
                    last_cut = Some((i + 1, closers(&open)));
                }
                '}' | ']' => {
                    open.pop();
                    last_cut = Some((i + 1, closers(&open)));
                }
                ',' => {
                    expect_key = open.last() == Some(&'}');
                    last_cut = Some((i, closers(&open)));
                }
                _ => {}
            }
        }
        let string_cut = if in_string { escape_at } else { None };
        Self {
            open,
            in_string,
            string_cut,
            last_cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_partial_json as parse;

    #[test]
    fn complete_documents_parse_as_they_are() {
        assert_eq!(parse(r#"{"a": [1, 2]}"#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse("42"), Some(json!(42)));
    }

    #[test]
    fn open_strings_and_containers_are_closed() {
        assert_eq!(
            parse(r#"{"path": "src/ma"#),
            Some(json!({"path": "src/ma"}))
        );
        assert_eq!(parse(r#"{"a": [1, 2"#), Some(json!({"a": [1, 2]})));
        assert_eq!(
            parse(r#"{"a": {"b": [{"c": "d"#),
            Some(json!({"a": {"b": [{"c": "d"}]}}))
        );
        assert_eq!(parse(r#"{"a": 12"#), Some(json!({"a": 12})));
        assert_eq!(parse("{"), Some(json!({})));
        assert_eq!(parse("[\"x"), Some(json!(["x"])));
    }

    #[test]
    fn incomplete_trailing_tokens_are_dropped() {
        assert_eq!(parse(r#"{"a": 1, "b"#), Some(json!({"a": 1})));
        assert_eq!(parse(r#"{"a": 1, "b":"#), Some(json!({"a": 1})));
        assert_eq!(parse(r#"{"a": 1,"#), Some(json!({"a": 1})));
        assert_eq!(parse(r#"{"a": "x", "b": tr"#), Some(json!({"a": "x"})));
        assert_eq!(parse(r#"{"a": [1, 2,"#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse(r#"{"a"#), Some(json!({})));
    }

    #[test]
    fn escapes_cut_in_half_are_dropped() {
        assert_eq!(parse(r#"{"s": "line\"#), Some(json!({"s": "line"})));
        assert_eq!(parse(r#"{"s": "a\u00"#), Some(json!({"s": "a"})));
        assert_eq!(parse(r#"{"s": "a\u00e9"#), Some(json!({"s": "aé"})));
        assert_eq!(
            parse(r#"{"s": "say \"hi\" now"#),
            Some(json!({"s": "say \"hi\" now"}))
        );
    }

    #[test]
    fn nothing_usable_is_none() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("   "), None);
        assert_eq!(parse("tru"), None);
    }

    #[test]
    fn every_prefix_of_a_document_is_handled_without_panicking() {
        let doc = r#"{"path": "a/b.rs", "edits": [{"old": "x\n\"y\"", "new": "é\u00e9"}], "n": -1.5e3, "ok": true}"#;
        for (cut, _) in doc.char_indices() {
            if let Some(value) = parse(&doc[..cut]) {
                assert!(value.is_object(), "{cut}: {value}");
            }
        }
    }
}
