//! `mock-llm --script file.json --port N`: serve a script until killed.

use clap::Parser;
use mock_llm::{Emulation, MockServer, Script};

#[derive(Parser)]
#[command(
    version,
    about = "Scripted LLM server on 127.0.0.1 for tests, benchmarks and demos"
)]
struct Args {
    /// JSON script: {"replies": [{"text": "…"}, {"tool_calls": [...]}, …]}
    #[arg(long)]
    script: std::path::PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also serve a local server's discovery endpoints: `ollama:NAME[:LOADED_CTX][:notools]`,
    /// `llama.cpp:NAME:N_CTX`, `lmstudio:NAME:MAX_CTX[:LOADED_CTX][:notools]` or
    /// `vllm:NAME:MAX_MODEL_LEN[:notools]`.
    #[arg(long, value_parser = Emulation::parse)]
    emulate: Option<Emulation>,
    /// Take only this API key, as a hosted provider does (401 otherwise; `GET /v1/models`
    /// answers with it, for the key checks).
    #[arg(long)]
    require_key: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let script = match std::fs::read_to_string(&args.script)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Script>(&text).map_err(|e| e.to_string()))
    {
        Ok(script) => script,
        Err(err) => {
            eprintln!("mock-llm: cannot load {}: {err}", args.script.display());
            std::process::exit(2);
        }
    };
    let server = match MockServer::start_on(script, args.port).await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("mock-llm: cannot listen on 127.0.0.1:{}: {err}", args.port);
            std::process::exit(2);
        }
    };
    if let Some(emulation) = args.emulate {
        server.emulate(emulation);
    }
    if let Some(key) = &args.require_key {
        server.require_key(key);
    }
    println!("mock-llm listening on {}", server.url());
    // Runs until the process is killed.
    std::future::pending::<()>().await;
}
