//! Running one assistant message's tool calls: prepare → execute → finalize.
//!
//! Scheduling, as the seeds describe it: a shared call starts as soon as no exclusive call runs;
//! an exclusive call waits for everything before it and blocks everything after it. Before each
//! call starts the loop peeks at the steering queue: once the user has sent a new message, the
//! calls that have not started are skipped (each still gets a result, so pairing holds), the
//! running ones finish — except interruptible ones (pure waits), which are cut short. Results
//! keep the assistant's order. Every failure (unknown tool, bad arguments, a blocked call, an
//! error or a panic in the tool) becomes an error result, and every call, run or not, gets a
//! `tool_execution_start`/`_end` pair whose end says how it went.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use llm::{ToolCall, ToolResultMessage, UserContent};
use tokio_util::sync::CancellationToken;

use crate::coerce;
use crate::io::LoopIo;
use crate::redact::Redactor;
use crate::{
    AgentEvent, Approvals, Concurrency, HookContext, Hooks, Tool, ToolContext, ToolOutcome,
    ToolOutput, validate_arguments,
};

const ABORTED: &str = "Tool call was aborted.";
pub(crate) const NOT_RUN_ABORTED: &str = "Tool call was not run: the request was aborted.";
const SKIPPED: &str = "Skipped: the user sent a new message before this tool call ran. Read it, then decide \
     whether to issue the call again.";
const INTERRUPTED: &str = "[Stopped early: the user sent a new message.]";

/// How long a stopped tool gets to wind down (and kill its children) before it is abandoned.
const STOP_GRACE: Duration = Duration::from_secs(3);

pub(crate) struct Batch {
    pub results: Vec<ToolResultMessage>,
    /// Every result asked to stop after this batch.
    pub terminate: bool,
}

struct Finished {
    result: ToolResultMessage,
    terminate: bool,
}

/// What the batch's calls need from the run.
pub(crate) struct Toolbox<'a> {
    pub tools: &'a [Arc<dyn Tool>],
    pub hooks: &'a dyn Hooks,
    /// Applied to every result and partial update before anything else sees it.
    pub redactor: &'a Redactor,
}

impl Toolbox<'_> {
    fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }
}

pub(crate) async fn execute_batch(toolbox: &Toolbox<'_>, calls: &[ToolCall], io: &LoopIo) -> Batch {
    let mut slots: Vec<Option<Finished>> = calls.iter().map(|_| None).collect();
    let mut running = FuturesUnordered::new();
    let mut exclusive_running = false;
    // Running interruptible calls and the tokens that cut them short.
    let mut waits: Vec<(usize, CancellationToken)> = Vec::new();
    let mut steering = io.steering.clone();
    let mut interrupted = false;
    let mut next = 0;
    loop {
        while next < calls.len() && !exclusive_running {
            let call = &calls[next];
            let tool = toolbox.find(&call.name);
            let exclusive = tool
                .as_ref()
                .is_some_and(|t| t.concurrency() == Concurrency::Exclusive);
            if exclusive && !running.is_empty() {
                break;
            }
            let stop = if io.cancel.is_cancelled() {
                Some((ToolOutcome::Aborted, NOT_RUN_ABORTED))
            } else if io.steering_pending() {
                Some((ToolOutcome::Skipped, SKIPPED))
            } else {
                None
            };
            if let Some((outcome, text)) = stop {
                for (i, call) in calls.iter().enumerate().skip(next) {
                    slots[i] = Some(not_run(call, outcome, text, io));
                }
                next = calls.len();
                break;
            }
            let token = if tool.as_ref().is_some_and(|t| t.interruptible()) {
                let token = io.cancel.child_token();
                waits.push((next, token.clone()));
                token
            } else {
                io.cancel.clone()
            };
            let index = next;
            let run = run_call(toolbox, tool, call, io, token);
            running.push(async move { (index, run.await) });
            exclusive_running = exclusive;
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
            Some((index, finished)) = running.next() => {
                slots[index] = Some(finished);
                // An exclusive call runs alone: whatever ended, it was the one.
                exclusive_running = false;
                waits.retain(|(i, _)| *i != index);
            }
            _ = steering.wait_for(|&n| n > 0), if !interrupted && !waits.is_empty() => {
                interrupted = true;
                for (_, token) in &waits {
                    token.cancel();
                }
            }
        }
    }
    let finished: Vec<Finished> = slots.into_iter().flatten().collect();
    let terminate = !finished.is_empty() && finished.iter().all(|f| f.terminate);
    Batch {
        results: finished.into_iter().map(|f| f.result).collect(),
        terminate,
    }
}

