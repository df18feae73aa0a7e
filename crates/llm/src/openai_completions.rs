//! OpenAI chat-completions streaming client (`POST {base_url}/chat/completions`).
//!
//! Also serves every OpenAI-compatible server (llama.cpp, Ollama, vLLM, …), so the parser
//! tolerates their quirks: comment lines, `content: null`, tool names repeated in every delta,
//! no usage chunk.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::http::{Failure, WireRequest};
use crate::parse::{self, Flow, WireParser};
use crate::provider::ToolChoice;
use crate::think_tags::{Piece, ThinkSplitter};
use crate::{
    AssistantBuilder, AssistantContent, Context, Message, Model, StopReason, StreamEvent,
    StreamOptions, ThinkingLevel, Usage, UserContent,
};

/// The request for one call: `POST {base_url}/chat/completions` with a bearer key.
pub(crate) fn request(model: &Model, context: &Context, options: &StreamOptions) -> WireRequest {
    WireRequest::bearer(
        model,
        "chat/completions",
        request_body(model, context, options),
        options,
    )
}

/// State carried across chunks of one response.
pub(crate) struct Parser {
    provider: String,
    /// Server tool-call index → our content-block index and the call's id.
    calls: HashMap<u64, (usize, String)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Thinking sent inline as `<think>…</think>` (local reasoning models).
    think: ThinkSplitter,
}

impl Parser {
    pub(crate) fn new(provider: String) -> Self {
        Self {
            provider,
            calls: HashMap::new(),
            finish_reason: None,
            usage: None,
            think: ThinkSplitter::default(),
        }
    }
}

impl WireParser for Parser {
    fn terminal(&self) -> &'static str {
        "[DONE]"
    }

    fn event(
        &mut self,
        _name: &str,
        data: &str,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, Failure> {
        if data == "[DONE]" {
            return Ok(Flow::Finished);
        }
        let chunk = parse::json(data, &self.provider)?;
        if let Some(reason) = stream_error(&chunk) {
            return Err(Failure::from_provider(format!(
                "{}: {reason}",
                self.provider
            )));
        }
        self.chunk(&chunk, builder, out);
        Ok(Flow::Continue)
    }

    fn finish(
        &mut self,
        model: &Model,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> StreamEvent {
        let held = self.think.finish();
        emit(held, builder, out);
        out.extend(builder.settle(model, self.usage));
        match self.finish_reason.as_deref() {
            Some("length") => builder.done(StopReason::Length),
            Some("content_filter") => builder.failed(
                StopReason::Error,
                format!("{} stopped the reply: content filter", model.provider),
            ),
            Some("tool_calls") | Some("function_call") => builder.done(StopReason::ToolUse),
            _ => builder.done(StopReason::Stop),
        }
    }
}

fn emit(pieces: Vec<Piece>, builder: &mut AssistantBuilder, out: &mut Vec<StreamEvent>) {
    for piece in pieces {
        out.push(match piece {
            Piece::Text(text) => builder.text_delta(&text),
            Piece::Thinking(thinking) => builder.thinking_delta(&thinking),
        });
    }
}

/// Some servers report failures inside the stream as `{"error": {...}}`.
fn stream_error(chunk: &Value) -> Option<String> {
    let error = chunk.get("error")?;
    if error.is_null() {
        return None;
    }
    Some(
        error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string()),
    )
}

