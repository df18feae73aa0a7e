//! [`ExtensionHooks`]: the host's hooks (its approval guard) with the user's hook commands
//! added at the same points — one pipeline, not two.

use std::sync::{Arc, Mutex, OnceLock};

use agent_core::{
    AgentMessage, Approvals, CompactReason, HookContext, HookOutcome, HookRun, Hooks, NextTurn,
    ToolOutput, TurnInfo,
};
use async_trait::async_trait;
use llm::{Message, ToolCall, UserContent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::config::{Hook, HookEvent};
use super::process::{Exit, Ran, Runner};

/// What one hook run means for the action.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go on, with context for the model and (pre_tool_use) new arguments, if the hook gave them.
    Go {
        context: Option<String>,
        updated_input: Option<Value>,
    },
    /// Exit 2 (or a `"decision": "block"`): the reason.
    Block(String),
}

/// The hooks of an agent with user hook commands. Every run is reported as a `hook_run` event.
pub struct ExtensionHooks {
    inner: Arc<dyn Hooks>,
    hooks: Vec<Hook>,
    runner: Runner,
    session_id: Mutex<String>,
    /// Where the current session id is read from, once the host has one (sessions change
    /// with `/new` and `/resume`).
    session_source: OnceLock<SessionSource>,
}

type SessionSource = Box<dyn Fn() -> Option<String> + Send + Sync>;

impl ExtensionHooks {
    /// `inner` keeps deciding what it decided (approvals); `hooks` run around it.
    pub fn new(inner: Arc<dyn Hooks>, hooks: Vec<Hook>, runner: Runner) -> Self {
        Self {
            inner,
            hooks,
            runner,
            session_id: Mutex::new(String::new()),
            session_source: OnceLock::new(),
        }
    }

    /// The session id hooks are told, until [`follow_sessions`](Self::follow_sessions).
    pub fn set_session(&self, id: &str) {
        *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) = id.to_string();
    }

    /// Reads the session id from `source` from now on (when it has one); set once.
    pub fn follow_sessions(&self, source: impl Fn() -> Option<String> + Send + Sync + 'static) {
        let _ = self.session_source.set(Box::new(source));
    }

    fn session_id(&self) -> String {
        if let Some(id) = self.session_source.get().and_then(|source| source()) {
            return id;
        }
        self.session_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn input(&self, event: HookEvent, fields: Value) -> Value {
        let mut input = json!({
            "hook_event_name": event.name(),
            "session_id": self.session_id(),
            "cwd": self.runner.cwd,
        });
        if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
            input.extend(fields);
        }
        input
    }

    /// Runs every hook for `event` (and `tool`) in order, each announced through `report`;
    /// stops at the first block. `input` is what the first hook gets; a `pre_tool_use` hook
    /// that replaces the arguments hands the new ones to the next.
    pub async fn run_event(
        &self,
        event: HookEvent,
        tool: Option<(&str, &str)>,
        fields: Value,
        cancel: &CancellationToken,
        report: &(dyn Fn(HookRun) + Sync),
    ) -> Verdict {
        let mut input = self.input(event, fields);
        let mut contexts = Vec::new();
        let mut updated = None;
        for hook in &self.hooks {
            if !hook.applies(event, tool.map(|(name, _)| name)) {
                continue;
            }
            let ran = self.runner.run(hook, &input, cancel).await;
            let (verdict, outcome, message) = judge(event, hook, &ran);
            report(HookRun {
                event: event.name().to_string(),
                command: hook.command.clone(),
                outcome,
                duration_ms: ran.duration.as_millis() as u64,
                tool_call_id: tool.map(|(_, id)| id.to_string()),
                message,
            });
            match verdict {
                Verdict::Block(reason) => return Verdict::Block(reason),
                Verdict::Go {
                    context,
                    updated_input,
                } => {
                    contexts.extend(context);
                    if let Some(new) = updated_input {
                        input["tool_input"] = new.clone();
                        updated = Some(new);
                    }
                }
            }
        }
        Verdict::Go {
            context: (!contexts.is_empty()).then(|| contexts.join("\n")),
            updated_input: updated,
        }
    }

    /// Runs the `session_start` hooks outside any run; returns their runs (for the host to
    /// announce) and the context they added (for the system prompt).
    pub async fn session_start(&self, source: &str) -> (Vec<HookRun>, Option<String>) {
        let runs = Mutex::new(Vec::new());
        let report = |run: HookRun| runs.lock().unwrap_or_else(|e| e.into_inner()).push(run);
        let verdict = self
            .run_event(
                HookEvent::SessionStart,
                None,
                json!({ "source": source }),
                &CancellationToken::new(),
                &report,
            )
            .await;
        let context = match verdict {
            Verdict::Go { context, .. } => context,
            // A session cannot be refused; the block is shown with the run.
            Verdict::Block(_) => None,
        };
        (runs.into_inner().unwrap_or_default(), context)
    }

    async fn run_in(
        &self,
        event: HookEvent,
        tool: Option<(&str, &str)>,
        fields: Value,
        cx: &HookContext<'_>,
    ) -> Verdict {
        if !self.hooks.iter().any(|h| h.event == event) {
            return Verdict::Go {
                context: None,
                updated_input: None,
            };
        }
        let report = |run: HookRun| cx.report(run);
        self.run_event(event, tool, fields, cx.cancel(), &report)
            .await
    }
}

