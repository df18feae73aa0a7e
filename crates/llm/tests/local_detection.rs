//! Detection of local servers against mock-llm emulating Ollama's and llama.cpp's discovery
//! endpoints over real HTTP: models, the loaded one first, the real context window, tool
//! support, and a whole probe that keeps its deadline when a server never answers.

use std::time::{Duration, Instant};

use llm::local::{self, LocalKind, Probe};
use mock_llm::{Emulation, MockServer, OllamaModel, Script};

async fn emulating(emulation: Emulation) -> MockServer {
    let server = MockServer::start(Script::default()).await.unwrap();
    server.emulate(emulation);
    server
}

#[tokio::test]
async fn ollama_models_come_with_their_real_window_loaded_first() {
    let mut small = OllamaModel::new("llama3.2:1b", 131_072);
    small.num_ctx = Some(8_192);
    let ollama = emulating(Emulation::Ollama {
        models: vec![
            small,
            OllamaModel::new("qwen3:8b", 40_960).loaded(40_960),
            OllamaModel::new("gemma:2b", 8_192).without_tools(),
        ],
    })
    .await;
    // Found by kind (the default probes) and by asking (CODING_AGENT_LOCAL_PROBES).
    for kind in [Some(LocalKind::Ollama), None] {
        let found = local::detect(&[Probe::new(&ollama.url(), kind)], local::PROBE_DEADLINE).await;
        assert_eq!(found.len(), 1, "{kind:?}");
        let server = &found[0];
        assert_eq!(server.kind, LocalKind::Ollama);
        assert_eq!(server.url, ollama.origin());
        let preferred = server.preferred().unwrap();
        assert_eq!(preferred.id, "qwen3:8b", "the loaded model first");
        let model = server.model(preferred);
        assert_eq!(model.context_window, 40_960, "as loaded (/api/ps)");
        assert_eq!(model.provider, "ollama");
        assert_eq!(model.base_url, format!("{}/v1", ollama.origin()));
        let by_id = |id: &str| server.models.iter().find(|m| m.id == id).unwrap();
        assert_eq!(by_id("llama3.2:1b").context_window, Some(8_192), "num_ctx");
        assert_eq!(by_id("llama3.2:1b").max_context, Some(131_072));
        assert_eq!(
            by_id("gemma:2b").context_window,
            Some(local::OLLAMA_DEFAULT_CONTEXT.min(8_192)),
            "neither loaded nor num_ctx: Ollama's default"
        );
        assert_eq!(by_id("gemma:2b").tools, Some(false));
        assert_eq!(by_id("qwen3:8b").tools, Some(true));
    }
    let asked = ollama.discovery_requests();
    for endpoint in ["GET /api/tags", "GET /api/ps", "POST /api/show"] {
        assert!(asked.iter().any(|r| r == endpoint), "{endpoint}: {asked:?}");
    }
    assert!(ollama.requests().is_empty(), "no chat request was made");
}

#[tokio::test]
async fn llama_cpp_reports_n_ctx_from_props() {
    let server = emulating(Emulation::LlamaCpp {
        model: "smollm2".into(),
        n_ctx: 2_048,
    })
    .await;
    let found = local::inspect(&server.url(), local::PROBE_DEADLINE)
        .await
        .unwrap();
    assert_eq!(found.kind, LocalKind::LlamaCpp);
    assert_eq!(found.models.len(), 1);
    let model = found.model(found.preferred().unwrap());
    assert_eq!(model.id, "smollm2");
    assert_eq!(model.context_window, 2_048);
    assert_eq!(model.provider, "llama.cpp");
}

#[tokio::test]
async fn a_silent_server_costs_no_more_than_the_deadline() {
    let ollama = emulating(Emulation::Ollama {
        models: vec![OllamaModel::new("qwen3:8b", 40_960)],
    })
    .await;
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    // A closed port: refused at once.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let probes = [
        Probe::new(&silent_url, None),
        Probe::new(&closed, Some(LocalKind::Vllm)),
        Probe::new(&ollama.origin(), None),
    ];
    let started = Instant::now();
    let found = local::detect(&probes, Duration::from_millis(300)).await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1_500), "{took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "waited for the silent one: {took:?}"
    );
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, LocalKind::Ollama);
    let err = local::inspect(&closed, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(err.contains(&closed), "{err}");
    hold.abort();
}
