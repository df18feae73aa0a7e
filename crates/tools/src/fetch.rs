//! `fetch`: one web page (or text file) by URL, as markdown for the model.
//!
//! It runs in the agent, not in the command sandbox, so the agent's own rules govern it: the
//! approval guard asks before a host the user has not allowed (`Effect::Fetches`), and this
//! tool refuses private and loopback addresses — also a name that resolves to one, checked on
//! the addresses the connection then uses, so a rebinding DNS answer cannot slip through —
//! unless the user allowed that host by name. Redirects are followed on the same host only (up
//! to five): a redirect to another host is reported for the model to fetch, which the guard
//! then asks about. What reaches the model is capped like every tool's output.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::{Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::args::str_arg;
use crate::truncate::{MAX_BYTES, MAX_LINES};

/// Most redirects followed (on the same host).
const MAX_REDIRECTS: usize = 5;
/// Most bytes read of a body: a page past it is cut, not read to its end.
const MAX_BODY: usize = 5 * 1024 * 1024;
/// How long connecting may take, and the whole fetch.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const TOTAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the user allowed a host by name (a `web:` rule): then it may be a private address.
pub type HostAllowed = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How the fetch tool is made.
#[derive(Clone)]
pub struct FetchOptions {
    pub host_allowed: HostAllowed,
    /// How long a whole fetch may take.
    pub timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            host_allowed: Arc::new(|_| false),
            timeout: TOTAL_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for FetchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FetchOptions")
    }
}

pub struct FetchTool {
    options: FetchOptions,
    /// Built at the first fetch (its TLS setup is not free).
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl FetchTool {
    pub fn new(options: FetchOptions) -> Self {
        Self {
            options,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                let resolver = Arc::new(PublicOnly {
                    host_allowed: self.options.host_allowed.clone(),
                });
                llm::http_client_builder()
                    // No proxy from the environment: through one, the proxy would resolve
                    // the target, and the check of its addresses would be skipped.
                    .no_proxy()
                    .dns_resolver(resolver)
                    // Redirects are followed here, one hop at a time, each checked.
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(CONNECT_TIMEOUT)
                    .user_agent(concat!("coding-agent/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(ToolError)
    }
}

/// Whether an address is one a fetch may not reach unless the user allowed its host at such
/// an address: anything but the public internet — loopback, private, link-local (cloud
/// metadata), carrier-grade NAT, "this network", benchmarking, reserved, multicast, and the
/// IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (b & 0xc0) == 64)
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b & 0xfe) == 18)
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                is_private(IpAddr::V4(std::net::Ipv4Addr::new(
                    (hi >> 8) as u8,
                    hi as u8,
                    (lo >> 8) as u8,
                    lo as u8,
                )))
            };
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| is_private(IpAddr::V4(v4)))
                // IPv4-compatible (::a.b.c.d).
                || (s[..6] == [0; 6] && embedded(s[6], s[7]))
                // NAT64 (64:ff9b::/96) reaches the IPv4 address it carries.
                || (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && embedded(s[6], s[7]))
                // 6to4 (2002::/16) carries one in bits 16-48.
                || (s[0] == 0x2002 && embedded(s[1], s[2]))
        }
    }
}

