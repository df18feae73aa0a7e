//! What the UI asks of the agent or the runtime ([`Action`]), and which list a choice popup
//! picks from ([`ChoiceKind`]): what input and the app's event handling return, and the
//! runtime performs.

use crate::editor::Draft;

/// What a choice list picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceKind {
    Model,
    Thinking,
    Session,
    /// A remembered approval rule, to revoke.
    Rule,
    /// A user message to rewind to, then what to restore.
    Rewind,
    RewindScope,
    /// A node of the session tree, then whether its files come too.
    Tree,
    TreeScope,
    /// What to do with files changed since the checkpoint.
    Conflict,
    /// What to do with the plan the model submitted.
    Plan,
}

/// What the UI asks of the agent or the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Prompt(Draft),
    Steer(Draft),
    FollowUp(Draft),
    /// Attach the image files a paste named (a dropped file comes as its path).
    AttachFiles(Vec<std::path::PathBuf>),
    /// Attach the image on the clipboard (Ctrl+V).
    PasteImage,
    Abort,
    /// Stop the run and hand every queued message back (`queue_returned`): Esc with
    /// steering queued, which the UI sends next itself.
    AbortHoldingQueue,
    /// Take both queues back (Alt+Up): they come back as a `queue_returned` event.
    TakeQueued,
    /// Answer the question `id` (an approval request).
    Decide(u64, agent_core::ApprovalDecision),
    Copy(String),
    Shell(String),
    StopShell,
    /// Open a choice list (`/model`, `/thinking`, `/resume`).
    Choose(ChoiceKind),
    /// Item `index` of an open choice list was picked.
    Chose(ChoiceKind, usize),
    /// Check the API key typed for the model `/model` offered at `choice`, save it and switch.
    CheckKey {
        choice: usize,
        key: String,
    },
    NewSession,
    Compact(Option<String>),
    SessionInfo,
    /// What confines commands and when the agent asks (`/status`).
    Status,
    Undo,
    Redo,
    /// Name the newest message (`/label`).
    Label(String),
    /// Copy the current branch into a new session (`/fork`).
    Fork,
    /// Write the conversation to a file (`/export [PATH]`).
    Export(Option<String>),
    /// Print the whole conversation again at today's width (`/redraw`).
    Redraw,
    /// An empty screen (`/clear`).
    ClearScreen,
    /// Open the full-screen transcript (Ctrl+O in inline mode).
    Overlay,
    /// Draw the screen again (Ctrl+L).
    Repaint,
    /// Stop for the shell's job control, until `fg` (Ctrl+Z).
    Suspend,
    /// List the skills and where each came from (`/skills`).
    Skills,
    /// Stop and start the MCP server of this name (`/mcp restart NAME`).
    McpRestart(String),
    /// Switch the working mode (Shift+Tab).
    SetMode(agent_core::Mode),
    /// Steer the subagent of this id with a message.
    SteerSubagent(String, String),
    /// Stop the subagent of this id (alone).
    StopSubagent(String),
    Quit,
}