/// The verdict, the outcome to report and the line the user reads.
fn judge(event: HookEvent, hook: &Hook, ran: &Ran) -> (Verdict, HookOutcome, Option<String>) {
    let go = Verdict::Go {
        context: None,
        updated_input: None,
    };
    let stderr = ran.stderr.trim();
    match &ran.exit {
        Exit::Code(0) => {
            let reply = Reply::parse(event, &ran.stdout);
            if let Some(reason) = reply.block {
                return (
                    Verdict::Block(reason.clone()),
                    HookOutcome::Blocked,
                    Some(reason),
                );
            }
            let outcome = if reply.updated_input.is_some() {
                HookOutcome::Rewrote
            } else {
                HookOutcome::Ok
            };
            let message = reply
                .updated_input
                .as_ref()
                .map(|v| format!("replaced the arguments: {}", short(&v.to_string())));
            (
                Verdict::Go {
                    context: reply.context,
                    updated_input: reply.updated_input,
                },
                outcome,
                message,
            )
        }
        Exit::Code(2) => {
            let reason = if stderr.is_empty() {
                format!("blocked by the hook `{}`", hook.command)
            } else {
                stderr.to_string()
            };
            (
                Verdict::Block(reason.clone()),
                HookOutcome::Blocked,
                Some(reason),
            )
        }
        Exit::Code(code) => (
            go,
            HookOutcome::Warning,
            Some(with_stderr(format!("exited with {code}"), stderr)),
        ),
        Exit::Signal => (
            go,
            HookOutcome::Warning,
            Some(with_stderr("killed by a signal".into(), stderr)),
        ),
        Exit::TimedOut => (
            go,
            HookOutcome::TimedOut,
            Some(format!(
                "timed out after {}s; it and its process group were killed",
                hook.timeout.as_secs()
            )),
        ),
        Exit::Aborted => (
            go,
            HookOutcome::Warning,
            Some("stopped: the run was aborted".into()),
        ),
        Exit::NotStarted(why) => (go, HookOutcome::Failed, Some(why.clone())),
    }
}

fn with_stderr(head: String, stderr: &str) -> String {
    if stderr.is_empty() {
        head
    } else {
        format!("{head}: {}", short(stderr))
    }
}

fn short(text: &str) -> String {
    crate::skills::shorten(text, 300)
}

/// What an exit-0 hook said on stdout.
#[derive(Debug, Default)]
struct Reply {
    context: Option<String>,
    updated_input: Option<Value>,
    block: Option<String>,
}

impl Reply {
    fn parse(event: HookEvent, stdout: &str) -> Self {
        let text = stdout.trim();
        if text.is_empty() {
            return Self::default();
        }
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) else {
            // Plain text adds context where the model reads on at once; elsewhere it is a
            // log line, ignored.
            return match event {
                HookEvent::SessionStart | HookEvent::UserPromptSubmit => Self {
                    context: Some(text.to_string()),
                    ..Self::default()
                },
                _ => Self::default(),
            };
        };
        let specific = object.get("hookSpecificOutput").and_then(Value::as_object);
        let field = |names: &[&str]| {
            names.iter().find_map(|name| {
                object
                    .get(*name)
                    .or_else(|| specific.and_then(|s| s.get(*name)))
                    .filter(|v| !v.is_null())
                    .cloned()
            })
        };
        let context = field(&["additional_context", "additionalContext"])
            .and_then(|v| v.as_str().map(str::to_string));
        let updated_input = (event == HookEvent::PreToolUse)
            .then(|| field(&["updated_input", "updatedInput"]))
            .flatten()
            .filter(Value::is_object);
        let blocked = field(&["decision", "permissionDecision"])
            .and_then(|v| v.as_str().map(str::to_string))
            .is_some_and(|d| d == "block" || d == "deny");
        let block = blocked.then(|| {
            field(&["reason", "permissionDecisionReason"])
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "blocked by a hook".into())
        });
        Self {
            context,
            updated_input,
            block,
        }
    }
}

