//! The steering and follow-up queues. Every queued message has an id, so its life (queued →
//! delivered or returned) can be followed in the events.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::AgentMessage;

/// How many queued messages one poll delivers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// Everything queued at once.
    #[default]
    All,
    /// One message per poll; the rest wait for the next poll.
    OneAtATime,
}

/// Which queue a message waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueKind {
    /// Delivered before the next model call of the current run.
    Steer,
    /// Delivered when the run would otherwise stop.
    FollowUp,
}

/// A message waiting in a queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedMessage {
    /// Unique for the agent's lifetime.
    pub id: u64,
    pub kind: QueueKind,
    pub message: AgentMessage,
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub messages: VecDeque<QueuedMessage>,
    pub mode: QueueMode,
}

impl Queue {
    /// What one poll delivers, by the queue's mode.
    pub fn take(&mut self) -> Vec<QueuedMessage> {
        match self.mode {
            QueueMode::All => self.take_all(),
            QueueMode::OneAtATime => self.messages.pop_front().into_iter().collect(),
        }
    }

    pub fn take_all(&mut self) -> Vec<QueuedMessage> {
        self.messages.drain(..).collect()
    }

    /// Puts undelivered messages back at the front, in their order.
    pub fn requeue(&mut self, messages: Vec<QueuedMessage>) {
        for message in messages.into_iter().rev() {
            self.messages.push_front(message);
        }
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(mode: QueueMode, n: u64) -> Queue {
        Queue {
            messages: (0..n)
                .map(|i| QueuedMessage {
                    id: i,
                    kind: QueueKind::Steer,
                    message: AgentMessage::user(i.to_string()),
                })
                .collect(),
            mode,
        }
    }

    fn ids(messages: &[QueuedMessage]) -> Vec<u64> {
        messages.iter().map(|m| m.id).collect()
    }

    #[test]
    fn all_mode_drains_everything() {
        let mut q = queue(QueueMode::All, 3);
        assert_eq!(ids(&q.take()), [0, 1, 2]);
        assert!(q.take().is_empty());
    }

    #[test]
    fn one_at_a_time_keeps_order() {
        let mut q = queue(QueueMode::OneAtATime, 2);
        assert_eq!(ids(&q.take()), [0]);
        assert_eq!(ids(&q.take()), [1]);
        assert!(q.take().is_empty());
    }

    #[test]
    fn requeue_restores_the_front() {
        let mut q = queue(QueueMode::All, 1);
        let taken = queue(QueueMode::All, 3).take_all()[1..].to_vec();
        q.requeue(taken);
        assert_eq!(ids(&q.take_all()), [1, 2, 0]);
    }
}
