//! Local inference servers: finding the ones running on this machine, what models they serve,
//! the context window each model really gets, and whether it can call tools.
//!
//! Every server below also speaks the OpenAI chat-completions API under `/v1`, which is what
//! the agent talks to; the server's own endpoints are only read here, for what `/v1/models`
//! does not say:
//!
//! - Ollama (`:11434`): `/api/tags` lists models, `/api/ps` the loaded ones (with the context
//!   length they were loaded with), `/api/show` a model's trained `context_length`, its
//!   `num_ctx` parameter and its `capabilities` (`tools`, `thinking`).
//! - llama.cpp's `llama-server` (`:8080`): `/props` → `default_generation_settings.n_ctx`.
//! - LM Studio (`:1234`): `/api/v0/models` → `loaded_context_length`, `max_context_length`,
//!   `state`, `capabilities`.
//! - vLLM (`:8000`) and any other OpenAI-compatible server: `/v1/models` (`max_model_len`).
//!
//! The whole detection runs concurrently under one deadline: a port nobody listens on is
//! refused at once, and a server too slow to answer is skipped rather than waited for.

use std::time::Duration;

use serde_json::Value;

use crate::{Api, Model, ModelCost};

/// The environment variable that replaces the list of probed servers: comma-separated base
/// URLs (their kind is found by asking), or empty for no probing at all. Tests set it so that
/// nothing ever touches a real local server.
pub const PROBES_ENV: &str = "CODING_AGENT_LOCAL_PROBES";

/// The deadline of the whole detection.
pub const PROBE_DEADLINE: Duration = Duration::from_millis(300);

/// Ollama's window when neither the loaded model nor its parameters say otherwise: what its
/// OpenAI-compatible endpoint serves by default (`OLLAMA_CONTEXT_LENGTH` raises it).
pub const OLLAMA_DEFAULT_CONTEXT: u64 = 4_096;

/// The window assumed for a server that does not report one.
pub const UNKNOWN_CONTEXT: u64 = 8_192;

/// Which server software answers at a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalKind {
    Ollama,
    LlamaCpp,
    LmStudio,
    Vllm,
    /// Something else that lists models at `/v1/models` (llama-cpp-python, …).
    OpenaiCompatible,
}

impl LocalKind {
    /// The provider name models of this server get (`ollama/qwen3:8b`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Ollama => "ollama",
            Self::LlamaCpp => "llama.cpp",
            Self::LmStudio => "lmstudio",
            Self::Vllm => "vllm",
            Self::OpenaiCompatible => "local",
        }
    }
}

/// The local models (base URL, id) whose window the server did not say, so it was assumed
/// ([`UNKNOWN_CONTEXT`]). Kept here, where the assumption is made, rather than in every
/// `Model`: only the status line and `/model` ask ([`window_assumed`]).
static ASSUMED_WINDOWS: std::sync::Mutex<std::collections::BTreeSet<(String, String)>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Whether `model`'s window was assumed, its server not saying it (and no `--context-window`
/// replaced it).
pub fn window_assumed(model: &Model) -> bool {
    model.context_window == UNKNOWN_CONTEXT
        && ASSUMED_WINDOWS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(model.base_url.clone(), model.id.clone()))
}

/// `model`'s window was given (`--context-window`): no longer an assumption.
pub fn window_given(model: &Model) {
    ASSUMED_WINDOWS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(model.base_url.clone(), model.id.clone()));
}

/// A server to look for: where, and what it is expected to be (`None`: find out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The server's origin, e.g. `http://127.0.0.1:11434` (a trailing `/v1` is dropped).
    pub url: String,
    pub kind: Option<LocalKind>,
    /// The model the user named for a server that does not list its models (the setup
    /// screen asked): such a server is found when it answers at all.
    pub model: Option<String>,
}

impl Probe {
    pub fn new(url: &str, kind: Option<LocalKind>) -> Self {
        Self {
            url: origin(url),
            kind,
            model: None,
        }
    }

    /// A server known by the name of its model.
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model;
        self
    }
}

/// The servers to probe: the usual ports and `OLLAMA_HOST`, or [`PROBES_ENV`] when set.
pub fn default_probes() -> Vec<Probe> {
    probes_from(
        std::env::var(PROBES_ENV).ok().as_deref(),
        std::env::var("OLLAMA_HOST").ok().as_deref(),
    )
}

