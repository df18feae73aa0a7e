//! Local servers at startup: when nothing names a model and no key is set, the usual local
//! servers are probed (≤ 300 ms in all) and the one found is used, with its real context
//! window; `--base-url` on this machine reads the server's window the same way.
//!
//! Ollama's window: the agent talks to its OpenAI-compatible `/v1` API, which takes no
//! `num_ctx`, so the window is what Ollama will really use — the loaded model's context length,
//! else the model's `num_ctx` parameter, else Ollama's default — and when that is smaller than
//! what the model supports, a notice says how to raise it (`OLLAMA_CONTEXT_LENGTH`).

use std::time::Duration;

use llm::Model;
use llm::local::{self, LocalKind, LocalModel, LocalServer, Probe};

use crate::auth::Auth;
use crate::cli::Cli;
use crate::config::Config;
use crate::setup::Fail;

/// A model found on a local server, ready for `setup::build`.
#[derive(Debug, Clone)]
pub struct Preset {
    pub model: Model,
    /// Every model the server offers (for `/model`).
    pub models: Vec<Model>,
    pub notices: Vec<String>,
    /// The server says the model cannot call tools: no tools are sent.
    pub chat_only: bool,
}

/// What startup found.
pub enum Found {
    Use(Preset),
    /// A model is named or a key is set: nothing was probed.
    NotNeeded,
    /// Nothing configured and no server answered: these were asked.
    Nothing {
        probed: Vec<String>,
    },
}

/// How long a server named by URL (`--base-url`, the setup screen) may take to answer.
pub const URL_DEADLINE: Duration = Duration::from_secs(3);

/// The servers to probe: the usual ports (or `CODING_AGENT_LOCAL_PROBES`) and those the
/// setup screen stored.
pub fn probes(auth: &Auth) -> Vec<Probe> {
    let mut probes = local::default_probes();
    for url in &auth.local_servers {
        let probe = Probe::new(url, None).with_model(auth.server_models.get(url).cloned());
        if !probes.iter().any(|p| p.url == probe.url) {
            probes.push(probe);
        }
    }
    probes
}

/// Decides, before the agent is built, whether a local server supplies the model.
pub async fn choose(
    cli: &Cli,
    config: &Config,
    auth: &Auth,
    registry: &llm::Registry,
) -> Result<Found, Fail> {
    if let Some(url) = &cli.base_url {
        return base_url(cli, config, registry, url).await;
    }
    let named = cli.model.is_some() || config.model.is_some();
    let router = crate::setup::router(config);
    let keyed = crate::setup::DEFAULT_MODELS
        .iter()
        .filter_map(|name| registry.get(name))
        .any(|m| router.key(&m.provider).is_some());
    if named || keyed {
        return Ok(Found::NotNeeded);
    }
    let probes = probes(auth);
    let servers = local::detect(&probes, local::PROBE_DEADLINE).await;
    match servers.iter().find(|s| s.preferred().is_some()) {
        Some(server) => Ok(Found::Use(preset(
            server,
            server.preferred(),
            true,
            cli.context_window.is_some(),
        ))),
        None => Ok(Found::Nothing {
            probed: probes.iter().map(describe).collect(),
        }),
    }
}

/// `--base-url` on this machine: the window (and, without `--model`, the model) from the
/// server itself.
async fn base_url(
    cli: &Cli,
    config: &Config,
    registry: &llm::Registry,
    url: &str,
) -> Result<Found, Fail> {
    let named = cli.model.is_some();
    let known = cli
        .model
        .as_deref()
        .is_some_and(|name| registry.get(name).is_some());
    let ask = llm::is_local_url(url) && (!named || (cli.context_window.is_none() && !known));
    if !ask {
        return Ok(Found::NotNeeded);
    }
    if !named {
        let server = local::inspect(url, URL_DEADLINE).await.map_err(|e| {
            let e = e.to_string();
            Fail(format!(
                "--base-url without --model: the model is read from the server, and {e}. \
                 Name it: add --model NAME (the name the server knows the model by)"
            ))
        })?;
        let mut preset = preset(
            &server,
            server.preferred(),
            false,
            cli.context_window.is_some(),
        );
        // The URL as given: a server may serve its API under another path than `/v1`.
        preset.model.base_url = url.to_string();
        return Ok(Found::Use(preset));
    }
    // With the model named, only llama.cpp's `/props` is asked (one GET): the window
    // llama-server was started with (`-c`), which no registry can know.
    let Some(window) = local::props_window(url, local::PROBE_DEADLINE).await else {
        return Ok(Found::NotNeeded);
    };
    let router = crate::setup::router(config);
    let mut model = crate::setup::resolve_model(cli, config, registry, &router)?;
    model.context_window = window;
    model.max_output = model.max_output.min((window / 4).max(256));
    Ok(Found::Use(Preset {
        model,
        models: Vec::new(),
        notices: Vec::new(),
        chat_only: false,
    }))
}

