//! Compaction: when to compact, where to cut, and the summary that replaces the older turns.
//!
//! [`plan`] is pure: it estimates the context size and picks a cut that keeps the recent turns
//! whole. [`summarize`] asks the model, through the [`Provider`] trait directly (not the agent
//! loop), for a structured summary. [`SessionCompactor`] joins them into the agent's
//! [`Compactor`] hook.

use std::sync::Arc;

use agent_core::{AgentMessage, CompactReason, CompactionError, CompactionSummary, Compactor};
use async_trait::async_trait;
use futures_util::StreamExt;
use llm::{
    AssistantContent, Context, Model, Provider, StopReason, StreamEvent, StreamOptions,
    ThinkingLevel, UserContent, UserMessage, now_millis,
};
use tokio_util::sync::CancellationToken;

/// When to compact and how much to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Off: only a context-overflow error or `/compact` compacts.
    pub enabled: bool,
    /// Tokens kept free below the window for the next answer; compaction starts when the
    /// context grows past `context_window - reserve_tokens`.
    pub reserve_tokens: u64,
    /// At least this many tokens of the most recent history stay verbatim.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

impl CompactionSettings {
    /// The settings for a window of `context_window` tokens: the reserve and the recent part
    /// kept verbatim are each at most a quarter of the window, so a small local model (4k or
    /// 8k tokens, less than the default reserve) still compacts before it overflows and its
    /// summary request still fits.
    pub fn for_window(&self, context_window: u64) -> CompactionSettings {
        let quarter = (context_window / 4).max(1);
        CompactionSettings {
            enabled: self.enabled,
            reserve_tokens: self.reserve_tokens.min(quarter),
            keep_recent_tokens: self.keep_recent_tokens.min(quarter),
        }
    }
}

/// Characters of conversation the summary request may carry for a window: the window less the
/// answer's reserve and room for the instructions (2,048 tokens, or an eighth of a small
/// window), at 3 characters a token to stay on the safe side of the estimate.
pub fn transcript_budget(context_window: u64, settings: &CompactionSettings) -> usize {
    let settings = settings.for_window(context_window);
    let instructions = 2_048u64.min(context_window / 8);
    let tokens = context_window
        .saturating_sub(settings.reserve_tokens + instructions)
        .max(context_window / 4);
    (tokens * 3) as usize
}

/// Tokens of images, which the character count cannot see.
const IMAGE_TOKENS: u64 = 1_200;

/// A rough token count of one message: characters / 4, what the model sees of it.
pub fn estimate_message_tokens(message: &AgentMessage) -> u64 {
    let user_content = |content: &[UserContent]| -> u64 {
        content
            .iter()
            .map(|c| match c {
                UserContent::Text { text } => chars(text),
                UserContent::Image(_) => IMAGE_TOKENS * 4,
            })
            .sum()
    };
    let chars_total = match message {
        AgentMessage::User(user) => user_content(&user.content),
        AgentMessage::ToolResult(result) => user_content(&result.content),
        AgentMessage::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|c| match c {
                AssistantContent::Text { text } => chars(text),
                AssistantContent::Thinking { thinking, .. } => chars(thinking),
                AssistantContent::ToolCall(call) => {
                    chars(&call.name) + chars(&call.arguments_text())
                }
                // Shown and kept, never sent back to the model.
                AssistantContent::WebSearch(_) => 0,
            })
            .sum(),
        AgentMessage::CompactionSummary(summary) => chars(&summary.as_user_text()),
        AgentMessage::Notice(_) => 0,
    };
    chars_total.div_ceil(4)
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The context size: the last answer's reported usage (input + cache + output) plus an
/// estimate of what came after it; an estimate of everything when no answer reported usage.
/// Usage from before the last compaction is ignored: it measured the longer history.
pub fn estimate_context_tokens(messages: &[AgentMessage]) -> u64 {
    estimate_context_tokens_with(messages, 0)
}

/// [`estimate_context_tokens`], adding `fixed` (the system prompt and the tool definitions)
/// when no answer reported usage: a reported input count includes them already, an estimate
/// of the messages alone does not (llama-cpp-python reports no usage).
pub fn estimate_context_tokens_with(messages: &[AgentMessage], fixed: u64) -> u64 {
    let after_compaction = messages
        .iter()
        .rposition(|m| matches!(m, AgentMessage::CompactionSummary(_)))
        .map_or(0, |i| i + 1);
    let measured = messages
        .iter()
        .enumerate()
        .skip(after_compaction)
        .rev()
        .find_map(|(i, m)| match m {
            AgentMessage::Assistant(a)
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
            {
                let u = a.usage;
                let total = u.input + u.cache_read + u.cache_write + u.output;
                (total > 0).then_some((i, total))
            }
            _ => None,
        });
    match measured {
        Some((i, total)) => {
            total
                + messages[i + 1..]
                    .iter()
                    .map(estimate_message_tokens)
                    .sum::<u64>()
        }
        None => fixed + messages.iter().map(estimate_message_tokens).sum::<u64>(),
    }
}