fn probes_from(overridden: Option<&str>, ollama_host: Option<&str>) -> Vec<Probe> {
    if let Some(list) = overridden {
        return list
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| Probe::new(u, None))
            .collect();
    }
    let mut probes = vec![
        Probe::new("http://127.0.0.1:11434", Some(LocalKind::Ollama)),
        Probe::new("http://127.0.0.1:8080", Some(LocalKind::LlamaCpp)),
        Probe::new("http://127.0.0.1:1234", Some(LocalKind::LmStudio)),
        Probe::new("http://127.0.0.1:8000", Some(LocalKind::Vllm)),
    ];
    if let Some(host) = ollama_host.map(str::trim).filter(|h| !h.is_empty()) {
        // OLLAMA_HOST may be `0.0.0.0`, `host:port` or a URL; a bind-all address is reached
        // at loopback.
        let mut url = if host.contains("://") {
            host.to_string()
        } else {
            format!("http://{host}")
        };
        url = url.replace("0.0.0.0", "127.0.0.1");
        let has_port = url
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.trim_end_matches('/').parse::<u16>().is_ok());
        if !has_port {
            url = format!("{}:11434", url.trim_end_matches('/'));
        }
        let probe = Probe::new(&url, Some(LocalKind::Ollama));
        if !probes.contains(&probe) {
            probes.insert(0, probe);
        }
    }
    probes
}

/// One model a local server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModel {
    pub id: String,
    /// The window the server will use for it, if it said.
    pub context_window: Option<u64>,
    /// The most the model was trained for, when it differs (Ollama loads less by default).
    pub max_context: Option<u64>,
    /// In memory now (Ollama `/api/ps`, LM Studio `state`): picked first.
    pub loaded: bool,
    /// `Some(false)` when the server says the model cannot call tools.
    pub tools: Option<bool>,
    /// The server says the model takes images (Ollama and LM Studio `vision`, llama.cpp
    /// `modalities.vision`); other servers do not say, and their models are taken not to.
    pub images: bool,
}

/// A running local server and its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    pub kind: LocalKind,
    /// Origin, e.g. `http://127.0.0.1:11434`.
    pub url: String,
    pub models: Vec<LocalModel>,
}

impl LocalServer {
    /// The OpenAI-compatible base URL the agent sends requests to.
    pub fn api_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// The model to use when none was named: a loaded one first.
    pub fn preferred(&self) -> Option<&LocalModel> {
        self.models
            .iter()
            .find(|m| m.loaded)
            .or_else(|| self.models.first())
    }

    /// `model` as the agent calls it.
    pub fn model(&self, model: &LocalModel) -> Model {
        let window = model.context_window.unwrap_or(match self.kind {
            LocalKind::Ollama => OLLAMA_DEFAULT_CONTEXT,
            _ => UNKNOWN_CONTEXT,
        });
        if model.context_window.is_none() && self.kind != LocalKind::Ollama {
            ASSUMED_WINDOWS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((self.api_base(), model.id.clone()));
        }
        Model {
            id: model.id.clone(),
            provider: self.kind.name().to_string(),
            api: Api::OpenaiCompletions,
            base_url: self.api_base(),
            context_window: window,
            // A quarter of a small window: the rest is for the prompt.
            max_output: (window / 4).clamp(256, 16_384),
            reasoning: false,
            images: model.images,
            cost: ModelCost::default(),
        }
    }

    /// Every model as the agent calls it.
    pub fn all_models(&self) -> Vec<Model> {
        self.models.iter().map(|m| self.model(m)).collect()
    }
}

/// The servers among `probes` that answered within `deadline`, in probe order.
pub async fn detect(probes: &[Probe], deadline: Duration) -> Vec<LocalServer> {
    if probes.is_empty() {
        return Vec::new();
    }
    let client = probe_client(deadline);
    // All start together and each has the deadline: one slow server costs the others nothing.
    let all = futures_util::future::join_all(
        probes
            .iter()
            .map(|probe| tokio::time::timeout(deadline, find(&client, probe))),
    );
    all.await
        .into_iter()
        .filter_map(|found| found.ok()?.ok())
        .collect()
}

