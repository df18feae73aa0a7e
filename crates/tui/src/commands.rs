//! The slash commands, in one table: the `/` popup, the dispatcher and `/help` all read it, so
//! a new command is one entry here.

use crate::action::{Action, ChoiceKind};
use crate::app::App;
use crate::cells::CellKind;

/// One slash command.
pub struct SlashCommand {
    pub name: &'static str,
    /// Other names that run it.
    pub aliases: &'static [&'static str],
    /// What it takes after the name, as `/help` shows it (empty: nothing).
    pub args: &'static str,
    pub help: &'static str,
    /// Runs it with the text after the name (trimmed).
    pub run: fn(&mut App, &str) -> Vec<Action>,
}

pub static COMMANDS: [SlashCommand; 22] = [
    SlashCommand {
        name: "/help",
        aliases: &[],
        args: "",
        help: "keys and commands",
        run: |app, _| {
            let mut text = help();
            if !app.extra_commands.is_empty() {
                text.push_str("\nPrompt templates and skills:");
                for (name, description) in &app.extra_commands {
                    text.push_str(&format!("\n  {name}  {description}"));
                }
            }
            app.push_cell(CellKind::Notice(text));
            Vec::new()
        },
    },
    SlashCommand {
        name: "/model",
        aliases: &[],
        args: "",
        help: "switch the model",
        run: |_, _| vec![Action::Choose(ChoiceKind::Model)],
    },
    SlashCommand {
        name: "/thinking",
        aliases: &[],
        args: "",
        help: "set the thinking level",
        run: |_, _| vec![Action::Choose(ChoiceKind::Thinking)],
    },
    SlashCommand {
        name: "/new",
        aliases: &[],
        args: "",
        help: "start a new session",
        run: |_, _| vec![Action::NewSession],
    },
    SlashCommand {
        name: "/resume",
        aliases: &[],
        args: "",
        help: "resume a saved session",
        run: |_, _| vec![Action::Choose(ChoiceKind::Session)],
    },
    SlashCommand {
        name: "/compact",
        aliases: &[],
        args: "[what to keep]",
        help: "summarise older turns now",
        run: |_, args| {
            vec![Action::Compact(
                (!args.is_empty()).then(|| args.to_string()),
            )]
        },
    },
    SlashCommand {
        name: "/undo",
        aliases: &[],
        args: "",
        help: "take back the files the agent changed in its last step (again: further back)",
        run: |_, _| vec![Action::Undo],
    },
    SlashCommand {
        name: "/redo",
        aliases: &[],
        args: "",
        help: "re-apply what /undo took back",
        run: |_, _| vec![Action::Redo],
    },
    SlashCommand {
        name: "/rewind",
        aliases: &[],
        args: "",
        help: "go back to before one of your messages: code, conversation or both (or Esc twice)",
        run: |_, _| vec![Action::Choose(ChoiceKind::Rewind)],
    },
    SlashCommand {
        name: "/tree",
        aliases: &[],
        args: "",
        help: "the session's branches: go to any point",
        run: |_, _| vec![Action::Choose(ChoiceKind::Tree)],
    },
    SlashCommand {
        name: "/label",
        aliases: &[],
        args: "NAME",
        help: "name the latest message, for /tree",
        run: |app, args| {
            if args.is_empty() {
                app.push_cell(CellKind::Error("Usage: /label NAME".into()));
                return Vec::new();
            }
            vec![Action::Label(args.to_string())]
        },
    },
    SlashCommand {
        name: "/export",
        aliases: &[],
        args: "[PATH]",
        help: "write this conversation as one self-contained HTML page (PATH.md: markdown)",
        run: |_, args| vec![Action::Export((!args.is_empty()).then(|| args.to_string()))],
    },
    SlashCommand {
        name: "/fork",
        aliases: &[],
        args: "",
        help: "go on in a copy of this conversation (a new session file)",
        run: |_, _| vec![Action::Fork],
    },
    SlashCommand {
        name: "/session",
        aliases: &[],
        args: "",
        help: "this session: file, tokens, cost, the last run",
        run: |_, _| vec![Action::SessionInfo],
    },
    SlashCommand {
        name: "/status",
        aliases: &[],
        args: "",
        help: "the sandbox, approvals and trust in effect",
        run: |_, _| vec![Action::Status],
    },
    SlashCommand {
        name: "/mcp",
        aliases: &[],
        args: "[restart NAME]",
        help: "the MCP servers: state, tools, token cost, last error; restart one",
        run: |app, args| {
            let mut words = args.split_whitespace();
            match (words.next(), words.next()) {
                (None, _) => {
                    app.push_cell(CellKind::Notice(crate::mcp_view::listing(app.mcp.as_ref())));
                    Vec::new()
                }
                (Some("restart"), Some(name)) => vec![Action::McpRestart(name.to_string())],
                _ => {
                    app.push_cell(CellKind::Error("Usage: /mcp [restart NAME]".into()));
                    Vec::new()
                }
            }
        },
    },
    SlashCommand {
        name: "/permissions",
        aliases: &[],
        args: "",
        help: "the commands you always allow here (pick one to revoke it)",
        run: |_, _| vec![Action::Choose(ChoiceKind::Rule)],
    },
    SlashCommand {
        name: "/skills",
        aliases: &[],
        args: "",
        help: "the skills the agent knows and where each came from (/skill:NAME uses one)",
        run: |_, _| vec![Action::Skills],
    },
    SlashCommand {
        name: "/redraw",
        aliases: &[],
        args: "",
        help: "print the whole conversation again at the terminal's width",
        run: |app, _| {
            if app.running {
                app.push_cell(CellKind::Notice(
                    "The agent is working: /redraw once it is done (Esc stops it).".into(),
                ));
                Vec::new()
            } else {
                vec![Action::Redraw]
            }
        },
    },
    SlashCommand {
        name: "/copy",
        aliases: &[],
        args: "",
        help: "copy the last answer to the clipboard",
        run: |app, _| match app.last_answer() {
            Some(text) => vec![Action::Copy(text)],
            None => {
                app.push_cell(CellKind::Notice("Nothing to copy yet.".into()));
                Vec::new()
            }
        },
    },
    SlashCommand {
        name: "/clear",
        aliases: &[],
        args: "",
        help: "clear the screen (the conversation stays; inline, it scrolls up into the terminal's history)",
        run: |_, _| vec![Action::ClearScreen],
    },
    SlashCommand {
        name: "/quit",
        aliases: &["/exit"],
        args: "",
        help: "exit",
        run: |_, _| vec![Action::Quit],
    },
];

