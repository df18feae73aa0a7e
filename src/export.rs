//! A session's current branch as one file to hand on: self-contained HTML or markdown.
//!
//! The HTML needs nothing from the network and runs nothing: styles are inline, a
//! Content-Security-Policy allows no script and only `data:` images, and every piece of text
//! the conversation carries (a message, a command's output, a tool's arguments) is escaped,
//! including the HTML a model may write inside markdown. Tool calls fold open with their
//! output (`<details>`), diffs are coloured, thinking is folded away, code is highlighted with
//! the dark code theme of the TUI, images are embedded. Provider keys the agent knows are
//! replaced by `[redacted]` before anything is written.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use agent_core::AgentMessage;
use llm::{AssistantContent, ToolCall, ToolResultMessage, UserContent};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Html,
    #[value(alias = "markdown")]
    Md,
}

impl Format {
    /// The format a path's extension names (HTML unless it ends in `.md`).
    pub fn of_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("md" | "markdown") => Self::Md,
            _ => Self::Html,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Html => "html",
            Self::Md => "md",
        }
    }
}

/// The session as `format`, keys redacted (in memory: for tests; the commands stream).
#[cfg(test)]
pub fn render(
    title: &str,
    messages: &[AgentMessage],
    format: Format,
    redactor: &agent_core::Redactor,
) -> String {
    let mut out = Vec::new();
    let mut writer = Writer::new(&mut out, format, title, redactor);
    for message in messages {
        writer.message(message);
    }
    // Writing to memory does not fail.
    let _ = writer.finish();
    String::from_utf8(out).unwrap_or_default()
}

/// Writes the current branch of the session file `path` to `out` as `format`, a message at
/// a time (the file is never held whole: see `session::for_each_message_on_branch`).
/// Returns how many messages were written.
pub fn stream(
    path: &Path,
    out: impl Write,
    format: Format,
    redactor: &agent_core::Redactor,
) -> std::io::Result<usize> {
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.rsplit_once('_'))
        .map_or_else(String::new, |(_, id)| id.to_string());
    let title = format!("coding-agent session {id}");
    let mut writer = Writer::new(out, format, &title, redactor);
    let mut count = 0;
    session::for_each_message_on_branch(path, |message| {
        count += 1;
        writer.message(&message);
    })?;
    writer.finish()?;
    Ok(count)
}

/// Renders messages one at a time into `out`: each piece is redacted and written as it is
/// made. A tool call is written when its result comes (the next messages), with it.
struct Writer<'a, W: Write> {
    out: W,
    format: Format,
    redactor: &'a agent_core::Redactor,
    /// The tool calls of the last assistant message still waiting for their results.
    pending: Vec<ToolCall>,
    /// An assistant section is open (HTML): its tool calls go inside it.
    open: bool,
    error: Option<std::io::Error>,
}

impl<'a, W: Write> Writer<'a, W> {
    fn new(out: W, format: Format, title: &str, redactor: &'a agent_core::Redactor) -> Self {
        let mut writer = Self {
            out,
            format,
            redactor,
            pending: Vec::new(),
            open: false,
            error: None,
        };
        let head = match format {
            Format::Html => html_head(title),
            Format::Md => format!("# {title}\n"),
        };
        writer.put(&head);
        writer
    }

    fn put(&mut self, text: &str) {
        if self.error.is_some() || text.is_empty() {
            return;
        }
        let clean = self.redactor.text(text);
        let bytes = clean.as_deref().unwrap_or(text).as_bytes();
        if let Err(err) = self.out.write_all(bytes) {
            self.error = Some(err);
        }
    }

