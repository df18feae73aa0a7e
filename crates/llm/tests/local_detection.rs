//! Detection of local servers against mock-llm emulating Ollama's, llama.cpp's, LM Studio's
//! and vLLM's discovery endpoints over real HTTP: models, the loaded one first, the real
//! context window, tool support, and a whole probe that keeps its deadline when a server
//! never answers.

use std::time::{Duration, Instant};

use llm::local::{self, LocalKind, Probe};
use mock_llm::{Emulation, LmStudioModel, MockServer, OllamaModel, Script};

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
async fn lm_studio_models_come_with_the_window_they_were_loaded_with() {
    let lm_studio = emulating(Emulation::LmStudio {
        models: vec![
            LmStudioModel::new("qwen2.5-coder-14b-instruct", 32_768),
            LmStudioModel::new("qwen3-8b", 40_960).loaded(8_192),
            LmStudioModel::new("gemma-3-4b-it", 131_072).without_tools(),
            LmStudioModel::new("text-embedding-nomic-embed-text-v1.5", 2_048).embeddings(),
        ],
    })
    .await;
    for kind in [Some(LocalKind::LmStudio), None] {
        let found =
            local::detect(&[Probe::new(&lm_studio.url(), kind)], local::PROBE_DEADLINE).await;
        assert_eq!(found.len(), 1, "{kind:?}");
        let server = &found[0];
        assert_eq!(server.kind, LocalKind::LmStudio, "{kind:?}");
        let ids: Vec<&str> = server.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            ["qwen2.5-coder-14b-instruct", "qwen3-8b", "gemma-3-4b-it"],
            "embedding models are not offered"
        );
        let preferred = server.preferred().unwrap();
        assert_eq!(preferred.id, "qwen3-8b", "the loaded model first");
        let model = server.model(preferred);
        assert_eq!(
            model.context_window, 8_192,
            "the window it was loaded with, not its maximum"
        );
        assert_eq!(model.provider, "lmstudio");
        let by_id = |id: &str| server.models.iter().find(|m| m.id == id).unwrap();
        assert_eq!(by_id("qwen3-8b").max_context, Some(40_960));
        assert_eq!(
            by_id("qwen2.5-coder-14b-instruct").context_window,
            Some(32_768),
            "not loaded: its maximum"
        );
        // LM Studio lists `tool_use` for models trained for it, and nothing for the others,
        // which it still serves tools to (its own default tool-use format): not known, not
        // refused.
        assert_eq!(by_id("gemma-3-4b-it").tools, None);
        assert_eq!(by_id("qwen3-8b").tools, Some(true));
    }
    assert!(
        lm_studio
            .discovery_requests()
            .iter()
            .any(|r| r == "GET /api/v0/models")
    );
}

#[tokio::test]
async fn vllm_reports_max_model_len() {
    let vllm = emulating(Emulation::Vllm {
        model: "Qwen/Qwen2.5-Coder-7B-Instruct".into(),
        max_model_len: 16_384,
        tools: true,
    })
    .await;
    for kind in [Some(LocalKind::Vllm), None] {
        let found = local::detect(&[Probe::new(&vllm.url(), kind)], local::PROBE_DEADLINE).await;
        assert_eq!(found.len(), 1, "{kind:?}");
        let server = &found[0];
        assert_eq!(server.kind, LocalKind::Vllm, "{kind:?}");
        let model = server.model(server.preferred().unwrap());
        assert_eq!(model.id, "Qwen/Qwen2.5-Coder-7B-Instruct");
        assert_eq!(model.context_window, 16_384);
        assert_eq!(model.provider, "vllm");
        assert_eq!(model.base_url, format!("{}/v1", vllm.origin()));
    }
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
    assert!(
        matches!(&err, local::InspectError::Unreachable(e) if e.contains(&closed)),
        "{err}"
    );
    hold.abort();
}

/// A server that answers but lists no models (a proxy, mock-llm without `--emulate`) is told
/// apart from one that does not answer: the user can name its model, and once named it is
/// found again at the next start.
#[tokio::test]
async fn a_server_without_a_model_list_is_found_by_the_name_given() {
    let server = MockServer::start(Script::default()).await.unwrap();
    let err = local::inspect(&server.url(), local::PROBE_DEADLINE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, local::InspectError::NoList(e) if e.contains("404")),
        "{err}"
    );
    let unnamed = local::Probe::new(&server.origin(), None);
    assert!(
        local::detect(std::slice::from_ref(&unnamed), local::PROBE_DEADLINE)
            .await
            .is_empty()
    );
    let named = unnamed.with_model(Some("my-model".into()));
    let found = local::detect(&[named], local::PROBE_DEADLINE).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, LocalKind::OpenaiCompatible);
    assert_eq!(found[0].models[0].id, "my-model");
}