/// Results for calls that are not run at all (the reply failed, was aborted or cut off), with
/// their start and end events.
pub(crate) fn not_run_all(
    calls: &[ToolCall],
    outcome: ToolOutcome,
    text: &str,
    io: &LoopIo,
) -> Vec<ToolResultMessage> {
    calls
        .iter()
        .map(|call| not_run(call, outcome, text, io).result)
        .collect()
}

fn not_run(call: &ToolCall, outcome: ToolOutcome, text: &str, io: &LoopIo) -> Finished {
    emit_start(call, io);
    let result = coerce::tool_result(call, ToolOutput::error(text));
    emit_end(call, &result, outcome, io);
    Finished {
        result,
        terminate: false,
    }
}

fn emit_start(call: &ToolCall, io: &LoopIo) {
    io.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: call.arguments.clone(),
    });
}

fn emit_end(call: &ToolCall, result: &ToolResultMessage, outcome: ToolOutcome, io: &LoopIo) {
    io.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: result.clone(),
        outcome,
    });
}

/// One call from start to end event.
async fn run_call(
    toolbox: &Toolbox<'_>,
    tool: Option<Arc<dyn Tool>>,
    call: &ToolCall,
    io: &LoopIo,
    token: CancellationToken,
) -> Finished {
    emit_start(call, io);
    let prepared = prepare(toolbox, tool, call, io).await;
    let (output, outcome) = match prepared {
        Err(refused) => refused,
        Ok((tool, args)) => {
            // The after-hook sees the arguments that ran (a hook may have replaced them).
            let ran = ToolCall {
                arguments: args.clone(),
                ..call.clone()
            };
            let (output, stopped) = execute(tool, call, args, io, token, toolbox.redactor).await;
            let cx = HookContext::new(io);
            let mut output = toolbox.hooks.after_tool_run(&ran, output, &cx).await;
            // What a hook put in is cleaned too.
            toolbox.redactor.output(&mut output);
            let outcome = match stopped {
                Stopped::No if output.is_error => ToolOutcome::Error,
                Stopped::No => ToolOutcome::Ok,
                Stopped::Aborted | Stopped::Interrupted => ToolOutcome::Aborted,
            };
            (output, outcome)
        }
    };
    let terminate = output.terminate;
    let result = coerce::tool_result(call, output);
    emit_end(call, &result, outcome, io);
    Finished { result, terminate }
}

