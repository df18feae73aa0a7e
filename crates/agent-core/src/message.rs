//! `AgentMessage`: what the loop carries. Only [`default_convert_to_llm`] (or a host's own
//! converter) turns it into provider wire messages, right before each model call.

use llm::tagged::{self, Tagged};
use llm::{AssistantMessage, Message, ToolResultMessage, UserContent, UserMessage, now_millis};
use serde::de::{Error as _, MapAccess};
use serde::{Deserialize, Deserializer, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Read straight into the variant when `role` comes first, as the session writer puts it
/// (see `llm::tagged`): loading a long session is mostly this.
impl Tagged for AgentMessage {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message";

    fn variant<'de, A: MapAccess<'de>>(role: &str, rest: A) -> Result<Self, A::Error> {
        let rest = tagged::rest(rest);
        match role {
            "user" => UserMessage::deserialize(rest).map(Self::User),
            "assistant" => AssistantMessage::deserialize(rest).map(Self::Assistant),
            "tool_result" => ToolResultMessage::deserialize(rest).map(Self::ToolResult),
            "notice" => Notice::deserialize(rest).map(Self::Notice),
            "compaction_summary" => {
                CompactionSummary::deserialize(rest).map(Self::CompactionSummary)
            }
            other => Err(A::Error::unknown_variant(
                other,
                &[
                    "user",
                    "assistant",
                    "tool_result",
                    "notice",
                    "compaction_summary",
                ],
            )),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::deserialize(deserializer)
    }
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

#[cfg(test)]
mod serde_tests {
    use llm::{AssistantContent, AssistantMessage, ToolResultMessage, UserContent};
    use serde_json::json;

    use super::*;

    fn every_kind() -> Vec<AgentMessage> {
        let mut assistant = AssistantMessage::empty("m", "p");
        assistant.content = vec![AssistantContent::Text {
            text: "done".into(),
        }];
        vec![
            AgentMessage::user("hello"),
            AgentMessage::Assistant(assistant),
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![UserContent::Text { text: "out".into() }],
                details: Some(json!({"exit": 0, "role": "not the tag"})),
                is_error: false,
                timestamp: 7,
            }),
            AgentMessage::notice("compacted"),
            AgentMessage::CompactionSummary(CompactionSummary {
                summary: "earlier".into(),
                tokens_before: 1000,
                timestamp: 3,
            }),
        ]
    }

    #[test]
    fn every_kind_reads_back_with_its_role_first_or_last() {
        for message in every_kind() {
            let written = serde_json::to_string(&message).unwrap();
            assert!(written.starts_with(r#"{"role":"#), "{written}");
            assert_eq!(
                serde_json::from_str::<AgentMessage>(&written).unwrap(),
                message
            );
            let mut value = serde_json::to_value(&message).unwrap();
            let role = value.as_object_mut().unwrap().remove("role").unwrap();
            let rest = value.to_string();
            let moved = format!("{},\"role\":{role}}}", &rest[..rest.len() - 1]);
            assert_eq!(
                serde_json::from_str::<AgentMessage>(&moved).unwrap(),
                message,
                "{moved}"
            );
        }
        let error = serde_json::from_str::<AgentMessage>(r#"{"role":"system","content":[]}"#);
        assert!(
            error
                .unwrap_err()
                .to_string()
                .contains("unknown variant `system`")
        );
    }
}