/// The command named `name` (or one of its aliases).
pub fn find(name: &str) -> Option<&'static SlashCommand> {
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// Every built-in name, aliases too: prompt templates cannot take them.
pub fn builtin_names() -> Vec<&'static str> {
    COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
        .collect()
}

/// Runs `/name args`; a prompt template or `/skill:name` is sent (the host expands it); an
/// unknown name says so.
pub fn dispatch(app: &mut App, name: &str, args: &str) -> Vec<Action> {
    let extra = name.starts_with("/skill:") || app.extra_commands.iter().any(|(n, _)| n == name);
    match find(name) {
        Some(command) => (command.run)(app, args),
        None if extra => {
            let text = format!("{name} {args}").trim_end().to_string();
            if app.running {
                vec![Action::Steer(text.into())]
            } else {
                vec![Action::Prompt(text.into())]
            }
        }
        None => {
            app.push_cell(CellKind::Error(format!(
                "Unknown command {name}; /help lists them."
            )));
            Vec::new()
        }
    }
}

/// The commands whose name starts with `prefix`, built-in ones first, then `extra` (prompt
/// templates, skills): (name, what `/help` says).
pub fn matching(prefix: &str, extra: &[(String, String)]) -> Vec<(String, String)> {
    let builtin = COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .map(|command| {
            let help = match command.args {
                "" => command.help.to_string(),
                args => format!("{args}  {}", command.help),
            };
            (command.name.to_string(), help)
        });
    let extra = extra
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .cloned();
    builtin.chain(extra).collect()
}

fn help() -> String {
    let mut text = String::from(
        "Keys: Enter send (while working: steer) · Alt+Enter or Tab queue a follow-up · Esc interrupt (idle, twice: rewind) · \
         Alt+Up pull queued messages back · Shift+Tab mode (default, auto-edit, plan) · Ctrl+G show a subagent (Enter steers it, Esc stops it) · \
         Shift+Enter or Ctrl+J newline · Up/Down history · \
         PgUp/PgDn/Home/End scroll (alternate screen) · Ctrl+O transcript (alternate screen: expand tool output) · Ctrl+T show/hide thinking · Ctrl+L draw the screen again · Ctrl+Z suspend · \
         Ctrl+C clear (twice: quit) · Ctrl+D quit · !cmd run a shell command · @ mention a file\nCommands:",
    );
    for command in &COMMANDS {
        let mut usage = command.name.to_string();
        if !command.args.is_empty() {
            usage.push(' ');
            usage.push_str(command.args);
        }
        for alias in command.aliases {
            usage.push_str(&format!(" (or {alias})"));
        }
        text.push_str(&format!("\n  {usage}  {}", command.help));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn every_command_dispatches_and_is_in_help() {
        let help = help();
        for command in &COMMANDS {
            assert!(help.contains(command.name), "{} in /help", command.name);
            assert!(find(command.name).is_some());
        }
        let mut app = App::new(Status::default());
        assert_eq!(dispatch(&mut app, "/exit", ""), [Action::Quit]);
        assert_eq!(
            dispatch(&mut app, "/compact", "keep the API"),
            [Action::Compact(Some("keep the API".into()))]
        );
        assert!(dispatch(&mut app, "/frobnicate", "").is_empty());
        assert!(
            matches!(&app.cells.last().unwrap().kind, CellKind::Error(e) if e.contains("/frobnicate"))
        );
        app.extra_commands = vec![("/review".into(), "Review a file".into())];
        assert_eq!(
            dispatch(&mut app, "/review", "src/a.rs"),
            [Action::Prompt("/review src/a.rs".into())]
        );
        assert_eq!(
            dispatch(&mut app, "/skill:pdf", ""),
            [Action::Prompt("/skill:pdf".into())]
        );
        dispatch(&mut app, "/help", "");
        assert!(
            matches!(&app.cells.last().unwrap().kind, CellKind::Notice(t) if t.contains("\n  /review  Review a file"))
        );
        let rows = matching("/re", &app.extra_commands);
        assert!(
            rows.iter()
                .any(|(n, h)| n == "/review" && h == "Review a file")
        );
        assert!(rows.iter().any(|(n, _)| n == "/redo"));
    }
}
