//! One provider for every model: dispatches on the model's wire API and supplies its key.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;

use crate::{Context, EventStream, Model, Provider, StreamOptions, http, sse, wire};

/// Sends each call through the wire API of `model.api` (see `wire`). The API key is, in order: the one in the
/// call's options, one set with [`with_key`](Self::with_key) for the model's provider, or the
/// provider's environment variable (see [`api_key_env`]).
#[derive(Clone, Default)]
pub struct Router {
    /// Built at the first call or by [`warm`](Self::warm). Clones share it.
    client: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    /// Shared by the clones: a key the user enters later ([`add_key`](Self::add_key)) reaches
    /// the agent's copy.
    keys: Arc<RwLock<HashMap<String, String>>>,
    headers: HashMap<String, Vec<(String, String)>>,
}

impl Router {
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `key` for every model of `provider` (a key from the user's config).
    pub fn with_key(self, provider: impl Into<String>, key: impl Into<String>) -> Self {
        self.add_key(provider, key);
        self
    }

    /// Uses `key` for `provider` from now on, in every clone of this router.
    pub fn add_key(&self, provider: impl Into<String>, key: impl Into<String>) {
        self.keys
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(provider.into(), key.into());
    }

    /// Sends these extra HTTP headers with every call to `provider`.
    pub fn with_headers(
        mut self,
        provider: impl Into<String>,
        headers: Vec<(String, String)>,
    ) -> Self {
        self.headers.insert(provider.into(), headers);
        self
    }

    /// Builds the HTTP client on a thread of its own, and loads the trust roots on another
    /// when `model` is reached over HTTPS, so the first call finds both ready instead of
    /// loading them while the user waits for the first token. A call made meanwhile waits for
    /// this build rather than starting another; a plain-HTTP model never loads the roots.
    pub fn warm(&self, model: &Model) {
        http::warm_trust(&model.base_url);
        let client = self.client.clone();
        let spawned = std::thread::Builder::new()
            .name("http-client".into())
            .spawn(move || {
                client.get_or_init(http::client);
            });
        // Without a thread the first call builds it, as before.
        drop(spawned);
    }

    /// The key a call to `provider` would use now (config, then environment).
    pub fn key(&self, provider: &str) -> Option<String> {
        self.key_for(provider, |name| std::env::var(name).ok())
    }

    /// The key a call to `provider` would use, looking variables up with `env`.
    fn key_for(&self, provider: &str, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        self.keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(provider)
            .cloned()
            .or_else(|| env(&api_key_env(provider)))
            .filter(|key| !key.is_empty())
    }
}

/// The hosted providers the agent knows, and the variable each one's key is usually in.
const HOSTED_PROVIDERS: [(&str, &str); 10] = [
    ("openai", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("google", "GEMINI_API_KEY"),
    ("gemini", "GEMINI_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("groq", "GROQ_API_KEY"),
    ("xai", "XAI_API_KEY"),
    ("mistral", "MISTRAL_API_KEY"),
    ("cerebras", "CEREBRAS_API_KEY"),
];

/// Whether `provider` is a hosted service that takes a key (even when its URL was pointed at
/// a proxy on this machine), rather than a local server.
pub fn is_hosted_provider(provider: &str) -> bool {
    HOSTED_PROVIDERS.iter().any(|(name, _)| *name == provider)
}

/// The environment variable holding `provider`'s API key: the usual names for the well-known
/// providers, else the name upper-cased with `_API_KEY` (`my-llm` → `MY_LLM_API_KEY`).
pub fn api_key_env(provider: &str) -> String {
    if let Some((_, var)) = HOSTED_PROVIDERS.iter().find(|(name, _)| *name == provider) {
        return var.to_string();
    }
    let stem: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}_API_KEY")
}

impl Provider for Router {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        mut options: StreamOptions,
        cancel: CancellationToken,
    ) -> EventStream {
        if options.api_key.is_none() {
            options.api_key = self.key(&model.provider);
        }
        if let Some(headers) = self.headers.get(&model.provider) {
            options.headers.extend(headers.iter().cloned());
        }
        let wire = wire::of(model.api);
        let request = (wire.request)(model, &context, &options);
        let parser = (wire.parser)(crate::http::shown_provider(model));
        let client = self.client.get_or_init(http::client).clone();
        sse::spawn(client, model, options, request, parser, cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warming_builds_the_client_the_clones_share() {
        let router = Router::new();
        let clone = router.clone();
        assert!(clone.client.get().is_none(), "nothing is built before");
        router.warm(&crate::Registry::builtin().models()[0]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while clone.client.get().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the warming thread never built the client"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn keys_come_from_config_then_the_environment() {
        let router = Router::new().with_key("deepseek", "from-config");
        let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "from-env".to_string());
        assert_eq!(
            router.key_for("deepseek", env).as_deref(),
            Some("from-config")
        );
        assert_eq!(router.key_for("openai", env).as_deref(), Some("from-env"));
        assert_eq!(router.key_for("local", env), None);
    }

    #[test]
    fn env_names_follow_convention() {
        assert_eq!(api_key_env("google"), "GEMINI_API_KEY");
        assert_eq!(api_key_env("my-llm"), "MY_LLM_API_KEY");
    }
}
