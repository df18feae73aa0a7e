//! One tool of a server as an agent-core [`Tool`]: `mcp__server__tool`, its schema as the
//! server gave it (the loop validates arguments against it like any tool's), its result
//! mapped to text and images, cancelled with the protocol's `notifications/cancelled` when
//! the run is aborted.

use std::time::Duration;

use agent_core::{Concurrency, Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use llm::{ImageContent, UserContent};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

/// Longest description offered to the model; servers have sent whole manuals.
const MAX_DESCRIPTION: usize = 4_000;

pub(crate) struct McpTool {
    /// `mcp__server__tool`.
    name: String,
    server: String,
    /// The name the server knows it by.
    remote: String,
    description: String,
    parameters: Value,
    read_only: bool,
    timeout: Duration,
    peer: Peer<RoleClient>,
}

/// Longest tool name every provider accepts (OpenAI's limit).
const MAX_NAME: usize = 64;

/// The name the model sees: `mcp__server__tool`, with characters providers refuse (servers
/// use `.` and `/`) replaced by `_`, and a long name cut with a hash of the whole kept, so it
/// stays unique. A name providers refuse would fail every request, not just this tool.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{server}__{tool}");
    let mut name: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() > MAX_NAME || name != full {
        // The hash of the original keeps apart two tools that differ only in what was
        // replaced or cut.
        let hash = format!("{:08x}", fnv1a(full.as_bytes()) as u32);
        name.truncate(MAX_NAME - hash.len() - 1);
        name.push('_');
        name.push_str(&hash);
    }
    name
}

/// FNV-1a: a stable hash (the same name in every session), no dependency.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The tool's input schema as the model is sent it: an object schema (`type` added where a
/// server left it out). `Err` says why the tool cannot be offered: MCP passes arguments as an
/// object, and a provider refuses a request whose tool schema is anything else, which would
/// fail every request of the session, not just this tool.
fn input_schema(tool: &rmcp::model::Tool) -> Result<Value, String> {
    let mut schema = Value::Object(tool.input_schema.as_ref().clone());
    match schema.get("type") {
        None => schema["type"] = json!("object"),
        Some(Value::String(t)) if t == "object" => {}
        // `["object", "null"]`: arguments are always sent, as an object.
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
            schema["type"] = json!("object")
        }
        Some(other) => {
            return Err(format!(
                "`{}`: its input schema is of type {other}, not an object, which no provider \
                 accepts",
                tool.name
            ));
        }
    }
    Ok(schema)
}

impl McpTool {
    /// The tool as the model is offered it; `Err` says why it cannot be.
    pub fn new(
        server: &str,
        tool: &rmcp::model::Tool,
        timeout: Duration,
        peer: Peer<RoleClient>,
    ) -> Result<Self, String> {
        let parameters = input_schema(tool)?;
        let mut description = tool.description.as_deref().unwrap_or("").trim().to_string();
        if description.len() > MAX_DESCRIPTION {
            let mut end = MAX_DESCRIPTION;
            while !description.is_char_boundary(end) {
                end -= 1;
            }
            description.truncate(end);
            description.push('…');
        }
        if description.is_empty() {
            description = format!("Tool `{}` of the MCP server `{server}`.", tool.name);
        }
        Ok(Self {
            name: tool_name(server, &tool.name),
            server: server.to_string(),
            remote: tool.name.to_string(),
            description,
            parameters,
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            timeout,
            peer,
        })
    }

    /// Estimated tokens of the definition the model is sent (about 4 characters a token).
    pub fn tokens(&self) -> u64 {
        let text = self.name.len() + self.description.len() + self.parameters.to_string().len();
        (text as u64).div_ceil(4)
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    /// A server's read-only hint is the only thing that lets its calls run beside others.
    fn concurrency(&self) -> Concurrency {
        if self.read_only {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        }
    }

    async fn execute(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        // Dropping the call (abort, timeout) sends `notifications/cancelled` to the server.
        let call = tokio::time::timeout(self.timeout, self.peer.call_tool(params));
        let outcome = tokio::select! {
            outcome = call => outcome,
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError("The call was cancelled.".into()));
            }
        };
        match outcome {
            Err(_) => Err(ToolError(format!(
                "The MCP server `{}` did not answer within {} s (tool_timeout_secs); the call \
                 was cancelled.",
                self.server,
                self.timeout.as_secs_f64()
            ))),
            Ok(Err(err)) => Err(ToolError(format!(
                "The MCP server `{}` failed the call: {err}",
                self.server
            ))),
            Ok(Ok(result)) => Ok(map_result(result)),
        }
    }
}

