//! A real MCP server over stdio for the tests, built on rmcp's server side. Flags choose how
//! it misbehaves:
//!
//! - `--delay-ms N`: sleeps before answering anything (a slow start);
//! - `--fail-start MESSAGE`: prints MESSAGE on stderr and exits 1 at once;
//! - `--many N`: also offers N tools with large definitions (`big_0` …);
//! - `--http`: serves streamable HTTP on 127.0.0.1 instead of stdio, and prints
//!   `listening on http://ADDR/mcp` on stdout;
//! - `--expect-token TOKEN` (with `--http`): answers 401 unless `Authorization: Bearer TOKEN`
//!   and `X-Team: infra` come with the request;
//! - `--odd`: also offers `huge` (an answer of `mb` megabytes of text) and `list_input` (an
//!   input schema of type `array`, which no provider accepts);
//! - `--marker DIR`: writes `DIR/hanging` when `hang` starts and `DIR/cancelled` when the
//!   client cancels it (so a test sees the protocol's cancellation arrive).
//!
//! Tools: `echo` (read-only: text and structured content), `add`, `fail` (an error result),
//! `hang` (until cancelled), `crash` (the process exits), `spawn_sleeper` (a grandchild that outlives the call),
//! `write_file` (a file anywhere: is
//! the server confined?), `image` (an image block).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A 1×1 PNG.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Clone)]
struct TestServer {
    many: usize,
    odd: bool,
    marker: Option<PathBuf>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let text_arg = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what to echo"}},
            "required": ["text"]
        });
        let mut tools = vec![
            Tool::new("echo", "Echoes the text back", schema(text_arg))
                .with_annotations(ToolAnnotations::new().read_only(true)),
            Tool::new(
                "add",
                "Adds two integers",
                schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                })),
            ),
            Tool::new("fail", "Always fails", schema(json!({"type": "object"}))),
            Tool::new(
                "hang",
                "Never answers until cancelled",
                schema(json!({"type": "object"})),
            ),
            Tool::new(
                "crash",
                "Exits the server",
                schema(json!({"type": "object"})),
            ),
            Tool::new(
                "spawn_sleeper",
                "Starts a long sleep in the background and returns its pid",
                schema(json!({"type": "object"})),
            ),
            Tool::new(
                "write_file",
                "Writes text to a path (to see whether the sandbox lets it)",
                schema(json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path"]
                })),
            ),
            Tool::new(
                "getenv",
                "Returns the value of an environment variable of the server, or (unset)",
                schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                })),
            ),
            Tool::new(
                "image",
                "Returns a picture",
                schema(json!({"type": "object"})),
            ),
        ];
        if self.odd {
            tools.push(Tool::new(
                "huge",
                "Answers with `mb` megabytes of text",
                schema(json!({
                    "type": "object",
                    "properties": {"mb": {"type": "integer"}},
                    "required": ["mb"]
                })),
            ));
            tools.push(Tool::new(
                "list_input",
                "Takes a list",
                schema(json!({"type": "array", "items": {"type": "string"}})),
            ));
        }
        // About 2,000 characters each: 200 of them are ~100k tokens of definitions.
        let filler = "This tool does one narrow thing among many similar ones. ".repeat(35);
        for i in 0..self.many {
            tools.push(Tool::new(
                format!("big_{i}"),
                format!("Big tool number {i} (topic-{i}). {filler}"),
                schema(json!({
                    "type": "object",
                    "properties": {"value": {"type": "string", "description": "any value"}}
                })),
            ));
        }
        tools
    }

    fn mark(&self, name: &str) {
        if let Some(dir) = &self.marker {
            let _ = std::fs::write(dir.join(name), std::process::id().to_string());
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))]);
                result.structured_content = Some(json!({"echoed": text}));
                result
            }
            "add" => {
                let a = args.get("a").and_then(Value::as_i64).unwrap_or(0);
                let b = args.get("b").and_then(Value::as_i64).unwrap_or(0);
                CallToolResult::success(vec![ContentBlock::text(format!("{}", a + b))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]),
            "hang" => {
                self.mark("hanging");
                context.ct.cancelled().await;
                self.mark("cancelled");
                return Err(ErrorData::internal_error("cancelled", None));
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "spawn_sleeper" => match std::process::Command::new("sleep").arg("300").spawn() {
                Ok(child) => {
                    let pid = child.id();
                    // Not waited for: it outlives this call on purpose.
                    std::mem::forget(child);
                    CallToolResult::success(vec![ContentBlock::text(pid.to_string())])
                }
                Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            },
            "write_file" => {
                let path = args.get("path").and_then(Value::as_str).unwrap_or("");
                let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                match std::fs::write(path, text) {
                    Ok(()) => CallToolResult::success(vec![ContentBlock::text("written")]),
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "cannot write {path}: {e}"
                    ))]),
                }
            }
            "getenv" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("");
                let value = std::env::var(name).unwrap_or_else(|_| "(unset)".into());
                CallToolResult::success(vec![ContentBlock::text(value)])
            }
            "image" => CallToolResult::success(vec![
                ContentBlock::text("a pixel"),
                ContentBlock::image(PIXEL, "image/png"),
            ]),
            "huge" => {
                let mb = args.get("mb").and_then(Value::as_u64).unwrap_or(1) as usize;
                CallToolResult::success(vec![ContentBlock::text("x".repeat(mb << 20))])
            }
            name if name.starts_with("big_") => {
                CallToolResult::success(vec![ContentBlock::text(format!("{name} ran"))])
            }
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }

    async fn on_cancelled(
        &self,
        _notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.mark("cancel-notification");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut server = TestServer {
        many: 0,
        odd: false,
        marker: None,
    };
    let mut http = false;
    let mut token = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--http" {
            http = true;
            continue;
        }
        if arg == "--odd" {
            server.odd = true;
            continue;
        }
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--delay-ms" => {
                let ms = value.parse().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            "--fail-start" => {
                eprintln!("{value}");
                std::process::exit(1);
            }
            "--many" => server.many = value.parse().unwrap_or(0),
            "--marker" => server.marker = Some(PathBuf::from(value)),
            "--expect-token" => token = Some(value),
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    if http {
        serve_http(server, token).await;
        return;
    }
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(err) => {
            eprintln!("mcp-test-server: {err}");
            std::process::exit(1);
        }
    }
}

/// Streamable HTTP on a free port of 127.0.0.1, until killed.
async fn serve_http(server: TestServer, token: Option<String>) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let service = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("listening on http://{}/mcp", listener.local_addr().unwrap());
    let token = Arc::new(token);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (service, token) = (service.clone(), token.clone());
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let (service, token) = (service.clone(), token.clone());
                    async move {
                        if let Some(token) = token.as_ref() {
                            let header = |name: &str| {
                                request
                                    .headers()
                                    .get(name)
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_string()
                            };
                            if header("authorization") != format!("Bearer {token}")
                                || header("x-team") != "infra"
                            {
                                let mut denied = hyper::Response::new(
                                    http_body_util::Full::new(hyper::body::Bytes::from(
                                        "unauthorized",
                                    ))
                                    .map_err(|never| match never {})
                                    .boxed(),
                                );
                                *denied.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                return Ok::<_, std::convert::Infallible>(denied);
                            }
                        }
                        Ok(service.handle(request).await.map(|body| body.boxed()))
                    }
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}
