//! Hook commands from `[[hooks]]`, run at agent-core's hook points.
//!
//! The protocol (close to Claude Code's, so existing hook scripts need little change): the
//! event arrives as one JSON object on stdin (`hook_event_name`, `session_id`, `cwd`, and per
//! event `prompt`, `tool_name` / `tool_input` / `tool_call_id`, `tool_response`,
//! `stop_hook_active`, `trigger`, `source`). Exit 0 goes on; its stdout may be a JSON object
//! with `additional_context` (text for the model) and, for `pre_tool_use`, `updated_input`
//! (the tool's new arguments) — the camel-case names and a `hookSpecificOutput` wrapper are
//! read too, and `{"decision": "block", "reason": …}` blocks like exit 2. Exit 2 blocks: the
//! tool does not run and stderr is its error result; a prompt is not sent; a stop is turned
//! into "go on" with stderr as the reason. Any other exit code, a timeout (the process group
//! is killed) or a failure to start is a visible warning and the action goes on.

mod config;
mod process;
mod runtime;

pub use config::{DEFAULT_TIMEOUT_SECS, Hook, HookConfig, HookEvent};
pub use process::{Exit, Ran, Runner};
pub use runtime::{ExtensionHooks, Verdict};
