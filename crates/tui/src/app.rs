//! The UI's state, and how agent events change it. No terminal, no I/O: the runtime feeds
//! events in and draws what is here.

use std::collections::HashMap;
use std::time::Instant;

use agent_core::{AgentEvent, AgentMessage, CompactionOutcome, QueueKind, ResetReason};
use llm::{AssistantContent, StopReason, StreamEvent, ToolResultMessage, UserContent};
use serde_json::Value;

use crate::action::{Action, ChoiceKind};
use crate::cells::{AssistantCell, Cell, CellKind, ToolCell, View};
use crate::editor::Editor;
use crate::status::Status;

const INTERRUPTED: &str = "Interrupted. Tell the agent what to do instead.";
const CUT_OFF: &str = "The reply was cut off at the model's output token limit: it is incomplete.";

/// How long the steering an Esc interrupted waits before it is sent: a second Esc within it
/// keeps it in the editor.
pub const RESEND_WINDOW: std::time::Duration = std::time::Duration::from_millis(2000);

pub struct App {
    pub cells: Vec<Cell>,
    /// The model the agent calls (from the start, then each `model_change`).
    pub model: Option<llm::Model>,
    /// Inline mode: cells printed into the scrollback whole, and rows printed of the next.
    pub printed: usize,
    pub printed_rows: usize,
    /// Inline mode (Ctrl+O opens the transcript instead of expanding tool output in place).
    pub inline: bool,
    /// Content-block index of the streaming assistant message → its cell.
    blocks: HashMap<usize, usize>,
    /// Tool call id → its cell.
    tools: HashMap<String, usize>,
    /// Tool calls of the last assistant message: id → (name, arguments).
    calls: HashMap<String, (String, Value)>,
    pub running: bool,
    pub run_started: Option<Instant>,
    /// What waits in the agent's queues, as its events said.
    pub queue: Vec<QueuedView>,
    /// How each tool wants its calls shown, by name (from the tools the agent has).
    pub tool_views: HashMap<String, agent_core::ToolView>,
    /// Questions waiting for the user, oldest first (the first is the one on screen).
    pub approvals: Vec<agent_core::ApprovalRequest>,
    /// What the last finished run did (`/session` shows it).
    pub last_run: Option<agent_core::RunSummary>,
    pub editor: Editor,
    pub status: Status,
    pub status_line: crate::status::LineCache,
    /// Where the transcript view stands (it follows new output unless scrolled).
    pub scroll: crate::scroll::Scroll,
    pub expand_tools: bool,
    pub show_thinking: bool,
    pub abort_requested: bool,
    /// Esc stopped a run with steering queued: since when the queue is asked back, to be
    /// held for [`RESEND_WINDOW`] before it starts the next run.
    pub holding_queue: Option<Instant>,
    /// An answer came without token usage: the runtime asks for an estimate of the context.
    pub wants_estimate: bool,
    /// The steering messages an Esc took back: sent as the next run when the window ends,
    /// returned to the editor by a second Esc within it.
    pub resend: Option<(Instant, Vec<String>)>,
    /// The checklist `update_plan` last set: pinned above the editor until every step is done.
    pub checklist: Option<tools::Checklist>,
    /// The plan the model submitted in this run: the user picks what to do with it when the
    /// run ends.
    pub submitted_plan: Option<String>,
    /// The plan waiting for the user's pick (the choice list is open).
    pub plan_to_decide: Option<String>,
    /// The subagents seen, and the one on screen (Ctrl+G).
    pub subagents: crate::subagents::Subagents,
    /// A `!cmd` is running (Esc stops it when the agent is idle).
    pub shell_running: bool,
    /// A compaction is summarising the history.
    pub compacting: bool,
    /// The provider is waiting to retry: what to show, and until when.
    pub retry: Option<(String, Instant)>,
    /// This run already said it was interrupted.
    interrupted_shown: bool,
    pub should_quit: bool,
    /// Slash commands that prompt templates and skills add: (name with slash, description).
    pub extra_commands: Vec<(String, String)>,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// The MCP servers as the last `mcp_status` said (`/mcp`).
    pub mcp: Option<agent_core::McpStatus>,
}