/// Resolves names as the system does, then keeps only public addresses (all of them when the
/// user allowed the host by name). The connection uses what this returns: no second lookup.
struct PublicOnly {
    host_allowed: HostAllowed,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let allowed = (self.host_allowed)(&host);
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allowed || !is_private(a.ip()))
                .collect();
            if kept.is_empty() && !found.is_empty() {
                return Err(private_refusal(&host, found[0].ip()).into());
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

fn private_refusal(host: &str, ip: IpAddr) -> String {
    format!(
        "{host} is a private or loopback address ({ip}): fetch does not reach those unless the \
         user allowed {host} by name (an \"always allow\" for it)"
    )
}

#[async_trait]
impl Tool for FetchTool {
    fn name(&self) -> &str {
        "fetch"
    }

    fn view(&self) -> ToolView {
        ToolView::Plain
    }

    fn description(&self) -> &str {
        "Fetch a web page or text file by URL (http or https) and return it as markdown \
         (scripts and styles dropped). Follows up to 5 redirects on the same host; a redirect \
         to another host is reported for you to fetch. Private and loopback addresses are \
         refused unless the user allowed that host. Output is capped at 2000 lines or 50 KB \
         (the start of the page is kept); 30 s at most."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http(s) URL to fetch"}
            },
            "required": ["url"]
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let asked = str_arg(&args, "url")
            .ok_or_else(|| ToolError("fetch needs `url`".into()))?
            .trim()
            .to_string();
        let client = self.client()?;
        let work = fetch(&client, &asked, &self.options.host_allowed);
        let limit = self.options.timeout;
        tokio::select! {
            result = tokio::time::timeout(limit, work) => match result {
                Ok(result) => result.map(ToolOutput::text).map_err(ToolError),
                Err(_) => Err(ToolError(format!(
                    "{asked} did not finish within {}s", limit.as_secs_f32()
                ))),
            },
            _ = ctx.cancel.cancelled() => Err(ToolError("aborted".into())),
        }
    }
}

/// A URL the tool may ask for: http(s), and not a private address written as an IP unless
/// its host is allowed (a name is checked where it is resolved).
fn checked(url: &str, host_allowed: &HostAllowed) -> Result<url::Url, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {url} ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs are fetched, not {}:",
            parsed.scheme()
        ));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?;
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>()
        && is_private(ip)
        && !host_allowed(host)
    {
        return Err(private_refusal(host, ip));
    }
    Ok(parsed)
}

/// The host of `url`, lowercased (what rules name).
pub fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    parsed.host_str().map(str::to_ascii_lowercase)
}

async fn fetch(
    client: &reqwest::Client,
    asked: &str,
    host_allowed: &HostAllowed,
) -> Result<String, String> {
    let mut url = checked(asked, host_allowed)?;
    let mut hops = 0;
    let response = loop {
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("fetching {url} failed: {}", llm::error_chain(&e)))?;
        if !response.status().is_redirection() {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
        else {
            break response;
        };
        let next = url
            .join(location)
            .map_err(|e| format!("{url} redirected to a bad location {location:?}: {e}"))?;
        if next.host_str() != url.host_str() {
            return Ok(format!(
                "{url} answered {} and redirects to another host: {next}\nFetch that URL to \
                 follow it (the user may be asked about the new host).",
                response.status()
            ));
        }
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(format!(
                "{asked} redirected more than {MAX_REDIRECTS} times (last to {next}): a \
                 redirect loop?"
            ));
        }
        url = checked(next.as_str(), host_allowed)?;
    };
    let status = response.status();
    let final_url = response.url().to_string();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (body, complete) = read_capped(response).await?;
    let text = decode(&body, &content_type);
    let (kind, content) = if content_type.contains("html") || looks_like_html(&text) {
        ("HTML as markdown", to_markdown(text).await)
    } else if is_text(&content_type, &body) {
        ("text", text)
    } else {
        return Ok(format!(
            "GET {final_url} → {status} · {content_type} · {} bytes: not text, nothing to show.",
            body.len()
        ));
    };
    let mut head = format!(
        "GET {final_url} → {status} · {}{} bytes · {kind}",
        body.len(),
        if complete { "" } else { "+ (body cut at 5 MB)" }
    );
    if hops > 0 {
        head.push_str(&format!(" · after {hops} redirect(s) from {asked}"));
    }
    let (shown, cut) = head_of(&content, MAX_LINES, MAX_BYTES);
    let mut out = format!("{head}\n\n{shown}");
    if cut {
        out.push_str(&format!(
            "\n\n[cut: the first {} of {} bytes of the page as markdown are shown]",
            shown.len(),
            content.len()
        ));
    }
    if !status.is_success() {
        out.push_str(&format!("\n\n(the server answered {status})"));
    }
    Ok(out)
}

