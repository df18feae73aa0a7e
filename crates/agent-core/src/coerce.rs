//! The one door every tool result passes before it reaches the history.
//!
//! Built-in tools return well-formed outputs, but a tool the user brings (an MCP server, a hook
//! rewriting a result) may not, and a bad result stored in the session would be sent on every
//! later request: providers reject an error result without text, an image that is not base64,
//! or a block with nothing in it. Here such results are repaired into a valid shape, with a note
//! saying what was dropped, so the model still learns what happened.

use llm::{ToolCall, ToolResultMessage, UserContent, now_millis};

use crate::ToolOutput;

/// Most text one result may carry; beyond it the rest is cut with a note. Built-in tools stay
/// far below (50 KB); this only stops a runaway tool from flooding the context and the session.
pub(crate) const MAX_RESULT_TEXT: usize = 512 * 1024;

/// `output` as the result of `call`, repaired where it is malformed.
pub(crate) fn tool_result(call: &ToolCall, output: ToolOutput) -> ToolResultMessage {
    let mut notes = Vec::new();
    let mut content = Vec::with_capacity(output.content.len());
    let mut text_bytes = 0usize;
    for block in output.content {
        match block {
            UserContent::Text { text } if text.is_empty() => {}
            UserContent::Text { mut text } => {
                if text_bytes + text.len() > MAX_RESULT_TEXT {
                    let room = MAX_RESULT_TEXT.saturating_sub(text_bytes);
                    let cut = floor_char_boundary(&text, room);
                    notes.push(format!(
                        "the output was cut at {} KB ({} KB more were dropped)",
                        MAX_RESULT_TEXT / 1024,
                        (text.len() - cut) / 1024
                    ));
                    text.truncate(cut);
                    if text.is_empty() {
                        continue;
                    }
                }
                text_bytes += text.len();
                content.push(UserContent::Text { text });
            }
            UserContent::Image(image) => match image_problem(&image.data, &image.mime_type) {
                None => content.push(UserContent::Image(image)),
                Some(problem) => notes.push(format!("an image was dropped: {problem}")),
            },
        }
    }
    for note in notes {
        content.push(UserContent::Text {
            text: format!("[{note}]"),
        });
    }
    if content.is_empty() {
        let text = if output.is_error {
            "(error with no message)"
        } else {
            "(no output)"
        };
        content.push(UserContent::Text {
            text: text.to_string(),
        });
    }
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content,
        details: output.details,
        is_error: output.is_error,
        timestamp: now_millis(),
    }
}

/// Why an image block cannot be sent, if it cannot.
fn image_problem(data: &str, mime_type: &str) -> Option<String> {
    if !mime_type.starts_with("image/") {
        return Some(format!("`{mime_type}` is not an image type"));
    }
    if data.is_empty() {
        return Some("it has no data".to_string());
    }
    let body = data.trim_end_matches('=');
    let valid = data.len().is_multiple_of(4)
        && data.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    (!valid).then(|| "its data is not base64".to_string())
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm::ImageContent;

    fn call() -> ToolCall {
        ToolCall::from_raw("c1".into(), "t".into(), "{}")
    }

    fn texts(result: &ToolResultMessage) -> Vec<String> {
        result
            .content
            .iter()
            .map(|c| match c {
                UserContent::Text { text } => text.clone(),
                UserContent::Image(_) => "<image>".into(),
            })
            .collect()
    }

    #[test]
    fn an_empty_error_says_so() {
        let output = ToolOutput {
            is_error: true,
            content: vec![UserContent::Text {
                text: String::new(),
            }],
            ..ToolOutput::default()
        };
        let result = tool_result(&call(), output);
        assert!(result.is_error);
        assert_eq!(texts(&result), ["(error with no message)"]);
        assert_eq!(
            texts(&tool_result(&call(), ToolOutput::default())),
            ["(no output)"]
        );
    }

    #[test]
    fn bad_images_become_a_note() {
        let image = |data: &str, mime: &str| UserContent::Image(ImageContent::new(data, mime));
        let output = ToolOutput {
            content: vec![
                image("aGk=", "image/png"),
                image("not base64!", "image/png"),
                image("aGk=", "text/plain"),
                image("", "image/png"),
            ],
            ..ToolOutput::default()
        };
        let result = tool_result(&call(), output);
        let texts = texts(&result);
        assert_eq!(texts[0], "<image>");
        assert_eq!(texts.len(), 4, "{texts:?}");
        assert!(texts[1].contains("not base64"), "{texts:?}");
        assert!(texts[2].contains("not an image type"), "{texts:?}");
        assert!(texts[3].contains("no data"), "{texts:?}");
    }

    #[test]
    fn a_flood_of_text_is_cut_on_a_char_boundary() {
        let output = ToolOutput::text("é".repeat(MAX_RESULT_TEXT));
        let result = tool_result(&call(), output);
        let texts = texts(&result);
        assert!(texts[0].len() <= MAX_RESULT_TEXT);
        assert!(texts[1].contains("cut at 512 KB"), "{:?}", texts[1]);
    }
}
