//! One run of the loop: the double loop of DESIGN.md.
//!
//! Inner loop: inject pending messages → stream one assistant message → run its tool calls →
//! `turn_end` → poll steering. Outer loop: when the inner loop would stop, poll follow-ups.
//! The run talks to its [`Agent`](crate::Agent) only through [`LoopIo`]: events out, queue polls
//! in. It works on its own copy of the history; the agent mirrors it from `message_end` events.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::StreamExt;
use llm::{
    AssistantBuilder, AssistantContent, AssistantMessage, Context, Model, Provider, StopReason,
    StreamEvent, StreamOptions, ThinkingLevel, ToolCall, ToolSpec, now_millis,
};

use crate::compaction::compact_history;
use crate::io::{Internal, LoopIo};
use crate::requirement::{SoftGate, Verdict};
use crate::tool_exec::{NOT_RUN_ABORTED, Toolbox, execute_batch, not_run_all};
use crate::{
    AgentEvent, AgentMessage, Checkpointer, CompactReason, Compactor, HookContext, Hooks, Mode,
    ModeSwitch, PlanMode, QueuedMessage, RunStop, Tool, ToolOutcome, ToolRequirement, TurnInfo,
    is_context_overflow,
};

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
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    /// Read before every model call: the tools offered are the built-ins plus these.
    pub extra_tools: crate::ExtraTools,
    pub redactor: crate::redact::Redactor,
    /// The number of the agent's last turn; this run's first turn is the next.
    pub turn: u64,
    /// Read before every model call: a switch mid-run holds from the next call on.
    pub mode: ModeSwitch,
    pub plan: Option<PlanMode>,
    /// A tool the host requires in this run.
    pub requirement: Option<ToolRequirement>,
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
            self.hooks.as_ref(),
            &mut self.messages,
            &self.model,
            reason,
            None,
            &io.cancel,
            emit,
        )
        .await
    }

    /// An empty stream from a server whose context is nearly full: an overflow it did not
    /// name (llama-cpp-python streams nothing for a prompt past its window).
    fn silent_overflow(&self, assistant: &llm::AssistantMessage) -> bool {
        assistant.error_kind == Some(llm::ErrorKind::EmptyStream)
            && self
                .compactor
                .as_ref()
                .is_some_and(|c| c.near_window(&self.messages, &self.model))
    }

    /// A snapshot before a batch that can change files. A failure is not fatal: it is a note
    /// for the user, told once the batch's results are in (nothing may sit between the calls
    /// and their results).
    async fn checkpoint_before(&self, calls: &[ToolCall]) -> Result<Option<String>, String> {
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(None);
        };
        if !checkpointer.changes_files(calls) {
            return Ok(None);
        }
        checkpointer.before(calls).await.map(Some)
    }

    /// The snapshot after the batch: what it changed becomes a `checkpoint_taken` event.
    async fn checkpoint_after(
        &self,
        mark: Result<Option<String>, String>,
        calls: &[ToolCall],
        io: &LoopIo,
    ) -> Option<String> {
        let mark = match mark {
            Ok(Some(mark)) => mark,
            Ok(None) => return None,
            Err(err) => return Some(err),
        };
        let checkpointer = self.checkpointer.as_ref()?;
        let ids = calls.iter().map(|c| c.id.clone()).collect();
        match checkpointer.after(mark, ids).await {
            Ok(Some(record)) => {
                io.emit(AgentEvent::CheckpointTaken { record });
                None
            }
            Ok(None) => None,
            Err(err) => Some(err),
        }
    }

    /// The plan mode in force now, if the agent is in plan mode.
    fn planning(&self) -> Option<&PlanMode> {
        self.plan.as_ref().filter(|_| self.mode.get() == Mode::Plan)
    }

    /// Keeps the gate's requirement in step with the mode: plan mode requires its plan tool
    /// before the run ends; leaving plan mode drops that requirement.
    fn sync_gate(&self, gate: &mut SoftGate) {
        let plan = self.plan.as_ref().map(|p| &p.submit);
        gate.stand(plan, self.planning().is_some());
    }

    /// The tools offered in the current mode.
    fn offered(&self, tools: &[Arc<dyn Tool>]) -> Arc<Vec<Arc<dyn Tool>>> {
        let mode = self.mode.get();
        Arc::new(
            tools
                .iter()
                .filter(|t| t.offered_in(mode))
                .cloned()
                .collect(),
        )
    }

    /// Opens the next turn.
    fn start_turn(&mut self, io: &LoopIo) {
        self.turn += 1;
        io.emit(AgentEvent::TurnStart { turn: self.turn });
    }

    /// Puts messages into the history at the current turn; queued ones are announced as
    /// delivered first.
    fn inject(&mut self, messages: Vec<AgentMessage>, delivered: Vec<u64>, io: &LoopIo) {
        if !delivered.is_empty() {
            io.emit(AgentEvent::QueueDelivered {
                ids: delivered,
                turn: self.turn,
            });
        }
        for message in messages {
            io.emit_message(&message);
            self.messages.push(message);
        }
    }

    /// Passes each user message through the prompt hook. A refused one is replaced by a
    /// notice saying why (the model never sees it); returns the messages and whether any
    /// message for the model is left.
    async fn screen(&self, messages: Vec<AgentMessage>, io: &LoopIo) -> (Vec<AgentMessage>, bool) {
        let cx = HookContext::new(io);
        let mut out = Vec::with_capacity(messages.len());
        let mut kept = false;
        for message in messages {
            if !matches!(message, AgentMessage::User(_)) {
                kept |= !matches!(message, AgentMessage::Notice(_));
                out.push(message);
                continue;
            }
            match self.hooks.before_prompt(message, &cx).await {
                Ok(message) => {
                    kept = true;
                    out.push(message);
                }
                Err(reason) => out.push(AgentMessage::notice(format!(
                    "Your message was not sent: a hook refused it: {reason}"
                ))),
            }
        }
        (out, kept)
    }
}

