//! One run of the loop: the double loop of DESIGN.md.
//!
//! Inner loop: inject pending messages → stream one assistant message → run its tool calls →
//! `turn_end` → poll steering. Outer loop: when the inner loop would stop, poll follow-ups.
//! The run talks to its [`Agent`](crate::Agent) only through [`LoopIo`]: events out, queue polls
//! in. It works on its own copy of the history; the agent mirrors it from `message_end` events.

use std::sync::Arc;

use futures_util::StreamExt;
use llm::{
    AssistantBuilder, AssistantMessage, Context, Model, Provider, StopReason, StreamEvent,
    StreamOptions, ThinkingLevel, ToolCall, ToolResultMessage, ToolSpec, UserContent, now_millis,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::compaction::compact_history;
use crate::tool_exec::execute_tool_calls;
use crate::{
    AgentEvent, AgentMessage, CompactReason, Compactor, Hooks, Tool, TurnInfo, is_context_overflow,
};

/// What a run sends to its agent.
pub(crate) enum Internal {
    Event(AgentEvent),
    TakeSteering(oneshot::Sender<Vec<AgentMessage>>),
    TakeFollowUp(oneshot::Sender<Vec<AgentMessage>>),
    /// Messages taken from the steering queue that the run could not deliver.
    Requeue(Vec<AgentMessage>),
    /// The run task ended; `drained` when it stopped for lack of work (not abort/error/hook).
    Finished {
        drained: bool,
    },
}

/// The run's line to its agent, plus the run's cancellation token.
#[derive(Clone)]
pub(crate) struct LoopIo {
    pub tx: mpsc::UnboundedSender<Internal>,
    pub cancel: CancellationToken,
}

impl LoopIo {
    pub fn emit(&self, event: AgentEvent) {
        // The agent outlives its runs; if it is gone nobody is listening anyway.
        let _ = self.tx.send(Internal::Event(event));
    }

    async fn take(
        &self,
        make: fn(oneshot::Sender<Vec<AgentMessage>>) -> Internal,
    ) -> Vec<AgentMessage> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(make(reply)).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    fn emit_message(&self, message: &AgentMessage) {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
    }
}

/// Everything a run needs, copied from the agent when the run starts.
pub(crate) struct RunContext {
    pub messages: Vec<AgentMessage>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub system_prompt: String,
    pub tools: Arc<Vec<Arc<dyn Tool>>>,
    pub provider: Arc<dyn Provider>,
    pub hooks: Arc<dyn Hooks>,
    pub stream_options: StreamOptions,
    pub compactor: Option<Arc<dyn Compactor>>,
}

impl RunContext {
    /// Lets the compactor shorten the history; true when it did.
    async fn compact(&mut self, reason: CompactReason, io: &LoopIo) -> bool {
        let Some(compactor) = self.compactor.clone() else {
            return false;
        };
        let emit = |event| io.emit(event);
        compact_history(
            compactor.as_ref(),
            &mut self.messages,
            &self.model,
            reason,
            None,
            &io.cancel,
            emit,
        )
        .await
    }
}

/// Runs until the model stops and no queued message is left, or until abort or error.
/// Returns true when it stopped because no work was left. The agent emits the closing
/// `agent_end` once the run task has ended, so a reader that sees it can prompt again at once.
pub(crate) async fn run_loop(mut ctx: RunContext, prompts: Vec<AgentMessage>, io: LoopIo) -> bool {
    io.emit(AgentEvent::AgentStart);
    // The prompt belongs to the history even if the run is aborted before the model answers.
    io.emit(AgentEvent::TurnStart);
    let mut turn_open = true;
    for message in prompts {
        io.emit_message(&message);
        ctx.messages.push(message);
    }
    let mut pending = io.take(Internal::TakeSteering).await;
    let mut drained = false;
    // A context-overflow error earns one compaction and one retry per run, not a loop.
    let mut overflow_retried = false;

    'outer: loop {
        let mut first = true;
        let mut more_tool_calls = false;
        while first || more_tool_calls || !pending.is_empty() {
            first = false;
            if io.cancel.is_cancelled() {
                // Taken from the queue but never seen by the model: give them back.
                let _ = io.tx.send(Internal::Requeue(std::mem::take(&mut pending)));
                if turn_open {
                    let message = AssistantMessage::empty(&ctx.model.id, &ctx.model.provider);
                    io.emit(AgentEvent::TurnEnd {
                        message: AssistantMessage {
                            stop_reason: StopReason::Aborted,
                            error_message: Some("Request was aborted".into()),
                            ..message
                        },
                        tool_results: Vec::new(),
                    });
                }
                break 'outer;
            }
            if !turn_open {
                io.emit(AgentEvent::TurnStart);
            }
            turn_open = false;
            for message in pending.drain(..) {
                io.emit_message(&message);
                ctx.messages.push(message);
            }
            // Before every model call, not only between runs: one long run of tool calls can
            // outgrow the window on its own.
            ctx.compact(CompactReason::Threshold, &io).await;

            let assistant = stream_assistant(&ctx, &io).await;
            ctx.messages
                .push(AgentMessage::Assistant(assistant.clone()));
            let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();

            let (results, terminate) = match assistant.stop_reason {
                StopReason::Error | StopReason::Aborted => {
                    let reason = match assistant.stop_reason {
                        StopReason::Aborted => "Tool call was not run: the request was aborted.",
                        _ => "Tool call was not run: the request failed.",
                    };
                    (synthetic_results(&calls, reason), true)
                }
                StopReason::Length => {
                    let reason = "Tool call was not run: the reply hit the output token limit, \
                                  so its arguments may be cut off. Issue the call again, with \
                                  shorter arguments if needed.";
                    (synthetic_results(&calls, reason), false)
                }
                StopReason::Stop | StopReason::ToolUse => {
                    let batch = execute_tool_calls(&ctx, &calls, &io).await;
                    (batch.results, batch.terminate)
                }
            };
            for result in &results {
                let message = AgentMessage::ToolResult(result.clone());
                io.emit_message(&message);
                ctx.messages.push(message);
            }
            io.emit(AgentEvent::TurnEnd {
                message: assistant.clone(),
                tool_results: results.clone(),
            });

            let failed = matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            );
            if failed
                && !overflow_retried
                && !io.cancel.is_cancelled()
                && is_context_overflow(&assistant)
            {
                overflow_retried = true;
                if ctx.compact(CompactReason::Overflow, &io).await {
                    // The failed answer is empty; providers drop it from the retried request.
                    first = true;
                    continue;
                }
            }
            if failed || io.cancel.is_cancelled() {
                break 'outer;
            }
            more_tool_calls = !calls.is_empty() && !terminate;

            let turn = TurnInfo {
                message: &assistant,
                tool_results: &results,
                messages: &ctx.messages,
            };
            // A hook that waits (for the user, say) must not hold up an abort.
            let next = tokio::select! {
                next = ctx.hooks.prepare_next_turn(&turn) => next,
                _ = io.cancel.cancelled() => break 'outer,
            };
            let stop = ctx.hooks.should_stop_after_turn(&turn);
            if let Some(model) = next.model {
                ctx.model = model;
            }
            if let Some(thinking) = next.thinking {
                ctx.thinking = thinking;
            }
            if stop {
                break 'outer;
            }
            pending = io.take(Internal::TakeSteering).await;
        }
        if io.cancel.is_cancelled() {
            break;
        }
        pending = io.take(Internal::TakeFollowUp).await;
        if pending.is_empty() {
            drained = true;
            break;
        }
    }
    drained
}

