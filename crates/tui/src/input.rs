//! Keys, pastes and the mouse: what each does to the state, and what it asks of the agent.

use std::path::Path;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use crate::action::Action;
use crate::app::App;
use crate::popup::Popup;
use agent_core::QueueKind;

/// A second Ctrl+C within this time quits.
const QUIT_WINDOW: Duration = Duration::from_millis(1500);

/// How long the keys of a question stay named after a key it does not take.
const HINT_WINDOW: Duration = Duration::from_secs(4);

/// Input state that lives beside the app.
#[derive(Default)]
pub struct InputState {
    pub popup: Option<Popup>,
    pub files: Vec<String>,
    ctrl_c_at: Option<Instant>,
    /// When Esc was pressed on an empty, idle editor: a second one opens `/rewind`.
    esc_at: Option<Instant>,
    /// Rows of the transcript on screen, for paging.
    pub page: usize,
    /// A key the question on screen does not take was pressed: which keys it does, for a
    /// moment.
    answer_hint_at: Option<(Instant, String)>,
    /// Interrupted steering waits to be sent (mirrors `App::resend`, for the hint).
    pub resend_pending: bool,
}

impl InputState {
    /// A hint to show while a second Ctrl+C would quit.
    pub fn quit_hint(&self) -> bool {
        self.ctrl_c_at.is_some_and(|t| t.elapsed() < QUIT_WINDOW)
    }

    /// What a second key would do, while it would, or which keys the question on screen
    /// takes: shown in the live row.
    pub fn hint(&self) -> Option<String> {
        if self.quit_hint() {
            Some("Press Ctrl+C again to quit".into())
        } else if self.resend_pending {
            Some("Press Esc to keep your queued message in the editor instead".into())
        } else if self.esc_at.is_some_and(|t| t.elapsed() < QUIT_WINDOW) {
            Some("Press Esc again to rewind".into())
        } else {
            self.answer_hint_at
                .as_ref()
                .filter(|(at, _)| at.elapsed() < HINT_WINDOW)
                .map(|(_, hint)| hint.clone())
        }
    }
}