/// The server `probe` looks for; one known by its model's name is found when it answers
/// anything at all, since it does not list its models.
async fn find(client: &reqwest::Client, probe: &Probe) -> Result<LocalServer, String> {
    let found = identify(client, &probe.url, probe.kind).await;
    let Some(model) = &probe.model else {
        return found;
    };
    if found.is_ok() {
        return found;
    }
    let url = format!("{}/v1/models", probe.url);
    client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("{url}: {}", crate::http::error_chain(&e)))?;
    Ok(named_server(&probe.url, model))
}

/// A server at `url` that does not list its models, serving `model` (as the user named it).
pub fn named_server(url: &str, model: &str) -> LocalServer {
    LocalServer {
        kind: LocalKind::OpenaiCompatible,
        url: origin(url),
        models: vec![LocalModel {
            id: model.to_string(),
            context_window: None,
            max_context: None,
            loaded: true,
            tools: None,
            images: false,
        }],
    }
}

/// Why [`inspect`] found no usable server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InspectError {
    /// Nothing answered (refused, timed out, not a URL).
    Unreachable(String),
    /// Something answered, but its model list is missing or empty.
    NoList(String),
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) | Self::NoList(e) => f.write_str(e),
        }
    }
}

/// Whatever server answers at `url` (a URL the user typed), or why none does.
pub async fn inspect(url: &str, deadline: Duration) -> Result<LocalServer, InspectError> {
    crate::check_base_url(url).map_err(|e| InspectError::Unreachable(e.to_string()))?;
    // A URL the user typed may be https, on another machine: verified as usual.
    let client = crate::http::client();
    let url = origin(url);
    match tokio::time::timeout(deadline, identify(&client, &url, None)).await {
        Ok(Ok(server)) if server.models.is_empty() => Err(InspectError::NoList(format!(
            "{url} answers but lists no models"
        ))),
        Ok(Ok(server)) => Ok(server),
        Ok(Err(error)) => {
            // Anything that answers HTTP is a server whose model can be named instead.
            let list = client.get(format!("{url}/v1/models")).send();
            match tokio::time::timeout(deadline, list).await {
                Ok(Ok(_)) => Err(InspectError::NoList(error)),
                _ => Err(InspectError::Unreachable(error)),
            }
        }
        Err(_) => Err(InspectError::Unreachable(format!(
            "{url} did not answer within {deadline:?}"
        ))),
    }
}

/// The context window a llama.cpp server at `url` was started with (`/props`), if it is one.
pub async fn props_window(url: &str, deadline: Duration) -> Option<u64> {
    let client = probe_client(deadline);
    let props = tokio::time::timeout(deadline, get(&client, &format!("{}/props", origin(url))))
        .await
        .ok()?
        .ok()?;
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
}

/// A client for plain-HTTP servers on this machine: no proxy, and no root certificates (loading
/// them costs ~2 ms, which a probe at every start without a key should not pay).
fn probe_client(deadline: Duration) -> reqwest::Client {
    crate::http::install_tls();
    reqwest::Client::builder()
        .connect_timeout(deadline)
        .timeout(deadline)
        .no_proxy()
        .tls_certs_only(Vec::new())
        .build()
        .unwrap_or_else(|_| crate::http::client())
}

/// `http://host:port/v1/` → `http://host:port`.
fn origin(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url).to_string()
}

async fn get(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{url}: {}", crate::http::error_chain(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {}", status.as_u16()));
    }
    response
        .json()
        .await
        .map_err(|e| format!("{url} sent no JSON: {e}"))
}

async fn identify(
    client: &reqwest::Client,
    url: &str,
    kind: Option<LocalKind>,
) -> Result<LocalServer, String> {
    match kind {
        Some(LocalKind::Ollama) => ollama(client, url).await,
        Some(LocalKind::LlamaCpp) => match llama_cpp(client, url).await {
            Ok(server) => Ok(server),
            // llama-cpp-python serves the same port without `/props`.
            Err(_) => openai_models(client, url).await,
        },
        Some(LocalKind::LmStudio) => lm_studio(client, url).await,
        Some(LocalKind::Vllm | LocalKind::OpenaiCompatible) => openai_models(client, url).await,
        None => {
            // Each server's own endpoint tells it apart; `/v1/models` every one has.
            if let Ok(server) = ollama(client, url).await {
                return Ok(server);
            }
            if let Ok(server) = llama_cpp(client, url).await {
                return Ok(server);
            }
            if let Ok(server) = lm_studio(client, url).await {
                return Ok(server);
            }
            openai_models(client, url).await
        }
    }
}

