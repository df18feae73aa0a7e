//! What a provider needs to know about the model it calls.

use serde::{Deserialize, Serialize};

/// The wire API a model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    OpenaiCompletions,
    OpenaiResponses,
    AnthropicMessages,
}

/// Prices in US dollars per million tokens; absent prices are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Id sent to the provider, e.g. `gpt-5`.
    pub id: String,
    /// Provider name, e.g. `openai`.
    pub provider: String,
    pub api: Api,
    pub base_url: String,
    pub context_window: u64,
    pub max_output: u64,
    pub reasoning: bool,
    /// Whether the model takes images as input (`images = true` in the registry); a prompt
    /// with an image for one that does not is refused before a request is made.
    #[serde(default)]
    pub images: bool,
    pub cost: ModelCost,
}

impl Model {
    /// Cost in US dollars of the given usage at this model's prices.
    pub fn cost_of(&self, usage: &crate::Usage) -> f64 {
        let per_token = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
        per_token(self.cost.input, usage.input)
            + per_token(self.cost.output, usage.output)
            + per_token(self.cost.cache_read, usage.cache_read)
            + per_token(self.cost.cache_write, usage.cache_write)
    }
}

/// How much the model should think before answering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
}

impl ThinkingLevel {
    /// Every level, least thinking first.
    pub const ALL: [ThinkingLevel; 5] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
    ];

    /// As written in config and flags (`off`, `medium`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A thinking level name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown thinking level `{name}`; the levels are off, minimal, low, medium, high")]
pub struct UnknownThinkingLevel {
    pub name: String,
}

impl std::str::FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.name() == name.trim())
            .ok_or_else(|| UnknownThinkingLevel {
                name: name.to_string(),
            })
    }
}