/// Whether a context of `tokens` is too near the window.
pub fn should_compact(tokens: u64, context_window: u64, settings: &CompactionSettings) -> bool {
    settings.enabled && tokens > context_window.saturating_sub(settings.reserve_tokens)
}

/// Where to cut so that at least `keep_tokens` of recent history stay: the index of the first
/// kept message. Cuts only at a turn boundary — before a user or an assistant message, never
/// before a tool result, so a tool call keeps its results — and only when the part cut off
/// holds something besides an earlier summary. `None` when no such cut exists.
pub fn find_cut(messages: &[AgentMessage], keep_tokens: u64) -> Option<usize> {
    let min_cut = messages
        .iter()
        .rposition(|m| matches!(m, AgentMessage::CompactionSummary(_)))
        .map_or(1, |i| i + 2);
    let mut kept = 0u64;
    let mut candidate = None;
    for (i, message) in messages.iter().enumerate().rev() {
        kept += estimate_message_tokens(message);
        if kept >= keep_tokens {
            candidate = Some(i);
            break;
        }
    }
    // Keep more rather than less: walk back to the nearest boundary.
    (min_cut..=candidate?).rev().find(|&i| {
        matches!(
            messages[i],
            AgentMessage::User(_) | AgentMessage::Assistant(_)
        )
    })
}

/// The cut for this moment, or `None` to leave the history alone. At the threshold the
/// recent `keep_recent_tokens` stay; after an overflow or by hand, whatever can be cut is,
/// keeping as much recent history as the history allows.
pub fn plan(
    messages: &[AgentMessage],
    context_window: u64,
    settings: &CompactionSettings,
    reason: CompactReason,
) -> Option<usize> {
    plan_with(messages, context_window, settings, reason, 0)
}

/// [`plan`] with `fixed` tokens (system prompt, tool definitions) counted when no usage was
/// reported; the settings are scaled to the window ([`CompactionSettings::for_window`]).
pub fn plan_with(
    messages: &[AgentMessage],
    context_window: u64,
    settings: &CompactionSettings,
    reason: CompactReason,
    fixed: u64,
) -> Option<usize> {
    let settings = &settings.for_window(context_window);
    let keep = settings.keep_recent_tokens;
    match reason {
        CompactReason::Threshold => {
            let tokens = estimate_context_tokens_with(messages, fixed);
            if !should_compact(tokens, context_window, settings) {
                return None;
            }
            find_cut(messages, keep)
        }
        CompactReason::Overflow | CompactReason::Manual => find_cut(messages, keep)
            .or_else(|| find_cut(messages, keep / 4))
            .or_else(|| find_cut(messages, 1)),
    }
}

const SUMMARY_SYSTEM: &str = "You summarise a coding session between a user and a coding \
agent so that the agent can continue the work from the summary alone. You do not continue \
the conversation and you do not call tools: you only write the summary.";

const SUMMARY_REQUEST: &str = "Summarise the conversation above for the agent that will \
continue it. Be specific: exact file paths, function names, commands, error messages and \
values matter more than prose. Use exactly these sections:

## Goal
What the user wants, in their terms.

## Constraints
Requirements, preferences and rules the user stated.

## Progress
### Done
### In progress
### Blocked

## Key decisions
Each decision and why it was made.

## Next steps
What to do next, in order.

## Critical context
Files read or changed (with what matters about each), commands run and their outcome, and \
anything else the agent needs to know to continue.";

/// Longest tool result kept in the transcript the summariser reads: results are mostly bulk
/// the agent already acted on.
const RESULT_CHARS: usize = 2_000;