async fn ollama(client: &reqwest::Client, url: &str) -> Result<LocalServer, String> {
    let tags = get(client, &format!("{url}/api/tags")).await?;
    let names: Vec<String> = tags
        .get("models")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{url}/api/tags lists no models"))?
        .iter()
        .filter_map(|m| m.get("name").or_else(|| m.get("model")))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    // Loaded models and the window each was loaded with (newer Ollama reports it).
    let ps = get(client, &format!("{url}/api/ps")).await.ok();
    let loaded: Vec<(String, Option<u64>)> = ps
        .as_ref()
        .and_then(|ps| ps.get("models"))
        .and_then(Value::as_array)
        .map(|models| {
            models
                .iter()
                .filter_map(|m| {
                    let name = m.get("name").or_else(|| m.get("model"))?.as_str()?;
                    Some((
                        name.to_string(),
                        m.get("context_length").and_then(Value::as_u64),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let shows = futures_util::future::join_all(names.iter().map(|name| {
        let request = client
            .post(format!("{url}/api/show"))
            .json(&serde_json::json!({ "model": name }))
            .send();
        async move {
            let response = request.await.ok()?;
            if !response.status().is_success() {
                return None;
            }
            response.json::<Value>().await.ok()
        }
    }))
    .await;
    let models = names
        .into_iter()
        .zip(shows)
        .map(|(id, show)| {
            let in_memory = loaded.iter().find(|(name, _)| *name == id);
            let trained = show.as_ref().and_then(ollama_trained_context);
            let num_ctx = show.as_ref().and_then(ollama_num_ctx);
            let context_window = in_memory
                .and_then(|(_, ctx)| *ctx)
                .or(num_ctx)
                .or_else(|| trained.map(|t| t.min(OLLAMA_DEFAULT_CONTEXT)));
            let tools = show
                .as_ref()
                .and_then(|s| s.get("capabilities"))
                .and_then(Value::as_array)
                .map(|caps| caps.iter().any(|c| c.as_str() == Some("tools")));
            let images = show
                .as_ref()
                .and_then(|s| s.get("capabilities"))
                .and_then(Value::as_array)
                .is_some_and(|caps| caps.iter().any(|c| c.as_str() == Some("vision")));
            LocalModel {
                id,
                context_window,
                max_context: trained,
                loaded: in_memory.is_some(),
                tools,
                images,
            }
        })
        .collect();
    Ok(LocalServer {
        kind: LocalKind::Ollama,
        url: url.to_string(),
        models,
    })
}

/// `model_info["<arch>.context_length"]` of an `/api/show` answer.
fn ollama_trained_context(show: &Value) -> Option<u64> {
    show.get("model_info")?
        .as_object()?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, v)| v.as_u64())
}

/// `num_ctx` from the `parameters` text of an `/api/show` answer (`num_ctx 8192` per line).
fn ollama_num_ctx(show: &Value) -> Option<u64> {
    show.get("parameters")?.as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.trim_matches('"').parse().ok())
            .flatten()
    })
}

async fn llama_cpp(client: &reqwest::Client, url: &str) -> Result<LocalServer, String> {
    let props = get(client, &format!("{url}/props")).await?;
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("{url}/props has no n_ctx"))?;
    // The id `/v1/models` gives; llama-server serves one model whatever the request names.
    let listed = get(client, &format!("{url}/v1/models"))
        .await
        .ok()
        .and_then(|v| first_model_id(&v));
    let id = listed
        .or_else(|| {
            props
                .get("model_path")
                .and_then(Value::as_str)
                .and_then(|p| p.rsplit('/').next())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "default".to_string());
    Ok(LocalServer {
        kind: LocalKind::LlamaCpp,
        url: url.to_string(),
        models: vec![LocalModel {
            id,
            context_window: Some(n_ctx),
            max_context: None,
            loaded: true,
            tools: None,
            images: props.pointer("/modalities/vision") == Some(&Value::Bool(true)),
        }],
    })
}

fn first_model_id(models: &Value) -> Option<String> {
    models
        .get("data")?
        .as_array()?
        .first()?
        .get("id")?
        .as_str()
        .map(str::to_string)
}

async fn lm_studio(client: &reqwest::Client, url: &str) -> Result<LocalServer, String> {
    let listed = get(client, &format!("{url}/api/v0/models")).await?;
    let models = listed
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{url}/api/v0/models has no data"))?
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) != Some("embeddings"))
        .filter_map(|m| {
            let id = m.get("id")?.as_str()?.to_string();
            let loaded = m.get("state").and_then(Value::as_str) == Some("loaded");
            let max = m.get("max_context_length").and_then(Value::as_u64);
            let tools = m
                .get("capabilities")
                .and_then(Value::as_array)
                .map(|caps| caps.iter().any(|c| c.as_str() == Some("tool_use")));
            let images = m.get("type").and_then(Value::as_str) == Some("vlm");
            Some(LocalModel {
                id,
                context_window: m
                    .get("loaded_context_length")
                    .and_then(Value::as_u64)
                    .or(max),
                max_context: max,
                loaded,
                tools,
                images,
            })
        })
        .collect();
    Ok(LocalServer {
        kind: LocalKind::LmStudio,
        url: url.to_string(),
        models,
    })
}

