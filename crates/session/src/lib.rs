//! JSONL session store, resume, project context files, system prompt and compaction.
//!
//! Not built yet: this crate is empty until the sessions issue lands; nothing is saved today.
