//! Wire messages: what a provider is sent and what it answers.

use serde::de::{Error as _, MapAccess};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::tagged::{self, Tagged};

/// Milliseconds since the Unix epoch; the timestamp every message carries.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One message of the provider conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: Vec<UserContent>,
    #[serde(default)]
    pub timestamp: u64,
}

impl UserMessage {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![UserContent::Text { text: text.into() }],
            timestamp: now_millis(),
        }
    }

    /// `text` and then `images` (no empty text block before images alone).
    pub fn with_images(text: String, images: Vec<ImageContent>) -> Self {
        let mut content = Vec::with_capacity(1 + images.len());
        if !text.is_empty() || images.is_empty() {
            content.push(UserContent::Text { text });
        }
        content.extend(images.into_iter().map(UserContent::Image));
        Self {
            content,
            timestamp: now_millis(),
        }
    }

    /// The text blocks joined by newlines (images are left out).
    pub fn plain_text(&self) -> String {
        join_text(self.content.iter().filter_map(|c| match c {
            UserContent::Text { text } => Some(text.as_str()),
            UserContent::Image(_) => None,
        }))
    }
}

/// Content of a user message or a tool result: text or an image.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserContent {
    Text { text: String },
    Image(ImageContent),
}

/// The fields of a text block, read after its tag.
#[derive(Deserialize)]
struct TextFields {
    text: String,
}

impl Tagged for UserContent {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text or image block";

    fn variant<'de, A: MapAccess<'de>>(tag: &str, rest: A) -> Result<Self, A::Error> {
        match tag {
            "text" => {
                TextFields::deserialize(tagged::rest(rest)).map(|f| Self::Text { text: f.text })
            }
            "image" => ImageContent::deserialize(tagged::rest(rest)).map(Self::Image),
            other => Err(A::Error::unknown_variant(other, &["text", "image"])),
        }
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::deserialize(deserializer)
    }
}

/// An image. Fresh from a user or a tool it carries its bytes (`data`); once a session has
/// stored it, the session file holds only its `sha256` and, loaded again, `stored_at` says
/// where its bytes are: a resumed session reads them only when a request sends them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// Base64-encoded bytes; empty for a stored image not read yet.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    pub mime_type: String,
    /// The SHA-256 of the bytes (hex), the name they are stored under beside the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The file the bytes are stored in, when `data` is empty (set by the session loader).
    #[serde(skip)]
    pub stored_at: Option<std::path::PathBuf>,
}

impl ImageContent {
    /// An image of base64 `data`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            sha256: None,
            stored_at: None,
        }
    }

    /// The bytes, base64-encoded: `data`, or the stored file read now.
    pub fn base64(&self) -> Result<std::borrow::Cow<'_, str>, String> {
        use base64::Engine as _;
        if !self.data.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(&self.data));
        }
        let bytes = self.bytes()?;
        Ok(std::borrow::Cow::Owned(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    }

    /// The bytes, decoded.
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        use base64::Engine as _;
        if self.data.is_empty() {
            let Some(path) = &self.stored_at else {
                return Err("the image's bytes are missing".into());
            };
            return std::fs::read(path).map_err(|err| {
                format!(
                    "the image stored at {} cannot be read: {err}",
                    path.display()
                )
            });
        }
        base64::engine::general_purpose::STANDARD
            .decode(self.data.as_bytes())
            .map_err(|err| format!("the image's data is not base64: {err}"))
    }

    /// The image as one wire block: `image(mime_type, base64)`, or a text block naming what went
    /// wrong when a stored image can no longer be read (the request still goes out).
    pub fn to_wire(
        &self,
        image: impl FnOnce(&str, &str) -> Value,
        text: impl FnOnce(String) -> Value,
    ) -> Value {
        match self.base64() {
            Ok(data) => image(&self.mime_type, &data),
            Err(why) => text(format!("[an image was left out: {why}]")),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The model stopped to have its tool calls run.
    ToolUse,
    /// The output token limit cut the answer off.
    Length,
    /// The request or the stream failed.
    Error,
    /// The run was cancelled.
    Aborted,
}

/// Token counts of one response; `cost` is in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost += other.cost;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub content: Vec<AssistantContent>,
    pub stop_reason: StopReason,
    #[serde(default)]
    pub usage: Usage,
    /// Model id that produced the message.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub provider: String,
    /// Readable reason when `stop_reason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What kind of failure `error_message` describes, when the caller can act on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default)]
    pub timestamp: u64,
}

