//! `read`: a text file with line numbers, a page at a time; images as image content.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use agent_core::{Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use base64::Engine;
use llm::{ImageContent, UserContent};
use serde_json::{Value, json};

use crate::args::{required_str, usize_arg};
use crate::paths::{display, io_error, not_regular, open_regular, resolve, special_kind};
use crate::truncate::{MAX_BYTES, MAX_LINES, cut_line};

/// Longest line shown whole; minified files would otherwise eat the whole budget.
const MAX_LINE_CHARS: usize = 2_000;
/// Bytes of one line kept in memory: enough for `MAX_LINE_CHARS` characters of up to four
/// bytes each and one more, so a line cut in storage is always cut on screen too.
const MAX_LINE_BYTES: usize = 4 * (MAX_LINE_CHARS + 1);
/// Largest image returned to the model.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Files up to this size are counted to the end, to say how many lines there are.
const COUNT_LIMIT: u64 = 64 * 1024 * 1024;

pub struct ReadTool {
    cwd: PathBuf,
}

impl ReadTool {
    pub fn new(cwd: PathBuf) -> Self {
        Self { cwd }
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn view(&self) -> ToolView {
        ToolView::Read
    }

    fn description(&self) -> &str {
        "Read a file. Text comes with line numbers, at most 2000 lines or 50 KB per call; use \
         `offset` (1-based line) and `limit` to page through longer files. Images (png, jpg, gif, \
         webp) are returned as images. Binary files are refused. Paths are relative to the \
         working directory; `~` is the home directory."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to show"}
            },
            "required": ["path"]
        })
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = resolve(&self.cwd, required_str(&args, "path")?);
        let shown = display(&self.cwd, &path);
        let offset = usize_arg(&args, "offset").unwrap_or(1).max(1);
        let limit = usize_arg(&args, "limit")
            .unwrap_or(MAX_LINES)
            .clamp(1, MAX_LINES);
        tokio::task::spawn_blocking(move || read(&path, &shown, offset, limit))
            .await
            .map_err(|e| ToolError(format!("read failed: {e}")))?
            .map_err(ToolError)
    }
}

fn read(path: &Path, shown: &str, offset: usize, limit: usize) -> Result<ToolOutput, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("read", shown, &e))?;
    if meta.is_dir() {
        return Err(format!("{shown} is a directory; use `ls` to list it."));
    }
    if let Some(kind) = special_kind(&meta) {
        return Err(not_regular(shown, kind, "read"));
    }
    if let Some(mime) = image_mime(path) {
        return read_image(path, shown, mime, meta.len());
    }
    let mut file = open_regular(path, shown, "read")?;
    let mut head = Vec::with_capacity(8192);
    (&mut file)
        .take(8192)
        .read_to_end(&mut head)
        .map_err(|e| io_error("read", shown, &e))?;
    if head.contains(&0) {
        return Err(format!(
            "{shown} is a binary file ({}, {}); it is not shown.",
            human_size(meta.len()),
            kind_of(&head)
        ));
    }
    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    page(reader, shown, offset, limit, meta.len() <= COUNT_LIMIT)
}

fn page(
    mut reader: impl BufRead,
    shown: &str,
    offset: usize,
    limit: usize,
    count_all: bool,
) -> Result<ToolOutput, String> {
    let mut out = String::new();
    let mut line = Vec::new();
    let (mut number, mut last_shown, mut more) = (0usize, 0usize, false);
    let (mut lossy, mut cut_lines) = (false, false);
    loop {
        // Lines not shown are skipped without being kept.
        let showing = number + 1 >= offset
            && !(last_shown != 0 && (number + 1 - offset >= limit || out.len() >= MAX_BYTES));
        let keep = if showing { MAX_LINE_BYTES } else { 0 };
        let read = read_line_bounded(&mut reader, keep, &mut line)
            .map_err(|e| io_error("read", shown, &e))?;
        if read == 0 {
            break;
        }
        number += 1;
        if number < offset {
            continue;
        }
        if last_shown != 0 && (number - offset >= limit || out.len() >= MAX_BYTES) {
            more = true;
            if !count_all {
                break;
            }
            continue;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            // A line cut in storage may end inside a character: that is not the file's fault.
            Err(err) if line.len() < read && err.error_len().is_none() => {
                std::borrow::Cow::Borrowed(
                    std::str::from_utf8(&line[..err.valid_up_to()]).unwrap_or_default(),
                )
            }
            Err(_) => {
                lossy = true;
                String::from_utf8_lossy(&line)
            }
        };
        let text = text.trim_end_matches(['\n', '\r']);
        let text = cut_line(text, MAX_LINE_CHARS);
        cut_lines |= matches!(text, std::borrow::Cow::Owned(_));
        let entry = format!("{number:>6}\t{text}\n");
        if last_shown != 0 && out.len() + entry.len() > MAX_BYTES {
            more = true;
            if !count_all {
                break;
            }
            continue;
        }
        out.push_str(&entry);
        last_shown = number;
    }
    if number == 0 {
        return Ok(ToolOutput::text(format!("{shown} is empty.")));
    }
    if last_shown == 0 {
        return Err(format!(
            "offset {offset} is past the end of {shown} ({number} line{}).",
            if number == 1 { "" } else { "s" }
        ));
    }
    let mut notes = Vec::new();
    if more {
        let total = if count_all {
            format!(" of {number}")
        } else {
            String::new()
        };
        notes.push(format!(
            "Showing lines {offset}-{last_shown}{total}. Use offset={} to read on.",
            last_shown + 1
        ));
    }
    if lossy {
        notes.push("The file is not valid UTF-8; bad bytes are shown as �.".to_string());
    }
    if cut_lines {
        notes.push(format!(
            "Lines longer than {MAX_LINE_CHARS} characters were cut."
        ));
    }
    for note in notes {
        out.push_str(&format!("\n[{note}]"));
    }
    Ok(ToolOutput {
        details: Some(json!({"path": shown, "first_line": offset, "last_line": last_shown})),
        ..ToolOutput::text(out)
    })
}