/// The messages as a plain transcript, so the summariser reads the session instead of
/// continuing it.
pub fn transcript(messages: &[AgentMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            AgentMessage::User(user) => {
                out.push_str(&format!("[User]: {}\n\n", user.plain_text()));
            }
            AgentMessage::Assistant(assistant) => {
                for content in &assistant.content {
                    match content {
                        AssistantContent::Text { text } => {
                            out.push_str(&format!("[Assistant]: {text}\n\n"));
                        }
                        AssistantContent::Thinking { thinking, .. } => {
                            out.push_str(&format!("[Assistant thinking]: {thinking}\n\n"));
                        }
                        AssistantContent::ToolCall(call) => out.push_str(&format!(
                            "[Tool call {}]: {}\n\n",
                            call.name,
                            call.arguments_text()
                        )),
                        AssistantContent::WebSearch(search) => {
                            let urls: Vec<&str> =
                                search.sources.iter().map(|s| s.url.as_str()).collect();
                            out.push_str(&format!(
                                "[Web search {:?}]: {}\n\n",
                                search.query,
                                urls.join(" ")
                            ));
                        }
                    }
                }
            }
            AgentMessage::ToolResult(result) => {
                let text = result.text();
                let shown = match text.char_indices().nth(RESULT_CHARS) {
                    Some((cut, _)) => format!("{}\n[… result cut for the summary]", &text[..cut]),
                    None => text,
                };
                let kind = if result.is_error { "error" } else { "result" };
                out.push_str(&format!("[Tool {kind} {}]: {shown}\n\n", result.tool_name));
            }
            AgentMessage::CompactionSummary(summary) => out.push_str(&format!(
                "[Summary of the earlier conversation]:\n{}\n\n",
                summary.summary
            )),
            AgentMessage::Notice(_) => {}
        }
    }
    out
}

/// Asks the model for a summary of `messages[..keep_from]`. Any failure — a provider error,
/// an abort, an empty answer — is an `Err`, and the caller's history is untouched.
pub async fn summarize(
    compactor: &SessionCompactor,
    model: &Model,
    messages: &[AgentMessage],
    keep_from: usize,
    instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<CompactionSummary, CompactionError> {
    let reserve_tokens = compactor
        .settings
        .for_window(model.context_window)
        .reserve_tokens;
    let keep_from = keep_from.min(messages.len());
    let mut text = transcript(&messages[..keep_from]);
    // The transcript must fit the window itself: keep its end, the part nearest the present.
    let budget = transcript_budget(model.context_window, &compactor.settings);
    if text.len() > budget {
        let mut start = text.len() - budget;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text = format!(
            "[… the oldest part of the conversation was left out]\n\n{}",
            &text[start..]
        );
    }
    let mut request = format!("<conversation>\n{text}</conversation>\n\n{SUMMARY_REQUEST}");
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        request.push_str(&format!(
            "\n\nAdditional instructions from the user: {extra}"
        ));
    }
    let context = Context {
        system_prompt: SUMMARY_SYSTEM.to_string(),
        messages: vec![llm::Message::User(UserMessage::text(request))],
        tools: Vec::new(),
    };
    let mut options = compactor.options.clone();
    options.thinking = ThinkingLevel::Off;
    options.max_tokens = Some((reserve_tokens * 4 / 5).min(model.max_output).max(1));

    let mut stream = compactor
        .provider
        .stream(model, context, options, cancel.clone());
    let answer = loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = cancel.cancelled() => return Err(CompactionError::Aborted),
        };
        match event {
            Some(StreamEvent::Done { message }) => break message,
            Some(StreamEvent::Error { message }) => {
                let reason = message
                    .error_message
                    .unwrap_or_else(|| "unknown error".into());
                return Err(CompactionError::Request(reason));
            }
            Some(_) => {}
            None => return Err(CompactionError::NoResult),
        }
    };
    if answer.stop_reason == StopReason::Length {
        return Err(CompactionError::CutOff);
    }
    let summary = answer.text().trim().to_string();
    if summary.is_empty() {
        return Err(CompactionError::Empty);
    }
    Ok(CompactionSummary {
        summary,
        tokens_before: estimate_context_tokens(messages),
        timestamp: now_millis(),
    })
}

/// The agent's [`Compactor`]: [`plan`] against the current model's window, [`summarize`] with
/// the current model, through `provider`.
pub struct SessionCompactor {
    pub provider: Arc<dyn Provider>,
    pub options: StreamOptions,
    pub settings: CompactionSettings,
    /// Estimated tokens of the system prompt and tool definitions, sent with every request.
    pub fixed_tokens: u64,
}

#[async_trait]
impl Compactor for SessionCompactor {
    fn plan(
        &self,
        messages: &[AgentMessage],
        model: &Model,
        reason: CompactReason,
    ) -> Option<usize> {
        plan_with(
            messages,
            model.context_window,
            &self.settings,
            reason,
            self.fixed_tokens,
        )
    }

    fn near_window(&self, messages: &[AgentMessage], model: &Model) -> bool {
        // Within the reserve of the window, or past three quarters of it.
        let settings = self.settings.for_window(model.context_window);
        let tokens = estimate_context_tokens_with(messages, self.fixed_tokens);
        let limit = model
            .context_window
            .saturating_sub(settings.reserve_tokens)
            .min(model.context_window / 4 * 3);
        tokens >= limit
    }

    async fn summarize(
        &self,
        messages: &[AgentMessage],
        keep_from: usize,
        model: &Model,
        instructions: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<CompactionSummary, CompactionError> {
        summarize(self, model, messages, keep_from, instructions, cancel).await
    }
}
