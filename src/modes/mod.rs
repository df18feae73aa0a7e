//! The ways to run the agent: interactive (the TUI), print and json (one prompt, headless),
//! rpc (JSON lines in and out).

pub mod headless;
pub mod interactive;
pub mod rpc;
mod rpc_protocol;
