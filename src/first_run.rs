//! The first run in the TUI with nothing configured and nothing found: the setup screen
//! (`tui::setup_screen`), the live check of a server URL, and storing what was chosen in
//! `auth.toml`, so the next start needs no screen.

use llm::{Registry, local};
use tui::setup_screen::{Check, CheckResult, KeyCheck, SetupChoice, SetupResult, SetupScreen};

use crate::auth::Auth;
use crate::local::{Preset, URL_DEADLINE};
use crate::setup::Fail;

pub enum Outcome {
    Quit,
    Key {
        provider: String,
        key: String,
        model: String,
        /// What the provider said of the key, for a notice.
        checked: String,
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
            match local::inspect(&url, URL_DEADLINE).await {
                Ok(server) => CheckResult::Models(summary(&server)),
                Err(local::InspectError::NoList(why)) => CheckResult::NoList(why),
                Err(local::InspectError::Unreachable(why)) => CheckResult::Failed(why),
            }
        })
    });
    // The key is tried with the model the screen will start with.
    let models: Vec<llm::Model> = registry.models();
    let check_key: KeyCheck = Box::new(move |provider: String, key: String| {
        let model = models.iter().find(|m| m.provider == provider).cloned();
        Box::pin(async move {
            let Some(model) = model else {
                return Ok(format!("the key for {provider} was not checked"));
            };
            llm::check_key(&model, &key).await.said(&provider)
        })
    });
    let result = tui::setup_screen::run(screen, check, check_key)
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
            checked,
        } => {
            auth.keys.insert(provider.clone(), key.clone());
            auth.model = Some(model.clone());
            let path = saved(&auth)?;
            Ok(Outcome::Key {
                provider,
                key,
                model,
                checked: format!("{checked}; saved to {} (mode 0600).", path.display()),
            })
        }
        SetupResult::Server { url, model } => {
            let server = match &model {
                // It lists no models: the one named is what it serves.
                Some(name) => local::named_server(&url, name),
                None => local::inspect(&url, URL_DEADLINE)
                    .await
                    .map_err(|e| Fail(e.to_string()))?,
            };
            let probe = local::Probe::new(&url, None);
            if !auth.local_servers.contains(&probe.url) {
                auth.local_servers.push(probe.url.clone());
            }
            if let Some(name) = model {
                auth.server_models.insert(probe.url, name);
            }
            saved(&auth)?;
            Ok(Outcome::Local(crate::local::preset_for(&server)))
        }
    }
}
