//! `[[hooks]]` in config.toml: which command runs at which lifecycle point.

use std::fmt;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use crate::skills::Origin;

/// Seconds a hook may run when the config says nothing.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Where in the agent's life a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Once, when the agent starts (stdout adds context to the system prompt).
    SessionStart,
    /// Before a user message goes to the model (exit 2: it does not).
    UserPromptSubmit,
    /// Before a tool runs (exit 2: it does not; stdout JSON may replace its arguments).
    PreToolUse,
    /// After a tool ran (stdout JSON may add context to its result).
    PostToolUse,
    /// When the agent would stop (exit 2: it goes on, told why).
    Stop,
    /// Before the history is summarised (exit 2: it is not).
    PreCompact,
}

impl HookEvent {
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::Stop => "stop",
            HookEvent::PreCompact => "pre_compact",
        }
    }

    fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One `[[hooks]]` table, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub event: HookEvent,
    /// A regular expression over the tool name (tool events only); it must match the whole
    /// name. None, empty or `*`: every tool.
    pub matcher: Option<String>,
    /// Run by the shell (`sh -c`), in the same sandbox as the model's commands.
    pub command: String,
    pub timeout_secs: Option<u64>,
}

/// A hook ready to run.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    matcher: Option<Regex>,
    pub command: String,
    pub timeout: Duration,
    pub origin: Origin,
}

impl Hook {
    pub fn compile(config: &HookConfig, origin: Origin) -> Result<Self, String> {
        if config.command.trim().is_empty() {
            return Err(format!("a {} hook has an empty `command`", config.event));
        }
        let matcher = match config.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => None,
            Some(pattern) => {
                if !config.event.is_tool_event() {
                    return Err(format!(
                        "a {} hook cannot have a `matcher` (only pre_tool_use and post_tool_use do)",
                        config.event
                    ));
                }
                Some(
                    Regex::new(&format!("^(?:{pattern})$"))
                        .map_err(|e| format!("hook matcher `{pattern}`: {e}"))?,
                )
            }
        };
        let secs = config.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if secs == 0 {
            return Err(format!(
                "hook `{}`: timeout_secs must be at least 1",
                config.command
            ));
        }
        Ok(Self {
            event: config.event,
            matcher,
            command: config.command.clone(),
            timeout: Duration::from_secs(secs),
            origin,
        })
    }

    /// Whether it runs for `event` (and, for tool events, the tool `tool`).
    pub fn applies(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.event == event
            && match (&self.matcher, tool) {
                (None, _) => true,
                (Some(matcher), Some(tool)) => matcher.is_match(tool),
                (Some(_), None) => false,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(event: HookEvent, matcher: Option<&str>) -> HookConfig {
        HookConfig {
            event,
            matcher: matcher.map(str::to_string),
            command: "true".into(),
            timeout_secs: None,
        }
    }

    #[test]
    fn matchers_match_whole_tool_names() {
        let hook = Hook::compile(
            &config(HookEvent::PreToolUse, Some("edit|write")),
            Origin::User,
        )
        .unwrap();
        assert!(hook.applies(HookEvent::PreToolUse, Some("edit")));
        assert!(!hook.applies(HookEvent::PreToolUse, Some("edit_notebook")));
        assert!(!hook.applies(HookEvent::PostToolUse, Some("edit")));
        let every = Hook::compile(&config(HookEvent::PreToolUse, Some("*")), Origin::User).unwrap();
        assert!(every.applies(HookEvent::PreToolUse, Some("bash")));
        assert_eq!(every.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECS));
    }

    #[test]
    fn bad_hooks_are_refused_with_a_reason() {
        let err = Hook::compile(&config(HookEvent::Stop, Some("bash")), Origin::User).unwrap_err();
        assert!(err.contains("cannot have a `matcher`"), "{err}");
        let err =
            Hook::compile(&config(HookEvent::PreToolUse, Some("(")), Origin::User).unwrap_err();
        assert!(err.contains("hook matcher"), "{err}");
    }
}