    fn message(&mut self, message: &AgentMessage) {
        // Keys out of the texts before they are rendered: highlighting could split one across
        // elements, where the redaction of the written piece would not see it whole.
        let redacted = self.redacted(message);
        let message = redacted.as_ref().unwrap_or(message);
        if let AgentMessage::ToolResult(result) = message {
            if let Some(i) = self
                .pending
                .iter()
                .position(|c| c.id == result.tool_call_id)
            {
                let call = self.pending.remove(i);
                let piece = match self.format {
                    Format::Html => tool_html(&call, Some(result)),
                    Format::Md => tool_md(&call, Some(result)),
                };
                self.put(&piece);
            }
            return;
        }
        if matches!(message, AgentMessage::Notice(_)) {
            return;
        }
        self.close();
        let piece = match self.format {
            Format::Html => {
                self.open = matches!(message, AgentMessage::Assistant(_));
                html_message(message)
            }
            Format::Md => md_message(message),
        };
        self.put(&piece);
        if let AgentMessage::Assistant(assistant) = message {
            self.pending = assistant
                .content
                .iter()
                .filter_map(|b| match b {
                    AssistantContent::ToolCall(call) => Some(call.clone()),
                    _ => None,
                })
                .collect();
        }
    }

    /// `message` with the keys the redactor knows replaced, when it holds one.
    fn redacted(&self, message: &AgentMessage) -> Option<AgentMessage> {
        if self.redactor.is_empty() {
            return None;
        }
        let mut value = serde_json::to_value(message).ok()?;
        if self.redactor.json(&mut value) == 0 {
            return None;
        }
        serde_json::from_value(value).ok()
    }

    /// Ends the open assistant message: calls that never got a result are written without.
    fn close(&mut self) {
        for call in std::mem::take(&mut self.pending) {
            let piece = match self.format {
                Format::Html => tool_html(&call, None),
                Format::Md => tool_md(&call, None),
            };
            self.put(&piece);
        }
        if std::mem::take(&mut self.open) {
            self.put("</section>\n");
        }
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.close();
        if self.format == Format::Html {
            self.put("</main></body></html>\n");
        }
        match self.error.take() {
            Some(err) => Err(err),
            None => self.out.flush(),
        }
    }
}

/// A file at `path` (its directories made; one there already is replaced), readable by its
/// owner only: what the export streams into.
pub fn create(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    platform::fs::create_private_file(path)
}

/// What a call did, in one line: its command, path or URL, else its arguments.
fn call_line(call: &ToolCall) -> String {
    for key in ["command", "path", "url", "pattern"] {
        if let Some(value) = call.arguments.get(key).and_then(|v| v.as_str()) {
            return value.to_string();
        }
    }
    call.arguments.to_string()
}

// --- markdown ---------------------------------------------------------------------------

/// One message as markdown (an assistant's tool calls come with their results).
fn md_message(message: &AgentMessage) -> String {
    let mut out = String::new();
    match message {
        AgentMessage::User(user) => {
            let _ = write!(out, "\n## You\n\n{}\n", user.plain_text());
            let images = user
                .content
                .iter()
                .filter(|c| matches!(c, UserContent::Image(_)))
                .count();
            if images > 0 {
                let _ = writeln!(out, "\n*({images} image(s) attached)*");
            }
        }
        AgentMessage::Assistant(assistant) => {
            out.push_str("\n## Assistant\n");
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text } => {
                        let _ = write!(out, "\n{}\n", text.trim_end());
                    }
                    AssistantContent::WebSearch(search) => {
                        let _ = writeln!(out, "\n*{}*\n", search_heading(search));
                        for source in &search.sources {
                            // As code: a title or URL is never markup here.
                            let line = format!("{} {}", source.title, source.url);
                            let fence = fence_for(&line);
                            let _ = writeln!(out, "- {fence} {} {fence}", line.trim());
                        }
                    }
                    _ => {}
                }
            }
        }
        AgentMessage::CompactionSummary(summary) => {
            let _ = write!(
                out,
                "\n## Earlier, summarised\n\n{}\n",
                summary.summary.trim_end()
            );
        }
        AgentMessage::ToolResult(_) | AgentMessage::Notice(_) => {}
    }
    out
}

