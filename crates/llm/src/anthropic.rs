//! Anthropic messages streaming client (`POST {base_url}/messages`).
//!
//! Thinking blocks are replayed with their signatures (the API rejects a tool-use turn whose
//! thinking was altered), and `cache_control` marks the system prompt and the newest user turn
//! so that a long session re-reads its prefix from the prompt cache.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::http::{Failure, WireRequest};
use crate::parse::{self, Flow, WireParser};
use crate::provider::ToolChoice;
use crate::{
    AssistantBuilder, AssistantContent, Context, Message, Model, StopReason, StreamEvent,
    StreamOptions, ThinkingLevel, Usage, UserContent,
};

/// The API version this client speaks.
const VERSION: &str = "2023-06-01";

/// The request for one call: `POST {base_url}/messages` with the version and key headers.
pub(crate) fn request(model: &Model, context: &Context, options: &StreamOptions) -> WireRequest {
    let url = format!("{}/messages", model.base_url.trim_end_matches('/'));
    let mut request = WireRequest::post(url, request_body(model, context, options), options);
    request.header("anthropic-version", VERSION.to_string());
    if let Some(key) = &options.api_key {
        request.header("x-api-key", key.clone());
    }
    request
}

/// The headers a request with `key` carries.
pub(crate) fn key_headers(key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-api-key", key.to_string()),
        ("anthropic-version", VERSION.to_string()),
    ]
}

/// State carried across the events of one message.
pub(crate) struct Parser {
    provider: String,
    /// Server content-block index → our index, for tool calls still streaming.
    calls: HashMap<u64, usize>,
    /// Server content-block index → (id, input JSON so far) of the provider's own searches.
    searches: HashMap<u64, (String, String)>,
    /// A finished search's id → its query, until its results come.
    queries: HashMap<String, String>,
    usage: Usage,
    stop_reason: Option<String>,
}

impl Parser {
    pub(crate) fn new(provider: String) -> Self {
        Self {
            provider,
            calls: HashMap::new(),
            searches: HashMap::new(),
            queries: HashMap::new(),
            usage: Usage::default(),
            stop_reason: None,
        }
    }

    fn block_start(
        &mut self,
        event: &Value,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) {
        let block = &event["content_block"];
        match block["type"].as_str() {
            Some("tool_use") => {
                let id = block["id"].as_str().unwrap_or_default();
                let name = block["name"].as_str().unwrap_or_default();
                let (index, start) = builder.toolcall_start(id, name);
                out.push(start);
                self.calls
                    .insert(event["index"].as_u64().unwrap_or(0), index);
            }
            // The provider's own search (`--search`): not a tool call of ours.
            Some("server_tool_use") => {
                let id = block["id"].as_str().unwrap_or_default().to_string();
                let input = match &block["input"] {
                    Value::Object(map) if !map.is_empty() => block["input"].to_string(),
                    _ => String::new(),
                };
                self.searches
                    .insert(event["index"].as_u64().unwrap_or(0), (id, input));
            }
            Some("web_search_tool_result") => {
                let id = block["tool_use_id"].as_str().unwrap_or_default();
                let query = self.queries.remove(id).unwrap_or_default();
                out.push(builder.web_search(search_results(query, &block["content"])));
            }
            Some("text") => push_text(block["text"].as_str(), builder, out),
            Some("thinking") => {
                if let Some(text) = block["thinking"].as_str().filter(|t| !t.is_empty()) {
                    out.push(builder.thinking_delta(text));
                }
            }
            _ => {}
        }
    }

    fn block_delta(
        &mut self,
        event: &Value,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) {
        let delta = &event["delta"];
        match delta["type"].as_str() {
            Some("text_delta") => push_text(delta["text"].as_str(), builder, out),
            Some("thinking_delta") => {
                if let Some(text) = delta["thinking"].as_str().filter(|t| !t.is_empty()) {
                    out.push(builder.thinking_delta(text));
                }
            }
            Some("signature_delta") => {
                if let Some(signature) = delta["signature"].as_str() {
                    out.push(builder.thinking_signature(signature));
                }
            }
            Some("input_json_delta") => {
                let at = event["index"].as_u64().unwrap_or(0);
                let json = delta["partial_json"].as_str().filter(|j| !j.is_empty());
                if let (Some((_, input)), Some(json)) = (self.searches.get_mut(&at), json) {
                    input.push_str(json);
                    return;
                }
                let index = self.calls.get(&at);
                if let (Some(&index), Some(json)) = (index, json) {
                    out.push(builder.toolcall_delta(index, json));
                }
            }
            _ => {}
        }
    }

