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