impl App {
    pub fn new(status: Status) -> Self {
        Self {
            cells: Vec::new(),
            model: None,
            printed: 0,
            printed_rows: 0,
            inline: false,
            blocks: HashMap::new(),
            tools: HashMap::new(),
            calls: HashMap::new(),
            running: false,
            run_started: None,
            queue: Vec::new(),
            last_run: None,
            approvals: Vec::new(),
            tool_views: HashMap::new(),
            editor: Editor::new(),
            status,
            status_line: Default::default(),
            scroll: Default::default(),
            expand_tools: false,
            show_thinking: true,
            abort_requested: false,
            holding_queue: None,
            wants_estimate: false,
            resend: None,
            checklist: None,
            submitted_plan: None,
            plan_to_decide: None,
            subagents: crate::subagents::Subagents::default(),
            shell_running: false,
            compacting: false,
            retry: None,
            interrupted_shown: false,
            should_quit: false,
            extra_commands: Vec::new(),
            dirty: true,
            mcp: None,
        }
    }

    pub fn view(&self, width: u16) -> View {
        View {
            width,
            expand_tools: self.expand_tools,
            show_thinking: self.show_thinking,
        }
    }

    pub fn push_cell(&mut self, kind: CellKind) -> usize {
        self.cells.push(Cell::new(kind));
        self.dirty = true;
        self.cells.len() - 1
    }

    /// Adds a resumed or initial history without events: its last turns only (cells for a
    /// long session's every message would cost seconds and hundreds of megabytes before the
    /// first frame); `/redraw` shows it all.
    pub fn load_history(&mut self, messages: &[AgentMessage]) {
        let start = tail_start(messages);
        self.note_earlier(start);
        self.load_all(&messages[start..]);
        // The checklist of a resumed session, also from before the messages shown; a plan
        // submitted back then is not asked about again.
        self.checklist = messages.iter().rev().find_map(|m| match m {
            AgentMessage::ToolResult(r) if r.tool_name == tools::UPDATE_PLAN && !r.is_error => {
                tools::Checklist::from_details(r.details.as_ref())
            }
            _ => None,
        });
        self.submitted_plan = None;
        // Up brings back what was asked before, from the whole conversation.
        self.editor.seed_history(|| last_prompts(messages));
    }

    /// Says that `count` messages before the shown ones are not shown.
    pub fn note_earlier(&mut self, count: usize) {
        if count > 0 {
            self.push_cell(CellKind::Notice(format!(
                "{count} earlier messages are not shown (/redraw shows the whole conversation)."
            )));
        }
    }

    /// Adds every message of `messages` (`/redraw`).
    pub fn load_all(&mut self, messages: &[AgentMessage]) {
        for message in messages {
            self.message_end(message);
        }
    }

