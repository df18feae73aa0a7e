//! `write`: create or replace a file, creating its parent directories.

use std::path::PathBuf;

use agent_core::{Concurrency, Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::args::required_str;
use crate::diff::diff;
use crate::line_endings;
use crate::paths::{
    FileLocks, atomic_write, display, io_error, read_regular, refuse_special, resolve,
};

pub struct WriteTool {
    cwd: PathBuf,
    locks: FileLocks,
}

impl WriteTool {
    pub(crate) fn new(cwd: PathBuf, locks: FileLocks) -> Self {
        Self { cwd, locks }
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn view(&self) -> ToolView {
        ToolView::Diff
    }

    fn description(&self) -> &str {
        "Write a whole file, replacing it if it exists; parent directories are created. A \
         replaced file keeps its line endings (CRLF) and BOM. Prefer `edit` for changing part \
         of an existing file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to write"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["path", "content"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    /// Plan mode offers nothing that changes files (`Effect::Writes`).
    fn offered_in(&self, mode: agent_core::Mode) -> bool {
        mode != agent_core::Mode::Plan
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = resolve(&self.cwd, required_str(&args, "path")?);
        let content = required_str(&args, "content")?;
        let shown = display(&self.cwd, &path);
        let _guard = self.locks.lock(&path).await;
        if path.is_dir() {
            return Err(ToolError(format!("{shown} is a directory.")));
        }
        // Never through a FIFO or a device: reading the old content would block on one.
        refuse_special(&path, &shown, "written").map_err(ToolError)?;
        // The old content is only for the diff: an unreadable old file is replaced like a
        // missing one (a special file swapped in meanwhile is refused by `atomic_write`).
        let old = {
            let (path, shown) = (path.clone(), shown.clone());
            tokio::task::spawn_blocking(move || read_regular(&path, &shown, "replace"))
                .await
                .map_err(|e| ToolError(format!("write failed: {e}")))?
                .unwrap_or(None)
        };
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ToolError(io_error("create the directory for", &shown, &e)))?;
        }
        // A file with CRLF endings or a BOM keeps them when the model writes plain lines.
        let previous = old.as_deref().and_then(|b| std::str::from_utf8(b).ok());
        let on_disk = line_endings::like_old(content, previous);
        let (target, bytes) = (path.clone(), on_disk.into_bytes());
        tokio::task::spawn_blocking(move || atomic_write(&target, &bytes))
            .await
            .map_err(|e| ToolError(format!("write failed: {e}")))?
            .map_err(|e| ToolError(io_error("write", &shown, &e)))?;
        let lines = content.lines().count();
        let old_text = old
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        // Compared with LF endings: a CRLF file rewritten with the same lines is no change.
        let change = diff(
            &line_endings::Text::new(&old_text).normalized,
            &line_endings::Text::new(content).normalized,
            &shown,
        );
        let verb = if old.is_some() { "Replaced" } else { "Created" };
        Ok(ToolOutput {
            details: Some(json!({
                "path": shown, "diff": change.unified, "added": change.added,
                "removed": change.removed, "created": old.is_none(),
            })),
            ..ToolOutput::text(format!(
                "{verb} {shown}: {} bytes, {} line{}.",
                content.len(),
                lines,
                if lines == 1 { "" } else { "s" }
            ))
        })
    }
}