/// Reads one line (through its `\n`) from `reader`, keeping at most `keep` bytes of it in
/// `line` and skipping the rest unstored: a 300 MB one-line file costs `keep` bytes, not
/// 300 MB. Returns the line's full length in bytes, 0 at the end of the input.
pub(crate) fn read_line_bounded(
    reader: &mut impl BufRead,
    keep: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    line.clear();
    let mut total = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buf.is_empty() {
            return Ok(total);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buf.len(), false),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn read_image(path: &Path, shown: &str, mime: &str, size: u64) -> Result<ToolOutput, String> {
    if size > MAX_IMAGE_BYTES {
        return Err(format!(
            "{shown} is an image of {}, over the {} limit for images.",
            human_size(size),
            human_size(MAX_IMAGE_BYTES)
        ));
    }
    let mut bytes = Vec::new();
    open_regular(path, shown, "read")?
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", shown, &e))?;
    Ok(ToolOutput {
        content: vec![
            UserContent::Text {
                text: format!("Image {shown} ({mime}, {}).", human_size(size)),
            },
            UserContent::Image(ImageContent::new(
                base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime.to_string(),
            )),
        ],
        details: Some(json!({"path": shown, "image": mime})),
        ..ToolOutput::default()
    })
}

/// A guess at what a binary file is, from its first bytes.
fn kind_of(head: &[u8]) -> &'static str {
    const MAGIC: [(&[u8], &str); 8] = [
        (b"\x7fELF", "ELF executable"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x89PNG", "PNG image"),
        (b"SQLite format 3", "SQLite database"),
        (b"\xca\xfe\xba\xbe", "Mach-O or Java class"),
        (b"\0asm", "WebAssembly module"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind)
}

pub(crate) fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_huge_line_is_read_with_a_bounded_buffer() {
        let huge = 10 * 1024 * 1024;
        let input = std::io::repeat(b'x')
            .take(huge as u64)
            .chain(&b"\nshort\nlast"[..]);
        let mut reader = BufReader::with_capacity(8192, input);
        let mut line = Vec::new();
        let read = read_line_bounded(&mut reader, MAX_LINE_BYTES, &mut line).unwrap();
        assert_eq!(read, huge + 1, "the whole line is consumed");
        assert_eq!(line.len(), MAX_LINE_BYTES, "only the shown part is kept");
        assert!(
            line.capacity() < 2 * MAX_LINE_BYTES,
            "held {} bytes",
            line.capacity()
        );
        assert_eq!(read_line_bounded(&mut reader, 100, &mut line).unwrap(), 6);
        assert_eq!(line, b"short\n");
        assert_eq!(read_line_bounded(&mut reader, 2, &mut line).unwrap(), 4);
        assert_eq!(line, b"la");
        assert_eq!(read_line_bounded(&mut reader, 2, &mut line).unwrap(), 0);
    }

    #[test]
    fn a_cut_line_is_shown_cut_without_a_false_encoding_note() {
        // Multi-byte characters: the stored cut falls inside one.
        let line = "é".repeat(5_000);
        let reader = BufReader::new(std::io::Cursor::new(format!("{line}\nnext\n")));
        let out = page(reader, "f", 1, 10, true).unwrap();
        let text = match &out.content[0] {
            UserContent::Text { text } => text.clone(),
            _ => panic!(),
        };
        assert!(text.contains("… [line cut at 2000 chars]"), "{text}");
        assert!(text.contains(&format!("     1\t{}…", "é".repeat(2_000))));
        assert!(text.contains("     2\tnext"));
        assert!(!text.contains("not valid UTF-8"), "{text}");
    }
}