    /// Applies one agent event; returns what the runtime must do in response.
    pub fn on_event(&mut self, event: &AgentEvent) -> Vec<Action> {
        // A subagent's streaming delta changes nothing on screen unless that child is shown
        // (its line under the task call moves with the call's own updates).
        self.dirty |= match event {
            AgentEvent::Subagent { subagent, .. } if event.is_delta() => {
                self.subagents.viewed().is_some_and(|v| v.id == subagent.id)
            }
            _ => true,
        };
        match event {
            AgentEvent::AgentStart => {
                self.running = true;
                self.run_started = Some(Instant::now());
                self.interrupted_shown = false;
            }
            AgentEvent::AgentEnd { summary, .. } => {
                self.last_run = Some(summary.clone());
                self.running = false;
                self.run_started = None;
                // Aborted between model calls (a tool was running): say so here.
                if std::mem::take(&mut self.abort_requested) && !self.interrupted_shown {
                    self.push_cell(CellKind::Error(INTERRUPTED.into()));
                }
                if let Some(stop) = summary.stopped_by {
                    self.push_cell(CellKind::Error(format!("Stopped: {}.", stop.explain())));
                }
                // The run ended with a plan: the user picks what happens to it.
                if let Some(plan) = self.submitted_plan.take() {
                    self.plan_to_decide = Some(plan);
                    return vec![Action::Choose(ChoiceKind::Plan)];
                }
            }
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(_),
            } => {
                self.blocks.clear();
            }
            AgentEvent::MessageUpdate { event } => self.stream(event),
            AgentEvent::MessageEnd { message } => {
                self.retry = None;
                self.message_end(message);
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                arguments,
            } => {
                self.start_tool(tool_call_id, tool_name, arguments.clone());
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial,
                ..
            } => {
                if let Some(CellKind::Tool(cell)) = self.tool_cell(tool_call_id) {
                    cell.partial = text_of(&partial.content);
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                ..
            } => {
                // Live only: a plan is decided on, a checklist printed, as they happen (a
                // resumed one is restored by `load_history`).
                if !result.is_error {
                    self.plan_result(result);
                }
                self.tool_result(tool_call_id, result);
            }
            AgentEvent::Queued { id, kind, message } => self.queue.push(QueuedView {
                id: *id,
                kind: *kind,
                text: message.preview(),
            }),
            AgentEvent::QueueDelivered { ids, .. } => self.queue.retain(|q| !ids.contains(&q.id)),
            AgentEvent::QueueReturned { messages } => {
                self.queue.retain(|q| messages.iter().all(|m| m.id != q.id));
                // Asked back by Esc: the steering is sent next, after a moment in which a
                // second Esc keeps it (the seeds' rule, made visible).
                let asked = self
                    .holding_queue
                    .take()
                    .is_some_and(|at| at.elapsed() < RESEND_WINDOW);
                let (steering, messages): (Vec<_>, Vec<_>) = messages
                    .iter()
                    .partition(|m| asked && m.kind == QueueKind::Steer);
                if !steering.is_empty() {
                    let texts: Vec<String> = steering.iter().map(|m| m.message.preview()).collect();
                    let which = if texts.len() == 1 {
                        "your queued message"
                    } else {
                        "your queued messages"
                    };
                    self.push_cell(CellKind::Notice(format!(
                        "Interrupted — sending {which} next (Esc again to keep it in the editor)."
                    )));
                    self.resend = Some((Instant::now(), texts));
                }
                // Nothing typed is lost: it goes back into the editor, before the draft.
                if messages.is_empty() {
                    return Vec::new();
                }
                let mut back: Vec<String> = messages.iter().map(|m| m.message.preview()).collect();
                let draft = self.editor.text();
                if !draft.is_empty() {
                    back.push(draft);
                }
                self.editor.set_text(&back.join("\n"));
            }
            AgentEvent::ApprovalRequested { request } => self.approvals.push(request.clone()),
            AgentEvent::ApprovalDecided { id, decision } => {
                if let Some(i) = self.approvals.iter().position(|r| r.id == *id) {
                    let request = self.approvals.remove(i);
                    let record = crate::cells::approval::answered(&request, decision);
                    self.push_cell(CellKind::Notice(record));
                }
            }
            AgentEvent::CheckpointTaken { record } => {
                let mut text = format!(
                    "Checkpoint: {} (/undo takes it back)",
                    some_paths(&record.changed)
                );
                if !record.skipped.is_empty() {
                    text.push_str(&format!(
                        "; not checkpointed: {}",
                        some_paths(&record.skipped)
                    ));
                }
                self.push_cell(CellKind::Notice(text));
            }
            AgentEvent::CheckpointRestored { record } => {
                let verb = match record.kind {
                    agent_core::RestoreKind::Undo => "Undone",
                    agent_core::RestoreKind::Redo => "Redone",
                    agent_core::RestoreKind::Rewind => "Restored",
                };
                let mut text = format!("{verb}: {}", some_paths(&record.restored));
                if !record.kept.is_empty() {
                    text.push_str(&format!(
                        "; kept as you left them: {}",
                        some_paths(&record.kept)
                    ));
                }
                if !record.failed.is_empty() {
                    text.push_str(&format!("; NOT restored: {}", some_paths(&record.failed)));
                }
                self.push_cell(CellKind::Notice(text));
            }
            AgentEvent::Rewound { messages, .. } => {
                self.clear_transcript();
                self.load_history(messages);
                self.push_cell(CellKind::Notice(
                    "The conversation goes on from the point chosen; every branch stays in \
                     the session (/tree shows them)."
                        .into(),
                ));
            }
            AgentEvent::ModelChange { model } => {
                self.model = Some(model.clone());
                self.status.model = crate::status::model_label(model);
                self.status.context_window = model.context_window;
                self.push_cell(CellKind::Notice(format!(
                    "Model: {}/{} (from the next request).",
                    model.provider, model.id
                )));
            }
            AgentEvent::ThinkingChange { level } => {
                self.status.thinking = Some(*level);
                self.push_cell(CellKind::Notice(format!("Thinking: {}.", level)));
            }
            AgentEvent::Subagent { subagent, event } => {
                // Its cost (and its own subagents') counts in the session's, not in this
                // context's fill.
                if let (
                    AgentEvent::MessageEnd {
                        message: AgentMessage::Assistant(answer),
                    },
                    _,
                ) = event.unwrapped()
                {
                    self.status.usage.add(&answer.usage);
                }
                self.subagents.on_event(subagent, event);
            }
            AgentEvent::ModeChange { mode } => {
                self.status.mode = *mode;
                self.push_cell(CellKind::Notice(crate::modes::announce(*mode).into()));
            }
            AgentEvent::HistoryReset {
                messages, reason, ..
            } => {
                self.clear_transcript();
                self.load_history(messages);
                let note = match reason {
                    ResetReason::New => "New session.".to_string(),
                    ResetReason::Resume => format!(
                        "Resumed a session of {}.",
                        crate::words::count(messages.len(), "message")
                    ),
                    ResetReason::Fork => format!(
                        "Forked: you go on in a copy of this session ({}); the original file \
                         is unchanged.",
                        crate::words::count(messages.len(), "message")
                    ),
                };
                self.push_cell(CellKind::Notice(note));
            }
            AgentEvent::CompactionStart { .. } => self.compacting = true,
            AgentEvent::CompactionEnd { outcome, .. } => {
                self.compacting = false;
                let cell = match outcome {
                    CompactionOutcome::Compacted { summary, replaced } => {
                        CellKind::Notice(format!(
                            "Context compacted: {replaced} messages ({} tokens) summarised.",
                            crate::status::tokens(summary.tokens_before)
                        ))
                    }
                    CompactionOutcome::Failed { error } => CellKind::Error(format!(
                        "Compaction failed, the history is unchanged: {error}"
                    )),
                };
                self.push_cell(cell);
            }
            AgentEvent::HookRun { run } => {
                self.push_cell(crate::hooks_view::hook_cell(run));
            }
            AgentEvent::McpStatus { status } => {
                for failure in crate::mcp_view::new_failures(self.mcp.as_ref(), status) {
                    self.push_cell(CellKind::Error(failure));
                }
                self.status.mcp = Some(status.counts());
                self.mcp = Some(status.clone());
            }
            AgentEvent::TurnStart { .. }
            | AgentEvent::TurnEnd { .. }
            | AgentEvent::MessageStart { .. }
            | AgentEvent::ToolsChanged { .. } => {}
        }
        Vec::new()
    }