/// Text and images go to the model; audio and resources as a line saying what they were;
/// structured content as JSON when the server sent no text for it.
pub(crate) fn map_result(result: CallToolResult) -> ToolOutput {
    let mut content = Vec::new();
    for block in result.content {
        let item = match block {
            ContentBlock::Text(text) => UserContent::Text { text: text.text },
            ContentBlock::Image(image) => {
                UserContent::Image(ImageContent::new(image.data, image.mime_type))
            }
            ContentBlock::Audio(audio) => UserContent::Text {
                text: format!("[audio ({}) left out]", audio.mime_type),
            },
            ContentBlock::Resource(embedded) => UserContent::Text {
                text: match embedded.resource {
                    ResourceContents::TextResourceContents { uri, text, .. } => {
                        format!("[{uri}]\n{text}")
                    }
                    ResourceContents::BlobResourceContents { uri, .. } => {
                        format!("[binary resource {uri} left out]")
                    }
                    #[allow(unreachable_patterns)]
                    _ => "[a resource of an unknown kind]".to_string(),
                },
            },
            ContentBlock::ResourceLink(link) => UserContent::Text {
                text: format!("[resource link: {}]", link.uri),
            },
            #[allow(unreachable_patterns)]
            _ => UserContent::Text {
                text: "[content of an unknown kind left out]".into(),
            },
        };
        content.push(item);
    }
    let has_text = content
        .iter()
        .any(|c| matches!(c, UserContent::Text { .. }));
    if let Some(structured) = &result.structured_content
        && !has_text
    {
        content.push(UserContent::Text {
            text: structured.to_string(),
        });
    }
    if content.is_empty() {
        content.push(UserContent::Text {
            text: "(no output)".into(),
        });
    }
    ToolOutput {
        content,
        details: result
            .structured_content
            .map(|s| json!({ "structured": s })),
        is_error: result.is_error == Some(true),
        terminate: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_for_every_provider() {
        assert_eq!(tool_name("gh", "create_issue"), "mcp__gh__create_issue");
        let dotted = tool_name("fs", "files.read");
        assert!(dotted.starts_with("mcp__fs__files_read_"), "{dotted}");
        assert_ne!(dotted, tool_name("fs", "files_read"));
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        for name in [dotted, long] {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
        assert_eq!(tool_name("fs", "files.read"), tool_name("fs", "files.read"));
    }

    fn tool_with(schema: Value) -> rmcp::model::Tool {
        let Value::Object(map) = schema else {
            unreachable!()
        };
        rmcp::model::Tool::new("t", "a tool", std::sync::Arc::new(map))
    }

    #[test]
    fn only_object_schemas_are_offered() {
        let typed = input_schema(&tool_with(json!({"properties": {}}))).unwrap();
        assert_eq!(typed["type"], "object");
        let nullable = input_schema(&tool_with(json!({"type": ["object", "null"]}))).unwrap();
        assert_eq!(nullable["type"], "object");
        let array = input_schema(&tool_with(json!({"type": "array", "items": {}}))).unwrap_err();
        assert!(
            array.contains("`t`") && array.contains("\"array\""),
            "{array}"
        );
    }

    #[test]
    fn results_keep_text_images_and_errors() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        result.structured_content = Some(json!({"n": 1}));
        let output = map_result(result);
        assert_eq!(output.plain_text(), "hello");
        assert!(matches!(&output.content[1], UserContent::Image(i) if i.mime_type == "image/png"));
        assert_eq!(output.details, Some(json!({"structured": {"n": 1}})));
        assert!(!output.is_error);

        let failed = map_result(CallToolResult::error(vec![ContentBlock::text("nope")]));
        assert!(failed.is_error);
        assert_eq!(failed.plain_text(), "nope");

        let mut only_structured = CallToolResult::success(Vec::new());
        only_structured.structured_content = Some(json!({"a": [1]}));
        assert_eq!(map_result(only_structured).plain_text(), r#"{"a":[1]}"#);
    }
}
