//! Host hooks into the loop: before/after each tool call, between turns, and the one place
//! where agent messages become wire messages.

use async_trait::async_trait;
use llm::{AssistantMessage, Message, Model, ThinkingLevel, ToolCall, ToolResultMessage};

use crate::{AgentMessage, Approvals, ToolOutput, default_convert_to_llm};

/// What a finished turn produced.
pub struct TurnInfo<'a> {
    pub message: &'a AssistantMessage,
    pub tool_results: &'a [ToolResultMessage],
    /// The whole history, this turn included.
    pub messages: &'a [AgentMessage],
}

/// Changes for the next model call of this run.
#[derive(Debug, Clone, Default)]
pub struct NextTurn {
    pub model: Option<Model>,
    pub thinking: Option<ThinkingLevel>,
}

/// Every method has a default that does nothing special.
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    /// Runs after the arguments validated, before the tool executes; may ask the user
    /// through `approvals`. `Err(reason)` blocks the call: the model gets the reason as an
    /// error result. Calls are prepared concurrently: a call waiting for an answer does not
    /// hold up the others.
    async fn before_tool_call(
        &self,
        _call: &ToolCall,
        _approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        Ok(())
    }

    /// May rewrite a tool's result (redact, truncate, mark as error).
    async fn after_tool_call(&self, _call: &ToolCall, output: ToolOutput) -> ToolOutput {
        output
    }

    /// Runs after each turn that continues; may switch model or thinking level.
    async fn prepare_next_turn(&self, _turn: &TurnInfo<'_>) -> NextTurn {
        NextTurn::default()
    }

    /// Ends the run after this turn (steering stays queued).
    fn should_stop_after_turn(&self, _turn: &TurnInfo<'_>) -> bool {
        false
    }

    /// Turns the history into what the provider is sent.
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        default_convert_to_llm(messages)
    }
}

/// The hooks of an agent that has none.
pub struct NoHooks;

impl Hooks for NoHooks {}
