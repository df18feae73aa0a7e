//! OpenAI responses streaming client (`POST {base_url}/responses`).
//!
//! Requests are stateless (`store: false`): the whole history is sent each time as input items
//! (messages, `function_call`, `function_call_output`), like the other wire APIs.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::http::{Failure, WireRequest};
use crate::openai_completions::{output_limit, reasoning_effort};
use crate::parse::{self, Flow, WireParser};
use crate::provider::ToolChoice;
use crate::{
    AssistantBuilder, AssistantContent, Context, Message, Model, StopReason, StreamEvent,
    StreamOptions, Usage, UserContent,
};

/// The request for one call: `POST {base_url}/responses` with a bearer key.
pub(crate) fn request(model: &Model, context: &Context, options: &StreamOptions) -> WireRequest {
    WireRequest::bearer(
        model,
        "responses",
        request_body(model, context, options),
        options,
    )
}

/// State carried across the events of one response.
pub(crate) struct Parser {
    provider: String,
    /// Output item id → our content-block index, for function calls still streaming.
    calls: HashMap<String, usize>,
    saw_call: bool,
    usage: Option<Usage>,
    /// Set by `response.incomplete`: why the reply was cut off.
    incomplete: Option<String>,
}

impl Parser {
    pub(crate) fn new(provider: String) -> Self {
        Self {
            provider,
            calls: HashMap::new(),
            saw_call: false,
            usage: None,
            incomplete: None,
        }
    }

    fn item_added(
        &mut self,
        event: &Value,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) {
        let item = &event["item"];
        if item["type"] != "function_call" {
            return;
        }
        // `call_id` pairs the call with its output; the item `id` only names it in the stream.
        let call_id = str_at(item, "call_id").unwrap_or_default();
        let item_id = str_at(item, "id").unwrap_or(call_id);
        let (index, start) = builder.toolcall_start(call_id, str_at(item, "name").unwrap_or(""));
        out.push(start);
        if let Some(args) = str_at(item, "arguments").filter(|a| !a.is_empty()) {
            out.push(builder.toolcall_delta(index, args));
        }
        self.calls.insert(item_id.to_string(), index);
        self.saw_call = true;
    }

    fn item_done(
        &mut self,
        event: &Value,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) {
        let item = &event["item"];
        if item["type"] == "web_search_call" {
            out.push(builder.web_search(web_search_of(item)));
            return;
        }
        if item["type"] == "message" {
            let cited = cited_sources(item);
            if !cited.is_empty() {
                out.push(builder.web_search(crate::WebSearch {
                    sources: cited,
                    ..Default::default()
                }));
            }
            return;
        }
        if item["type"] == "reasoning" && item.get("encrypted_content").is_some() {
            // The whole item is the thinking block's signature: replaying it lets the model
            // continue its reasoning across tool calls without server-side state.
            out.push(builder.thinking_signature(&item.to_string()));
            return;
        }
        if item["type"] != "function_call" {
            return;
        }
        let item_id = str_at(item, "id").or_else(|| str_at(item, "call_id"));
        let Some(index) = item_id.and_then(|id| self.calls.remove(id)) else {
            return;
        };
        // Some servers send the arguments only in the finished item, never as deltas.
        let nothing_streamed = builder.toolcall_raw(index).unwrap_or_default().is_empty();
        if let Some(args) = str_at(item, "arguments").filter(|a| nothing_streamed && !a.is_empty())
        {
            out.push(builder.toolcall_delta(index, args));
        }
        out.extend(builder.toolcall_end(index));
    }
}