    fn stream(&mut self, event: &StreamEvent) {
        self.retry = None;
        match event {
            StreamEvent::Retry {
                attempt,
                max,
                delay_ms,
                reason,
            } => {
                let until = Instant::now() + std::time::Duration::from_millis(*delay_ms);
                self.retry = Some((format!("({attempt}/{max}): {reason}"), until));
            }
            StreamEvent::TextDelta { index, delta } => {
                if let CellKind::Assistant(cell) = self.block(*index, new_text_cell) {
                    cell.stream(delta);
                }
            }
            StreamEvent::ThinkingDelta { index, delta } => {
                if let CellKind::Thinking(cell) = self.block(*index, new_thinking_cell) {
                    cell.push(delta);
                }
            }
            // A tool call shows while its arguments stream: the path of a write, the command
            // of a bash call.
            StreamEvent::ToolcallStart { index, id, name } => {
                let view = self.view_of(name);
                let call = ToolCell::new(id, name, view, Value::Null);
                self.block(*index, || CellKind::Tool(call));
                if let Some(&cell) = self.blocks.get(index) {
                    self.tools.insert(id.clone(), cell);
                }
            }
            StreamEvent::ToolcallDelta { index, delta } => {
                if let Some(&cell) = self.blocks.get(index)
                    && let CellKind::Tool(call) = self.cells[cell].edit()
                {
                    call.stream_arguments(delta);
                }
            }
            StreamEvent::WebSearch { index, search } => {
                self.block(*index, || CellKind::WebSearch(search.clone()));
            }
            _ => {}
        }
    }