/// Ctrl+C, the key that asks to stop.
pub fn is_interrupt(key: &KeyEvent) -> bool {
    key.kind != KeyEventKind::Release
        && key.code == KeyCode::Char('c')
        && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// Scrolls the transcript by a page (PgUp/PgDn, one screen less two rows of overlap) or to
/// its top or bottom (Home/End); false for other keys.
pub fn scroll(app: &mut App, input: &InputState, code: KeyCode) -> bool {
    let page = input.page.saturating_sub(2).max(1);
    match code {
        KeyCode::PageUp => app.scroll.up(page),
        KeyCode::PageDown => app.scroll.down(page),
        KeyCode::Home => app.scroll.top(),
        KeyCode::End => app.scroll.end(),
        _ => return false,
    }
    true
}

pub fn on_key(app: &mut App, input: &mut InputState, key: KeyEvent) -> Vec<Action> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    app.dirty = true;
    if let Some(actions) = typed_into_popup(input, &key) {
        return actions;
    }
    if let Some(actions) = answer(app, input, &key) {
        return actions;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    if let Some(actions) = subagent_key(app, input, &key) {
        return actions;
    }
    match key.code {
        KeyCode::Char('c') if ctrl => {
            if !app.editor.is_empty() {
                app.editor.clear();
                input.popup = None;
                input.ctrl_c_at = Some(Instant::now());
                return Vec::new();
            }
            if input.quit_hint() {
                return vec![Action::Quit];
            }
            input.ctrl_c_at = Some(Instant::now());
            Vec::new()
        }
        KeyCode::Char('d') if ctrl && app.editor.is_empty() => vec![Action::Quit],
        // Finished cells are in the scrollback in inline mode: the transcript is where tool
        // output shows whole.
        KeyCode::Char('o') if ctrl && app.inline => vec![Action::Overlay],
        KeyCode::Char('o') if ctrl => {
            app.expand_tools = !app.expand_tools;
            Vec::new()
        }
        KeyCode::Char('l') if ctrl => vec![Action::Repaint],
        KeyCode::Char('v') if ctrl => vec![Action::PasteImage],
        KeyCode::Char('z') if ctrl => vec![Action::Suspend],
        KeyCode::Char('t') if ctrl => {
            app.show_thinking = !app.show_thinking;
            // Inline, what is printed stays as it was: say what changes, and from when.
            let said = if app.show_thinking {
                "Thinking is shown from now on (Ctrl+T hides it)."
            } else {
                "Thinking is hidden from now on (Ctrl+T shows it)."
            };
            app.push_cell(crate::cells::CellKind::Notice(said.into()));
            Vec::new()
        }
        KeyCode::Char('j') if ctrl => {
            app.editor.insert_newline();
            Vec::new()
        }
        KeyCode::Esc => {
            if input.popup.take().is_some() {
                return Vec::new();
            }
            // A second Esc while interrupted steering waits to be sent: it stays with the user.
            if let Some((_, texts)) = app.resend.take() {
                let draft = app.editor.text();
                let mut back = texts;
                if !draft.is_empty() {
                    back.push(draft);
                }
                app.editor.set_text(&back.join("\n"));
                app.push_cell(crate::cells::CellKind::Notice(
                    "Kept in the editor, not sent: Enter sends it.".into(),
                ));
                return Vec::new();
            }
            if app.running || app.compacting {
                app.abort_requested = app.running;
                let steering = app.queue.iter().any(|q| q.kind == QueueKind::Steer);
                if app.running && steering {
                    app.holding_queue = Some(Instant::now());
                    return vec![Action::AbortHoldingQueue];
                }
                return vec![Action::Abort];
            }
            if app.shell_running {
                return vec![Action::StopShell];
            }
            if app.editor.is_empty() {
                if input
                    .esc_at
                    .take()
                    .is_some_and(|t| t.elapsed() < QUIT_WINDOW)
                {
                    return vec![Action::Choose(crate::action::ChoiceKind::Rewind)];
                }
                input.esc_at = Some(Instant::now());
            }
            Vec::new()
        }
        // Shift+Tab (most terminals send BackTab) cycles the working mode.
        KeyCode::BackTab => vec![Action::SetMode(app.status.mode.next())],
        KeyCode::Tab if shift => vec![Action::SetMode(app.status.mode.next())],
        KeyCode::Enter if shift => {
            app.editor.insert_newline();
            Vec::new()
        }
        KeyCode::Enter if alt => follow_up(app, input),
        KeyCode::Tab if input.popup.is_some() => {
            accept_popup(app, input);
            Vec::new()
        }
        KeyCode::Tab if app.running && !app.editor.is_empty() => follow_up(app, input),
        KeyCode::Enter => {
            if let Some(popup) = &input.popup {
                let completes_command = matches!(popup, Popup::Commands { .. });
                accept_popup(app, input);
                if !completes_command {
                    return Vec::new();
                }
            }
            submit(app, input)
        }
        KeyCode::Up if alt => vec![Action::TakeQueued],
        KeyCode::Up if input.popup.is_some() => {
            if let Some(p) = &mut input.popup {
                p.move_by(-1);
            }
            Vec::new()
        }
        KeyCode::Down if input.popup.is_some() => {
            if let Some(p) = &mut input.popup {
                p.move_by(1);
            }
            Vec::new()
        }
        KeyCode::PageUp | KeyCode::PageDown if input.popup.is_some() => {
            if let Some(p) = &mut input.popup {
                p.page_by(if key.code == KeyCode::PageUp { -8 } else { 8 });
            }
            Vec::new()
        }
        KeyCode::Up if app.editor.history_up() => Vec::new(),
        KeyCode::Down if app.editor.history_down() => Vec::new(),
        KeyCode::Up | KeyCode::Down if app.editor.move_by_row(key.code == KeyCode::Down) => {
            Vec::new()
        }
        KeyCode::PageUp | KeyCode::PageDown => {
            scroll(app, input, key.code);
            Vec::new()
        }
        KeyCode::Home | KeyCode::End if app.editor.is_empty() => {
            scroll(app, input, key.code);
            Vec::new()
        }
        _ => {
            app.editor.input(key);
            input.popup =
                Popup::for_text_with(&app.editor.text(), &input.files, &app.extra_commands);
            Vec::new()
        }
    }
}

/// Ctrl+G shows the next subagent (and, after the last, the main view again); while one is
/// shown, Enter steers it with the editor's text and Esc stops it alone.
fn subagent_key(app: &mut App, input: &InputState, key: &KeyEvent) -> Option<Vec<Action>> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if key.code == KeyCode::Char('g') && ctrl {
        if app.subagents.cycle().is_none() && app.subagents.running() == 0 {
            app.push_cell(crate::cells::CellKind::Notice(
                "No subagent to show: they appear here once a task call starts one.".into(),
            ));
        }
        return Some(Vec::new());
    }
    let id = app.subagents.viewed()?.id.clone();
    if !app.subagents.viewed_running() {
        // A finished child's transcript: Esc closes it; every other key is the main view's.
        if key.code == KeyCode::Esc && input.popup.is_none() {
            app.subagents.close();
            return Some(Vec::new());
        }
        return None;
    }
    let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
    match key.code {
        KeyCode::Esc if input.popup.is_none() => Some(vec![Action::StopSubagent(id)]),
        KeyCode::Enter if plain && !key.modifiers.contains(KeyModifiers::SHIFT) => {
            if app.editor.is_empty() {
                return Some(Vec::new());
            }
            let text = app.editor.take().text;
            Some(vec![Action::SteerSubagent(id, text)])
        }
        _ => None,
    }
}

