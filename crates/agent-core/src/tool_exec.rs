//! Running one assistant message's tool calls: prepare → execute → finalize.
//!
//! Consecutive shared calls run together; an exclusive call runs alone, after everything before
//! it and before everything after it. Results keep the assistant's order. Every failure (unknown
//! tool, bad arguments, a blocked call, an error or a panic in the tool) becomes an error result.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use llm::{ToolCall, ToolResultMessage, UserContent, now_millis};

use crate::run::{LoopIo, RunContext, error_result};
use crate::{AgentEvent, Concurrency, Tool, ToolContext, ToolOutput, validate_arguments};

const ABORTED: &str = "Tool call was aborted.";

/// How long an aborted tool gets to stop (and kill its children) before it is abandoned.
const ABORT_GRACE: Duration = Duration::from_secs(3);

pub(crate) struct Batch {
    pub results: Vec<ToolResultMessage>,
    /// Every result asked to stop after this batch.
    pub terminate: bool,
}

struct Finished {
    result: ToolResultMessage,
    terminate: bool,
}

pub(crate) async fn execute_tool_calls(ctx: &RunContext, calls: &[ToolCall], io: &LoopIo) -> Batch {
    let mut finished: Vec<Finished> = Vec::with_capacity(calls.len());
    for group in groups(ctx, calls) {
        if io.cancel.is_cancelled() {
            let reason = "Tool call was not run: the request was aborted.";
            finished.extend(group.iter().map(|call| Finished {
                result: error_result(call, reason),
                terminate: false,
            }));
            continue;
        }
        // Prepared one after another, so a before-hook that asks the user asks one at a time.
        let mut runs = Vec::with_capacity(group.len());
        for call in group {
            io.emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            runs.push(prepare(ctx, call, &io.cancel).await);
        }
        let outcomes = join_all(
            runs.into_iter()
                .zip(group)
                .map(|(prepared, call)| async move {
                    let output = match prepared {
                        Ok((tool, args)) => execute(ctx, tool, call, args, io).await,
                        Err(output) => output,
                    };
                    let finished = finish(call, output);
                    io.emit(AgentEvent::ToolExecutionEnd {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        result: finished.result.clone(),
                    });
                    finished
                }),
        )
        .await;
        finished.extend(outcomes);
    }
    let terminate = !finished.is_empty() && finished.iter().all(|f| f.terminate);
    Batch {
        results: finished.into_iter().map(|f| f.result).collect(),
        terminate,
    }
}

/// Splits the calls into runs of consecutive shared calls and single exclusive calls.
fn groups<'a>(ctx: &RunContext, calls: &'a [ToolCall]) -> Vec<&'a [ToolCall]> {
    let exclusive = |call: &ToolCall| {
        find_tool(ctx, &call.name).is_some_and(|t| t.concurrency() == Concurrency::Exclusive)
    };
    let mut groups = Vec::new();
    let mut start = 0;
    for (i, call) in calls.iter().enumerate() {
        if exclusive(call) {
            if start < i {
                groups.push(&calls[start..i]);
            }
            groups.push(&calls[i..=i]);
            start = i + 1;
        }
    }
    if start < calls.len() {
        groups.push(&calls[start..]);
    }
    groups
}

fn find_tool(ctx: &RunContext, name: &str) -> Option<Arc<dyn Tool>> {
    ctx.tools.iter().find(|t| t.name() == name).cloned()
}

/// Looks the tool up, checks the arguments and asks the before-hook. `Err` is the result to
/// report instead of running the tool.
async fn prepare(
    ctx: &RunContext,
    call: &ToolCall,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(Arc<dyn Tool>, serde_json::Value), ToolOutput> {
    let Some(tool) = find_tool(ctx, &call.name) else {
        let names: Vec<&str> = ctx.tools.iter().map(|t| t.name()).collect();
        return Err(ToolOutput::error(format!(
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
        return Err(ToolOutput::error(format!(
            "The arguments of `{}` are not valid JSON ({}). Send the call again with a JSON object.",
            call.name, invalid.error
        )));
    }
    let mut args = call.arguments.clone();
    if let Err(problem) = validate_arguments(&tool.parameters(), &mut args) {
        return Err(ToolOutput::error(format!(
            "Invalid arguments for `{}`: {problem}.",
            call.name
        )));
    }
    // A hook that asks the user must not hold up an abort.
    let verdict = tokio::select! {
        verdict = ctx.hooks.before_tool_call(call) => verdict,
        _ = cancel.cancelled() => return Err(ToolOutput::error(ABORTED)),
    };
    if let Err(reason) = verdict {
        return Err(ToolOutput::error(format!(
            "Tool call `{}` was blocked: {reason}",
            call.name
        )));
    }
    Ok((tool, args))
}

/// Runs the tool on its own task, so that a panic becomes an error result.
async fn execute(
    ctx: &RunContext,
    tool: Arc<dyn Tool>,
    call: &ToolCall,
    args: serde_json::Value,
    io: &LoopIo,
) -> ToolOutput {
    if io.cancel.is_cancelled() {
        return ToolOutput::error(ABORTED);
    }
    let updates = io.clone();
    let (id, name) = (call.id.clone(), call.name.clone());
    // Closed before the end event, so no update of an abandoned tool trails its end.
    // The lock makes closing and emitting exclusive: no update can slip in after the close.
    let open = Arc::new(Mutex::new(true));
    let still_open = open.clone();
    let tool_ctx = ToolContext::new(call.id.clone(), io.cancel.clone(), move |partial| {
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
    let joined = tokio::select! {
        joined = &mut handle => Some(joined),
        _ = io.cancel.cancelled() => match tokio::time::timeout(ABORT_GRACE, &mut handle).await {
            Ok(joined) => Some(joined),
            Err(_) => {
                handle.abort();
                None
            }
        },
    };
    let output = match joined {
        Some(Ok(Ok(output))) => output,
        Some(Ok(Err(err))) => ToolOutput::error(err.0),
        Some(Err(join)) if join.is_panic() => ToolOutput::error(format!(
            "Tool `{}` crashed: {}",
            call.name,
            panic_text(join)
        )),
        Some(Err(_)) | None => ToolOutput::error(ABORTED),
    };
    *open.lock().unwrap_or_else(|e| e.into_inner()) = false;
    ctx.hooks.after_tool_call(call, output).await
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

/// Turns an output into a valid result: an error result always says something.
fn finish(call: &ToolCall, output: ToolOutput) -> Finished {
    let mut content = output.content;
    if content.is_empty() {
        let text = if output.is_error {
            "(error with no message)"
        } else {
            "(no output)"
        };
        content.push(UserContent::Text {
            text: text.to_string(),
        });
    }
    Finished {
        result: ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content,
            details: output.details,
            is_error: output.is_error,
            timestamp: now_millis(),
        },
        terminate: output.terminate,
    }
}
