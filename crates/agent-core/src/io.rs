//! The line between a run and the agent that owns it: events out, queue polls in.
//!
//! A run never touches the agent's state; everything it reports goes through [`LoopIo`], and
//! everything it needs from the queues comes back over a oneshot reply, so the agent stays the
//! single owner of the history and the queues.

use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::{AgentEvent, AgentMessage, ApprovalDecision, ApprovalRequest, QueuedMessage, RunStop};

/// What a run sends to its agent.
pub(crate) enum Internal {
    Event(AgentEvent),
    TakeSteering(oneshot::Sender<Vec<QueuedMessage>>),
    TakeFollowUp(oneshot::Sender<Vec<QueuedMessage>>),
    /// Messages taken from a queue that the run could not deliver.
    Requeue(Vec<QueuedMessage>),
    /// A before-hook asks the user (the id is given by the agent).
    Ask(Box<ApprovalRequest>, oneshot::Sender<ApprovalDecision>),
    /// The run task ended; `drained` when it stopped for lack of work (not abort/error/hook).
    Finished {
        drained: bool,
    },
}

/// The run's line to its agent, the run's cancellation token, and a view of how many steering
/// messages wait (peeked, never taken, so the queue keeps owning them until delivery).
#[derive(Clone)]
pub(crate) struct LoopIo {
    pub tx: mpsc::UnboundedSender<Internal>,
    pub cancel: CancellationToken,
    pub steering: watch::Receiver<usize>,
    /// What stopped the run from inside (its deadline, an unmet requirement), if anything.
    pub stopped_by: Arc<OnceLock<RunStop>>,
}

impl LoopIo {
    pub fn emit(&self, event: AgentEvent) {
        // The agent outlives its runs; if it is gone nobody is listening anyway.
        let _ = self.tx.send(Internal::Event(event));
    }

    pub async fn take(
        &self,
        make: fn(oneshot::Sender<Vec<QueuedMessage>>) -> Internal,
    ) -> Vec<QueuedMessage> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(make(reply)).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// Gives back messages the run took but could not deliver.
    pub fn requeue(&self, messages: Vec<QueuedMessage>) {
        if !messages.is_empty() {
            let _ = self.tx.send(Internal::Requeue(messages));
        }
    }

    /// Whether a steering message waits: the batch stops starting tools.
    pub fn steering_pending(&self) -> bool {
        *self.steering.borrow() > 0
    }

    /// Why a cancelled run stopped, in the words of its aborted message.
    pub fn abort_reason(&self) -> &'static str {
        match self.stopped_by.get() {
            Some(RunStop::Deadline) => "The run's deadline passed",
            _ => "Request was aborted",
        }
    }

    pub fn emit_message(&self, message: &AgentMessage) {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
    }
}
