//! The interactive terminal UI: renders the agent's event channel, sends it commands.
//!
//! Pure layers at the bottom (markdown, wrapping, highlighting, cells), state in the middle
//! (`app`, `input`), the terminal at the top (`ui` draws, `runtime` runs the loop).

pub mod action;
pub mod app;
mod backend;
pub mod cells;
mod commands;
pub mod editor;
mod full;
mod highlight;
mod history;
mod hooks_view;
mod host;
mod inline;
pub mod input;
mod markdown;
mod mcp_view;
mod modes;
pub mod popup;
mod printed;
mod runtime;
pub mod scroll;
pub mod setup_screen;
pub mod status;
mod subagents;
mod terminal;
mod terminal_input;
pub mod theme;
pub mod ui;
mod words;
mod wrap;

pub use commands::builtin_names;
pub use host::{Host, OnOutput, RewindPoint, RewindScope, Rewinding, SessionChoice, TreeRow};
pub use runtime::{Options, run};
pub use terminal::Screen;
pub use wrap::for_terminal as wrap_for_terminal;