/// Keys for a choice list (typing filters it, Enter picks) or a key popup (typing and
/// pasting fill the key, never the editor; Enter sends it to be checked). `None`: the key is
/// not for such a popup (arrows, Esc, Ctrl keys go on as usual).
fn typed_into_popup(input: &mut InputState, key: &KeyEvent) -> Option<Vec<Action>> {
    let popup = input.popup.as_mut()?;
    popup.typed()?;
    let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
    match key.code {
        KeyCode::Char(c) if plain => popup.edit_typed(Some(c)),
        KeyCode::Backspace => popup.edit_typed(None),
        KeyCode::Enter | KeyCode::Tab => match popup {
            Popup::Choice { kind, .. } => {
                let kind = *kind;
                // Nothing matching: nothing to pick; the list stays for another filter.
                let chosen = popup.chosen()?;
                input.popup = None;
                return Some(vec![Action::Chose(kind, chosen)]);
            }
            Popup::Key {
                typed,
                choice,
                message,
                ask,
            } => {
                let key = typed.trim().to_string();
                if key.is_empty() {
                    return Some(Vec::new());
                }
                *message = Some(format!("Checking the key with {} …", ask.provider));
                return Some(vec![Action::CheckKey {
                    choice: *choice,
                    key,
                }]);
            }
            _ => return None,
        },
        _ => return None,
    }
    Some(Vec::new())
}