/// A tool call and its output as markdown.
fn tool_md(call: &ToolCall, result: Option<&ToolResultMessage>) -> String {
    let line = call_line(call);
    let fence = fence_for(&line);
    let mut out = format!("\n**{}**\n\n{fence}\n{line}\n{fence}\n", call.name);
    if let Some(result) = result {
        let text = result.text();
        let fence = fence_for(&text);
        let label = if result.is_error { "error" } else { "output" };
        let _ = write!(out, "\n{label}:\n\n{fence}\n{text}\n{fence}\n");
    }
    out
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

// --- HTML -------------------------------------------------------------------------------

/// `text` safe inside an element or an attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{margin:0;background:#1e1e1e;color:#d4d4d4;font:15px/1.5 system-ui,sans-serif}
main{max-width:920px;margin:0 auto;padding:24px}
h1.title{font-size:20px;color:#9cdcfe}
section{margin:18px 0;padding:12px 16px;border-radius:8px}
section.user{background:#2a2d3a;border-left:4px solid #5fd7d7}
section.assistant{background:#252526}
.who{font-size:12px;color:#8a8a8a;text-transform:uppercase;letter-spacing:.05em}
pre{background:#1b1b1b;padding:10px;overflow:auto;border-radius:6px;white-space:pre-wrap}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
details{margin:8px 0;border:1px solid #3c3c3c;border-radius:6px;padding:4px 10px}
summary{cursor:pointer;color:#dcdcaa}
details.error summary{color:#ff8787}
details.thinking summary{color:#8a8a8a;font-style:italic}
.add{color:#87d787}.del{color:#ff8787}.hunk{color:#5fd7d7}
img{max-width:100%}
a{color:#87afff}
";

fn html_head(title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>\
         <h1 class=\"title\">{}</h1>\n",
        escape(title),
        escape(title)
    )
}

/// One message as HTML; an assistant's section is left open for its tool calls.
fn html_message(message: &AgentMessage) -> String {
    let mut out = String::new();
    match message {
        AgentMessage::User(user) => {
            out.push_str("<section class=\"user\"><div class=\"who\">You</div>");
            for content in &user.content {
                match content {
                    UserContent::Text { text } => {
                        let _ = write!(out, "<pre>{}</pre>", escape(text));
                    }
                    UserContent::Image(image) => out.push_str(&image_tag(image)),
                }
            }
            out.push_str("</section>\n");
        }
        AgentMessage::Assistant(assistant) => {
            out.push_str("<section class=\"assistant\"><div class=\"who\">Assistant</div>");
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text } => out.push_str(&markdown_html(text)),
                    AssistantContent::Thinking { thinking, .. } => {
                        let _ = write!(
                            out,
                            "<details class=\"thinking\"><summary>Thinking</summary>\
                             <pre>{}</pre></details>",
                            escape(thinking)
                        );
                    }
                    AssistantContent::ToolCall(_) => {}
                    AssistantContent::WebSearch(search) => out.push_str(&search_html(search)),
                }
            }
        }
        AgentMessage::CompactionSummary(summary) => {
            let _ = writeln!(
                out,
                "<section class=\"assistant\"><div class=\"who\">Earlier, summarised</div>{}\
                 </section>",
                markdown_html(&summary.summary)
            );
        }
        AgentMessage::ToolResult(_) | AgentMessage::Notice(_) => {}
    }
    out
}

/// An image as a `data:` URL, for the image types browsers show (anything else, which a
/// `data:` URL could turn into a page, is named instead).
fn image_tag(image: &llm::ImageContent) -> String {
    let mime = image.mime_type.to_ascii_lowercase();
    if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&mime.as_str()) {
        return format!("<p>[an image of type {}]</p>", escape(&image.mime_type));
    }
    // A session's images are stored beside it: read one at a time, as it is written out.
    let data = match image.base64() {
        Ok(data) => data,
        Err(why) => return format!("<p>[{}]</p>", escape(&why)),
    };
    // Base64 has no character that needs escaping; anything else is not base64.
    if !data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return "<p>[an image that is not valid base64]</p>".into();
    }
    format!("<img alt=\"attached image\" src=\"data:{mime};base64,{data}\">")
}

/// What a web search block is: its query, or the sources an answer cited.
fn search_heading(search: &llm::WebSearch) -> String {
    match (&search.error, search.query.is_empty()) {
        (Some(error), _) => format!("Web search \"{}\" failed: {error}", search.query),
        (None, true) => "Sources cited".into(),
        (None, false) => format!("Searched the web: \"{}\"", search.query),
    }
}

/// A web search of the provider's, with its pages as links (only http and https ones link).
fn search_html(search: &llm::WebSearch) -> String {
    let mut out = format!(
        "<details class=\"tool\"><summary>{}</summary><ul>",
        escape(&search_heading(search))
    );
    for source in &search.sources {
        let title = if source.title.is_empty() {
            &source.url
        } else {
            &source.title
        };
        let web = source.url.starts_with("https://") || source.url.starts_with("http://");
        if web {
            let _ = write!(
                out,
                "<li><a href=\"{}\" rel=\"noreferrer\">{}</a></li>",
                escape(&source.url),
                escape(title)
            );
        } else {
            let _ = write!(out, "<li>{} {}</li>", escape(title), escape(&source.url));
        }
    }
    out.push_str("</ul></details>");
    out
}

/// A tool call, folded, with its output (a diff coloured by line).
fn tool_html(call: &ToolCall, result: Option<&ToolResultMessage>) -> String {
    let class = if result.is_some_and(|r| r.is_error) {
        "tool error"
    } else {
        "tool"
    };
    let mut out = format!(
        "<details class=\"{class}\"><summary><code>{}</code> {}</summary>",
        escape(&call.name),
        escape(&first_line(&call_line(call), 160))
    );
    match result {
        Some(result) => {
            let diff = result
                .details
                .as_ref()
                .and_then(|d| d.get("diff"))
                .and_then(|d| d.as_str());
            match diff {
                Some(diff) => out.push_str(&diff_html(diff)),
                None => {
                    let _ = write!(out, "<pre>{}</pre>", escape(&result.text()));
                }
            }
            for content in &result.content {
                if let UserContent::Image(image) = content {
                    out.push_str(&image_tag(image));
                }
            }
        }
        None => out.push_str("<p>(no result)</p>"),
    }
    out.push_str("</details>");
    out
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

fn diff_html(diff: &str) -> String {
    let mut out = String::from("<pre>");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            ""
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            ""
        };
        if class.is_empty() {
            let _ = writeln!(out, "{}", escape(line));
        } else {
            let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(line));
        }
    }
    out.push_str("</pre>");
    out
}

/// Markdown as HTML. The model's raw HTML is shown as text, never as markup; code blocks are
/// highlighted.
fn markdown_html(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut events = Vec::new();
    let mut code: Option<(String, String)> = None;
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, body)) = code.take() {
                    events.push(Event::Html(highlight(&lang, &body).into()));
                }
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, body)) = &mut code {
                    body.push_str(&t);
                }
            }
            // Raw HTML from the model: text, so nothing it carries can run or load.
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            // Links only to the web: a `javascript:` URL (blocked by the policy anyway) is
            // dropped.
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let safe = dest_url.starts_with("http://")
                    || dest_url.starts_with("https://")
                    || dest_url.starts_with('#');
                let dest_url = if safe { dest_url } else { "#".into() };
                events.push(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }));
            }
            // An image in the model's markdown would be fetched from anywhere: its text only.
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Text(format!("[image: {dest_url}] ").into()));
            }
            Event::End(TagEnd::Image) => {}
            other => events.push(other),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// A code block, highlighted with the TUI's dark code theme (inline styles), or escaped when
/// the language is unknown.
fn highlight(lang: &str, body: &str) -> String {
    use std::sync::OnceLock;
    use syntect::highlighting::ThemeSet;
    use syntect::parsing::SyntaxSet;
    static ASSETS: OnceLock<(SyntaxSet, syntect::highlighting::Theme)> = OnceLock::new();
    let (syntaxes, theme) = ASSETS.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        (SyntaxSet::load_defaults_newlines(), theme)
    });
    let token = lang.split([',', ' ']).next().unwrap_or_default().trim();
    let syntax = (!token.is_empty())
        .then(|| {
            syntaxes
                .find_syntax_by_token(token)
                .or_else(|| syntaxes.find_syntax_by_extension(token))
        })
        .flatten();
    match syntax
        .and_then(|s| syntect::html::highlighted_html_for_string(body, syntaxes, s, theme).ok())
    {
        Some(html) => html,
        None => format!("<pre><code>{}</code></pre>", escape(body)),
    }
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