/// Streams one assistant message, emitting its events; never fails.
async fn stream_assistant(ctx: &RunContext, io: &LoopIo) -> AssistantMessage {
    let context = Context {
        system_prompt: ctx.system_prompt.clone(),
        messages: ctx.hooks.convert_to_llm(&ctx.messages),
        tools: ctx
            .tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
            })
            .collect(),
    };
    let mut options = ctx.stream_options.clone();
    options.thinking = ctx.thinking;
    let mut builder = AssistantBuilder::new(&ctx.model.id, &ctx.model.provider);
    io.emit(AgentEvent::MessageStart {
        message: AgentMessage::Assistant(builder.snapshot(StopReason::Stop)),
    });

    let mut stream = ctx
        .provider
        .stream(&ctx.model, context, options, io.cancel.child_token());
    let mut message = loop {
        let next = tokio::select! {
            biased;
            _ = io.cancel.cancelled() => None,
            event = stream.next() => Some(event),
        };
        match next {
            // Aborted: stop reading at once; what arrived so far (complete tool calls only) stays.
            None => break aborted(&builder),
            Some(None) => {
                let reason = "the provider stream ended without a result";
                break closing_message(builder.failed(StopReason::Error, reason));
            }
            Some(Some(event @ (StreamEvent::Done { .. } | StreamEvent::Error { .. }))) => {
                break closing_message(event);
            }
            Some(Some(event)) => {
                builder.apply(&event);
                io.emit(AgentEvent::MessageUpdate { event });
            }
        }
    };
    drop(stream);
    if io.cancel.is_cancelled() && message.stop_reason != StopReason::Aborted {
        message = aborted(&builder);
    }
    message.timestamp = now_millis();
    io.emit(AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message.clone()),
    });
    message
}

fn aborted(builder: &AssistantBuilder) -> AssistantMessage {
    closing_message(builder.failed(StopReason::Aborted, "Request was aborted"))
}

fn closing_message(event: StreamEvent) -> AssistantMessage {
    match event {
        StreamEvent::Done { message } | StreamEvent::Error { message } => message,
        _ => unreachable!("only closing events are passed"),
    }
}

/// Error results for calls that were not run, so every tool call keeps its result.
pub(crate) fn synthetic_results(calls: &[ToolCall], reason: &str) -> Vec<ToolResultMessage> {
    calls
        .iter()
        .map(|call| error_result(call, reason))
        .collect()
}

pub(crate) fn error_result(call: &ToolCall, text: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![UserContent::Text {
            text: text.to_string(),
        }],
        details: None,
        is_error: true,
        timestamp: now_millis(),
    }
}