    /// The cell of content block `index` of the streaming message, created by `new`.
    fn block(&mut self, index: usize, new: impl FnOnce() -> CellKind) -> &mut CellKind {
        let cell = match self.blocks.get(&index) {
            Some(&cell) => cell,
            None => {
                let cell = self.push_cell(new());
                self.blocks.insert(index, cell);
                cell
            }
        };
        self.cells[cell].edit()
    }

    fn message_end(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::User(user) => {
                let text = text_of(&user.content);
                self.push_cell(CellKind::User(text));
            }
            AgentMessage::Assistant(assistant) => {
                // The final message is the truth: fix up (or create) each block's cell.
                for (index, block) in assistant.content.iter().enumerate() {
                    match block {
                        AssistantContent::Text { text } => {
                            if let CellKind::Assistant(cell) = self.block(index, new_text_cell) {
                                cell.set(text);
                            }
                        }
                        AssistantContent::Thinking { thinking, .. } => {
                            if let CellKind::Thinking(cell) = self.block(index, new_thinking_cell) {
                                cell.set(thinking);
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            self.calls.insert(
                                call.id.clone(),
                                (call.name.clone(), call.arguments.clone()),
                            );
                            self.settle_streamed_call(index, call);
                        }
                        AssistantContent::WebSearch(search) => {
                            self.block(index, || CellKind::WebSearch(search.clone()));
                        }
                    }
                }
                self.drop_unfinished_calls(assistant);
                // Text and thinking are complete; a tool call is once its result is in.
                for &cell in self.blocks.values() {
                    if matches!(self.cells[cell].kind, CellKind::Tool(_)) {
                        continue;
                    }
                    self.cells[cell].finish();
                }
                self.blocks.clear();
                self.status.add_usage(&assistant.usage);
                let u = assistant.usage;
                // No usage from the server (llama-cpp-python): the gauge is estimated instead.
                if u.input + u.output + u.cache_read + u.cache_write == 0
                    && assistant.stop_reason != StopReason::Aborted
                {
                    self.wants_estimate = true;
                }
                match assistant.stop_reason {
                    StopReason::Error => {
                        let reason = assistant
                            .error_message
                            .clone()
                            .unwrap_or_else(|| "the request failed".into());
                        self.push_cell(CellKind::Error(reason));
                    }
                    StopReason::Aborted => {
                        self.interrupted_shown = true;
                        self.push_cell(CellKind::Error(INTERRUPTED.into()));
                    }
                    StopReason::Length => {
                        self.push_cell(CellKind::Error(CUT_OFF.into()));
                    }
                    StopReason::Stop | StopReason::ToolUse => {}
                }
            }
            AgentMessage::ToolResult(result) => self.tool_result(&result.tool_call_id, result),
            AgentMessage::Notice(notice) => {
                self.push_cell(CellKind::Notice(notice.text.clone()));
            }
            AgentMessage::CompactionSummary(summary) => {
                let text = format!("Summary of the earlier conversation:\n{}", summary.summary);
                self.push_cell(CellKind::Notice(text));
            }
        }
    }