impl Parser {
    fn chunk(&mut self, chunk: &Value, builder: &mut AssistantBuilder, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(delta) = choice.get("delta") {
            // Servers name it one way or the other; some send both with the same text.
            let reasoning = non_empty_str(delta.get("reasoning_content"))
                .or_else(|| non_empty_str(delta.get("reasoning")));
            if let Some(text) = reasoning {
                out.push(builder.thinking_delta(text));
            }
            if let Some(text) = non_empty_str(delta.get("content")) {
                let pieces = self.think.push(text);
                emit(pieces, builder, out);
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.tool_call_delta(call, builder, out);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn tool_call_delta(
        &mut self,
        call: &Value,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) {
        let server_index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
        let function = call.get("function");
        let delta_id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = match self.calls.get(&server_index) {
            // llama.cpp repeats id and name in every delta: only a new id opens a new call
            // (Ollama sends index 0 for every parallel call).
            Some((index, id)) if delta_id.is_empty() || delta_id == id => *index,
            _ => {
                let id = if delta_id.is_empty() {
                    format!("call_{server_index}")
                } else {
                    delta_id.to_string()
                };
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let (index, event) = builder.toolcall_start(&id, name);
                out.push(event);
                self.calls.insert(server_index, (index, id));
                index
            }
        };
        if let Some(args) = non_empty_str(function.and_then(|f| f.get("arguments"))) {
            out.push(builder.toolcall_delta(index, args));
        }
    }
}

fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn parse_usage(usage: &Value) -> Usage {
    let get = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let prompt = get(usage.get("prompt_tokens"));
    let cached = get(usage.pointer("/prompt_tokens_details/cached_tokens"));
    Usage {
        input: prompt.saturating_sub(cached),
        output: get(usage.get("completion_tokens")),
        cache_read: cached,
        cache_write: 0,
        cost: 0.0,
    }
}

/// The JSON request body for one call.
pub fn request_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let mut messages = Vec::new();
    if !context.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": context.system_prompt}));
    }
    for message in &context.messages {
        convert_message(message, &mut messages);
    }
    let mut body = json!({
        "model": model.id,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !context.tools.is_empty() {
        let tools: Vec<Value> = context
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if let Some(choice) = &options.tool_choice {
            body["tool_choice"] = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
        }
    }
    // Always sent: without it some local servers generate until their context is full (a
    // small model looping for minutes). OpenAI's reasoning models reject `max_tokens`; every
    // other compatible server (llama.cpp, Ollama, vLLM, DeepSeek, …) knows only `max_tokens`.
    let field = if model.provider == "openai" {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[field] = json!(output_limit(model, options));
    if let Some(effort) = reasoning_effort(model, options.thinking) {
        // `minimal` is OpenAI's own level; compatible servers (Gemini among them) accept only
        // low, medium and high.
        let effort = match effort {
            "minimal" if model.provider != "openai" => "low",
            other => other,
        };
        body["reasoning_effort"] = json!(effort);
    }
    body
}

/// The output token limit of a request: the caller's, else the model's own.
pub(crate) fn output_limit(model: &Model, options: &StreamOptions) -> u64 {
    options.max_tokens.unwrap_or(model.max_output).max(1)
}

/// The `reasoning_effort` of a thinking level; none for models that do not reason, and none
/// for `off`, which leaves the server's default.
pub(crate) fn reasoning_effort(model: &Model, level: ThinkingLevel) -> Option<&'static str> {
    if !model.reasoning {
        return None;
    }
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
    }
}

fn convert_message(message: &Message, out: &mut Vec<Value>) {
    match message {
        Message::User(user) => {
            out.push(json!({"role": "user", "content": user_content(&user.content)}))
        }
        Message::Assistant(assistant) => {
            let text = assistant.text();
            let calls: Vec<Value> = assistant
                .content
                .iter()
                .filter_map(|c| match c {
                    AssistantContent::ToolCall(call) => Some(json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments_text()},
                    })),
                    _ => None,
                })
                .collect();
            // An assistant message with neither text nor calls (a failed request) says nothing.
            if text.is_empty() && calls.is_empty() {
                return;
            }
            // A tool-call-only message carries "" rather than null: llama-cpp-python rejects
            // null with a 500 and its chat templates break when the key is missing.
            let mut value = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                value["tool_calls"] = Value::Array(calls);
            }
            out.push(value);
        }
        Message::ToolResult(result) => {
            out.push(json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": result.text()}));
            // Tool messages carry text only; images follow as a user message.
            let images: Vec<UserContent> = result
                .content
                .iter()
                .filter(|c| matches!(c, UserContent::Image(_)))
                .cloned()
                .collect();
            if !images.is_empty() {
                out.push(json!({"role": "user", "content": user_content(&images)}));
            }
        }
    }
}

fn user_content(content: &[UserContent]) -> Value {
    if let [UserContent::Text { text }] = content {
        return json!(text);
    }
    Value::Array(
        content
            .iter()
            .map(|c| match c {
                UserContent::Text { text } => json!({"type": "text", "text": text}),
                UserContent::Image(image) => image.to_wire(
                    |mime, data| json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}),
                    |text| json!({"type": "text", "text": text}),
                ),
            })
            .collect(),
    )
}
