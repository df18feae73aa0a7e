//! The steering and follow-up queues.

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

#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub messages: VecDeque<AgentMessage>,
    pub mode: QueueMode,
}

impl Queue {
    pub fn take(&mut self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::All => self.messages.drain(..).collect(),
            QueueMode::OneAtATime => self.messages.pop_front().into_iter().collect(),
        }
    }

    /// Puts undelivered messages back at the front, in their order.
    pub fn requeue(&mut self, messages: Vec<AgentMessage>) {
        for message in messages.into_iter().rev() {
            self.messages.push_front(message);
        }
    }

    pub fn previews(&self) -> Vec<String> {
        self.messages.iter().map(AgentMessage::preview).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(mode: QueueMode, n: usize) -> Queue {
        Queue {
            messages: (0..n).map(|i| AgentMessage::user(i.to_string())).collect(),
            mode,
        }
    }

    #[test]
    fn all_mode_drains_everything() {
        let mut q = queue(QueueMode::All, 3);
        assert_eq!(q.take().len(), 3);
        assert!(q.take().is_empty());
    }

    #[test]
    fn one_at_a_time_keeps_order() {
        let mut q = queue(QueueMode::OneAtATime, 2);
        assert_eq!(q.take()[0].preview(), "0");
        assert_eq!(q.take()[0].preview(), "1");
        assert!(q.take().is_empty());
    }

    #[test]
    fn requeue_restores_the_front() {
        let mut q = queue(QueueMode::All, 1);
        q.requeue(vec![AgentMessage::user("a"), AgentMessage::user("b")]);
        assert_eq!(q.previews(), ["a", "b", "0"]);
    }
}