#[async_trait]
impl Hooks for ExtensionHooks {
    async fn rewrite_tool_call(
        &self,
        call: &ToolCall,
        cx: &HookContext<'_>,
    ) -> Result<Option<Value>, String> {
        let inner = self.inner.rewrite_tool_call(call, cx).await?;
        let arguments = inner.clone().unwrap_or_else(|| call.arguments.clone());
        let fields = json!({
            "tool_name": call.name,
            "tool_input": arguments,
            "tool_call_id": call.id,
        });
        match self
            .run_in(
                HookEvent::PreToolUse,
                Some((&call.name, &call.id)),
                fields,
                cx,
            )
            .await
        {
            Verdict::Block(reason) => Err(format!("a pre_tool_use hook refused it: {reason}")),
            Verdict::Go { updated_input, .. } => Ok(updated_input.or(inner)),
        }
    }

    async fn before_tool_call(
        &self,
        call: &ToolCall,
        approvals: &Approvals<'_>,
    ) -> Result<(), String> {
        self.inner.before_tool_call(call, approvals).await
    }

    async fn after_tool_call(&self, call: &ToolCall, output: ToolOutput) -> ToolOutput {
        self.inner.after_tool_call(call, output).await
    }

    async fn after_tool_run(
        &self,
        call: &ToolCall,
        output: ToolOutput,
        cx: &HookContext<'_>,
    ) -> ToolOutput {
        let mut output = self.inner.after_tool_run(call, output, cx).await;
        let text: String = output
            .content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text { text } => Some(text.as_str()),
                UserContent::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let fields = json!({
            "tool_name": call.name,
            "tool_input": call.arguments,
            "tool_call_id": call.id,
            "tool_response": { "content": text, "is_error": output.is_error },
        });
        let note = match self
            .run_in(
                HookEvent::PostToolUse,
                Some((&call.name, &call.id)),
                fields,
                cx,
            )
            .await
        {
            // The tool already ran: a block can only tell the model.
            Verdict::Block(reason) => Some(format!("[post_tool_use hook: {reason}]")),
            Verdict::Go { context, .. } => context.map(|c| format!("[post_tool_use hook: {c}]")),
        };
        if let Some(note) = note {
            output.content.push(UserContent::Text { text: note });
        }
        output
    }

    async fn before_prompt(
        &self,
        message: AgentMessage,
        cx: &HookContext<'_>,
    ) -> Result<AgentMessage, String> {
        let mut message = self.inner.before_prompt(message, cx).await?;
        let AgentMessage::User(user) = &mut message else {
            return Ok(message);
        };
        let prompt: String = user
            .content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text { text } => Some(text.as_str()),
                UserContent::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        match self
            .run_in(
                HookEvent::UserPromptSubmit,
                None,
                json!({ "prompt": prompt }),
                cx,
            )
            .await
        {
            Verdict::Block(reason) => Err(reason),
            Verdict::Go { context, .. } => {
                if let Some(context) = context {
                    user.content.push(UserContent::Text {
                        text: format!("<hook_context>\n{context}\n</hook_context>"),
                    });
                }
                Ok(message)
            }
        }
    }

    async fn before_stop(
        &self,
        messages: &[AgentMessage],
        continued: u32,
        cx: &HookContext<'_>,
    ) -> Option<String> {
        if let Some(goal) = self.inner.before_stop(messages, continued, cx).await {
            return Some(goal);
        }
        let last = messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.text()),
            _ => None,
        });
        let fields = json!({
            "stop_hook_active": continued > 0,
            "last_assistant_message": last,
        });
        match self.run_in(HookEvent::Stop, None, fields, cx).await {
            Verdict::Block(reason) => {
                Some(format!("A stop hook asks you not to finish yet: {reason}"))
            }
            Verdict::Go { .. } => None,
        }
    }

    async fn before_compact(
        &self,
        reason: CompactReason,
        cx: &HookContext<'_>,
    ) -> Result<(), String> {
        self.inner.before_compact(reason, cx).await?;
        let trigger = match reason {
            CompactReason::Manual => "manual",
            CompactReason::Threshold | CompactReason::Overflow => "auto",
        };
        match self
            .run_in(
                HookEvent::PreCompact,
                None,
                json!({ "trigger": trigger }),
                cx,
            )
            .await
        {
            Verdict::Block(reason) => Err(format!("a pre_compact hook refused it: {reason}")),
            Verdict::Go { .. } => Ok(()),
        }
    }

    async fn prepare_next_turn(&self, turn: &TurnInfo<'_>) -> NextTurn {
        self.inner.prepare_next_turn(turn).await
    }

    fn should_stop_after_turn(&self, turn: &TurnInfo<'_>) -> bool {
        self.inner.should_stop_after_turn(turn)
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        self.inner.convert_to_llm(messages)
    }
}
