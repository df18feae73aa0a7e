//! The agent turn loop.
//!
//! An [`Agent`] owns the conversation and runs the loop on its own tokio task: commands go in
//! (prompt, steer, follow-up, abort, …), every lifecycle event comes out to each subscriber.
//! The loop never prints and never knows which provider it talks to; every failure (provider
//! error, abort, a broken or panicking tool) becomes a value in the history, and every `*_start`
//! event gets its `*_end`.

mod agent;
mod approval;
mod balance;
mod checkpoint;
mod coerce;
mod compaction;
mod event;
mod extra;
mod hooks;
mod io;
mod mcp_status;
mod message;
mod mode;
mod owner;
mod protocol;
mod queue;
mod redact;
mod requirement;
mod run;
mod tool;
mod tool_exec;
mod validate;

pub use agent::Agent;
pub use approval::{ApprovalDecision, ApprovalRequest, Approvals, Question};
pub use checkpoint::{
    CheckpointRecord, Checkpointer, FileChange, FileChangeKind, OnConflict, RestoreKind,
    RestoreOutcome, RestoreRecord,
};
pub use compaction::{CompactionError, Compactor, is_context_overflow};
pub use event::{
    AgentEvent, CompactReason, CompactionOutcome, HookOutcome, HookRun, ResetReason, RunStop,
    RunSummary, SubagentRef, ToolOutcome, ToolRun,
};
pub use extra::ExtraTools;
pub use hooks::{HookContext, Hooks, NextTurn, NoHooks, TurnInfo};
pub use mcp_status::{McpServerStatus, McpState, McpStatus};
pub use message::{AgentMessage, CompactionSummary, Notice, default_convert_to_llm};
pub use mode::{Mode, ModeSwitch, PlanMode};
pub use protocol::{AgentConfig, AgentError, AgentSnapshot};
pub use queue::{QueueKind, QueueMode, QueuedMessage};
pub use redact::{REDACTED, Redactor};
pub use requirement::{MAX_ESCALATIONS, RequireWhen, ToolRequirement};
pub use tool::{Concurrency, Tool, ToolContext, ToolError, ToolOutput, ToolView};
pub use validate::{InvalidArguments, validate_arguments};
