//! The agent's working mode: what the user lets it do without asking, and whether it may
//! change anything at all. The mode is one shared value the host and the loop both read (the
//! loop before every model call, the host's guard before every tool call), so a switch in the
//! middle of a run holds from the next call on.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// How the agent works; Shift+Tab in the TUI cycles through them in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The approval policy as configured.
    #[default]
    Default,
    /// Edits and writes inside the workspace run without asking; commands follow the policy.
    AutoEdit,
    /// Investigate and propose: nothing that changes files is offered, commands run in the
    /// read-only sandbox, and the run ends with a plan for the user to accept.
    Plan,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Default, Mode::AutoEdit, Mode::Plan];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AutoEdit => "auto-edit",
            Mode::Plan => "plan",
        }
    }

    /// The mode after this one in the cycle.
    pub fn next(self) -> Mode {
        match self {
            Mode::Default => Mode::AutoEdit,
            Mode::AutoEdit => Mode::Plan,
            Mode::Plan => Mode::Default,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mode `{name}`; the modes are {}", names.join(", "))
            })
    }
}

/// The current mode, shared by the agent and whatever enforces it in the host; cheap to
/// clone. Only the agent changes it (`Agent::set_mode`), so every change is an event.
#[derive(Clone, Debug)]
pub struct ModeSwitch {
    tx: Arc<watch::Sender<Mode>>,
}

impl Default for ModeSwitch {
    fn default() -> Self {
        Self::new(Mode::Default)
    }
}

impl ModeSwitch {
    pub fn new(mode: Mode) -> Self {
        Self {
            tx: Arc::new(watch::channel(mode).0),
        }
    }

    pub fn get(&self) -> Mode {
        *self.tx.borrow()
    }

    /// True when it changed.
    pub(crate) fn set(&self, mode: Mode) -> bool {
        self.tx.send_if_modified(|current| {
            let changed = *current != mode;
            *current = mode;
            changed
        })
    }
}

/// What plan mode needs from the host: the instructions added to the system prompt, and the
/// tool the model presents its plan with (required before the run may end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanMode {
    pub instructions: String,
    pub submit: crate::ToolRequirement,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_visits_every_mode_and_names_read_back() {
        let mut mode = Mode::Default;
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(mode);
            assert_eq!(mode.name().parse::<Mode>(), Ok(mode));
            mode = mode.next();
        }
        assert_eq!(mode, Mode::Default);
        assert_eq!(seen, Mode::ALL);
        assert!(
            "planning"
                .parse::<Mode>()
                .unwrap_err()
                .contains("default, auto-edit, plan")
        );
    }
}
