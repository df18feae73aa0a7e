//! The coding tools (read, write, edit, bash, grep, find, ls) on the agent-core `Tool` trait.
//!
//! Not built yet: this crate is empty until the tools issue lands. The agent runs with no
//! tools until then.