async fn openai_models(client: &reqwest::Client, url: &str) -> Result<LocalServer, String> {
    let listed = get(client, &format!("{url}/v1/models")).await?;
    let data = listed
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{url}/v1/models has no model list"))?;
    let vllm = data.iter().any(|m| m.get("max_model_len").is_some());
    let models = data
        .iter()
        .filter_map(|m| {
            Some(LocalModel {
                id: m.get("id")?.as_str()?.to_string(),
                context_window: m
                    .get("max_model_len")
                    .or_else(|| m.pointer("/meta/n_ctx"))
                    .and_then(Value::as_u64),
                max_context: None,
                loaded: false,
                tools: None,
                images: false,
            })
        })
        .collect();
    Ok(LocalServer {
        kind: if vllm {
            LocalKind::Vllm
        } else {
            LocalKind::OpenaiCompatible
        },
        url: url.to_string(),
        models,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probes_default_to_the_usual_ports_and_follow_the_overrides() {
        let defaults = probes_from(None, None);
        let urls: Vec<&str> = defaults.iter().map(|p| p.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:11434",
                "http://127.0.0.1:8080",
                "http://127.0.0.1:1234",
                "http://127.0.0.1:8000"
            ]
        );
        assert!(probes_from(Some(""), None).is_empty(), "empty: no probing");
        let set = probes_from(Some("http://127.0.0.1:9/v1/, http://x:1"), Some("ignored"));
        assert_eq!(set.len(), 2);
        assert_eq!(set[0].url, "http://127.0.0.1:9");
        assert_eq!(set[0].kind, None);
        let host = probes_from(None, Some("0.0.0.0"));
        assert_eq!(host.len(), 4, "the default address is not probed twice");
        let host = probes_from(None, Some("gpu-box:9999"));
        assert_eq!(host[0].url, "http://gpu-box:9999");
        assert_eq!(host[0].kind, Some(LocalKind::Ollama));
    }

    #[test]
    fn ollama_answers_are_read() {
        let show = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
            "capabilities": ["completion", "tools"]
        });
        assert_eq!(ollama_trained_context(&show), Some(40_960));
        assert_eq!(ollama_num_ctx(&show), Some(8_192));
        assert_eq!(
            ollama_num_ctx(&json!({"parameters": "temperature 1"})),
            None
        );
    }

    #[test]
    fn the_loaded_model_is_preferred_and_windows_default_by_kind() {
        let model = |id: &str, loaded| LocalModel {
            id: id.into(),
            context_window: None,
            max_context: None,
            loaded,
            tools: None,
            images: false,
        };
        let server = LocalServer {
            kind: LocalKind::Ollama,
            url: "http://127.0.0.1:11434".into(),
            models: vec![model("a", false), model("b", true)],
        };
        assert_eq!(server.preferred().unwrap().id, "b");
        let m = server.model(server.preferred().unwrap());
        assert_eq!(m.context_window, OLLAMA_DEFAULT_CONTEXT);
        assert_eq!(m.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(m.provider, "ollama");
        assert_eq!(m.max_output, 1_024);
    }
}
