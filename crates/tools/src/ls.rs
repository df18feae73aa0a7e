//! `ls`: one directory, gitignore-aware, sorted.

use std::path::PathBuf;

use agent_core::{Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::args::{str_arg, usize_arg};
use crate::paths::{display, io_error, resolve};
use crate::walk::walk;

const DEFAULT_LIMIT: usize = 500;

pub struct LsTool {
    cwd: PathBuf,
}

impl LsTool {
    pub fn new(cwd: PathBuf) -> Self {
        Self { cwd }
    }
}

#[async_trait]
impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn view(&self) -> ToolView {
        ToolView::List
    }

    fn description(&self) -> &str {
        "List a directory: sorted names, directories end with `/`. Skips hidden entries and \
         what .gitignore excludes. At most 500 entries by default."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory (default: working directory)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most entries (default 500)"}
            }
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let dir = resolve(&self.cwd, str_arg(&args, "path").unwrap_or("."));
        let shown = display(&self.cwd, &dir);
        let limit = usize_arg(&args, "limit").unwrap_or(DEFAULT_LIMIT).max(1);
        let meta = std::fs::metadata(&dir).map_err(|e| ToolError(io_error("list", &shown, &e)))?;
        if !meta.is_dir() {
            return Err(ToolError(format!(
                "{shown} is a file, not a directory; use `read`."
            )));
        }
        // Listing needs read permission; the walker would silently show nothing.
        std::fs::read_dir(&dir).map_err(|e| ToolError(io_error("list", &shown, &e)))?;
        let cancel = ctx.cancel.clone();
        let walk_dir = dir.clone();
        let entries =
            tokio::task::spawn_blocking(move || walk(&walk_dir, Some(1), &cancel, |_, _| true))
                .await
                .map_err(|e| ToolError(format!("ls failed: {e}")))?
                .map_err(ToolError)?;
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!(
                "{shown} is empty (or holds only hidden or ignored entries)."
            )));
        }
        let total = entries.len();
        let mut out: Vec<String> = entries
            .iter()
            .take(limit)
            .map(|(path, is_dir)| {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if *is_dir { format!("{name}/") } else { name }
            })
            .collect();
        if total > limit {
            out.push(format!(
                "[Showing {limit} of {total} entries; raise `limit` to see more.]"
            ));
        }
        Ok(ToolOutput {
            details: Some(json!({"entries": total})),
            ..ToolOutput::text(out.join("\n"))
        })
    }
}