    pub fn tool_cell(&mut self, id: &str) -> Option<&mut CellKind> {
        let index = *self.tools.get(id)?;
        Some(self.cells.get_mut(index)?.edit())
    }

    fn view_of(&self, name: &str) -> agent_core::ToolView {
        self.tool_views.get(name).copied().unwrap_or_default()
    }

    /// A tool cell for call `id`, filled in by its result later (the one shown while its
    /// arguments streamed, if there is one).
    pub fn start_tool(&mut self, id: &str, name: &str, args: Value) {
        if let Some(CellKind::Tool(cell)) = self.tool_cell(id) {
            cell.args = args;
            return;
        }
        let view = self.view_of(name);
        self.start_tool_as(id, name, view, args);
    }

    /// The streamed call of content block `index` is final: its arguments, and its id (the
    /// agent makes repeated ids unique).
    fn settle_streamed_call(&mut self, index: usize, call: &llm::ToolCall) {
        let Some(&cell) = self.blocks.get(&index) else {
            return;
        };
        if let CellKind::Tool(tool) = self.cells[cell].edit() {
            tool.args = call.arguments.clone();
            if tool.id != call.id {
                self.tools.remove(&tool.id);
                tool.id = call.id.clone();
                self.tools.insert(call.id.clone(), cell);
            }
        }
    }

    /// Calls that started streaming but are not in the final message (cut off by an abort or
    /// an error) will never run: say so instead of leaving them pending.
    fn drop_unfinished_calls(&mut self, assistant: &llm::AssistantMessage) {
        let unfinished: Vec<usize> = self
            .blocks
            .iter()
            .filter(|(index, _)| {
                !matches!(
                    assistant.content.get(**index),
                    Some(AssistantContent::ToolCall(_))
                )
            })
            .map(|(_, &cell)| cell)
            .collect();
        for cell in unfinished {
            if let CellKind::Tool(tool) = self.cells[cell].edit()
                && tool.result.is_none()
            {
                tool.result = Some(ToolResultMessage {
                    tool_call_id: tool.id.clone(),
                    tool_name: tool.name.clone(),
                    content: vec![UserContent::Text {
                        text: "Not run: the reply stopped before its arguments were complete."
                            .into(),
                    }],
                    details: None,
                    is_error: true,
                    timestamp: 0,
                });
            }
        }
    }

    /// A tool cell shown as `view` (a `!cmd` shell is not one of the agent's tools).
    pub fn start_tool_as(&mut self, id: &str, name: &str, view: agent_core::ToolView, args: Value) {
        let index = self.push_cell(CellKind::Tool(ToolCell::new(id, name, view, args)));
        self.tools.insert(id.to_string(), index);
    }

    /// The result of call `id` (a `!cmd` shell, which the agent does not know about).
    pub fn finish_tool(&mut self, result: &ToolResultMessage) {
        self.dirty = true;
        self.tool_result(&result.tool_call_id, result);
    }

    /// Empties the transcript (the conversation itself is the agent's business).
    pub fn clear_transcript(&mut self) {
        self.cells.clear();
        // Inline mode: what is in the scrollback stays; the new cells print after it.
        self.printed = 0;
        self.printed_rows = 0;
        self.blocks.clear();
        self.tools.clear();
        self.calls.clear();
        self.scroll.reset();
        self.dirty = true;
    }

    fn tool_result(&mut self, id: &str, result: &ToolResultMessage) {
        if !self.tools.contains_key(id) {
            // A call that never ran (aborted, cut off): show it with its synthetic result.
            let (name, args) = self
                .calls
                .get(id)
                .cloned()
                .unwrap_or_else(|| (result.tool_name.clone(), Value::Null));
            let view = self.view_of(&name);
            let index = self.push_cell(CellKind::Tool(ToolCell::new(id, &name, view, args)));
            self.tools.insert(id.to_string(), index);
        }
        if let Some(CellKind::Tool(cell)) = self.tool_cell(id)
            && cell.result.is_none()
        {
            cell.duration = result
                .details
                .as_ref()
                .and_then(|d| d.get("duration_ms"))
                .and_then(Value::as_u64)
                .map(std::time::Duration::from_millis);
            cell.result = Some(result.clone());
        }
    }

