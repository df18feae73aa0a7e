//! `grep`: ripgrep's searcher over a gitignore-aware parallel walk.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use llm::UserContent;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{bool_arg, required_str, str_arg, usize_arg};
use crate::paths::{display, open_regular, resolve};
use crate::truncate::{MAX_BYTES, cut_line};

const DEFAULT_LIMIT: usize = 100;
const MAX_LINE_CHARS: usize = 500;
/// Longest line searched; files with a longer one are skipped and named.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

pub struct GrepTool {
    cwd: PathBuf,
}

impl GrepTool {
    pub fn new(cwd: PathBuf) -> Self {
        Self { cwd }
    }
}

struct Query {
    pattern: String,
    root: PathBuf,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: usize,
    limit: usize,
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn view(&self) -> ToolView {
        ToolView::Search
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax, like ripgrep). \
         Respects .gitignore, skips hidden and binary files. Returns `path:line: text` for \
         matches (`path-line- text` for context lines), at most 100 matches by default \
         (`limit`), lines cut at 500 characters. Narrow with `path` and `glob` (e.g. `*.rs`)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (or literal text with literal=true)"},
                "path": {"type": "string", "description": "File or directory to search (default: working directory)"},
                "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.rs or src/**/*.ts"},
                "ignore_case": {"type": "boolean"},
                "literal": {"type": "boolean", "description": "Treat the pattern as plain text"},
                "context": {"type": "integer", "minimum": 0, "description": "Lines of context around each match"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most matches to return (default 100)"}
            },
            "required": ["pattern"]
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = Query {
            pattern: required_str(&args, "pattern")?.to_string(),
            root: resolve(&self.cwd, str_arg(&args, "path").unwrap_or(".")),
            glob: str_arg(&args, "glob").map(str::to_string),
            ignore_case: bool_arg(&args, "ignore_case"),
            literal: bool_arg(&args, "literal"),
            context: usize_arg(&args, "context").unwrap_or(0).min(20),
            limit: usize_arg(&args, "limit").unwrap_or(DEFAULT_LIMIT).max(1),
        };
        let cwd = self.cwd.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || search(&cwd, &query, &cancel))
            .await
            .map_err(|e| ToolError(format!("grep failed: {e}")))?
            .map_err(ToolError)
    }
}

/// One output line of a file: its number, whether it matched, its text.
type Line = (u64, bool, String);

