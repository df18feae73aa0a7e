//! `read`: a text file with line numbers, a page at a time; images as image content.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use agent_core::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use base64::Engine;
use llm::{ImageContent, UserContent};
use serde_json::{Value, json};

use crate::args::{required_str, usize_arg};
use crate::paths::{display, io_error, resolve};
use crate::truncate::{MAX_BYTES, MAX_LINES, cut_line};

/// Longest line shown whole; minified files would otherwise eat the whole budget.
const MAX_LINE_CHARS: usize = 2_000;
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
    if let Some(mime) = image_mime(path) {
        return read_image(path, shown, mime, meta.len());
    }
    let mut file = File::open(path).map_err(|e| io_error("read", shown, &e))?;
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
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
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
            "offset {offset} is past the end of {shown} ({number} lines)."
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
    let bytes = std::fs::read(path).map_err(|e| io_error("read", shown, &e))?;
    Ok(ToolOutput {
        content: vec![
            UserContent::Text {
                text: format!("Image {shown} ({mime}, {}).", human_size(size)),
            },
            UserContent::Image(ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_string(),
            }),
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
