//! The OpenAI chat-completions wire format of a scripted reply.

use serde_json::{Value, json};

use crate::script::{Reply, chunks};

/// The SSE frames of one streamed reply.
pub(crate) fn frames(reply: &Reply, request: &Value, seq: usize) -> Vec<String> {
    payloads(reply, request, seq)
        .iter()
        .map(|p| format!("data: {p}\n\n"))
        .collect()
}

/// The `data:` payloads of one streamed reply, in order, ending with `[DONE]`.
fn payloads(reply: &Reply, request: &Value, seq: usize) -> Vec<String> {
    let id = format!("chatcmpl-mock-{seq}");
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock");
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string()
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    if let Some(thinking) = &reply.thinking {
        for piece in chunks(thinking, reply.chunk_size) {
            out.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    if let Some(text) = &reply.text {
        for piece in chunks(text, reply.chunk_size) {
            out.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{seq}_{index}"));
        let open = json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
            "function": {"name": call.name, "arguments": ""}}]});
        out.push(chunk(open, Value::Null));
        for piece in chunks(&call.arguments_text(), reply.chunk_size) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            out.push(chunk(delta, Value::Null));
        }
    }
    let finish = reply.finish_reason.clone().unwrap_or_else(|| {
        if reply.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_string()
    });
    out.push(chunk(json!({}), json!(finish)));
    if request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)) {
        let usage = reply
            .usage
            .unwrap_or_else(|| estimate_usage(reply, request));
        out.push(
            json!({
                "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": usage.input + usage.cache_read,
                    "completion_tokens": usage.output,
                    "total_tokens": usage.input + usage.cache_read + usage.output,
                    "prompt_tokens_details": {"cached_tokens": usage.cache_read},
                },
            })
            .to_string(),
        );
    }
    out.push("[DONE]".to_string());
    out
}

/// About four characters a token, like the real tokenizers on English text.
pub(crate) fn estimate_usage(reply: &Reply, request: &Value) -> crate::ScriptUsage {
    // The conversation is `messages` (chat, Anthropic) or `input` (responses).
    let conversation = request.get("messages").or_else(|| request.get("input"));
    let request_chars = conversation.map_or(0, |m| m.to_string().len());
    let reply_chars = reply.text.as_ref().map_or(0, String::len)
        + reply.thinking.as_ref().map_or(0, String::len)
        + reply
            .tool_calls
            .iter()
            .map(|c| c.arguments_text().len())
            .sum::<usize>();
    crate::ScriptUsage {
        input: (request_chars / 4) as u64,
        output: (reply_chars / 4).max(1) as u64,
        cache_read: 0,
    }
}