/// The body, at most [`MAX_BODY`] bytes of it, and whether that was all.
async fn read_capped(mut response: reqwest::Response) -> Result<(Vec<u8>, bool), String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        format!(
            "reading {} failed: {}",
            response.url(),
            llm::error_chain(&e)
        )
    })? {
        let room = MAX_BODY - body.len();
        if chunk.len() >= room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// The body as text, in the charset the server named (UTF-8 when none; invalid bytes
/// replaced).
fn decode(body: &[u8], content_type: &str) -> String {
    let label = content_type
        .split(';')
        .filter_map(|part| part.trim().strip_prefix("charset="))
        .next()
        .map(|c| c.trim_matches('"'));
    let encoding = label
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

fn looks_like_html(text: &str) -> bool {
    let start = text
        .trim_start()
        .get(..15)
        .unwrap_or("")
        .to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

fn is_text(content_type: &str, body: &[u8]) -> bool {
    content_type.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "toml", "markdown"]
            .iter()
            .any(|t| content_type.contains(t))
        || (content_type.is_empty() && !body.iter().take(8192).any(|&b| b == 0))
}

/// Deepest nesting of elements converted to markdown: the converter recurses once per level,
/// and a page of ten thousand nested `<div>`s would overflow a stack.
const MAX_NESTING: usize = 512;

/// HTML as markdown, without what a reader does not see (scripts, styles, forms' machinery).
/// Converted on a thread of its own with a large stack (a hostile page must not take the agent
/// down); a page nested deeper than [`MAX_NESTING`] is shown as its text without the tags.
async fn to_markdown(html: String) -> String {
    if nesting(&html) > MAX_NESTING {
        return strip_tags(&html);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("fetch-markdown".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            let converter = htmd::HtmlToMarkdown::builder()
                .skip_tags(vec![
                    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "head",
                ])
                .build();
            let _ = tx.send(
                converter
                    .convert(&html)
                    .unwrap_or_else(|_| strip_tags(&html)),
            );
        });
    match spawned {
        Ok(_) => rx.await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// How deep `html`'s elements nest, roughly (void elements and self-closing tags left out):
/// enough to tell a document from a bomb.
fn nesting(html: &str) -> usize {
    const VOID: [&str; 14] = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr",
    ];
    let (mut depth, mut deepest) = (0usize, 0usize);
    let bytes = html.as_bytes();
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'<') {
        i += at + 1;
        let Some(&next) = bytes.get(i) else { break };
        let end = bytes[i..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(bytes.len(), |e| i + e);
        let tag = &html[i..end];
        if next == b'/' {
            depth = depth.saturating_sub(1);
        } else if next.is_ascii_alphabetic() && !tag.ends_with('/') {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if !VOID.contains(&name.as_str()) {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
        i = end.min(bytes.len());
    }
    deepest
}

/// `html` without its tags (and without what is inside `<script>` and `<style>`).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let lower = rest.get(..8).unwrap_or(rest).to_ascii_lowercase();
        let skip_to = if lower.starts_with("<script") {
            "</script>"
        } else if lower.starts_with("<style") {
            "</style>"
        } else {
            ">"
        };
        match rest.to_ascii_lowercase().find(skip_to) {
            Some(end) => rest = &rest[end + skip_to.len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// The longest prefix of `text` within both limits, ending at a line end; and whether it was
/// cut (a page's start is what matters; a command's end is).
fn head_of(text: &str, max_lines: usize, max_bytes: usize) -> (&str, bool) {
    let mut end = 0;
    for (lines, line) in text.split_inclusive('\n').enumerate() {
        if lines == max_lines || end + line.len() > max_bytes {
            if end == 0 {
                // One line longer than the cap: cut it on a character boundary.
                let mut at = max_bytes.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                return (&text[..at], true);
            }
            return (&text[..end], true);
        }
        end += line.len();
    }
    (text, false)
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