/// How often one run may be sent on by the stop hook: a hook that always objects must not
/// keep the agent busy forever.
const MAX_STOP_CONTINUATIONS: u32 = 5;

/// What a run starts from: the prompt messages, and the ids of those that came from a queue.
pub(crate) struct Start {
    pub messages: Vec<AgentMessage>,
    pub delivered: Vec<u64>,
}

impl Start {
    pub fn from_queue(queued: Vec<QueuedMessage>) -> Self {
        let (delivered, messages) = queued.into_iter().map(|q| (q.id, q.message)).unzip();
        Self {
            messages,
            delivered,
        }
    }
}

/// Runs until the model stops and no queued message is left, or until abort or error.
/// Returns true when it stopped because no work was left. The agent emits the closing
/// `agent_end` once the run task has ended, so a reader that sees it can prompt again at once.
pub(crate) async fn run_loop(mut ctx: RunContext, start: Start, io: LoopIo) -> bool {
    io.emit(AgentEvent::AgentStart);
    // The prompt belongs to the history even if the run is aborted before the model answers.
    ctx.start_turn(&io);
    let mut turn_open = true;
    let prompted = !start.messages.is_empty();
    let (messages, kept) = ctx.screen(start.messages, &io).await;
    ctx.inject(messages, start.delivered, &io);
    let mut pending = io.take(Internal::TakeSteering).await;
    if prompted && !kept && pending.is_empty() {
        // Every message of the prompt was refused by a hook: there is nothing to answer.
        io.emit(AgentEvent::TurnEnd {
            turn: ctx.turn,
            message: AssistantMessage::empty(&ctx.model.id, &ctx.model.provider),
            tool_results: Vec::new(),
        });
        return true;
    }
    let mut drained = false;
    // What a stop hook asked the model to do next; it bypasses the queues (and the prompt hook).
    let mut resumed: Vec<AgentMessage> = Vec::new();
    let mut continued = 0;
    // A context-overflow error earns one compaction and one retry per run, not a loop.
    let mut overflow_retried = false;
    let mut tools_dropped = false;
    let mut gate = SoftGate::new(ctx.requirement.take());
    let hard = ctx.stream_options.tool_choice.clone();

    'outer: loop {
        let mut first = true;
        let mut more_tool_calls = false;
        while first || more_tool_calls || !pending.is_empty() || !resumed.is_empty() {
            let was_first = first;
            first = false;
            if io.cancel.is_cancelled() {
                // Taken from the queue but never seen by the model: give them back.
                io.requeue(std::mem::take(&mut pending));
                if turn_open {
                    let message = AssistantMessage::empty(&ctx.model.id, &ctx.model.provider);
                    io.emit(AgentEvent::TurnEnd {
                        turn: ctx.turn,
                        message: AssistantMessage {
                            stop_reason: StopReason::Aborted,
                            error_message: Some(io.abort_reason().into()),
                            ..message
                        },
                        tool_results: Vec::new(),
                    });
                }
                break 'outer;
            }
            let queued = Start::from_queue(std::mem::take(&mut pending));
            let (mut messages, kept) = ctx.screen(queued.messages, &io).await;
            let kept = kept || !resumed.is_empty();
            messages.append(&mut resumed);
            if !was_first && !more_tool_calls && !kept {
                // Everything that would have started this turn was refused by a hook: the
                // model has nothing new to answer. The notices still go into the history.
                ctx.inject(messages, queued.delivered, &io);
                break;
            }
            if !turn_open {
                ctx.start_turn(&io);
            }
            turn_open = false;
            ctx.inject(messages, queued.delivered, &io);
            ctx.sync_gate(&mut gate);
            if let Some(reminder) = gate.reminder(hard.as_ref()) {
                ctx.inject(vec![reminder], Vec::new(), &io);
            }
            // Before every model call, not only between runs: one long run of tool calls can
            // outgrow the window on its own.
            ctx.compact(CompactReason::Threshold, &io).await;

            // The tools of this call, also those its tool calls may use: one that arrives
            // while the model answers is offered from the next call on.
            let tools = ctx.offered(&ctx.extra_tools.merged(&ctx.tools));
            let choice = gate.tool_choice(hard.as_ref());
            let assistant = stream_assistant(&ctx, &tools, choice, &io).await;
            ctx.messages
                .push(AgentMessage::Assistant(assistant.clone()));
            let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();

            let mut checkpoint_note = None;
            let mut escalated = false;
            // The notice of a run stopped for a requirement the model never met.
            let mut gave_up = None;
            let (results, terminate) = match assistant.stop_reason {
                StopReason::Error | StopReason::Aborted => {
                    let reason = match assistant.stop_reason {
                        StopReason::Aborted => NOT_RUN_ABORTED,
                        _ => "Tool call was not run: the request failed.",
                    };
                    let results = not_run_all(&calls, ToolOutcome::Aborted, reason, &io);
                    (results, true)
                }
                StopReason::Length => {
                    let reason = "Tool call was not run: the reply hit the output token limit, \
                                  so its arguments may be cut off. Issue the call again, with \
                                  shorter arguments if needed.";
                    (
                        not_run_all(&calls, ToolOutcome::Skipped, reason, &io),
                        false,
                    )
                }
                StopReason::Stop | StopReason::ToolUse => {
                    // Named before the verdict, which clears a requirement it finds met.
                    let required = gate.tool().unwrap_or_default();
                    let (run, skipped, skip_reason) = match gate.judge(&assistant, hard.as_ref()) {
                        Verdict::Free => (calls.clone(), Vec::new(), String::new()),
                        Verdict::Met { others } => {
                            let run = calls.iter().filter(|c| !others.contains(c)).cloned();
                            let reason = format!(
                                "Not run: only `{required}` was run, as it was required; issue \
                                 this call again if it is still needed."
                            );
                            (run.collect(), others, reason)
                        }
                        Verdict::Escalate { calls } => {
                            escalated = true;
                            let reason = format!(
                                "Not run: `{required}` must be called first. Call it now; issue \
                                 this call again afterwards if it is still needed."
                            );
                            (Vec::new(), calls, reason)
                        }
                        Verdict::GiveUp(error) => {
                            let _ = io.stopped_by.set(RunStop::RequirementUnmet);
                            gave_up = Some(format!("Stopped: {error}."));
                            (Vec::new(), calls.clone(), error)
                        }
                    };
                    let mut results =
                        not_run_all(&skipped, ToolOutcome::Skipped, &skip_reason, &io);
                    let toolbox = Toolbox {
                        tools: &tools,
                        hooks: ctx.hooks.as_ref(),
                        redactor: &ctx.redactor,
                    };
                    let mark = ctx.checkpoint_before(&run).await;
                    let batch = execute_batch(&toolbox, &run, &io).await;
                    checkpoint_note = ctx.checkpoint_after(mark, &run, &io).await;
                    results.extend(batch.results);
                    // Results in the order of the calls.
                    results.sort_by_key(|r| calls.iter().position(|c| c.id == r.tool_call_id));
                    // The required tool may end the run (a submitted plan): the calls skipped
                    // beside it do not keep it going.
                    (results, batch.terminate)
                }
            };
            for result in &results {
                let message = AgentMessage::ToolResult(result.clone());
                io.emit_message(&message);
                ctx.messages.push(message);
            }
            let checkpoint_note =
                checkpoint_note.map(|err| format!("No checkpoint for these changes: {err}"));
            for text in checkpoint_note.into_iter().chain(gave_up.clone()) {
                let note = AgentMessage::notice(text);
                io.emit_message(&note);
                ctx.messages.push(note);
            }
            io.emit(AgentEvent::TurnEnd {
                turn: ctx.turn,
                message: assistant.clone(),
                tool_results: results.clone(),
            });
            if gave_up.is_some() {
                break 'outer;
            }

            let failed = matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            );
            if failed
                && !overflow_retried
                && !io.cancel.is_cancelled()
                && (is_context_overflow(&assistant) || ctx.silent_overflow(&assistant))
            {
                overflow_retried = true;
                if ctx.compact(CompactReason::Overflow, &io).await {
                    // The failed answer is empty; providers drop it from the retried request.
                    first = true;
                    continue;
                }
            }
            if failed
                && !tools_dropped
                && !io.cancel.is_cancelled()
                && !ctx.tools.is_empty()
                && rejects_tools(&assistant)
            {
                // A local model without tool support: go on chat-only rather than fail every
                // request. The next run tries with tools again (the model may have changed).
                tools_dropped = true;
                ctx.tools = Arc::new(Vec::new());
                let note = AgentMessage::notice(format!(
                    "{} rejected the tools ({}): chat-only mode for this run — the model cannot \
                     read, edit or run anything.",
                    ctx.model.id,
                    assistant
                        .error_message
                        .as_deref()
                        .unwrap_or("no reason given")
                ));
                io.emit_message(&note);
                ctx.messages.push(note);
                first = true;
                continue;
            }
            if failed || io.cancel.is_cancelled() {
                break 'outer;
            }
            more_tool_calls = !calls.is_empty() && !terminate;
            if escalated {
                // The next request forces the tool; after a reply without any call it also
                // must not end with the model's own turn.
                more_tool_calls = true;
                if calls.is_empty() {
                    resumed.extend(gate.nudge());
                }
            }

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
        ctx.sync_gate(&mut gate);
        if gate.before_stop(hard.as_ref()) {
            // A tool required before the end was not called: remind the model (a new turn).
            continue;
        }
        pending = io.take(Internal::TakeFollowUp).await;
        if pending.is_empty() && continued < MAX_STOP_CONTINUATIONS {
            let cx = HookContext::new(&io);
            let goal = tokio::select! {
                goal = ctx.hooks.before_stop(&ctx.messages, continued, &cx) => goal,
                _ = io.cancel.cancelled() => break,
            };
            if let Some(text) = goal {
                continued += 1;
                resumed.push(AgentMessage::user(text));
                continue;
            }
        }
        if pending.is_empty() {
            drained = true;
            break;
        }
    }
    drained
}

