//! The loop's side of compaction: when to ask, and how a compaction changes the history.
//!
//! The loop does not know how to summarise; a host plugs in a [`Compactor`] (the `session`
//! crate has one). The loop asks it before every model call, once more after a
//! context-overflow error, and when the user asks (`Agent::compact`).

use async_trait::async_trait;
use llm::{AssistantMessage, Model, StopReason};
use tokio_util::sync::CancellationToken;

use crate::{
    AgentEvent, AgentMessage, CompactReason, CompactionOutcome, CompactionSummary, HookContext,
    Hooks,
};

/// Why a summary could not be made; the history stays as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    #[error("the summary was aborted")]
    Aborted,
    /// The summary request failed (the provider's message).
    #[error("the summary request failed: {0}")]
    Request(String),
    #[error("the summary stream ended without a result")]
    NoResult,
    #[error("the summary was cut off by the output token limit")]
    CutOff,
    #[error("the model returned an empty summary")]
    Empty,
}

/// Summarises older history so the context fits the model's window.
#[async_trait]
pub trait Compactor: Send + Sync + 'static {
    /// Where to cut: `Some(keep_from)` to replace `messages[..keep_from]` by a summary, `None`
    /// to leave the history alone. Runs before every model call, so it must be cheap.
    /// With `Overflow` or `Manual` it should cut whenever there is anything to summarise.
    fn plan(
        &self,
        messages: &[AgentMessage],
        model: &Model,
        reason: CompactReason,
    ) -> Option<usize>;

    /// Summarises `messages[..keep_from]`. An error (or cancellation) leaves the history
    /// untouched.
    async fn summarize(
        &self,
        messages: &[AgentMessage],
        keep_from: usize,
        model: &Model,
        instructions: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<CompactionSummary, CompactionError>;

    /// Whether the context is near enough the window that a reply the server did not even
    /// start (an empty stream) was probably an overflow it did not name.
    fn near_window(&self, _messages: &[AgentMessage], _model: &Model) -> bool {
        false
    }
}

/// Replaces `messages[..replaced]` by the summary; the same edit on the run's copy and on the
/// agent's mirror keeps them equal.
pub(crate) fn apply(
    messages: &mut Vec<AgentMessage>,
    summary: &CompactionSummary,
    replaced: usize,
) {
    let replaced = replaced.min(messages.len());
    messages.splice(
        ..replaced,
        [AgentMessage::CompactionSummary(summary.clone())],
    );
}

/// Whether a failed request failed because the prompt did not fit the model's window: the
/// provider flagged it, or its message says so (`llm::is_context_overflow` knows the wordings).
pub fn is_context_overflow(message: &AssistantMessage) -> bool {
    message.stop_reason == StopReason::Error
        && (message.error_kind == Some(llm::ErrorKind::ContextOverflow)
            || message
                .error_message
                .as_deref()
                .is_some_and(llm::is_context_overflow))
}

/// Compacts `messages` in place if the compactor plans a cut, emitting `compaction_start` and
/// `compaction_end`. Returns true when the history was compacted; on failure it is unchanged.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn compact_history(
    compactor: &dyn Compactor,
    hooks: &dyn Hooks,
    messages: &mut Vec<AgentMessage>,
    model: &Model,
    reason: CompactReason,
    instructions: Option<&str>,
    cancel: &CancellationToken,
    emit: impl Fn(AgentEvent) + Send + Sync,
) -> bool {
    let Some(keep_from) = compactor
        .plan(messages, model, reason)
        .filter(|&k| k > 0 && k <= messages.len())
    else {
        return false;
    };
    emit(AgentEvent::CompactionStart { reason });
    // The host's pre-compaction hooks may keep the history as it is.
    let cx = HookContext::emitting(&emit, cancel.clone());
    let verdict = tokio::select! {
        verdict = hooks.before_compact(reason, &cx) => verdict,
        _ = cancel.cancelled() => Err(CompactionError::Aborted.to_string()),
    };
    drop(cx);
    if let Err(error) = verdict {
        emit(AgentEvent::CompactionEnd {
            reason,
            outcome: CompactionOutcome::Failed { error },
        });
        return false;
    }
    let summarize = compactor.summarize(
        messages,
        keep_from,
        model,
        instructions,
        cancel.child_token(),
    );
    let result = tokio::select! {
        result = summarize => result,
        _ = cancel.cancelled() => Err(CompactionError::Aborted),
    };
    let outcome = match result {
        Ok(summary) => {
            apply(messages, &summary, keep_from);
            CompactionOutcome::Compacted {
                summary,
                replaced: keep_from,
            }
        }
        Err(error) => CompactionOutcome::Failed {
            error: error.to_string(),
        },
    };
    let compacted = matches!(outcome, CompactionOutcome::Compacted { .. });
    emit(AgentEvent::CompactionEnd { reason, outcome });
    compacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_phrasings_are_recognised() {
        let mut m = AssistantMessage::empty("m", "p");
        m.stop_reason = StopReason::Error;
        m.error_message =
            Some("400 Bad Request: This model's maximum context length is 8192 tokens".into());
        assert!(is_context_overflow(&m));
        m.error_message = Some("500: script exhausted".into());
        assert!(!is_context_overflow(&m));
    }

    #[test]
    fn apply_replaces_the_prefix() {
        let mut messages: Vec<AgentMessage> =
            (0..4).map(|i| AgentMessage::user(i.to_string())).collect();
        let summary = CompactionSummary {
            summary: "s".into(),
            tokens_before: 9,
            timestamp: 1,
        };
        apply(&mut messages, &summary, 3);
        assert_eq!(messages.len(), 2);
        assert!(matches!(messages[0], AgentMessage::CompactionSummary(_)));
        assert_eq!(messages[1].preview(), "3");
    }
}
