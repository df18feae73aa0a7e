//! The first run in the TUI with nothing configured and nothing found: the setup screen
//! (`tui::setup_screen`), the live check of a server URL, and storing what was chosen in
//! `auth.toml`, so the next start needs no screen.

use llm::{Registry, local};
use tui::setup_screen::{Check, SetupChoice, SetupResult, SetupScreen};

use crate::auth::Auth;
use crate::local::{Preset, URL_DEADLINE};
use crate::setup::Fail;

pub enum Outcome {
    Quit,
    Key {
        provider: String,
        key: String,
        model: String,
    },
    Local(Preset),
}

/// The providers offered: those of the built-in defaults first, then the registry's others
/// (each with its first model), then a server by URL.
fn choices(registry: &Registry) -> Vec<SetupChoice> {
    let mut out: Vec<SetupChoice> = Vec::new();
    let mut seen = Vec::new();
    let defaults = crate::setup::DEFAULT_MODELS
        .iter()
        .filter_map(|name| registry.get(name));
    let others = registry
        .models()
        .into_iter()
        .filter(|m| !llm::is_local_url(&m.base_url));
    for model in defaults.chain(others) {
        if seen.contains(&model.provider) {
            continue;
        }
        seen.push(model.provider.clone());
        out.push(SetupChoice::Provider {
            env: llm::api_key_env(&model.provider),
            model: format!("{}/{}", model.provider, model.id),
            name: model.provider,
        });
    }
    out.push(SetupChoice::LocalServer);
    out
}

/// A server's models as the screen lists them.
fn summary(server: &local::LocalServer) -> Vec<String> {
    server
        .all_models()
        .iter()
        .map(|m| {
            format!(
                "{} · {} · {} tokens of context",
                server.kind.name(),
                m.id,
                m.context_window
            )
        })
        .collect()
}

pub async fn run(
    home: &session::Home,
    registry: &Registry,
    probed: &[String],
) -> Result<Outcome, Fail> {
    let screen = SetupScreen::new(choices(registry), crate::local::probed_line(probed))
        .with_auth_file(crate::auth::Auth::path(home).display().to_string());
    let check: Check = Box::new(|url: String| {
        Box::pin(async move {
            local::inspect(&url, URL_DEADLINE)
                .await
                .map(|server| summary(&server))
        })
    });
    let result = tui::setup_screen::run(screen, check)
        .await
        .map_err(|e| Fail(format!("terminal error: {e}")))?;
    let mut auth = Auth::load(home).map_err(Fail)?;
    let saved = |auth: &Auth| {
        auth.save(home)
            .map_err(|e| Fail(format!("cannot write {}: {e}", Auth::path(home).display())))
    };
    match result {
        SetupResult::Quit => Ok(Outcome::Quit),
        SetupResult::Key {
            provider,
            model,
            key,
        } => {
            auth.keys.insert(provider.clone(), key.clone());
            auth.model = Some(model.clone());
            saved(&auth)?;
            Ok(Outcome::Key {
                provider,
                key,
                model,
            })
        }
        SetupResult::Server { url } => {
            let server = local::inspect(&url, URL_DEADLINE).await.map_err(Fail)?;
            let probe = local::Probe::new(&url, None);
            if !auth.local_servers.contains(&probe.url) {
                auth.local_servers.push(probe.url);
            }
            saved(&auth)?;
            Ok(Outcome::Local(crate::local::preset_for(&server)))
        }
    }
}
