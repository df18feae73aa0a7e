//! `AgentMessage`: what the loop carries. Only [`default_convert_to_llm`] (or a host's own
//! converter) turns it into provider wire messages, right before each model call.

use llm::{AssistantMessage, Message, ToolResultMessage, UserMessage, now_millis};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    /// App-only: shown to the user, never sent to the model.
    Notice(Notice),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub text: String,
    #[serde(default)]
    pub timestamp: u64,
}

impl AgentMessage {
    pub fn user(text: impl Into<String>) -> Self {
        Self::User(UserMessage::text(text))
    }

    pub fn notice(text: impl Into<String>) -> Self {
        Self::Notice(Notice {
            text: text.into(),
            timestamp: now_millis(),
        })
    }

    /// A one-line preview of the message, for queue displays and logs.
    pub fn preview(&self) -> String {
        match self {
            Self::User(user) => user.plain_text(),
            Self::Assistant(assistant) => assistant.text(),
            Self::ToolResult(result) => result.text(),
            Self::Notice(notice) => notice.text.clone(),
        }
    }
}

/// Keeps what the model can see: user, assistant and tool-result messages. Notices are dropped.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::User(user) => Some(Message::User(user.clone())),
            AgentMessage::Assistant(assistant) => Some(Message::Assistant(assistant.clone())),
            AgentMessage::ToolResult(result) => Some(Message::ToolResult(result.clone())),
            AgentMessage::Notice(_) => None,
        })
        .collect()
}