    /// Takes whichever counts `usage` carries: `message_start` has the input side,
    /// `message_delta` the (cumulative) output and sometimes the input side again.
    fn read_usage(&mut self, usage: &Value) {
        let get = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = get("input_tokens") {
            self.usage.input = n;
        }
        if let Some(n) = get("output_tokens") {
            self.usage.output = n;
        }
        if let Some(n) = get("cache_read_input_tokens") {
            self.usage.cache_read = n;
        }
        if let Some(n) = get("cache_creation_input_tokens") {
            self.usage.cache_write = n;
        }
    }
}

/// A `web_search_tool_result` block's content: the pages found, or the error.
fn search_results(query: String, content: &Value) -> crate::WebSearch {
    let sources = content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["type"] == "web_search_result")
        .filter_map(|r| {
            Some(crate::WebSource {
                url: r["url"].as_str()?.to_string(),
                title: r["title"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect();
    let error = content["error_code"].as_str().map(str::to_string);
    crate::WebSearch {
        query,
        sources,
        error,
    }
}

fn push_text(text: Option<&str>, builder: &mut AssistantBuilder, out: &mut Vec<StreamEvent>) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push(builder.text_delta(text));
    }
}

impl WireParser for Parser {
    fn terminal(&self) -> &'static str {
        "message_stop"
    }

    fn keep_alive(&self, name: &str, _data: &str) -> bool {
        // By its `event:` name: parsing every event's data twice would cost every delta.
        name == "ping"
    }

    fn event(
        &mut self,
        _name: &str,
        data: &str,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, Failure> {
        let event = parse::json(data, &self.provider)?;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => self.block_start(&event, builder, out),
            "content_block_delta" => self.block_delta(&event, builder, out),
            "content_block_stop" => {
                let at = event["index"].as_u64().unwrap_or(0);
                if let Some(index) = self.calls.remove(&at) {
                    out.extend(builder.toolcall_end(index));
                }
                if let Some((id, input)) = self.searches.remove(&at) {
                    let input: Value = serde_json::from_str(&input).unwrap_or_default();
                    let query = input["query"].as_str().unwrap_or_default().to_string();
                    self.queries.insert(id, query);
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => return Ok(Flow::Finished),
            "error" => {
                let error = &event["error"];
                let message = error["message"].as_str().unwrap_or("the stream failed");
                let reason = match error["type"].as_str() {
                    Some(kind) => format!("{}: {message} ({kind})", self.provider),
                    None => format!("{}: {message}", self.provider),
                };
                return Err(Failure::from_provider(reason));
            }
            // `ping` keeps the connection alive; unknown events are future additions.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(
        &mut self,
        model: &Model,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> StreamEvent {
        out.extend(builder.settle(model, Some(self.usage)));
        match self.stop_reason.as_deref() {
            Some("tool_use") => builder.done(StopReason::ToolUse),
            Some("max_tokens") | Some("model_context_window_exceeded") => {
                builder.done(StopReason::Length)
            }
            Some("refusal") => builder.failed(
                StopReason::Error,
                format!("{} declined to answer (refusal)", self.provider),
            ),
            _ => builder.done(StopReason::Stop),
        }
    }
}

/// Thinking budget in tokens for each level.
fn thinking_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
    }
}

/// The JSON request body for one call.
pub fn request_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let mut messages = Vec::new();
    for message in &context.messages {
        convert_message(message, model, &mut messages);
    }
    mark_last_user_turn(&mut messages);
    // The API requires a limit; the model's own is the natural one.
    let mut max_tokens = crate::openai_completions::output_limit(model, options);
    let mut body = json!({
        "model": model.id,
        "messages": messages,
        "stream": true,
    });
    if !context.system_prompt.is_empty() {
        body["system"] = json!([{"type": "text", "text": context.system_prompt,
            "cache_control": {"type": "ephemeral"}}]);
    }
    let mut tools: Vec<Value> = context
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if options.web_search {
        // The server tool: Anthropic runs the searches itself, at most five a request.
        tools.push(json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}));
    }
    // Anthropic refuses extended thinking together with a forced tool: a forced call goes
    // without thinking.
    let mut forced = false;
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        if let Some(choice) = &options.tool_choice {
            forced = matches!(choice, ToolChoice::Required | ToolChoice::Tool(_));
            body["tool_choice"] = match choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
        }
    }
    if let Some(budget) = thinking_budget(options.thinking).filter(|_| model.reasoning && !forced) {
        // The budget counts against max_tokens: leave room for the answer after it.
        if max_tokens <= budget {
            max_tokens = budget + 4096;
        }
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    body["max_tokens"] = json!(max_tokens);
    body
}

