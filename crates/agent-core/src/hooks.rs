//! Host hooks into the loop: when a prompt enters the history, before/after each tool call,
//! between turns, before the run stops, and the one place where agent messages become wire
//! messages. A host's user-configured hook commands run through these points too (there is
//! no second pipeline); what they did is announced through [`HookContext::report`].

use async_trait::async_trait;
use llm::{AssistantMessage, Message, Model, ThinkingLevel, ToolCall, ToolResultMessage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::io::LoopIo;
use crate::{
    AgentEvent, AgentMessage, Approvals, CompactReason, HookRun, ToolOutput, default_convert_to_llm,
};

/// What a hook point offers besides its arguments: the run's cancellation (a hook command
/// must stop when the user aborts) and a way to announce what a hook did.
pub struct HookContext<'a> {
    emit: Option<Box<dyn Fn(AgentEvent) + Send + Sync + 'a>>,
    cancel: CancellationToken,
}

impl<'a> HookContext<'a> {
    pub(crate) fn new(io: &'a LoopIo) -> Self {
        Self::emitting(move |event| io.emit(event), io.cancel.clone())
    }

    pub(crate) fn emitting(
        emit: impl Fn(AgentEvent) + Send + Sync + 'a,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            emit: Some(Box::new(emit)),
            cancel,
        }
    }

    /// A context outside a run (tests, a host calling a hook itself): reports go nowhere.
    pub fn detached() -> HookContext<'static> {
        HookContext {
            emit: None,
            cancel: CancellationToken::new(),
        }
    }

    /// Fires when the run is aborted.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Announces a hook run as a `hook_run` event.
    pub fn report(&self, run: HookRun) {
        if let Some(emit) = &self.emit {
            emit(AgentEvent::HookRun { run });
        }
    }
}

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

    /// Runs after the arguments validated and before [`before_tool_call`](Self::before_tool_call):
    /// `Ok(Some(args))` replaces the arguments (they are validated again, and the approval
    /// check sees the new ones), `Err(reason)` blocks the call like a before-hook.
    async fn rewrite_tool_call(
        &self,
        _call: &ToolCall,
        _cx: &HookContext<'_>,
    ) -> Result<Option<Value>, String> {
        Ok(None)
    }

    /// May rewrite a tool's result (redact, truncate, mark as error).
    async fn after_tool_call(&self, _call: &ToolCall, output: ToolOutput) -> ToolOutput {
        output
    }

    /// Like [`after_tool_call`](Self::after_tool_call), with the run's context; the loop calls
    /// this one, whose default calls `after_tool_call`.
    async fn after_tool_run(
        &self,
        call: &ToolCall,
        output: ToolOutput,
        _cx: &HookContext<'_>,
    ) -> ToolOutput {
        self.after_tool_call(call, output).await
    }

    /// Runs for each user message as it enters the history (a prompt, a delivered steering
    /// or follow-up message). `Ok` is the message to keep (it may carry added context);
    /// `Err(reason)` drops it: the model never sees it, and the user sees the reason.
    async fn before_prompt(
        &self,
        message: AgentMessage,
        _cx: &HookContext<'_>,
    ) -> Result<AgentMessage, String> {
        Ok(message)
    }

    /// Runs when the run would end because the model stopped and nothing is queued.
    /// `Some(text)` goes on instead, with `text` as the next user message. `continued` counts
    /// how often this run was already sent on this way; the loop stops asking after a few.
    async fn before_stop(
        &self,
        _messages: &[AgentMessage],
        _continued: u32,
        _cx: &HookContext<'_>,
    ) -> Option<String> {
        None
    }

    /// Runs when a compaction is about to summarise the history (automatic or `/compact`).
    /// `Err(reason)` leaves the history as it is; the compaction is reported as failed.
    async fn before_compact(
        &self,
        _reason: CompactReason,
        _cx: &HookContext<'_>,
    ) -> Result<(), String> {
        Ok(())
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