/// Keys that answer the question on screen: y, a, n on an empty editor; Enter
/// with text denies the call and sends the text as steering. Those letters never reach the
/// editor while a question waits: `a` where no rule is offered says which keys work instead.
/// `None`: the key is not for the question (another letter starts a message).
fn answer(app: &mut App, input: &mut InputState, key: &KeyEvent) -> Option<Vec<Action>> {
    use agent_core::ApprovalDecision;
    let request = app.approvals.first()?;
    let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
    if !plain || input.popup.is_some() {
        return None;
    }
    let letter = match key.code {
        KeyCode::Char(c) if app.editor.is_empty() => Some(c),
        _ => None,
    };
    let decision = match (letter, key.code) {
        (Some('y'), _) => ApprovalDecision::Approve,
        (Some('a'), _) if request.rule.is_some() => ApprovalDecision::ApproveAlways,
        (Some('a'), _) => {
            input.answer_hint_at = Some((
                Instant::now(),
                "No \"always allow\" for this one (no rule is safe to remember): y run once · \
                 n deny · or type why and press Enter"
                    .into(),
            ));
            return Some(Vec::new());
        }
        (Some('n'), _) => ApprovalDecision::Deny { reason: None },
        (_, KeyCode::Enter) if !app.editor.is_empty() => {
            let id = request.id;
            if !images_taken(app) {
                return Some(Vec::new());
            }
            let text = app.editor.take();
            let deny = ApprovalDecision::Deny {
                reason: Some("the user sent a new message instead".into()),
            };
            return Some(vec![Action::Decide(id, deny), Action::Steer(text)]);
        }
        _ => return None,
    };
    input.answer_hint_at = None;
    Some(vec![Action::Decide(request.id, decision)])
}

/// Pasted text: into a key being entered or a list's filter when one is open; the paths of
/// dropped image files (relative ones from `cwd`) become attachments; anything else goes into
/// the editor.
pub fn on_paste(app: &mut App, input: &mut InputState, text: &str, cwd: &Path) -> Vec<Action> {
    app.dirty = true;
    if let Some(popup) = input.popup.as_mut().filter(|p| p.typed().is_some()) {
        for c in text.trim().chars().filter(|c| !c.is_control()) {
            popup.edit_typed(Some(c));
        }
        return Vec::new();
    }
    if let Some(paths) = attach::pasted_paths(text, cwd) {
        return vec![Action::AttachFiles(paths)];
    }
    app.editor.paste(text);
    Vec::new()
}

pub fn on_mouse(app: &mut App, mouse: MouseEvent) {
    match mouse.kind {
        MouseEventKind::ScrollUp => app.scroll.up(3),
        MouseEventKind::ScrollDown => app.scroll.down(3),
        _ => return,
    }
    app.dirty = true;
}

fn accept_popup(app: &mut App, input: &mut InputState) {
    if let Some(popup) = input.popup.take() {
        let text = popup.accept(&app.editor.text());
        app.editor.set_text(&text);
    }
}

/// False, with the reason shown, when images are attached and the model takes none: the
/// message stays in the editor instead of making a request the provider would refuse.
fn images_taken(app: &mut App) -> bool {
    if !app.editor.has_images() || app.model.as_ref().is_none_or(|m| m.images) {
        return true;
    }
    let name = app.model.as_ref().map_or("this model", |m| m.id.as_str());
    app.push_cell(crate::cells::CellKind::Error(format!(
        "{name} does not take images: remove the image (Backspace after its chip) or pick a model that does with /model. (A model the registry does not know takes images when config.toml marks it `images = true`.)"
    )));
    false
}

fn follow_up(app: &mut App, input: &mut InputState) -> Vec<Action> {
    input.popup = None;
    if !images_taken(app) {
        return Vec::new();
    }
    let draft = app.editor.take();
    if draft.text.trim().is_empty() && draft.images.is_empty() {
        return Vec::new();
    }
    if app.running {
        vec![Action::FollowUp(draft)]
    } else {
        vec![Action::Prompt(draft)]
    }
}

fn submit(app: &mut App, input: &mut InputState) -> Vec<Action> {
    input.popup = None;
    if !images_taken(app) {
        return Vec::new();
    }
    let draft = app.editor.take();
    if !draft.images.is_empty() {
        return vec![if app.running {
            Action::Steer(draft)
        } else {
            Action::Prompt(draft)
        }];
    }
    let text = draft.text;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        return vec![Action::Shell(command.trim().to_string())];
    }
    if trimmed.starts_with('/') {
        let (name, args) = trimmed
            .split_once(char::is_whitespace)
            .unwrap_or((trimmed, ""));
        return crate::commands::dispatch(app, name, args.trim());
    }
    if app.running {
        vec![Action::Steer(text.into())]
    } else {
        vec![Action::Prompt(text.into())]
    }
}