/// A failure the agent can react to rather than only report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The prompt did not fit the model's context window: compact the history and retry.
    ContextOverflow,
    /// No bytes arrived for longer than the idle timeout.
    IdleTimeout,
    /// A successful response whose stream held no event at all: llama-cpp-python answers a
    /// prompt past its window this way, so near the window it is treated as an overflow.
    EmptyStream,
}

impl AssistantMessage {
    /// An empty message, the starting point of a stream.
    pub fn empty(model: &str, provider: &str) -> Self {
        Self {
            content: Vec::new(),
            stop_reason: StopReason::Stop,
            usage: Usage::default(),
            model: model.to_string(),
            provider: provider.to_string(),
            error_message: None,
            error_kind: None,
            timestamp: now_millis(),
        }
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The text blocks joined by newlines.
    pub fn text(&self) -> String {
        join_text(self.content.iter().filter_map(|c| match c {
            AssistantContent::Text { text } => Some(text.as_str()),
            _ => None,
        }))
    }
}

fn join_text<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    parts.collect::<Vec<_>>().join("\n")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantContent {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// Provider signature that must be replayed with the block (Anthropic).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolCall(ToolCall),
    /// A search the provider ran itself (`--search`): shown and kept, never sent back.
    WebSearch(WebSearch),
}

/// A web search the provider's own search tool ran, and the pages it found or the answer
/// cites. An empty `query` holds the sources an answer cited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WebSearch {
    #[serde(default)]
    pub query: String,
    #[serde(default)]
    pub sources: Vec<WebSource>,
    /// Why the search failed, when it did (the provider's error code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WebSource {
    pub url: String,
    #[serde(default)]
    pub title: String,
}

/// The fields of a thinking block, read after its tag.
#[derive(Deserialize)]
struct ThinkingFields {
    thinking: String,
    #[serde(default)]
    signature: Option<String>,
}

impl Tagged for AssistantContent {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text, thinking or tool call block";

    fn variant<'de, A: MapAccess<'de>>(tag: &str, rest: A) -> Result<Self, A::Error> {
        match tag {
            "text" => {
                TextFields::deserialize(tagged::rest(rest)).map(|f| Self::Text { text: f.text })
            }
            "thinking" => ThinkingFields::deserialize(tagged::rest(rest)).map(|f| Self::Thinking {
                thinking: f.thinking,
                signature: f.signature,
            }),
            "tool_call" => ToolCall::deserialize(tagged::rest(rest)).map(Self::ToolCall),
            "web_search" => WebSearch::deserialize(tagged::rest(rest)).map(Self::WebSearch),
            other => Err(A::Error::unknown_variant(
                other,
                &["text", "thinking", "tool_call", "web_search"],
            )),
        }
    }
}

impl<'de> Deserialize<'de> for AssistantContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::deserialize(deserializer)
    }
}

/// A tool call whose arguments finished streaming.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed arguments; an empty object when they were not valid JSON.
    pub arguments: Value,
    /// Set when the streamed arguments were not valid JSON: the call must not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_arguments: Option<InvalidArguments>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvalidArguments {
    /// The raw text the model sent, replayed verbatim to the provider.
    pub raw: String,
    pub error: String,
}

impl ToolCall {
    /// Builds a call from the raw argument text, parsing it strictly.
    pub fn from_raw(id: String, name: String, raw: &str) -> Self {
        let trimmed = raw.trim();
        // Models call argument-less tools with an empty string.
        let parsed = if trimmed.is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str::<Value>(trimmed)
        };
        match parsed {
            Ok(arguments) => Self {
                id,
                name,
                arguments,
                invalid_arguments: None,
            },
            Err(err) => Self {
                id,
                name,
                arguments: Value::Object(Default::default()),
                invalid_arguments: Some(InvalidArguments {
                    raw: raw.to_string(),
                    error: err.to_string(),
                }),
            },
        }
    }

    /// The argument text to send back to the provider.
    pub fn arguments_text(&self) -> String {
        match &self.invalid_arguments {
            Some(invalid) => invalid.raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<UserContent>,
    /// Structured data for the UI (a diff, an exit code); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    #[serde(default)]
    pub timestamp: u64,
}

impl ToolResultMessage {
    pub fn text(&self) -> String {
        join_text(self.content.iter().filter_map(|c| match c {
            UserContent::Text { text } => Some(text.as_str()),
            UserContent::Image(_) => None,
        }))
    }
}