/// A resumed session that ran on a local server goes on there (no registry knows that
/// server): asked with the patience of a URL the user gave, not the 300 ms of a probe. A
/// server that does not answer is still the session's: it resumes with the model as recorded
/// and a notice naming the server and the ways on (the history can be read, `/model` can
/// switch; a request fails with the connection's error). `None`: the session's model is not a
/// local server's, or the flags name another.
pub async fn resumed_server(
    cli: &Cli,
    session: &session::LoadedSession,
) -> Result<Option<Preset>, Fail> {
    let Some(url) = session.server.as_deref() else {
        return Ok(None);
    };
    if cli.model.is_some() || cli.base_url.is_some() {
        return Ok(None);
    }
    // Down, it is still the session's server: a notice says so, and its window, which
    // nothing says now, is not announced as assumed.
    let (server, notice) = match local::inspect(url, URL_DEADLINE).await {
        Ok(server) => (Some(server), None),
        Err(e) => (
            None,
            Some(format!(
                "This session ran on {} at {url} (model {}), which does not answer: {e}. \
                 Start that server again, or go on with another model (/model, or \
                 --base-url URL --model NAME, or --model PROVIDER/MODEL).",
                session.provider, session.model
            )),
        ),
    };
    let window_given = cli.context_window.is_some() || notice.is_some();
    let listed = server.as_ref().and_then(|s| {
        s.models
            .iter()
            .find(|m| m.id == session.model)
            .map(|m| (s, m))
    });
    let mut preset = match listed {
        Some((server, model)) => preset(server, Some(model), false, window_given),
        // It does not list the model, or does not answer: the session's, as it was named.
        None => {
            let named = local::named_server(url, &session.model);
            preset(&named, named.preferred(), false, window_given)
        }
    };
    if let Some(notice) = notice {
        preset.notices = vec![notice];
    }
    // The session's own names: what it was recorded with.
    preset.model.provider = session.provider.clone();
    preset.model.id = session.model.clone();
    preset.model.base_url = url.to_string();
    Ok(Some(preset))
}

/// The server's preferred model, as a preset (the setup screen's choice).
pub fn preset_for(server: &LocalServer) -> Preset {
    preset(server, server.preferred(), false, false)
}

/// `window_given`: `--context-window` names the window, so none is assumed.
fn preset(
    server: &LocalServer,
    chosen: Option<&LocalModel>,
    announce: bool,
    window_given: bool,
) -> Preset {
    let mut notices = Vec::new();
    let models = server.all_models();
    let Some(chosen) = chosen else {
        return Preset {
            model: models.first().cloned().unwrap_or_else(|| {
                server.model(&LocalModel {
                    id: "default".into(),
                    context_window: None,
                    max_context: None,
                    loaded: false,
                    tools: None,
                    images: false,
                })
            }),
            models,
            notices,
            chat_only: false,
        };
    };
    let model = server.model(chosen);
    if announce {
        notices.push(format!(
            "No model configured and no API key set: using {} at {} — {} ({} tokens of context{}).",
            server.kind.name(),
            server.url,
            model.id,
            model.context_window,
            if chosen.loaded { ", loaded" } else { "" }
        ));
    }
    if server.kind == LocalKind::Ollama
        && let Some(max) = chosen.max_context.filter(|&max| max > model.context_window)
    {
        notices.push(format!(
            "Ollama serves {} with a {}-token window though the model supports {max}: restart \
             Ollama with OLLAMA_CONTEXT_LENGTH={} (or set PARAMETER num_ctx in a Modelfile) \
             for longer sessions.",
            model.id,
            model.context_window,
            max.min(32_768)
        ));
    }
    if chosen.context_window.is_none() && server.kind != LocalKind::Ollama && !window_given {
        notices.push(format!(
            "{} did not say {}'s context window: {} tokens is assumed. If the server was \
             started with another (llama-server -c N), pass --context-window N.",
            server.kind.name(),
            model.id,
            model.context_window
        ));
    }
    let chat_only = chosen.tools == Some(false);
    if chat_only {
        notices.push(format!(
            "{} cannot call tools ({} says so): chat-only mode — the agent cannot read, edit or \
             run anything. Pick a model with tool support for coding work.",
            model.id,
            server.kind.name()
        ));
    }
    Preset {
        model,
        models,
        notices,
        chat_only,
    }
}

fn describe(probe: &Probe) -> String {
    match probe.kind {
        Some(LocalKind::Ollama) => format!("{} (Ollama)", probe.url),
        Some(LocalKind::LlamaCpp) => format!("{} (llama.cpp)", probe.url),
        Some(LocalKind::LmStudio) => format!("{} (LM Studio)", probe.url),
        Some(LocalKind::Vllm) => format!("{} (vLLM)", probe.url),
        _ => probe.url.clone(),
    }
}

/// The end of the "no API key" message: which local servers were looked for.
pub fn probed_line(probed: &[String]) -> String {
    if probed.is_empty() {
        format!(
            "Local servers were not looked for ({} is empty).",
            local::PROBES_ENV
        )
    } else {
        format!("No local server answered at {}.", probed.join(", "))
    }
}

/// `--list-models`: the running local servers' models, asked now.
pub async fn live_models(auth: &Auth) -> (Vec<Model>, String) {
    let probes = probes(auth);
    let servers = local::detect(&probes, local::PROBE_DEADLINE).await;
    let mut models = Vec::new();
    let mut lines = Vec::new();
    for server in &servers {
        lines.push(format!(
            "{} at {}: {} model{}",
            server.kind.name(),
            server.url,
            server.models.len(),
            if server.models.len() == 1 { "" } else { "s" }
        ));
        models.extend(server.all_models());
    }
    if servers.is_empty() {
        lines.push(probed_line(
            &probes.iter().map(describe).collect::<Vec<_>>(),
        ));
    }
    (models, lines.join("\n"))
}
