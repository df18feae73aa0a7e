//! The model registry: which models exist, how to reach them and what they cost.
//!
//! The built-in list is `assets/models.toml`, embedded in the binary; the user's config adds
//! providers and models in the same format with [`Registry::merge_toml`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{Api, Model, ModelCost};

/// How to reach a provider: the defaults of its models.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProviderEntry {
    pub api: Api,
    pub base_url: String,
}

/// A model as written in the file; `api` and `base_url` fall back to its provider's, looked up
/// when the model is, so overriding a provider's URL moves all its models.
#[derive(Debug, Clone, Deserialize)]
struct ModelEntry {
    provider: String,
    id: String,
    api: Option<Api>,
    base_url: Option<String>,
    context_window: u64,
    max_output: u64,
    #[serde(default)]
    reasoning: bool,
    /// Takes images as input.
    #[serde(default)]
    images: bool,
    #[serde(default)]
    cost: ModelCost,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    #[serde(default)]
    providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    models: Vec<ModelEntry>,
}

/// A registry file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError(pub String);

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RegistryError {}

/// Known providers and models.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    providers: BTreeMap<String, ProviderEntry>,
    /// In file order, later merges after earlier ones.
    models: Vec<ModelEntry>,
}

const BUILTIN: &str = include_str!("../../../assets/models.toml");

impl Registry {
    /// The built-in registry.
    pub fn builtin() -> Self {
        Self::from_toml(BUILTIN).expect("assets/models.toml is valid (checked by a test)")
    }