/// Whether a failed request failed because the model or server does not take tools (Ollama:
/// "… does not support tools"; vLLM started without tool calling: "… requires
/// --enable-auto-tool-choice …"; others: "tools are not supported", "tool use is not
/// supported").
fn rejects_tools(message: &AssistantMessage) -> bool {
    message.stop_reason == StopReason::Error
        && message.error_message.as_deref().is_some_and(|m| {
            let m = m.to_lowercase();
            m.contains("does not support tools")
                || m.contains("tools are not supported")
                || m.contains("tool use is not supported")
                || m.contains("tool calling is not supported")
                || m.contains("--enable-auto-tool-choice")
        })
}

/// Streams one assistant message, emitting its events; never fails.
async fn stream_assistant(
    ctx: &RunContext,
    tools: &[Arc<dyn Tool>],
    tool_choice: Option<llm::ToolChoice>,
    io: &LoopIo,
) -> AssistantMessage {
    let system_prompt = match ctx.planning() {
        Some(plan) => format!("{}\n\n{}", ctx.system_prompt, plan.instructions),
        None => ctx.system_prompt.clone(),
    };
    let context = Context {
        system_prompt,
        messages: ctx.hooks.convert_to_llm(&ctx.messages),
        tools: tools
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
    options.tool_choice = tool_choice;
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
            None => break aborted(&builder, io),
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
        message = aborted(&builder, io);
    } else if io.cancel.is_cancelled() && io.stopped_by.get().is_some() {
        message.error_message = Some(io.abort_reason().into());
    }
    message.timestamp = now_millis();
    unique_call_ids(&mut message);
    io.emit(AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message.clone()),
    });
    message
}