    /// What a plan tool's result changes: the pinned checklist (printed once into the
    /// transcript when it is done or replaced by another), or the plan to decide on.
    fn plan_result(&mut self, result: &ToolResultMessage) {
        if result.tool_name == tools::SUBMIT_PLAN {
            self.submitted_plan = tools::submitted_plan(result.details.as_ref());
            return;
        }
        if result.tool_name != tools::UPDATE_PLAN {
            return;
        }
        let Some(list) = tools::Checklist::from_details(result.details.as_ref()) else {
            return;
        };
        let steps =
            |l: &tools::Checklist| l.plan.iter().map(|s| s.step.clone()).collect::<Vec<_>>();
        if let Some(old) = self.checklist.take()
            && !old.is_complete()
            && steps(&old) != steps(&list)
        {
            let text = crate::modes::checklist_text(&old, false);
            self.push_cell(CellKind::Notice(text));
        }
        if list.is_complete() {
            self.push_cell(CellKind::Notice(crate::modes::checklist_text(&list, true)));
        }
        self.checklist = Some(list);
    }

    /// The text of the last assistant answer (for /copy).
    pub fn last_answer(&self) -> Option<String> {
        self.cells.iter().rev().find_map(|c| match &c.kind {
            CellKind::Assistant(cell) => Some(cell.text().to_string()),
            _ => None,
        })
    }
}

/// A queued message as the queue display shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedView {
    pub id: u64,
    pub kind: QueueKind,
    pub text: String,
}

/// A few of `paths`, for a one-line notice.
fn some_paths<T: std::fmt::Display>(paths: &[T]) -> String {
    const SHOWN: usize = 4;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    if text.is_empty() {
        text.push_str("nothing");
    }
    text
}

/// The conversation's last prompts, oldest first, a prompt repeated in a row once (its last
/// ones only: a long session's pasted files would be a copy of it in memory).
fn last_prompts(messages: &[AgentMessage]) -> Vec<String> {
    let mut bytes = 0;
    let mut prompts: Vec<String> = messages
        .iter()
        .rev()
        .filter_map(|m| match m {
            AgentMessage::User(user) => Some(text_of(&user.content)),
            _ => None,
        })
        .filter(|text| !text.trim().is_empty())
        .take(crate::editor::SEEDED)
        .take_while(|text| {
            bytes += text.len();
            bytes <= crate::editor::SEEDED_BYTES
        })
        .collect();
    prompts.reverse();
    prompts.dedup();
    prompts
}

/// Most messages a resumed history shows at first, and how many user turns back it reaches.
const TAIL_MESSAGES: usize = 200;
const TAIL_TURNS: usize = 5;

/// Where the shown tail of `messages` starts: the last few user turns, at most
/// [`TAIL_MESSAGES`] messages.
pub fn tail_start(messages: &[AgentMessage]) -> usize {
    let floor = messages.len().saturating_sub(TAIL_MESSAGES);
    let mut turns = 0;
    for (i, message) in messages.iter().enumerate().rev() {
        if i < floor {
            return floor;
        }
        if matches!(message, AgentMessage::User(_)) {
            turns += 1;
            if turns == TAIL_TURNS {
                return i;
            }
        }
    }
    0
}

fn new_thinking_cell() -> CellKind {
    CellKind::Thinking(crate::cells::ThinkingCell::default())
}

fn new_text_cell() -> CellKind {
    CellKind::Assistant(AssistantCell::default())
}

pub fn text_of(content: &[UserContent]) -> String {
    content
        .iter()
        .map(|c| match c {
            UserContent::Text { text } => text.as_str(),
            UserContent::Image(_) => "[image]",
        })
        .collect::<Vec<_>>()
        .join("\n")
}
