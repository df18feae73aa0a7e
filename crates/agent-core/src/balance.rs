//! Keeps the event sequence closed whatever happens inside a run.
//!
//! The agent watches every event of a run and emits the run's `agent_end` from here when the
//! run task ends. If the task died (a bug, a panic), whatever it left open is closed first and
//! tool calls left without a result get one, so subscribers and the history always see a
//! well-formed sequence.

use llm::{AssistantMessage, StopReason};

use crate::run::synthetic_results;
use crate::{AgentEvent, AgentMessage, CompactReason, CompactionOutcome};

#[derive(Default)]
pub(crate) struct Balance {
    agent: bool,
    turn: bool,
    message: Option<AgentMessage>,
    tools: Vec<(String, String)>,
    added: Vec<AgentMessage>,
    compacting: Option<CompactReason>,
}

impl Balance {
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart => {
                *self = Self {
                    agent: true,
                    ..Self::default()
                }
            }
            AgentEvent::TurnStart => self.turn = true,
            AgentEvent::MessageStart { message } => self.message = Some(message.clone()),
            AgentEvent::MessageEnd { message } => {
                self.message = None;
                self.added.push(message.clone());
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                ..
            } => self.tools.push((tool_call_id.clone(), tool_name.clone())),
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.tools.retain(|(id, _)| id != tool_call_id)
            }
            AgentEvent::TurnEnd { .. } => self.turn = false,
            AgentEvent::AgentEnd { .. } => self.agent = false,
            AgentEvent::CompactionStart { reason } => self.compacting = Some(*reason),
            AgentEvent::CompactionEnd { .. } => self.compacting = None,
            AgentEvent::MessageUpdate { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::QueueUpdate { .. } => {}
        }
    }

    /// The events that close what the run left open, given the history as it stands.
    pub fn close(&mut self, history: &[AgentMessage]) -> Vec<AgentEvent> {
        let reason = "the agent loop stopped unexpectedly";
        let mut out = Vec::new();
        // A compaction cut short changed nothing; say so, in or outside a run.
        if let Some(compacting) = self.compacting.take() {
            out.push(AgentEvent::CompactionEnd {
                reason: compacting,
                outcome: CompactionOutcome::Failed {
                    error: reason.to_string(),
                },
            });
        }
        if !self.agent {
            return out;
        }
        if let Some(open) = self.message.take() {
            let message = match open {
                AgentMessage::Assistant(mut partial) => {
                    partial.stop_reason = StopReason::Error;
                    partial.error_message = Some(reason.to_string());
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
            let call = llm::ToolCall::from_raw(tool_call_id.clone(), tool_name.clone(), "{}");
            let result = synthetic_results(&[call], reason).remove(0);
            out.push(AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
            });
        }
        let mut closing_history: Vec<AgentMessage> = history.to_vec();
        closing_history.extend(out.iter().filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        }));
        for result in unpaired_results(&closing_history, reason) {
            let message = AgentMessage::ToolResult(result);
            out.push(AgentEvent::MessageStart {
                message: message.clone(),
            });
            out.push(AgentEvent::MessageEnd { message });
        }
        if self.turn {
            let message = last_assistant(&closing_history).unwrap_or_else(|| {
                let mut m = AssistantMessage::empty("", "");
                m.stop_reason = StopReason::Error;
                m
            });
            out.push(AgentEvent::TurnEnd {
                message,
                tool_results: Vec::new(),
            });
        }
        for event in &out {
            self.observe(event);
        }
        out.push(AgentEvent::AgentEnd {
            messages: std::mem::take(&mut self.added),
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

/// Results for the tool calls of the last assistant message that have none.
fn unpaired_results(history: &[AgentMessage], reason: &str) -> Vec<llm::ToolResultMessage> {
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
    let missing: Vec<llm::ToolCall> = assistant
        .tool_calls()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect();
    synthetic_results(&missing, reason)
}
