//! `AgentMessage`: what the loop carries. Only [`default_convert_to_llm`] (or a host's own
//! converter) turns it into provider wire messages, right before each model call.

use llm::{AssistantMessage, Message, ToolResultMessage, UserContent, UserMessage, now_millis};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    /// App-only: shown to the user, never sent to the model.
    Notice(Notice),
    /// Stands in for the older messages a compaction replaced; the model sees it as a user
    /// message.
    CompactionSummary(CompactionSummary),
}

/// The summary of the history a compaction replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionSummary {
    pub summary: String,
    /// Estimated context size before the compaction, in tokens.
    pub tokens_before: u64,
    #[serde(default)]
    pub timestamp: u64,
}

impl CompactionSummary {
    /// The text the model reads in place of the replaced messages.
    pub fn as_user_text(&self) -> String {
        format!(
            "The conversation before this point was compacted into this summary:\n\n<summary>\n{}\n</summary>",
            self.summary
        )
    }
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
            Self::CompactionSummary(c) => c.summary.clone(),
        }
    }
}

/// Keeps what the model can see: user, assistant and tool-result messages, and compaction
/// summaries as user messages. Notices are dropped, and so are assistant messages with no
/// content (a request that failed or was aborted before the first token): they say nothing,
/// and a request must not end with the model's own turn when it is retried.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::User(user) => Some(Message::User(user.clone())),
            AgentMessage::Assistant(assistant) if assistant.content.is_empty() => None,
            AgentMessage::Assistant(assistant) => Some(Message::Assistant(assistant.clone())),
            AgentMessage::ToolResult(result) => Some(Message::ToolResult(result.clone())),
            AgentMessage::Notice(_) => None,
            AgentMessage::CompactionSummary(c) => Some(Message::User(UserMessage {
                content: vec![UserContent::Text {
                    text: c.as_user_text(),
                }],
                timestamp: c.timestamp,
            })),
        })
        .collect()
}
