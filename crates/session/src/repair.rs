//! Closes tool calls a crash left without a result.
//!
//! A process killed while a tool runs leaves the assistant message with its calls and no
//! results; every provider rejects a history like that (each call needs its result, right
//! after the message that made it). Loading gives each such call an error result, in memory,
//! and plans the entries that make the file say the same: [`crate::SessionWriter::resume`]
//! writes them, so the loader itself never writes.
//!
//! Where the results go in the file: when the unpaired calls end the history (the usual crash),
//! the results are appended after the leaf. When more messages follow them (a file from an
//! older version that went on after a crash), appending at the end would put the results after
//! those messages; instead a new branch is written from the last good entry, with the results
//! and copies of the messages after them. The old entries stay in the file, off the branch the
//! loader follows.

use std::collections::HashSet;

use agent_core::AgentMessage;
use llm::{AssistantContent, ToolResultMessage, UserContent, now_millis};

use crate::entry::{Entry, EntryBody};
use crate::ids::IdSet;
use crate::ids::{rfc3339, unique_id};
use crate::loaded::LoadedSession;

/// The text of the result given to a tool call that never finished.
pub const INTERRUPTED: &str = "interrupted: the agent stopped before this tool finished";

/// Where results are missing: before history index `at`, the results of these calls.
struct Gap {
    at: usize,
    results: Vec<ToolResultMessage>,
}

/// Tool calls without a result among the tool results that directly follow their assistant
/// message (notices, which the model never sees, may sit between them).
fn gaps(messages: &[AgentMessage]) -> Vec<Gap> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let AgentMessage::Assistant(assistant) = &messages[i] else {
            i += 1;
            continue;
        };
        let mut answered = HashSet::new();
        let mut at = i + 1;
        let mut j = i + 1;
        while let Some(next) = messages.get(j) {
            match next {
                AgentMessage::ToolResult(result) => {
                    answered.insert(result.tool_call_id.as_str());
                    at = j + 1;
                }
                AgentMessage::Notice(_) => {}
                _ => break,
            }
            j += 1;
        }
        let results: Vec<ToolResultMessage> = assistant
            .content
            .iter()
            .filter_map(|c| match c {
                AssistantContent::ToolCall(call) if !answered.contains(call.id.as_str()) => {
                    Some(interrupted(&call.id, &call.name))
                }
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            out.push(Gap { at, results });
        }
        i = j;
    }
    out
}

fn interrupted(call_id: &str, tool_name: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call_id.to_string(),
        tool_name: tool_name.to_string(),
        content: vec![UserContent::Text {
            text: INTERRUPTED.to_string(),
        }],
        details: None,
        is_error: true,
        timestamp: now_millis(),
    }
}

/// Gives every unanswered call its result in `session.messages` and plans the entries that
/// write the same history to the file (`session.pending`).
pub(crate) fn repair(session: &mut LoadedSession) {
    let gaps = gaps(&session.messages);
    if gaps.is_empty() {
        return;
    }
    let len = session.messages.len();
    let first = gaps[0].at;
    // The entries keep everything before history index `keep`; the rest is written anew after
    // `parent`.
    let (keep, parent) = if gaps.iter().all(|g| g.at == len) {
        (len, session.leaf_id.clone())
    } else {
        let before = first - 1; // a gap always follows its assistant message
        let compacted_later = matches!(session.messages[0], AgentMessage::CompactionSummary(_))
            && session.message_pos[0] > session.message_pos[before];
        if compacted_later {
            // The summary's entry comes after the branch point: a branch from there would
            // leave the compaction behind, so the whole history is written anew.
            (0, None)
        } else {
            (first, Some(session.message_ids[before].clone()))
        }
    };
    let timestamp = rfc3339(now_millis());
    let mut pending: Vec<Entry> = Vec::new();
    let mut parent = parent;
    // Returns the new entry's id and its parent.
    let mut push = |body: EntryBody, ids: &mut IdSet| -> (String, Option<String>) {
        let id = unique_id(ids);
        let parent_id = parent.replace(id.clone());
        pending.push(Entry {
            id: id.clone(),
            parent_id: parent_id.clone(),
            timestamp: timestamp.clone(),
            body,
        });
        (id, parent_id)
    };
    let old_messages = std::mem::take(&mut session.messages);
    let old_ids = std::mem::take(&mut session.message_ids);
    let old_parents = std::mem::take(&mut session.message_parents);
    let mut messages = Vec::with_capacity(len + gaps.len());
    let mut ids = Vec::with_capacity(len + gaps.len());
    let mut parents = Vec::with_capacity(len + gaps.len());
    let mut gaps = gaps.into_iter().peekable();
    let mut repaired = 0;
    let olds = old_messages.into_iter().zip(old_ids).zip(old_parents);
    for (i, ((message, id), old_parent)) in olds.enumerate() {
        while let Some(gap) = gaps.next_if(|g| g.at == i) {
            session.timeline.inserted(messages.len(), gap.results.len());
            for result in gap.results {
                let message = AgentMessage::ToolResult(result);
                let (id, parent) = push(EntryBody::Message(message.clone()), &mut session.ids);
                ids.push(id);
                parents.push(parent);
                messages.push(message);
                repaired += 1;
            }
        }
        if i < keep {
            ids.push(id);
            parents.push(old_parent);
        } else {
            let body = match &message {
                AgentMessage::CompactionSummary(summary) => EntryBody::Compaction {
                    summary: summary.clone(),
                    first_kept_id: None,
                },
                other => EntryBody::Message(other.clone()),
            };
            let (id, parent) = push(body, &mut session.ids);
            ids.push(id);
            parents.push(parent);
        }
        messages.push(message);
    }
    for gap in gaps {
        session.timeline.inserted(messages.len(), gap.results.len());
        for result in gap.results {
            let message = AgentMessage::ToolResult(result);
            let (id, parent) = push(EntryBody::Message(message.clone()), &mut session.ids);
            ids.push(id);
            parents.push(parent);
            messages.push(message);
            repaired += 1;
        }
    }
    if keep < len {
        // Model and thinking changes after the branch point are not on the new branch: state
        // the ones in effect again.
        push(
            EntryBody::ModelChange {
                provider: session.provider.clone(),
                model: session.model.clone(),
                server: session.server.clone(),
            },
            &mut session.ids,
        );
        push(
            EntryBody::ThinkingChange(session.thinking),
            &mut session.ids,
        );
    }
    session.leaf_id = parent;
    session.messages = messages;
    session.message_ids = ids;
    session.message_parents = parents;
    // Positions in the file are only known for entries already there; none is needed again.
    session.message_pos.clear();
    session.pending = pending;
    session.repaired = repaired;
    session.warnings.push(format!(
        "{}: closed {repaired} unfinished tool call{} with an \"interrupted\" result",
        session.path.display(),
        if repaired == 1 { "" } else { "s" }
    ));
}