fn search(cwd: &Path, query: &Query, cancel: &CancellationToken) -> Result<ToolOutput, String> {
    if !query.root.exists() {
        return Err(format!("{} does not exist.", display(cwd, &query.root)));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(query.ignore_case)
        .fixed_strings(query.literal)
        .line_terminator(Some(b'\n'))
        .build(&query.pattern)
        .map_err(|e| format!("Invalid pattern: {e}"))?;
    let mut walk = ignore::WalkBuilder::new(&query.root);
    walk.filter_entry(|e| e.file_name() != ".git");
    if let Some(glob) = &query.glob {
        let mut overrides = ignore::overrides::OverrideBuilder::new(&query.root);
        overrides
            .add(glob)
            .map_err(|e| format!("Invalid glob: {e}"))?;
        walk.overrides(
            overrides
                .build()
                .map_err(|e| format!("Invalid glob: {e}"))?,
        );
    }
    let found = AtomicUsize::new(0);
    let results: Mutex<Vec<(PathBuf, Vec<Line>)>> = Mutex::new(Vec::new());
    let too_long: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(query.context)
            .after_context(query.context)
            // A line is searched whole: without a limit a 300 MB minified line costs 300 MB.
            .heap_limit(Some(MAX_LINE_BYTES))
            .build();
        let (matcher, found, results, too_long) = (&matcher, &found, &results, &too_long);
        Box::new(move |entry| {
            if cancel.is_cancelled() || found.load(Ordering::Relaxed) >= query.limit {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            // Regular files only: opening a FIFO would block until a writer came, and a
            // device may never end. Symlinks are not followed by the walk.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Collect {
                lines: Vec::new(),
                found,
                limit: query.limit,
            };
            // Unreadable files are skipped, as ripgrep does; files with a line over the limit
            // are skipped and named.
            if let Err(err) = search_regular(&mut searcher, matcher, entry.path(), &mut sink)
                && err.to_string().contains("allocation limit")
            {
                lock(too_long).push(entry.path().to_path_buf());
            }
            if !sink.lines.is_empty() {
                lock(results).push((entry.path().to_path_buf(), sink.lines));
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err("Search aborted.".into());
    }
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut too_long = too_long.into_inner().unwrap_or_else(|e| e.into_inner());
    too_long.sort();
    let mut output = render(cwd, query, results, found.load(Ordering::Relaxed));
    if !too_long.is_empty() {
        let names: Vec<String> = too_long.iter().take(10).map(|p| display(cwd, p)).collect();
        let more = match too_long.len() {
            n if n > 10 => format!(" and {} more", n - 10),
            _ => String::new(),
        };
        let note = format!(
            "[Skipped {} file(s) with a line longer than {} MB: {}{more}. Search them with bash \
             (e.g. `grep -o`).]",
            too_long.len(),
            MAX_LINE_BYTES / (1024 * 1024),
            names.join(", ")
        );
        if let Some(UserContent::Text { text }) = output.content.first_mut() {
            text.push_str(if text.ends_with('\n') { "" } else { "\n" });
            text.push_str(&note);
        }
    }
    Ok(output)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Searches `path` if it is still a regular file when opened: the walk's file type is from
/// before the open, and a FIFO swapped in meanwhile must not block the search.
fn search_regular(
    searcher: &mut grep_searcher::Searcher,
    matcher: &grep_regex::RegexMatcher,
    path: &Path,
    sink: &mut Collect<'_>,
) -> std::io::Result<()> {
    let shown = path.display().to_string();
    let file = open_regular(path, &shown, "search").map_err(std::io::Error::other)?;
    searcher.search_file(matcher, &file, sink)
}

fn render(
    cwd: &Path,
    query: &Query,
    results: Vec<(PathBuf, Vec<Line>)>,
    found: usize,
) -> ToolOutput {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut cut_for_size = false;
    'files: for (path, lines) in &results {
        let name = display(cwd, path);
        let mut previous: Option<u64> = None;
        for (number, is_match, text) in lines {
            if *is_match && shown >= query.limit {
                break 'files;
            }
            if query.context > 0 && previous.is_some_and(|p| *number > p + 1) {
                out.push_str("--\n");
            }
            let sep = if *is_match { ':' } else { '-' };
            let line = format!(
                "{name}{sep}{number}{sep} {}\n",
                cut_line(text, MAX_LINE_CHARS)
            );
            if out.len() + line.len() > MAX_BYTES {
                cut_for_size = true;
                break 'files;
            }
            out.push_str(&line);
            shown += usize::from(*is_match);
            previous = Some(*number);
        }
    }
    if shown == 0 {
        return ToolOutput::text(format!("No matches for `{}`.", query.pattern));
    }
    if found >= query.limit || cut_for_size {
        out.push_str(&format!(
            "[Showing {shown} matches; the limit was reached and there may be more. Narrow \
             `path` or `glob`, or raise `limit`.]"
        ));
    }
    ToolOutput {
        details: Some(json!({"matches": shown, "files": results.len()})),
        ..ToolOutput::text(out)
    }
}

struct Collect<'a> {
    lines: Vec<Line>,
    found: &'a AtomicUsize,
    limit: usize,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        m: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        let text = String::from_utf8_lossy(m.bytes());
        let number = m.line_number().unwrap_or(0);
        // A match may span lines (it cannot here: one line per match with \n terminator).
        self.lines.push((
            number,
            true,
            text.trim_end_matches(['\n', '\r']).to_string(),
        ));
        let total = self.found.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(total < self.limit)
    }

    fn context(
        &mut self,
        _: &grep_searcher::Searcher,
        c: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let text = String::from_utf8_lossy(c.bytes());
        let number = c.line_number().unwrap_or(0);
        self.lines.push((
            number,
            false,
            text.trim_end_matches(['\n', '\r']).to_string(),
        ));
        Ok(true)
    }
}