fn convert_message(message: &Message, model: &Model, out: &mut Vec<Value>) {
    match message {
        Message::User(user) => {
            let blocks = content_blocks(&user.content);
            if !blocks.is_empty() {
                out.push(json!({"role": "user", "content": blocks}));
            }
        }
        Message::Assistant(assistant) => {
            // Signatures from another provider (an OpenAI reasoning item) mean nothing here.
            let same_provider = assistant.provider == model.provider;
            let blocks: Vec<Value> = assistant
                .content
                .iter()
                .filter_map(|content| match content {
                    AssistantContent::Text { text } if !text.is_empty() => {
                        Some(json!({"type": "text", "text": text}))
                    }
                    // Only signed thinking can be replayed; unsigned thinking came from another
                    // provider (or an aborted stream) and the API would reject it.
                    AssistantContent::Thinking {
                        thinking,
                        signature: Some(signature),
                    } if same_provider => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
                    AssistantContent::ToolCall(call) => Some(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        // Arguments that were not valid JSON cannot be sent as an object.
                        "input": if call.arguments.is_object() { call.arguments.clone() } else { json!({}) },
                    })),
                    _ => None,
                })
                .collect();
            // A failed request left an empty message: it says nothing to the model.
            if !blocks.is_empty() {
                out.push(json!({"role": "assistant", "content": blocks}));
            }
        }
        Message::ToolResult(result) => {
            let block = json!({
                "type": "tool_result",
                "tool_use_id": result.tool_call_id,
                "content": content_blocks(&result.content),
                "is_error": result.is_error,
            });
            // The results of one turn's calls belong in one user message.
            let previous = out.last_mut().filter(|m| {
                m["role"] == "user"
                    && m["content"]
                        .as_array()
                        .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "tool_result"))
            });
            match previous {
                Some(message) => message["content"]
                    .as_array_mut()
                    .expect("checked above")
                    .push(block),
                None => out.push(json!({"role": "user", "content": [block]})),
            }
        }
    }
}

fn content_blocks(content: &[UserContent]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|c| match c {
            // The API rejects empty text blocks.
            UserContent::Text { text } if text.is_empty() => None,
            UserContent::Text { text } => Some(json!({"type": "text", "text": text})),
            UserContent::Image(image) => Some(image.to_wire(
                |mime, data| json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}),
                |text| json!({"type": "text", "text": text}),
            )),
        })
        .collect()
}

/// Puts a cache breakpoint on the last block of the newest user message (a prompt or tool
/// results): the next request then reads everything up to there from the cache.
fn mark_last_user_turn(messages: &mut [Value]) {
    let last_user = messages.iter_mut().rev().find(|m| m["role"] == "user");
    if let Some(block) = last_user
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Api, ModelCost, ToolCall, ToolResultMessage, UserMessage};

    fn model() -> Model {
        Model {
            id: "claude".into(),
            provider: "anthropic".into(),
            api: Api::AnthropicMessages,
            base_url: String::new(),
            context_window: 200_000,
            max_output: 4096,
            reasoning: true,
            images: false,
            cost: ModelCost::default(),
        }
    }

    fn result(id: &str, is_error: bool) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            content: vec![UserContent::Text { text: "out".into() }],
            details: None,
            is_error,
            timestamp: 0,
        })
    }

    #[test]
    fn tool_results_merge_and_the_last_user_turn_is_cached() {
        let mut assistant = crate::AssistantMessage::empty("claude", "anthropic");
        assistant.content = vec![
            AssistantContent::Thinking {
                thinking: "hm".into(),
                signature: Some("sig".into()),
            },
            AssistantContent::Thinking {
                thinking: "unsigned".into(),
                signature: None,
            },
            AssistantContent::ToolCall(ToolCall::from_raw("a".into(), "ls".into(), "{}")),
            AssistantContent::ToolCall(ToolCall::from_raw("b".into(), "ls".into(), "{")),
        ];
        let context = Context {
            system_prompt: "sys".into(),
            messages: vec![
                Message::User(UserMessage::text("go")),
                Message::Assistant(assistant),
                result("a", false),
                result("b", true),
            ],
            tools: vec![],
        };
        let options = StreamOptions {
            thinking: ThinkingLevel::High,
            ..Default::default()
        };
        let body = request_body(&model(), &context, &options);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        let thinking = &messages[1]["content"];
        assert_eq!(
            thinking.as_array().unwrap().len(),
            3,
            "unsigned thinking dropped"
        );
        assert_eq!(thinking[0]["signature"], "sig");
        assert_eq!(thinking[2]["input"], json!({}));
        let results = messages[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2, "consecutive results in one message");
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[1]["cache_control"]["type"], "ephemeral");
        assert!(messages[0]["content"][0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["thinking"]["budget_tokens"], 16384);
        assert_eq!(body["max_tokens"], 16384 + 4096, "raised above the budget");
    }
}