/// Gives every tool call of the message its own id. A model that repeats an id (or sends
/// none) would make its results ambiguous, and providers reject the next request.
fn unique_call_ids(message: &mut AssistantMessage) {
    let mut seen = HashSet::new();
    for block in &mut message.content {
        let AssistantContent::ToolCall(call) = block else {
            continue;
        };
        if call.id.is_empty() {
            call.id = "call".to_string();
        }
        if !seen.insert(call.id.clone()) {
            let base = call.id.clone();
            let mut n = 2;
            while !seen.insert(format!("{base}_{n}")) {
                n += 1;
            }
            call.id = format!("{base}_{n}");
        }
    }
}

fn aborted(builder: &AssistantBuilder, io: &LoopIo) -> AssistantMessage {
    closing_message(builder.failed(StopReason::Aborted, io.abort_reason()))
}

fn closing_message(event: StreamEvent) -> AssistantMessage {
    match event {
        StreamEvent::Done { message } | StreamEvent::Error { message } => message,
        _ => unreachable!("only closing events are passed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_and_missing_call_ids_are_made_unique() {
        let mut message = AssistantMessage::empty("m", "p");
        for id in ["a", "a", "", "a_2", ""] {
            message
                .content
                .push(AssistantContent::ToolCall(ToolCall::from_raw(
                    id.into(),
                    "t".into(),
                    "{}",
                )));
        }
        unique_call_ids(&mut message);
        let ids: Vec<String> = message.tool_calls().map(|c| c.id.clone()).collect();
        assert_eq!(ids, ["a", "a_2", "call", "a_2_2", "call_2"]);
    }
}
