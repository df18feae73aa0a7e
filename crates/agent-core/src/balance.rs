//! Keeps the event sequence closed whatever happens inside a run, and keeps the run's books.
//!
//! The agent watches every event of a run and emits the run's `agent_end` from here when the
//! run task ends, with a summary of what the run did. If the task died (a bug, a panic),
//! whatever it left open is closed first and tool calls left without a result get one, so
//! subscribers and the history always see a well-formed sequence. Every event made up that way
//! is counted in the summary's `repairs`: a healthy loop never needs one, and tests assert it.

use llm::{AssistantMessage, StopReason, ToolCall};

use crate::{
    AgentEvent, AgentMessage, CompactReason, CompactionOutcome, RunSummary, ToolOutcome,
    ToolOutput, ToolRun, coerce,
};

const REASON: &str = "the agent loop stopped unexpectedly";

#[derive(Default)]
pub(crate) struct Balance {
    agent: bool,
    turn: Option<u64>,
    message: Option<AgentMessage>,
    tools: Vec<(String, String)>,
    added: Vec<AgentMessage>,
    compacting: Option<CompactReason>,
    summary: RunSummary,
}

impl Balance {
    /// Counts a subagent's model call in the run's usage.
    pub fn subagent_usage(&mut self, usage: &llm::Usage) {
        if self.agent {
            self.summary.usage.add(usage);
            self.summary.subagent_usage.add(usage);
        }
    }

    /// Notes what stopped the run from inside, for its `agent_end`.
    pub fn stopped_by(&mut self, stop: crate::RunStop) {
        self.summary.stopped_by = Some(stop);
    }

    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart => {
                *self = Self {
                    agent: true,
                    ..Self::default()
                }
            }
            AgentEvent::TurnStart { turn } => self.turn = Some(*turn),
            AgentEvent::MessageStart { message } => self.message = Some(message.clone()),
            AgentEvent::MessageEnd { message } => {
                self.message = None;
                if let AgentMessage::Assistant(assistant) = message {
                    self.summary.stop_reasons.push(assistant.stop_reason);
                    self.summary.usage.add(&assistant.usage);
                }
                self.added.push(message.clone());
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                ..
            } => self.tools.push((tool_call_id.clone(), tool_name.clone())),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                outcome,
                ..
            } => {
                self.tools.retain(|(id, _)| id != tool_call_id);
                self.summary.tools.push(ToolRun {
                    id: tool_call_id.clone(),
                    name: tool_name.clone(),
                    outcome: *outcome,
                });
            }
            AgentEvent::TurnEnd { .. } => self.turn = None,
            AgentEvent::AgentEnd { .. } => self.agent = false,
            AgentEvent::CompactionStart { reason } => self.compacting = Some(*reason),
            AgentEvent::CompactionEnd { .. } => self.compacting = None,
            AgentEvent::MessageUpdate { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ModelChange { .. }
            | AgentEvent::ThinkingChange { .. }
            | AgentEvent::ModeChange { .. }
            | AgentEvent::HistoryReset { .. }
            | AgentEvent::Queued { .. }
            | AgentEvent::QueueDelivered { .. }
            | AgentEvent::QueueReturned { .. }
            | AgentEvent::ApprovalRequested { .. }
            | AgentEvent::ApprovalDecided { .. }
            | AgentEvent::CheckpointTaken { .. }
            | AgentEvent::CheckpointRestored { .. }
            | AgentEvent::Rewound { .. }
            | AgentEvent::HookRun { .. }
            | AgentEvent::ToolsChanged { .. }
            | AgentEvent::McpStatus { .. }
            | AgentEvent::Subagent { .. } => {}
        }
    }

    /// The events that close what the run left open, given the history as it stands, ending
    /// with the run's `agent_end` (none for a compaction run, which has no `agent_start`).
    pub fn close(&mut self, history: &[AgentMessage]) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        // A compaction cut short changed nothing; say so, in or outside a run.
        if let Some(compacting) = self.compacting.take() {
            out.push(AgentEvent::CompactionEnd {
                reason: compacting,
                outcome: CompactionOutcome::Failed {
                    error: REASON.to_string(),
                },
            });
        }
        if !self.agent {
            for event in &out {
                self.observe(event);
            }
            return out;
        }
        if let Some(open) = self.message.take() {
            let message = match open {
                AgentMessage::Assistant(mut partial) => {
                    partial.stop_reason = StopReason::Error;
                    partial.error_message = Some(REASON.to_string());
                    partial
                        .content
                        .retain(|c| !matches!(c, llm::AssistantContent::ToolCall(_)));
                    AgentMessage::Assistant(partial)
                }
                other => other,
            };
            out.push(AgentEvent::MessageEnd { message });
        }
        for (tool_call_id, tool_name) in self.tools.drain(..) {
            let call = ToolCall::from_raw(tool_call_id.clone(), tool_name.clone(), "{}");
            out.push(AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result: coerce::tool_result(&call, ToolOutput::error(REASON)),
                outcome: ToolOutcome::Aborted,
            });
        }
        let mut closing_history: Vec<AgentMessage> = history.to_vec();
        closing_history.extend(out.iter().filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        }));
        for call in unpaired_calls(&closing_history) {
            let message =
                AgentMessage::ToolResult(coerce::tool_result(&call, ToolOutput::error(REASON)));
            out.push(AgentEvent::MessageStart {
                message: message.clone(),
            });
            out.push(AgentEvent::MessageEnd { message });
        }
        if let Some(turn) = self.turn {
            let message = last_assistant(&closing_history).unwrap_or_else(|| {
                let mut m = AssistantMessage::empty("", "");
                m.stop_reason = StopReason::Error;
                m
            });
            out.push(AgentEvent::TurnEnd {
                turn,
                message,
                tool_results: Vec::new(),
            });
        }
        for event in &out {
            self.observe(event);
        }
        let mut summary = std::mem::take(&mut self.summary);
        summary.repairs = out.len() as u32;
        out.push(AgentEvent::AgentEnd {
            messages: std::mem::take(&mut self.added),
            summary,
        });
        self.agent = false;
        out
    }
}

fn last_assistant(history: &[AgentMessage]) -> Option<AssistantMessage> {
    history.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a.clone()),
        _ => None,
    })
}

/// The tool calls of the last assistant message that have no result.
fn unpaired_calls(history: &[AgentMessage]) -> Vec<ToolCall> {
    let Some(position) = history
        .iter()
        .rposition(|m| matches!(m, AgentMessage::Assistant(_)))
    else {
        return Vec::new();
    };
    let AgentMessage::Assistant(assistant) = &history[position] else {
        unreachable!("found above")
    };
    let answered: Vec<&str> = history[position..]
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(r.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assistant
        .tool_calls()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect()
}
