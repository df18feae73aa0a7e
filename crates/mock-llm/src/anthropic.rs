//! The Anthropic messages wire format of a scripted reply.

use serde_json::{Value, json};

use crate::openai_chat::estimate_usage;
use crate::script::{Reply, chunks};

/// The SSE frames of one streamed reply, ending with `message_stop`. Thinking comes signed
/// (`sig_mock_<n>`), as the real API signs it.
pub(crate) fn frames(reply: &Reply, request: &Value, seq: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |event: Value| {
        let name = event["type"].as_str().unwrap_or("message").to_string();
        out.push(format!("event: {name}\ndata: {event}\n\n"));
    };
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock");
    let usage = reply
        .usage
        .unwrap_or_else(|| estimate_usage(reply, request));
    push(json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{seq}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": usage.input, "cache_read_input_tokens": usage.cache_read,
            "cache_creation_input_tokens": 0, "output_tokens": 1},
    }}));
    push(json!({"type": "ping"}));
    let mut index = 0;
    let mut block = |start: Value, deltas: Vec<Value>, push: &mut dyn FnMut(Value)| {
        push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    };
    if let Some(thinking) = &reply.thinking {
        let mut deltas: Vec<Value> = chunks(thinking, reply.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": format!("sig_mock_{seq}")}));
        let start = json!({"type": "thinking", "thinking": "", "signature": ""});
        block(start, deltas, &mut push);
    }
    if let Some(text) = &reply.text {
        let deltas = chunks(text, reply.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        block(json!({"type": "text", "text": ""}), deltas, &mut push);
    }
    for (n, call) in reply.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_mock_{seq}_{n}"));
        let deltas = chunks(&call.arguments_text(), reply.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        let start = json!({"type": "tool_use", "id": id, "name": call.name, "input": {}});
        block(start, deltas, &mut push);
    }
    let stop_reason = match reply.finish_reason.as_deref() {
        Some("length") => "max_tokens".to_string(),
        Some("stop") => "end_turn".to_string(),
        Some("tool_calls") => "tool_use".to_string(),
        Some(other) => other.to_string(),
        None if reply.tool_calls.is_empty() => "end_turn".to_string(),
        None => "tool_use".to_string(),
    };
    push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": usage.output}}));
    push(json!({"type": "message_stop"}));
    out
}
