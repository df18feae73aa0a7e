//! SSE parsing throughput: a 200 KB reply in 4,000 deltas, streamed from memory through each
//! wire API's parser into events (the same driver a network response goes through, minus the
//! socket). Run: `cargo bench -p llm --bench sse_parse`.
//!
//! Plain `std::time` on a single-threaded runtime, so wall time is the CPU time of the parse;
//! the best of several runs filters out noise from other processes.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use llm::{Api, Model, ModelCost, StreamEvent};
use mock_llm::Reply;
use serde_json::json;

const REPLY_BYTES: usize = 200_000;
const DELTAS: usize = 4_000;
const RUNS: usize = 15;

fn model(api: Api) -> Model {
    Model {
        id: "bench".into(),
        provider: "bench".into(),
        api,
        base_url: String::new(),
        context_window: 200_000,
        max_output: 64_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    }
}

/// The wire body for `reply`, cut where the server's frames end (one network read per event,
/// the worst case for per-event overhead).
fn body(api: Api, reply: &Reply) -> Vec<Bytes> {
    let path = match api {
        Api::OpenaiCompletions => "/v1/chat/completions",
        Api::OpenaiResponses => "/v1/responses",
        Api::AnthropicMessages => "/v1/messages",
    };
    let request = json!({"model": "bench", "stream_options": {"include_usage": true}});
    let sse = mock_llm::render_sse(path, reply, &request).expect("known path");
    sse.split_inclusive("\n\n")
        .map(|frame| Bytes::from(frame.to_string()))
        .collect()
}

/// Parses the body once; returns the time taken and the number of delta events.
async fn run(model: &Model, chunks: Vec<Bytes>) -> (Duration, usize) {
    let started = Instant::now();
    let mut stream = llm::replay(model, chunks);
    let mut deltas = 0;
    while let Some(event) = stream.next().await {
        match event {
            StreamEvent::TextDelta { .. } | StreamEvent::ToolcallDelta { .. } => deltas += 1,
            StreamEvent::Error { message } => panic!("{:?}", message.error_message),
            _ => {}
        }
    }
    (started.elapsed(), deltas)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let text: String = "lorem ipsum dolor sit amet, consectetur adipiscing "
        .chars()
        .cycle()
        .take(REPLY_BYTES)
        .collect();
    let chunk = REPLY_BYTES / DELTAS;
    let arguments = json!({ "content": &text[..REPLY_BYTES - 16] }).to_string();
    let cases = [
        ("text", Reply::text(text.clone()).with_chunk_size(chunk)),
        (
            "tool call",
            Reply::tool_call("write", json!(arguments)).with_chunk_size(chunk),
        ),
    ];
    println!(
        "{:<32} {:>9} {:>8} {:>10} {:>9} {:>12}",
        "api / reply", "wire KB", "deltas", "best ms", "MB/s", "ns/delta"
    );
    for api in [
        Api::OpenaiCompletions,
        Api::OpenaiResponses,
        Api::AnthropicMessages,
    ] {
        let model = model(api);
        for (name, reply) in &cases {
            let chunks = body(api, reply);
            let wire: usize = chunks.iter().map(Bytes::len).sum();
            let mut best = Duration::MAX;
            let mut deltas = 0;
            for _ in 0..RUNS {
                let (took, n) = runtime.block_on(run(&model, chunks.clone()));
                best = best.min(took);
                deltas = n;
            }
            let secs = best.as_secs_f64();
            println!(
                "{:<32} {:>9.0} {:>8} {:>10.2} {:>9.1} {:>12.0}",
                format!("{api:?} / {name}"),
                wire as f64 / 1000.0,
                deltas,
                secs * 1e3,
                wire as f64 / 1e6 / secs,
                secs * 1e9 / deltas as f64,
            );
        }
    }
}
