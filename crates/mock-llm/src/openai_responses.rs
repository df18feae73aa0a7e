//! The OpenAI responses wire format of a scripted reply.

use serde_json::{Value, json};

use crate::openai_chat::estimate_usage;
use crate::script::{Reply, chunks};

/// The SSE frames of one streamed reply, ending with `response.completed` (or
/// `response.incomplete` when the script's finish reason is `length`).
pub(crate) fn frames(reply: &Reply, request: &Value, seq: usize) -> Vec<String> {
    let mut out = Frames::default();
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock");
    let response = |status: &str| {
        json!({"id": format!("resp_mock_{seq}"), "object": "response", "status": status,
            "model": model, "output": []})
    };
    out.push(json!({"type": "response.created", "response": response("in_progress")}));
    let mut output_index = 0;
    if let Some(thinking) = &reply.thinking {
        let id = format!("rs_mock_{seq}");
        let at = |extra: Value| merge(json!({"item_id": id, "output_index": output_index}), extra);
        let item = json!({"type": "reasoning", "id": id, "summary": []});
        out.push(json!({"type": "response.output_item.added", "output_index": output_index, "item": item}));
        out.push(at(
            json!({"type": "response.reasoning_summary_part.added", "summary_index": 0,
            "part": {"type": "summary_text", "text": ""}}),
        ));
        for piece in chunks(thinking, reply.chunk_size) {
            out.push(at(json!({"type": "response.reasoning_summary_text.delta",
                "summary_index": 0, "delta": piece})));
        }
        out.push(at(json!({"type": "response.reasoning_summary_text.done",
            "summary_index": 0, "text": thinking})));
        let mut item = json!({"type": "reasoning", "id": id,
            "summary": [{"type": "summary_text", "text": thinking}]});
        let wants_encrypted = request["include"]
            .as_array()
            .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
        if wants_encrypted {
            item["encrypted_content"] = json!(format!("enc_mock_{seq}"));
        }
        out.push(json!({"type": "response.output_item.done", "output_index": output_index, "item": item}));
        output_index += 1;
    }
    if let Some(text) = &reply.text {
        let id = format!("msg_mock_{seq}");
        let at = |extra: Value| {
            merge(
                json!({"item_id": id, "output_index": output_index, "content_index": 0}),
                extra,
            )
        };
        let item = |status: &str, content: Value| {
            json!({"type": "message", "id": id, "status": status, "role": "assistant",
                "content": content})
        };
        out.push(
            json!({"type": "response.output_item.added", "output_index": output_index,
            "item": item("in_progress", json!([]))}),
        );
        out.push(at(json!({"type": "response.content_part.added",
            "part": {"type": "output_text", "text": "", "annotations": []}})));
        for piece in chunks(text, reply.chunk_size) {
            out.push(at(
                json!({"type": "response.output_text.delta", "delta": piece}),
            ));
        }
        out.push(at(
            json!({"type": "response.output_text.done", "text": text}),
        ));
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        out.push(at(
            json!({"type": "response.content_part.done", "part": part}),
        ));
        out.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": item("completed", json!([part]))}),
        );
        output_index += 1;
    }
    for (n, call) in reply.tool_calls.iter().enumerate() {
        let id = format!("fc_mock_{seq}_{n}");
        let call_id = call.id.clone().unwrap_or_else(|| format!("call_{seq}_{n}"));
        let arguments = call.arguments_text();
        let item = |status: &str, arguments: &str| {
            json!({"type": "function_call", "id": id, "call_id": call_id, "name": call.name,
                "arguments": arguments, "status": status})
        };
        out.push(
            json!({"type": "response.output_item.added", "output_index": output_index,
            "item": item("in_progress", "")}),
        );
        for piece in chunks(&arguments, reply.chunk_size) {
            out.push(
                json!({"type": "response.function_call_arguments.delta", "item_id": id,
                "output_index": output_index, "delta": piece}),
            );
        }
        out.push(
            json!({"type": "response.function_call_arguments.done", "item_id": id,
            "output_index": output_index, "arguments": arguments}),
        );
        out.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": item("completed", &arguments)}),
        );
        output_index += 1;
    }
    let usage = reply
        .usage
        .unwrap_or_else(|| estimate_usage(reply, request));
    let input = usage.input + usage.cache_read;
    let usage = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + usage.output,
    });
    if reply.finish_reason.as_deref() == Some("length") {
        let mut done = response("incomplete");
        done["incomplete_details"] = json!({"reason": "max_output_tokens"});
        done["usage"] = usage;
        out.push(json!({"type": "response.incomplete", "response": done}));
    } else {
        let mut done = response("completed");
        done["usage"] = usage;
        out.push(json!({"type": "response.completed", "response": done}));
    }
    out.0
}

/// Frames named after their `type`, numbered like the real stream.
#[derive(Default)]
struct Frames(Vec<String>);

impl Frames {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.0.len());
        let name = event["type"].as_str().unwrap_or("message").to_string();
        self.0.push(format!("event: {name}\ndata: {event}\n\n"));
    }
}

fn merge(mut base: Value, extra: Value) -> Value {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}