/// A finished `web_search_call` item: its query and the pages it found.
fn web_search_of(item: &Value) -> crate::WebSearch {
    let action = &item["action"];
    let query = str_at(action, "query")
        .map(str::to_string)
        .or_else(|| {
            let queries = action["queries"].as_array()?;
            Some(
                queries
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
        .unwrap_or_default();
    let sources = action["sources"]
        .as_array()
        .map(|sources| sources.iter().filter_map(source_of).collect())
        .unwrap_or_default();
    let error = (str_at(item, "status") == Some("failed")).then(|| "the search failed".into());
    crate::WebSearch {
        query,
        sources,
        error,
    }
}

/// The pages a finished message cites (`url_citation` annotations), each once.
fn cited_sources(item: &Value) -> Vec<crate::WebSource> {
    let mut sources: Vec<crate::WebSource> = Vec::new();
    let parts = item["content"].as_array().into_iter().flatten();
    for annotation in parts.flat_map(|p| p["annotations"].as_array().into_iter().flatten()) {
        if annotation["type"] == "url_citation"
            && let Some(source) = source_of(annotation)
            && !sources.iter().any(|s| s.url == source.url)
        {
            sources.push(source);
        }
    }
    sources
}

fn source_of(value: &Value) -> Option<crate::WebSource> {
    Some(crate::WebSource {
        url: str_at(value, "url")?.to_string(),
        title: str_at(value, "title").unwrap_or_default().to_string(),
    })
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

impl WireParser for Parser {
    fn terminal(&self) -> &'static str {
        "response.completed"
    }

    fn keep_alive(&self, name: &str, _data: &str) -> bool {
        // By its `event:` name: parsing every event's data twice would cost every delta.
        name == "response.in_progress"
    }

    fn event(
        &mut self,
        _name: &str,
        data: &str,
        builder: &mut AssistantBuilder,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, Failure> {
        let event = parse::json(data, &self.provider)?;
        let delta = || str_at(&event, "delta").filter(|d| !d.is_empty());
        match str_at(&event, "type").unwrap_or_default() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = delta() {
                    out.push(builder.text_delta(text));
                }
            }
            // Summaries for OpenAI's models; open-weight models served this way stream their
            // raw reasoning text instead.
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = delta() {
                    out.push(builder.thinking_delta(text));
                }
            }
            // Parts of one summary read as paragraphs of one thinking block.
            "response.reasoning_summary_part.added"
                if event["summary_index"].as_u64().unwrap_or(0) > 0 =>
            {
                out.push(builder.thinking_delta("\n\n"));
            }
            "response.output_item.added" => self.item_added(&event, builder, out),
            "response.function_call_arguments.delta" => {
                let index = str_at(&event, "item_id").and_then(|id| self.calls.get(id));
                if let (Some(&index), Some(args)) = (index, delta()) {
                    out.push(builder.toolcall_delta(index, args));
                }
            }
            "response.output_item.done" => self.item_done(&event, builder, out),
            "response.completed" => {
                self.usage = event.pointer("/response/usage").map(parse_usage);
                return Ok(Flow::Finished);
            }
            "response.incomplete" => {
                self.usage = event.pointer("/response/usage").map(parse_usage);
                let reason = event
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str);
                self.incomplete = Some(reason.unwrap_or("unknown").to_string());
                return Ok(Flow::Finished);
            }
            "response.failed" => {
                let error = event.pointer("/response/error").unwrap_or(&Value::Null);
                return Err(self.failure(error));
            }
            "error" => return Err(self.failure(event.get("error").unwrap_or(&event))),
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
        out.extend(builder.settle(model, self.usage));
        match self.incomplete.as_deref() {
            Some("max_output_tokens") => builder.done(StopReason::Length),
            Some(reason) => builder.failed(
                StopReason::Error,
                format!("{} stopped the reply: {reason}", self.provider),
            ),
            None if self.saw_call => builder.done(StopReason::ToolUse),
            None => builder.done(StopReason::Stop),
        }
    }
}

impl Parser {
    /// A failure from an `{code, message}` error object.
    fn failure(&self, error: &Value) -> Failure {
        let message = str_at(error, "message").unwrap_or("the response failed");
        let reason = match str_at(error, "code") {
            Some(code) => format!("{}: {message} ({code})", self.provider),
            None => format!("{}: {message}", self.provider),
        };
        Failure::from_provider(reason)
    }
}

fn parse_usage(usage: &Value) -> Usage {
    let get = |path: &str| usage.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let cached = get("/input_tokens_details/cached_tokens");
    Usage {
        input: get("/input_tokens").saturating_sub(cached),
        output: get("/output_tokens"),
        cache_read: cached,
        cache_write: 0,
        cost: 0.0,
    }
}

/// The JSON request body for one call.
pub fn request_body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let mut input = Vec::new();
    for message in &context.messages {
        convert_message(message, model, &mut input);
    }
    let mut body = json!({
        "model": model.id,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !context.system_prompt.is_empty() {
        body["instructions"] = json!(context.system_prompt);
    }
    let mut tools: Vec<Value> = context
        .tools
        .iter()
        .map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                "parameters": t.parameters, "strict": false})
        })
        .collect();
    if options.web_search {
        tools.push(json!({"type": "web_search"}));
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        if let Some(choice) = &options.tool_choice {
            body["tool_choice"] = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
            };
        }
    }
    body["max_output_tokens"] = json!(output_limit(model, options));
    if let Some(effort) = reasoning_effort(model, options.thinking) {
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
    }
    let mut include = Vec::new();
    if model.reasoning {
        // Stateless requests get the reasoning back encrypted, to replay it next turn.
        include.push("reasoning.encrypted_content");
    }
    if options.web_search {
        // The pages a search found, not only those the answer cites.
        include.push("web_search_call.action.sources");
    }
    if !include.is_empty() {
        body["include"] = json!(include);
    }
    body
}

fn convert_message(message: &Message, model: &Model, out: &mut Vec<Value>) {
    match message {
        Message::User(user) => out.push(user_message(&user.content)),
        Message::Assistant(assistant) => {
            // Encrypted reasoning only verifies for the model that produced it.
            let same_model = assistant.provider == model.provider && assistant.model == model.id;
            for content in &assistant.content {
                match content {
                    AssistantContent::Thinking {
                        signature: Some(signature),
                        ..
                    } if same_model => {
                        if let Some(item) = reasoning_item(signature) {
                            out.push(item);
                        }
                    }
                    AssistantContent::Text { text } if !text.is_empty() => {
                        out.push(json!({"role": "assistant", "content": text}));
                    }
                    AssistantContent::ToolCall(call) => out.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments_text(),
                    })),
                    // Unsigned summaries are not replayable input; the model reasons afresh.
                    _ => {}
                }
            }
        }
        Message::ToolResult(result) => {
            out.push(json!({
                "type": "function_call_output",
                "call_id": result.tool_call_id,
                "output": result.text(),
            }));
            // Outputs carry text only; images follow as a user message.
            let images: Vec<UserContent> = result
                .content
                .iter()
                .filter(|c| matches!(c, UserContent::Image(_)))
                .cloned()
                .collect();
            if !images.is_empty() {
                out.push(user_message(&images));
            }
        }
    }
}

/// The reasoning item stored as a thinking signature, when it is one.
fn reasoning_item(signature: &str) -> Option<Value> {
    let item: Value = serde_json::from_str(signature).ok()?;
    (item["type"] == "reasoning" && item.get("encrypted_content").is_some()).then_some(item)
}

fn user_message(content: &[UserContent]) -> Value {
    let parts: Vec<Value> = content
        .iter()
        .map(|c| match c {
            UserContent::Text { text } => json!({"type": "input_text", "text": text}),
            UserContent::Image(image) => image.to_wire(
                |mime, data| json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")}),
                |text| json!({"type": "input_text", "text": text}),
            ),
        })
        .collect();
    json!({"role": "user", "content": parts})
}