/// Looks the tool up, checks the arguments and asks the before-hook. `Err` is the result to
/// report instead of running the tool, and how the call ended.
async fn prepare(
    toolbox: &Toolbox<'_>,
    tool: Option<Arc<dyn Tool>>,
    call: &ToolCall,
    io: &LoopIo,
) -> Result<(Arc<dyn Tool>, serde_json::Value), (ToolOutput, ToolOutcome)> {
    let cancel = &io.cancel;
    let error = |text: String| (ToolOutput::error(text), ToolOutcome::Error);
    let Some(tool) = tool else {
        let names: Vec<&str> = toolbox.tools.iter().map(|t| t.name()).collect();
        return Err(error(format!(
            "Tool `{}` not found. Available tools: {}.",
            call.name,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    if let Some(invalid) = &call.invalid_arguments {
        return Err(error(format!(
            "The arguments of `{}` are not valid JSON ({}). Send the call again with a JSON object.",
            call.name, invalid.error
        )));
    }
    let mut args = call.arguments.clone();
    if let Err(problem) = validate_arguments(&tool.parameters(), &mut args) {
        return Err(error(format!(
            "Invalid arguments for `{}`: {problem}.",
            call.name
        )));
    }
    if cancel.is_cancelled() {
        return Err((ToolOutput::error(NOT_RUN_ABORTED), ToolOutcome::Aborted));
    }
    // The host's hook commands may block the call or replace its arguments; the approval
    // check below then judges what will actually run.
    let cx = HookContext::new(io);
    let rewritten = tokio::select! {
        rewritten = toolbox.hooks.rewrite_tool_call(call, &cx) => rewritten,
        _ = cancel.cancelled() => {
            return Err((ToolOutput::error(NOT_RUN_ABORTED), ToolOutcome::Aborted));
        }
    };
    let replaced = match rewritten {
        Err(reason) => {
            return Err((
                ToolOutput::error(format!("Tool call `{}` was blocked: {reason}", call.name)),
                ToolOutcome::Blocked,
            ));
        }
        Ok(None) => None,
        Ok(Some(mut new_args)) => {
            if let Err(problem) = validate_arguments(&tool.parameters(), &mut new_args) {
                return Err(error(format!(
                    "A hook replaced the arguments of `{}` with invalid ones: {problem}.",
                    call.name
                )));
            }
            args = new_args.clone();
            Some(ToolCall {
                arguments: new_args,
                ..call.clone()
            })
        }
    };
    let call = replaced.as_ref().unwrap_or(call);
    // A hook that asks the user must not hold up an abort.
    let approvals = Approvals { io: Some(io), call };
    let verdict = tokio::select! {
        verdict = toolbox.hooks.before_tool_call(call, &approvals) => verdict,
        _ = cancel.cancelled() => {
            return Err((ToolOutput::error(NOT_RUN_ABORTED), ToolOutcome::Aborted));
        }
    };
    if let Err(reason) = verdict {
        return Err((
            ToolOutput::error(format!("Tool call `{}` was blocked: {reason}", call.name)),
            ToolOutcome::Blocked,
        ));
    }
    Ok((tool, args))
}

/// Whether a running tool was stopped from outside.
enum Stopped {
    No,
    /// The run was aborted.
    Aborted,
    /// A steering message cut an interruptible wait short.
    Interrupted,
}

/// Runs the tool on its own task, so that a panic becomes an error result. `token` is the
/// run's cancellation, or for an interruptible tool a child of it that a steer also cancels.
async fn execute(
    tool: Arc<dyn Tool>,
    call: &ToolCall,
    args: serde_json::Value,
    io: &LoopIo,
    token: CancellationToken,
    redactor: &Redactor,
) -> (ToolOutput, Stopped) {
    let updates = io.clone();
    let partial_redactor = redactor.clone();
    let (id, name) = (call.id.clone(), call.name.clone());
    // Closed before the end event, so no update of an abandoned tool trails its end.
    // The lock makes closing and emitting exclusive: no update can slip in after the close.
    let open = Arc::new(Mutex::new(true));
    let still_open = open.clone();
    let tool_ctx = ToolContext::new(call.id.clone(), token.clone(), move |mut partial| {
        partial_redactor.output(&mut partial);
        let open = still_open.lock().unwrap_or_else(|e| e.into_inner());
        if *open {
            updates.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                partial,
            });
        }
    });
    let mut handle = tokio::spawn(async move { tool.execute(args, tool_ctx).await });
    let (joined, stopped) = tokio::select! {
        joined = &mut handle => (Some(joined), false),
        _ = token.cancelled() => match tokio::time::timeout(STOP_GRACE, &mut handle).await {
            Ok(joined) => (Some(joined), true),
            Err(_) => {
                handle.abort();
                (None, true)
            }
        },
    };
    let mut output = match joined {
        Some(Ok(Ok(output))) => output,
        Some(Ok(Err(err))) => ToolOutput::error(err.0),
        Some(Err(join)) if join.is_panic() => ToolOutput::error(format!(
            "Tool `{}` crashed: {}",
            call.name,
            panic_text(join)
        )),
        Some(Err(_)) | None => ToolOutput::error(ABORTED),
    };
    redactor.output(&mut output);
    *open.lock().unwrap_or_else(|e| e.into_inner()) = false;
    let stopped = if !stopped {
        Stopped::No
    } else if io.cancel.is_cancelled() {
        Stopped::Aborted
    } else {
        output.content.push(UserContent::Text {
            text: INTERRUPTED.to_string(),
        });
        Stopped::Interrupted
    };
    (output, stopped)
}

fn panic_text(join: tokio::task::JoinError) -> String {
    let payload = join.into_panic();
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic".to_string()
    }
}
