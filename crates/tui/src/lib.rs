//! The ratatui terminal UI that renders the agent's event channel.
//!
//! Not built yet: this crate is empty until the TUI issue lands.
