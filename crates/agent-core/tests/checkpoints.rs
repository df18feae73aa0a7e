//! Checkpoints around a batch of calls that changes files: taken before and after, announced
//! as an event, and a failed one told without stopping the work.

mod support;

use std::sync::Arc;

use agent_core::{AgentEvent, AgentMessage, Concurrency};
use async_trait::async_trait;
use llm::{StopReason, ToolCall};
use support::*;

/// Records what the loop asks; fails when told to.
#[derive(Default)]
struct CountingCheckpointer {
    asked: std::sync::Mutex<Vec<String>>,
    fail: bool,
}

#[async_trait]
impl agent_core::Checkpointer for CountingCheckpointer {
    fn changes_files(&self, calls: &[ToolCall]) -> bool {
        calls.iter().any(|c| c.name == "write")
    }

    async fn before(&self, _calls: &[ToolCall]) -> Result<String, String> {
        self.asked.lock().unwrap().push("before".into());
        if self.fail {
            return Err("the store is full".into());
        }
        Ok("tree-1".into())
    }

    async fn after(
        &self,
        mark: String,
        tool_call_ids: Vec<String>,
    ) -> Result<Option<agent_core::CheckpointRecord>, String> {
        self.asked.lock().unwrap().push(format!("after {mark}"));
        Ok(Some(agent_core::CheckpointRecord {
            id: "cp1".into(),
            before: mark,
            after: "tree-2".into(),
            changed: vec![agent_core::FileChange {
                path: "a.txt".into(),
                kind: agent_core::FileChangeKind::Modified,
            }],
            skipped: Vec::new(),
            tool_call_ids,
        }))
    }
}

#[tokio::test]
async fn a_batch_that_changes_files_is_checkpointed_and_announced() {
    let checkpointer = Arc::new(CountingCheckpointer::default());
    let reply = support::ReplyScript::new()
        .call("c1", "write", "{}")
        .call("c2", "echo", "{}")
        .done(StopReason::ToolUse);
    let plugged = checkpointer.clone();
    let mut h = harness(vec![
        call_reply("c0", "echo", "{}"),
        reply,
        text_reply("ok"),
    ])
    .tool("write", Concurrency::Exclusive, Behaviour::Echo)
    .tool("echo", Concurrency::Shared, Behaviour::Echo)
    .configure(move |c| c.checkpointer = Some(plugged))
    .spawn();
    let events = h.run("go").await;
    // The read-only batch was not checkpointed; the writing one was, around the whole batch.
    assert_eq!(
        *checkpointer.asked.lock().unwrap(),
        ["before", "after tree-1"]
    );
    let taken: Vec<&agent_core::CheckpointRecord> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CheckpointTaken { record } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].tool_call_ids, ["c1", "c2"]);
    let k = kinds(&events);
    let taken_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::CheckpointTaken { .. }))
        .unwrap();
    let last_tool_end = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "c2"))
        .unwrap();
    assert!(taken_at > last_tool_end, "{k:?}");
}

#[tokio::test]
async fn a_failed_checkpoint_is_told_after_the_results_and_the_work_goes_on() {
    let checkpointer = Arc::new(CountingCheckpointer {
        fail: true,
        ..Default::default()
    });
    let plugged = checkpointer.clone();
    let mut h = harness(vec![call_reply("c1", "write", "{}"), text_reply("ok")])
        .tool("write", Concurrency::Exclusive, Behaviour::Echo)
        .configure(move |c| c.checkpointer = Some(plugged))
        .spawn();
    h.run("go").await;
    assert_eq!(h.log(), ["start c1", "end c1"], "the tool ran anyway");
    let messages = h.messages().await;
    assert_paired(&messages);
    let note = messages
        .iter()
        .position(|m| matches!(m, AgentMessage::Notice(n) if n.text.contains("the store is full")))
        .expect("the user is told");
    assert!(matches!(messages[note - 1], AgentMessage::ToolResult(_)));
}
