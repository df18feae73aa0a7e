//! `find`: files by glob, gitignore-aware, sorted.

use std::path::PathBuf;

use agent_core::{Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use globset::GlobBuilder;
use serde_json::{Value, json};

use crate::args::{required_str, str_arg, usize_arg};
use crate::paths::{display, resolve};
use crate::walk::walk;

const DEFAULT_LIMIT: usize = 1_000;

pub struct FindTool {
    cwd: PathBuf,
}

impl FindTool {
    pub fn new(cwd: PathBuf) -> Self {
        Self { cwd }
    }
}

#[async_trait]
impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn view(&self) -> ToolView {
        ToolView::Find
    }

    fn description(&self) -> &str {
        "Find files by glob. A pattern without `/` matches file names at any depth (`*.rs`); \
         with `/` it matches paths relative to the search root (`src/**/*.ts`). Respects \
         .gitignore and skips hidden files. Sorted; at most 1000 results by default."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob, e.g. *.rs or src/**/mod.rs"},
                "path": {"type": "string", "description": "Directory to search (default: working directory)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most results (default 1000)"}
            },
            "required": ["pattern"]
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let pattern = required_str(&args, "pattern")?.to_string();
        let root = resolve(&self.cwd, str_arg(&args, "path").unwrap_or("."));
        let limit = usize_arg(&args, "limit").unwrap_or(DEFAULT_LIMIT).max(1);
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError(format!("Invalid glob `{pattern}`: {e}")))?
            .compile_matcher();
        if !root.is_dir() {
            return Err(ToolError(format!(
                "{} is not a directory.",
                display(&self.cwd, &root)
            )));
        }
        let by_name = !pattern.contains('/');
        let cwd = self.cwd.clone();
        let cancel = ctx.cancel.clone();
        let found = tokio::task::spawn_blocking(move || {
            walk(&root, None, &cancel, |path, _| {
                let subject = if by_name {
                    path.file_name().map(PathBuf::from).unwrap_or_default()
                } else {
                    path.strip_prefix(&root).unwrap_or(path).to_path_buf()
                };
                glob.is_match(subject)
            })
        })
        .await
        .map_err(|e| ToolError(format!("find failed: {e}")))?
        .map_err(ToolError)?;
        if found.is_empty() {
            return Ok(ToolOutput::text(format!("No files match `{pattern}`.")));
        }
        let total = found.len();
        let mut out: Vec<String> = found
            .iter()
            .take(limit)
            .map(|(path, is_dir)| {
                format!("{}{}", display(&cwd, path), if *is_dir { "/" } else { "" })
            })
            .collect();
        if total > limit {
            out.push(format!(
                "[Showing {limit} of {total} results; narrow the pattern or raise `limit`.]"
            ));
        }
        Ok(ToolOutput {
            details: Some(json!({"results": total.min(limit), "total": total})),
            ..ToolOutput::text(out.join("\n"))
        })
    }
}