    pub fn from_toml(text: &str) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        registry.merge_toml(text)?;
        Ok(registry)
    }

    /// Adds the providers and models of `text` (the registry format), replacing entries of the
    /// same name. On error nothing is changed.
    pub fn merge_toml(&mut self, text: &str) -> Result<(), RegistryError> {
        let file: RegistryFile =
            toml::from_str(text).map_err(|err| RegistryError(format!("model registry: {err}")))?;
        let mut providers = self.providers.clone();
        providers.extend(file.providers);
        for model in &file.models {
            let has_defaults = providers.contains_key(&model.provider);
            if !has_defaults && (model.api.is_none() || model.base_url.is_none()) {
                return Err(RegistryError(format!(
                    "model registry: {}/{} names no api and base_url and provider `{}` is unknown",
                    model.provider, model.id, model.provider
                )));
            }
        }
        self.providers = providers;
        for model in file.models {
            self.models
                .retain(|m| !(m.provider == model.provider && m.id == model.id));
            self.models.push(model);
        }
        Ok(())
    }

    /// Adds or replaces a provider's defaults.
    pub fn insert_provider(&mut self, name: &str, entry: ProviderEntry) {
        self.providers.insert(name.to_string(), entry);
    }

    /// Adds or replaces a model (same provider and id).
    pub fn insert_model(&mut self, model: Model) {
        self.models
            .retain(|m| !(m.provider == model.provider && m.id == model.id));
        self.models.push(ModelEntry {
            provider: model.provider,
            id: model.id,
            api: Some(model.api),
            base_url: Some(model.base_url),
            context_window: model.context_window,
            max_output: model.max_output,
            reasoning: model.reasoning,
            images: model.images,
            cost: model.cost,
        });
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderEntry> {
        self.providers.get(name)
    }

    /// Every provider named by the registry (with defaults or only by its models), sorted.
    pub fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .providers
            .keys()
            .cloned()
            .chain(self.models.iter().map(|m| m.provider.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Every model, in registry order.
    pub fn models(&self) -> Vec<Model> {
        self.models.iter().filter_map(|m| self.resolve(m)).collect()
    }

    /// Looks a model up by `provider/id`, else by bare id (the first provider listing it wins;
    /// ids may themselves contain `/`, as on OpenRouter).
    pub fn get(&self, name: &str) -> Option<Model> {
        let qualified = name.split_once('/').and_then(|(provider, id)| {
            self.models
                .iter()
                .find(|m| m.provider == provider && m.id == id)
        });
        qualified
            .or_else(|| self.models.iter().find(|m| m.id == name))
            .and_then(|m| self.resolve(m))
    }

    fn resolve(&self, entry: &ModelEntry) -> Option<Model> {
        let provider = self.providers.get(&entry.provider);
        Some(Model {
            id: entry.id.clone(),
            provider: entry.provider.clone(),
            api: entry.api.or(provider.map(|p| p.api))?,
            base_url: entry
                .base_url
                .clone()
                .or_else(|| provider.map(|p| p.base_url.clone()))?,
            context_window: entry.context_window,
            max_output: entry.max_output,
            reasoning: entry.reasoning,
            images: entry.images,
            cost: entry.cost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_registry_parses_and_covers_each_provider() {
        let registry = Registry::builtin();
        for name in [
            "openai/gpt-5",
            "gpt-5-mini",
            "gpt-4.1",
            "anthropic/claude-sonnet-4-5",
            "claude-opus-4-1",
            "claude-haiku-4-5",
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "deepseek-chat",
            "deepseek-reasoner",
            "local/local",
        ] {
            assert!(registry.get(name).is_some(), "{name}");
        }
        let sonnet = registry.get("claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.api, Api::AnthropicMessages);
        assert_eq!(sonnet.base_url, "https://api.anthropic.com/v1");
        assert_eq!(sonnet.cost.cache_write, 3.75);
        let gemini = registry.get("gemini-2.5-flash").unwrap();
        assert_eq!(gemini.api, Api::OpenaiCompletions);
        assert!(gemini.base_url.ends_with("/v1beta/openai"));
        assert_eq!(registry.get("local").unwrap().cost, ModelCost::default());
        for model in registry.models() {
            assert!(model.context_window > model.max_output, "{}", model.id);
        }
    }

    #[test]
    fn custom_entries_add_and_override() {
        let mut registry = Registry::builtin();
        let before = registry.models().len();
        registry
            .merge_toml(
                r#"
                [providers.ollama]
                api = "openai-completions"
                base_url = "http://127.0.0.1:11434/v1"

                [providers.openai]
                api = "openai-responses"
                base_url = "https://proxy.example/v1"

                [[models]]
                provider = "ollama"
                id = "qwen3-coder:30b"
                context_window = 65536
                max_output = 8192

                [[models]]
                provider = "openai"
                id = "gpt-5"
                context_window = 400000
                max_output = 64000
                reasoning = true
                "#,
            )
            .unwrap();
        assert_eq!(registry.models().len(), before + 1);
        let qwen = registry.get("ollama/qwen3-coder:30b").unwrap();
        assert_eq!(qwen.base_url, "http://127.0.0.1:11434/v1");
        let gpt5 = registry.get("gpt-5").unwrap();
        assert_eq!((gpt5.max_output, gpt5.cost.input), (64000, 0.0));
        assert_eq!(
            registry.get("gpt-5-mini").unwrap().base_url,
            "https://proxy.example/v1"
        );
    }

    #[test]
    fn ids_with_slashes_and_bad_files() {
        let mut registry = Registry::default();
        registry
            .merge_toml(
                r#"
                [[models]]
                provider = "openrouter"
                id = "anthropic/claude-sonnet-4.5"
                api = "openai-completions"
                base_url = "https://openrouter.ai/api/v1"
                context_window = 200000
                max_output = 64000
                "#,
            )
            .unwrap();
        assert!(
            registry
                .get("openrouter/anthropic/claude-sonnet-4.5")
                .is_some()
        );
        assert!(registry.get("anthropic/claude-sonnet-4.5").is_some());
        let orphan =
            "[[models]]\nprovider = \"x\"\nid = \"y\"\ncontext_window = 1\nmax_output = 1\n";
        assert!(registry.merge_toml(orphan).is_err());
        assert!(registry.merge_toml("models = 3").is_err());
        assert_eq!(registry.models().len(), 1, "unchanged after errors");
    }
}
