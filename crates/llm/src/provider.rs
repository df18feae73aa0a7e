//! The `Provider` trait every wire API implements.

use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{Message, Model, RetryPolicy, ThinkingLevel};

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Everything one model call is about.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub system_prompt: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Sent as a bearer token (or the provider's key header); local servers need none.
    pub api_key: Option<String>,
    /// Output token limit sent with every request; the model's `max_output` when absent.
    pub max_tokens: Option<u64>,
    pub thinking: ThinkingLevel,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
    /// Retries of requests that fail before the first byte of the response.
    pub retry: RetryPolicy,
    /// A response that sends no content for this long fails (default 120 s): a hung server
    /// must never hang the agent. Keep-alive comments and empty events are not content.
    pub idle_timeout: Duration,
    /// Turn on the provider's own web search tool where its API has one (OpenAI responses,
    /// Anthropic messages); other APIs ignore it.
    pub web_search: bool,
    /// Which tool the model must call (`tool_choice`); `None` leaves it to the model, and
    /// sends nothing (a forced choice makes providers drop their prompt cache).
    pub tool_choice: Option<ToolChoice>,
}

/// A constraint on the model's next answer: any tool, one named tool, or none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (what sending nothing means).
    Auto,
    /// No tool call.
    None,
    /// Some tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

impl ToolChoice {
    /// Whether the model may answer without calling `tool` under this choice.
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            Self::Auto | Self::Required => true,
            Self::None => false,
            Self::Tool(name) => name == tool,
        }
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            max_tokens: None,
            thinking: ThinkingLevel::Off,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(120),
            web_search: false,
            tool_choice: None,
        }
    }
}

pub type EventStream = Pin<Box<dyn Stream<Item = crate::StreamEvent> + Send>>;

/// A streaming LLM client.
///
/// The returned stream yields events and ends with exactly one `Done` or `Error`; it never fails
/// as a Rust error. Cancelling `cancel` ends it promptly with an `Error` whose stop reason is
/// `aborted`. Dropping the stream cancels the request.
pub trait Provider: Send + Sync {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
        cancel: CancellationToken,
    ) -> EventStream;
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Api, ModelCost, UserMessage};

    fn body(api: Api, choice: Option<ToolChoice>, thinking: ThinkingLevel) -> Value {
        let model = Model {
            id: "m".into(),
            provider: "p".into(),
            api,
            base_url: String::new(),
            context_window: 100_000,
            max_output: 4096,
            reasoning: true,
            images: false,
            cost: ModelCost::default(),
        };
        let context = Context {
            system_prompt: String::new(),
            messages: vec![Message::User(UserMessage::text("go"))],
            tools: vec![ToolSpec {
                name: "submit_plan".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let options = StreamOptions {
            tool_choice: choice,
            thinking,
            ..StreamOptions::default()
        };
        match api {
            Api::OpenaiCompletions => {
                crate::openai_completions::request_body(&model, &context, &options)
            }
            Api::OpenaiResponses => {
                crate::openai_responses::request_body(&model, &context, &options)
            }
            Api::AnthropicMessages => crate::anthropic::request_body(&model, &context, &options),
        }
    }

    /// Each wire API spells a forced tool its own way; no choice sends nothing, so a request
    /// that forces nothing keeps the provider's prompt cache.
    #[test]
    fn a_tool_choice_is_sent_in_each_apis_own_form() {
        let forced = Some(ToolChoice::Tool("submit_plan".into()));
        let off = ThinkingLevel::Off;
        let cases = [
            (
                Api::OpenaiCompletions,
                json!({"type": "function", "function": {"name": "submit_plan"}}),
                json!("none"),
            ),
            (
                Api::OpenaiResponses,
                json!({"type": "function", "name": "submit_plan"}),
                json!("none"),
            ),
            (
                Api::AnthropicMessages,
                json!({"type": "tool", "name": "submit_plan"}),
                json!({"type": "none"}),
            ),
        ];
        for (api, tool, none) in cases {
            assert_eq!(
                body(api, forced.clone(), off)["tool_choice"],
                tool,
                "{api:?}"
            );
            assert_eq!(
                body(api, Some(ToolChoice::None), off)["tool_choice"],
                none,
                "{api:?}"
            );
            assert!(body(api, None, off).get("tool_choice").is_none(), "{api:?}");
        }
        // Anthropic refuses thinking with a forced tool: the forced request goes without it.
        let api = Api::AnthropicMessages;
        assert!(
            body(api, forced, ThinkingLevel::High)
                .get("thinking")
                .is_none()
        );
        assert!(
            body(api, None, ThinkingLevel::High)
                .get("thinking")
                .is_some()
        );
    }
}
