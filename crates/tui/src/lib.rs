//! The interactive terminal UI: renders the agent's event channel, sends it commands.
//!
//! Pure layers at the bottom (markdown, wrapping, highlighting, cells), state in the middle
//! (`app`, `input`), the terminal at the top (`ui` draws, `runtime` runs the loop).

pub mod app;
pub mod cells;
pub mod commands;
pub mod editor;
pub mod highlight;
pub mod host;
pub mod input;
pub mod markdown;
pub mod popup;
pub mod runtime;
pub mod status;
pub mod terminal;
pub mod ui;
pub mod wrap;

pub use host::{Host, OnOutput, SessionChoice};
pub use runtime::{Options, run};
