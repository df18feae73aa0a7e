//! The UI loop: terminal input, agent events and background results in; frames out — only
//! when something changed, at most one per 16 ms, so streaming deltas coalesce and an idle
//! screen costs nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_core::{Agent, AgentError, AgentMessage, OnConflict};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use llm::{ThinkingLevel, ToolResultMessage};
use platform::signals::Signal;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use crate::action::{Action, ChoiceKind};
use crate::app::App;
use crate::cells::CellKind;
use crate::editor::Draft;
use crate::full::Full;
use crate::history::{self, HistoryChoices, HistoryUi, Next, Restoring};
use crate::host::Host;
use crate::inline::Inline;
use crate::input::{self, InputState};
use crate::popup::Popup;
use crate::status::Status;
use crate::terminal;
use crate::terminal::Screen;

/// Frames follow what the user does at up to 60 a second, and a streaming reply at up to 20:
/// a model sends ~100 deltas a second, and a frame costs more than the deltas it shows (at 30
/// a second, frames were a third of the CPU of a long paced reply; text coming in five deltas
/// at a time still reads as a smooth stream).
const INPUT_FRAME: Duration = Duration::from_millis(16);
const STREAM_FRAME: Duration = Duration::from_millis(50);
/// A paced stream arrives in batches, one per read pause (as long as a streaming frame). A
/// batch that comes this long after the last frame is drawn at once, in the same wake-up,
/// instead of by a timer a few milliseconds later: half the wake-ups for the same frames.
const BATCH_FRAME: Duration = Duration::from_millis(35);
const SPINNER_TICK: Duration = Duration::from_millis(80);
/// Most files offered by the `@` picker.
const MAX_FILES: usize = 20_000;

/// What the TUI needs to know besides the agent.
pub struct Options {
    pub cwd: PathBuf,
    pub model: llm::Model,
    pub thinking: Option<ThinkingLevel>,
    pub context_window: u64,
    /// History to show (the end of a resumed session), and how many messages come before it.
    pub history: Vec<AgentMessage>,
    pub history_earlier: usize,
    /// Shown once, after the history (settings the config loader ignored, say).
    pub notices: Vec<String>,
    /// How each of the agent's tools wants its calls shown.
    pub tool_views: std::collections::HashMap<String, agent_core::ToolView>,
    /// What confines commands, for the status line (`sandbox: landlock+seccomp`).
    pub sandbox: String,
    /// Sent once the UI listens, so its run is shown (and Esc can stop it) from the start.
    pub first_prompt: Option<String>,
    /// Images given on the command line (`-i`): sent with the first prompt, or attached in
    /// the editor when there is none.
    pub images: Vec<attach::Attachment>,
    /// Inline (the default) or the alternate screen.
    pub screen: Screen,
    /// Slash commands of prompt templates and skills (name with slash, description), for the
    /// `/` popup; the host expands them.
    pub extra_commands: Vec<(String, String)>,
    /// Hooks that ran before the UI started (`session_start`), shown first.
    pub hook_runs: Vec<agent_core::HookRun>,
    /// The working mode the agent starts in.
    pub mode: agent_core::Mode,
}

/// Where frames go.
enum Display {
    Inline(Inline),
    Full(Full),
}

impl Display {
    fn draw(&mut self, app: &mut App, input: &mut InputState) -> std::io::Result<()> {
        match self {
            Display::Inline(inline) => inline.frame(app, input),
            Display::Full(full) => full.frame(app, input),
        }
    }

    fn resize(&mut self, width: u16, height: u16) -> std::io::Result<()> {
        match self {
            Display::Inline(inline) => inline.resize(width, height),
            Display::Full(full) => full.resize(width, height),
        }
    }

    /// The screen drawn on, the transcript overlay closed first (a signal can come while it
    /// is open), for handing the terminal over and taking it back.
    fn without_overlay(&mut self, app: &mut App) -> std::io::Result<terminal::Screen> {
        match self {
            Display::Inline(inline) => {
                if inline.overlay_open() {
                    inline.close_overlay(app)?;
                }
                Ok(terminal::Screen::Inline)
            }
            Display::Full(_) => Ok(terminal::Screen::Alternate),
        }
    }

    /// Ctrl+Z: the screen is handed to the shell until `fg`; false when nothing stopped.
    fn suspend(&mut self, app: &mut App) -> std::io::Result<bool> {
        let screen = self.without_overlay(app)?;
        if let Display::Inline(inline) = self {
            // What is final goes into the conversation, the live region goes, and the
            // cursor waits under the conversation for the shell.
            inline.print_finished(app)?;
            inline.finish(app)?;
        }
        let stopped = terminal::suspend(screen)?;
        let (width, height) = crossterm::terminal::size()?;
        match self {
            Display::Inline(inline) if stopped => inline.resumed(width, height, false)?,
            // Nothing else wrote on the screen: what was there is drawn again in place.
            Display::Inline(inline) => {
                inline.resize(width, height)?;
                inline.repaint();
            }
            Display::Full(full) => full.resize(width, height)?,
        }
        Ok(stopped)
    }

    /// Continued after a stop the agent did not make (SIGSTOP): the shell wrote on the screen
    /// meanwhile, and may have put its own terminal modes back.
    fn retake(&mut self, app: &mut App) -> std::io::Result<()> {
        let screen = self.without_overlay(app)?;
        terminal::retake(screen)?;
        let (width, height) = crossterm::terminal::size()?;
        match self {
            // Where the cursor is is unknown (the stop may have come in the middle of a
            // frame): all the screen shows goes up into the scrollback.
            Display::Inline(inline) => inline.resumed(width, height, true),
            Display::Full(full) => full.resize(width, height),
        }
    }

    fn repaint(&mut self) {
        match self {
            Display::Inline(inline) => inline.repaint(),
            Display::Full(full) => full.repaint(),
        }
    }

    fn overlay(&mut self) -> Option<&mut Inline> {
        match self {
            Display::Inline(inline) if inline.overlay_open() => Some(inline),
            _ => None,
        }
    }
}

/// Results of background work, back on the UI loop.
enum Ui {
    Files(Vec<String>),
    Sessions(Vec<crate::host::SessionChoice>),
    Rules(Vec<Vec<String>>),
    ShellOutput(String, String),
    ShellDone(ToolResultMessage),
    Notice(String),
    /// The whole conversation, for `/redraw`.
    Redraw(Vec<AgentMessage>),
    History(HistoryUi),
    /// The agent's estimate of how full the context is (no usage reported).
    ContextEstimate(u64),
    /// What checking the key for model `choice` of `/model` gave: a notice, or an error to
    /// show in the key popup.
    KeyChecked(usize, Result<String, String>),
    /// Images read for the editor (a dropped path, the clipboard), or why none could be.
    Attached(Vec<Result<attach::Attachment, String>>),
}

/// Runs the interactive UI until the user quits or SIGTERM arrives.
pub async fn run(agent: Agent, host: Arc<dyn Host>, options: Options) -> std::io::Result<()> {
    let _guard = terminal::enter(options.screen)?;
    let mut display = match options.screen {
        Screen::Inline => Display::Inline(Inline::new()?),
        Screen::Alternate => Display::Full(Full::new()?),
    };
    let status = Status::new(
        &crate::status::model_label(&options.model),
        options.thinking,
        &options.cwd,
        options.context_window,
    );
    let mut app = App::new(status);
    app.model = Some(options.model.clone());
    app.inline = options.screen == Screen::Inline;
    app.tool_views = options.tool_views.clone();
    app.status.sandbox = options.sandbox.clone();
    app.status.mode = options.mode;
    app.note_earlier(options.history_earlier);
    app.load_history(&options.history);
    for notice in &options.notices {
        app.push_cell(CellKind::Notice(notice.clone()));
    }
    let mut input = InputState::default();
    let (ui_tx, mut ui_rx) = mpsc::unbounded_channel();
    app.extra_commands = options.extra_commands.clone();
    for run in &options.hook_runs {
        app.on_event(&agent_core::AgentEvent::HookRun { run: run.clone() });
    }
    let mut agent_events = agent.subscribe();
    // Only a signal: a settled event (a message or a tool call that started or ended, the run's
    // end) is drawn at once, not at the next streaming frame, so the end of an answer shows
    // without waiting up to a frame. The events themselves come from `agent_events`, in order.
    let mut settled = agent.subscribe_settled();
    let first_images: Vec<llm::ImageContent> = match &options.first_prompt {
        Some(_) => options.images.iter().map(|a| a.image.clone()).collect(),
        None => {
            for attachment in options.images.clone() {
                app.editor.attach(attachment);
            }
            Vec::new()
        }
    };
    if let Some(prompt) = options.first_prompt.clone()
        && let Some(prompt) = expand(host.as_ref(), &mut app, prompt)
    {
        let draft = Draft {
            text: prompt,
            images: first_images,
        };
        let message = user_message(&mut app, &options.cwd, draft);
        perform_prompt(&agent, message, &ui_tx);
    }
    let mut terminal_events = crate::terminal_input::TerminalInput::take();
    list_files(options.cwd.clone(), ui_tx.clone());
    // SIGTERM, SIGHUP, and a SIGINT from elsewhere (`kill -INT`; Ctrl+C is a key in raw
    // mode) quit cleanly; on Windows, closing the console does. A SIGTSTP from elsewhere
    // (`kill -TSTP`) would stop the agent with the terminal in its modes: it suspends as
    // Ctrl+Z does. A SIGCONT after a stop it could not catch (SIGSTOP) takes the terminal
    // again.
    let mut signals = platform::signals::Signals::with_job_control()?;
    let mut last_frame = Instant::now() - STREAM_FRAME;
    // The user typed, pasted or resized since the last frame, or something settled: draw at
    // the input rate.
    let mut typed = false;
    let mut choices = Choices::default();
    // The agent's events woke the loop (not the frame timer).
    let mut batch = false;

    terminal::watch_continues()?;

    loop {
        // Before any frame: one drawn first would draw over what the shell wrote.
        if terminal::continued_elsewhere() {
            display.retake(&mut app)?;
            app.dirty = true;
        }
        let frame_every = if typed { INPUT_FRAME } else { STREAM_FRAME };
        let since = last_frame.elapsed();
        if app.dirty && (since >= frame_every || batch && since >= BATCH_FRAME) {
            typed = false;
            display.draw(&mut app, &mut input)?;
            // A backlog of rows to print goes out a frame at a time, keys answered between.
            app.dirty = matches!(&display, Display::Inline(inline) if inline.backlog());
            typed |= app.dirty;
            last_frame = Instant::now();
        }
        input.resend_pending = app.resend.is_some();
        let resend_at = app
            .resend
            .as_ref()
            .map(|(at, _)| *at + crate::app::RESEND_WINDOW);
        let wake = if app.dirty {
            Some(last_frame + if typed { INPUT_FRAME } else { STREAM_FRAME })
        } else if let Some(at) = resend_at {
            Some(at)
        } else if app.running || input.hint().is_some() {
            Some(Instant::now() + SPINNER_TICK)
        } else {
            None
        };
        // A frame is due at `wake`: the agent's events wait for it in their channel (in order)
        // and are applied together then, instead of waking this loop for every delta.
        let holding = app.dirty;
        batch = false;
        let mut actions = Vec::new();
        tokio::select! {
            event = terminal_events.next() => {
                typed = true;
                match event {
                    Some(Ok(Event::Key(key))) => match display.overlay() {
                        Some(inline) => {
                            if overlay_key(&mut app, &input, key) {
                                app.scroll.end();
                                inline.close_overlay(&mut app)?;
                            }
                            app.dirty = true;
                        }
                        None => actions = input::on_key(&mut app, &mut input, key),
                    },
                    Some(Ok(Event::Paste(text))) => {
                        actions = input::on_paste(&mut app, &mut input, &text, &options.cwd);
                    }
                    Some(Ok(Event::Mouse(mouse))) => input::on_mouse(&mut app, mouse),
                    Some(Ok(Event::Resize(width, height))) => {
                        display.resize(width, height)?;
                        app.dirty = true;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
            Some(event) = agent_events.recv(), if !holding => {
                batch = true;
                actions = app.on_event(&event);
                // Coalesce: take everything already waiting before the next frame.
                while let Ok(event) = agent_events.try_recv() {
                    actions.extend(app.on_event(&event));
                }
            }
            Some(_) = settled.recv() => {
                typed = true;
                app.dirty = true;
                while let Ok(event) = agent_events.try_recv() {
                    actions.extend(app.on_event(&event));
                }
            }
            Some(message) = ui_rx.recv() => {
                on_ui(&agent, &mut app, &mut input, &mut choices, message)
            }
            _ = sleep_until(wake), if wake.is_some() => {
                app.dirty = true;
                while let Ok(event) = agent_events.try_recv() {
                    actions.extend(app.on_event(&event));
                }
            }
            Some(signal) = signals.recv() => match signal {
                Signal::Stop => break,
                Signal::Suspend => actions.push(Action::Suspend),
                // Only wakes the loop: `continued_elsewhere`, at its top, tells whose it was.
                Signal::Continue => {}
            },
        }
        if std::mem::take(&mut app.wants_estimate) {
            let (agent, host, tx) = (agent.clone(), host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                // Counted where the history is: a snapshot would copy all of it.
                let estimate = agent.inspect(move |messages| host.estimate_context(messages));
                if let Ok(Some(tokens)) = estimate.await {
                    let _ = tx.send(Ui::ContextEstimate(tokens));
                }
            });
        }
        // Interrupted steering nobody took back: it starts the next run now.
        if resend_at.is_some_and(|at| Instant::now() >= at)
            && let Some((_, texts)) = app.resend.take()
        {
            app.dirty = true;
            // As steering: idle, it starts a run; a run still winding down gets it queued.
            actions.push(Action::Steer(texts.join("\n\n").into()));
        }
        for action in actions {
            if action == Action::ClearScreen {
                if let Display::Inline(inline) = &mut display {
                    // What is final but still waiting in the live region goes into the
                    // conversation first: the cells are gone after this.
                    inline.print_finished(&mut app)?;
                }
                app.clear_transcript();
                if let Display::Inline(inline) = &mut display {
                    inline.clear_screen()?;
                }
                continue;
            }
            if action == Action::Suspend && !platform::terminal::JOB_CONTROL {
                app.push_cell(CellKind::Notice(format!(
                    "Ctrl+Z suspends to the shell on Linux and macOS; {} has no job control, \
                     so nothing was suspended.",
                    platform::SYSTEM
                )));
                app.dirty = true;
                continue;
            }
            if action == Action::Suspend {
                if !display.suspend(&mut app)? {
                    app.push_cell(CellKind::Notice(
                        "Ctrl+Z suspends only under a shell with job control (none started \
                         coding-agent): nothing was suspended."
                            .into(),
                    ));
                }
                app.dirty = true;
                continue;
            }
            if action == Action::Repaint {
                display.repaint();
                app.dirty = true;
                continue;
            }
            if action == Action::Overlay {
                if let Display::Inline(inline) = &mut display {
                    app.scroll.end();
                    inline.open_overlay()?;
                    app.dirty = true;
                }
                continue;
            }
            let ctx = Ctx {
                agent: &agent,
                host: &host,
                ui_tx: &ui_tx,
                cwd: &options.cwd,
            };
            perform(&ctx, &mut app, &mut input, &mut choices, action);
        }
        if app.should_quit {
            break;
        }
    }
    // Let the run close (tool results paired, session written) before the terminal is back;
    // asked again (Ctrl+C, a signal), leave at once.
    choices.shell.cancel();
    agent.stop();
    let closed = tokio::time::timeout(Duration::from_secs(5), agent.wait_idle());
    tokio::select! {
        _ = closed => {}
        _ = async {
            loop {
                tokio::select! {
                    event = terminal_events.next() => match event {
                        Some(Ok(Event::Key(key))) if input::is_interrupt(&key) => return,
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => return,
                    },
                    Some(Signal::Stop) = signals.recv() => return,
                }
            }
        } => {}
    }
    if let Display::Inline(inline) = &mut display {
        // The last frame: the run's last events applied, everything printed as it stands,
        // the live region gone.
        while let Ok(event) = agent_events.try_recv() {
            app.on_event(&event);
        }
        display_final(inline, &mut app, &mut input)?;
    }
    Ok(())
}

/// Prints what finished and removes the live region, leaving the cursor under the
/// conversation.
fn display_final(
    inline: &mut Inline,
    app: &mut App,
    input: &mut InputState,
) -> std::io::Result<()> {
    app.editor.set_text("");
    input.popup = None;
    for cell in &mut app.cells {
        cell.finish();
    }
    if inline.overlay_open() {
        inline.close_overlay(app)?;
    }
    inline.print_finished(app)?;
    inline.frame(app, input)?;
    inline.finish(app)
}

/// A key while the transcript overlay is open: scrolls it, or says it closes it (Esc, q,
/// Ctrl+O, Ctrl+C); others are ignored.
fn overlay_key(app: &mut App, input: &InputState, key: KeyEvent) -> bool {
    if key.kind == KeyEventKind::Release {
        return false;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Up => app.scroll.up(1),
        KeyCode::Down => app.scroll.down(1),
        KeyCode::Esc | KeyCode::Char('q') => return true,
        KeyCode::Char('o' | 'c') if ctrl => return true,
        code => {
            input::scroll(app, input, code);
        }
    }
    false
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

fn on_ui(agent: &Agent, app: &mut App, input: &mut InputState, choices: &mut Choices, message: Ui) {
    app.dirty = true;
    match message {
        Ui::Files(files) => input.files = files,
        Ui::Attached(read) => {
            for attached in read {
                match attached {
                    Ok(attachment) => app.editor.attach(attachment),
                    Err(why) => {
                        app.push_cell(CellKind::Error(why));
                    }
                }
            }
            if app.editor.has_images() && app.model.as_ref().is_some_and(|m| !m.images) {
                let name = app.model.as_ref().map_or("", |m| m.id.as_str());
                app.push_cell(CellKind::Notice(format!(
                    "{name} does not take images: pick one that does with /model before sending."
                )));
            }
        }
        Ui::Sessions(sessions) => {
            let items: Vec<(String, String)> = sessions
                .iter()
                .map(|s| (s.label.clone(), String::new()))
                .collect();
            choices.sessions = sessions;
            open_choice(app, input, ChoiceKind::Session, items);
        }
        Ui::Rules(rules) => {
            let items = rules
                .iter()
                .map(|r| (r.join(" "), "revoke".to_string()))
                .collect();
            choices.rules = rules;
            open_choice(app, input, ChoiceKind::Rule, items);
        }
        Ui::ShellOutput(id, tail) => {
            if let Some(CellKind::Tool(cell)) = app.tool_cell(&id) {
                cell.partial = tail;
            }
        }
        Ui::ShellDone(result) => {
            app.shell_running = false;
            app.finish_tool(&result);
        }
        Ui::Notice(text) => {
            app.push_cell(CellKind::Notice(text));
        }
        Ui::Redraw(messages) => {
            app.clear_transcript();
            app.load_all(&messages);
            app.push_cell(CellKind::Notice(format!(
                "The whole conversation ({} messages), printed again at this width.",
                messages.len()
            )));
        }
        Ui::History(message) => {
            if let Some((kind, items, selected)) =
                history::on_result(app, &mut choices.history, message)
            {
                open_choice_at(app, input, kind, items, selected);
            }
        }
        Ui::ContextEstimate(tokens) => {
            // Real usage that came meanwhile wins.
            if app.status.context_tokens == 0 || app.status.context_estimated {
                app.status.context_tokens = tokens;
                app.status.context_estimated = true;
            }
        }
        Ui::KeyChecked(choice, result) => {
            // Only for the popup that asked (Esc may have closed it meanwhile: then the key,
            // saved or not, switches nothing).
            let asked = matches!(&input.popup, Some(Popup::Key { choice: c, .. }) if *c == choice);
            match result {
                Ok(note) => {
                    app.push_cell(CellKind::Notice(note));
                    if asked {
                        input.popup = None;
                        if let Some(model) = choices.models.get(choice).cloned() {
                            switch_model(agent, app, input, model);
                        }
                    }
                }
                Err(error) => match &mut input.popup {
                    Some(Popup::Key { message, typed, .. }) if asked => {
                        typed.clear();
                        *message = Some(error);
                    }
                    _ => {
                        app.push_cell(CellKind::Error(error));
                    }
                },
            }
        }
    }
}

fn open_choice(
    app: &mut App,
    input: &mut InputState,
    kind: ChoiceKind,
    items: Vec<(String, String)>,
) {
    open_choice_at(app, input, kind, items, 0);
}

fn open_choice_at(
    app: &mut App,
    input: &mut InputState,
    kind: ChoiceKind,
    items: Vec<(String, String)>,
    selected: usize,
) {
    if items.is_empty() {
        app.push_cell(CellKind::Notice("Nothing to choose from.".into()));
    } else {
        input.popup = Some(Popup::choice(kind, items, selected));
    }
}

/// Where the history flows report: the UI loop's channel.
fn history_sender(tx: &mpsc::UnboundedSender<Ui>) -> history::Sender {
    let tx = tx.clone();
    Arc::new(move |message| {
        let _ = tx.send(Ui::History(message));
    })
}

/// What actions act on.
struct Ctx<'a> {
    agent: &'a Agent,
    host: &'a Arc<dyn Host>,
    ui_tx: &'a mpsc::UnboundedSender<Ui>,
    cwd: &'a Path,
}

/// The lists behind an open choice popup.
#[derive(Default)]
struct Choices {
    models: Vec<llm::Model>,
    sessions: Vec<crate::host::SessionChoice>,
    rules: Vec<Vec<String>>,
    history: HistoryChoices,
    /// Stops the running `!cmd`.
    shell: CancellationToken,
}

fn perform(
    ctx: &Ctx<'_>,
    app: &mut App,
    input: &mut InputState,
    choices: &mut Choices,
    action: Action,
) {
    let (agent, ui_tx) = (ctx.agent, ctx.ui_tx);
    match action {
        Action::Prompt(draft) => {
            if let Some(message) = expanded(ctx, app, draft) {
                perform_prompt(agent, message, ui_tx);
            }
        }
        Action::Steer(draft) => {
            if let Some(message) = expanded(ctx, app, draft) {
                agent.steer(message);
            }
        }
        Action::FollowUp(draft) => {
            if let Some(message) = expanded(ctx, app, draft) {
                agent.follow_up(message);
            }
        }
        Action::AttachFiles(paths) => {
            let (limit, tx) = (image_limit(app), ui_tx.clone());
            tokio::task::spawn_blocking(move || {
                let read = paths.iter().map(|p| attach::from_path(p, limit)).collect();
                let _ = tx.send(Ui::Attached(read));
            });
        }
        Action::PasteImage => {
            let (limit, tx) = (image_limit(app), ui_tx.clone());
            tokio::task::spawn_blocking(move || {
                let pasted =
                    attach::from_clipboard(limit).map_err(|why| format!("No image pasted: {why}."));
                let _ = tx.send(Ui::Attached(vec![pasted]));
            });
        }
        Action::Skills => {
            app.push_cell(CellKind::Notice(ctx.host.skills()));
        }
        Action::Abort => agent.abort(),
        Action::AbortHoldingQueue => agent.stop(),
        Action::Decide(id, decision) => agent.decide(id, decision),
        Action::TakeQueued => {
            let agent = agent.clone();
            // What comes back arrives as a `queue_returned` event.
            tokio::spawn(async move { agent.take_queued().await });
        }
        Action::Copy(text) => {
            let note = match terminal::copy_to_clipboard(&text) {
                Ok(done) => done,
                Err(err) => format!("Could not copy: {err}"),
            };
            app.push_cell(CellKind::Notice(note));
        }
        Action::Shell(command) => {
            if app.shell_running {
                app.push_cell(CellKind::Notice(
                    "A shell command is still running (Esc stops it).".into(),
                ));
            } else {
                choices.shell = run_shell(app, ctx.host.clone(), command, ui_tx.clone());
            }
        }
        Action::StopShell => choices.shell.cancel(),
        Action::Choose(ChoiceKind::Rule) => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let message = match host.rules().await {
                    Ok(rules) if rules.is_empty() => Ui::Notice(
                        "No command is always allowed here: answer `a` to a question to add one."
                            .into(),
                    ),
                    Ok(rules) => Ui::Rules(rules),
                    Err(err) => Ui::Notice(format!("Cannot read the rules: {err}")),
                };
                let _ = tx.send(message);
            });
        }
        Action::Chose(ChoiceKind::Rule, i) => {
            if let Some(prefix) = choices.rules.get(i).cloned() {
                let (host, tx) = (ctx.host.clone(), ui_tx.clone());
                tokio::spawn(async move {
                    let shown = prefix.join(" ");
                    let note = match host.revoke_rule(prefix).await {
                        Ok(()) => format!("`{shown}` is asked about again from now on."),
                        Err(err) => format!("Could not revoke `{shown}`: {err}"),
                    };
                    let _ = tx.send(Ui::Notice(note));
                });
            }
        }
        Action::Status => {
            app.push_cell(CellKind::Notice(ctx.host.safety_status()));
        }
        Action::Undo => history::start(
            ctx.host.clone(),
            Restoring::Undo,
            OnConflict::Ask,
            history_sender(ui_tx),
        ),
        Action::Redo => history::start(
            ctx.host.clone(),
            Restoring::Redo,
            OnConflict::Ask,
            history_sender(ui_tx),
        ),
        Action::Choose(ChoiceKind::Rewind) => {
            history::list_points(ctx.host.clone(), history_sender(ui_tx))
        }
        Action::Choose(ChoiceKind::Tree) => {
            history::list_tree(ctx.host.clone(), history_sender(ui_tx))
        }
        Action::Chose(
            kind @ (ChoiceKind::Rewind
            | ChoiceKind::RewindScope
            | ChoiceKind::Tree
            | ChoiceKind::TreeScope
            | ChoiceKind::Conflict),
            i,
        ) => match history::on_chose(app, &mut choices.history, kind, i) {
            Next::Run(op, on) => history::start(ctx.host.clone(), op, on, history_sender(ui_tx)),
            Next::Open((kind, items, selected)) => {
                open_choice_at(app, input, kind, items, selected)
            }
            Next::Nothing => {}
        },
        Action::Label(name) => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let note = match host.label(name.clone()).await {
                    Ok(()) => format!("Labelled the latest message `{name}` (/tree shows it)."),
                    Err(err) => format!("Cannot label: {err}"),
                };
                let _ = tx.send(Ui::Notice(note));
            });
        }
        Action::McpRestart(name) => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let note = match host.mcp_restart(name.clone()).await {
                    Ok(()) => {
                        format!("Restarting MCP server `{name}` (the status line follows it).")
                    }
                    Err(err) => format!("Cannot restart: {err}"),
                };
                let _ = tx.send(Ui::Notice(note));
            });
        }
        Action::Export(path) => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let note = match host.export(path).await {
                    Ok(done) => done,
                    Err(err) => format!("Cannot export: {err}"),
                };
                let _ = tx.send(Ui::Notice(note));
            });
        }
        Action::Fork => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let note = match host.fork().await {
                    Ok(id) => format!(
                        "Forked: this conversation goes on in a new session ({id}); the old one \
                         stays as it was (/resume)."
                    ),
                    Err(err) => format!("Cannot fork: {err}"),
                };
                let _ = tx.send(Ui::Notice(note));
            });
        }
        Action::Choose(ChoiceKind::Session) => {
            // Listing reads every session file: off the UI task.
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let _ = tx.send(Ui::Sessions(host.sessions().await));
            });
        }
        Action::Choose(ChoiceKind::Model) => {
            choices.models = model_list(app.model.as_ref(), ctx.host.models());
            let items = choices
                .models
                .iter()
                .enumerate()
                .map(|(i, m)| model_item(ctx.host.as_ref(), m, i == 0 && app.model.is_some()))
                .collect();
            open_choice(app, input, ChoiceKind::Model, items);
        }
        Action::Choose(ChoiceKind::Plan) => {
            open_choice(app, input, ChoiceKind::Plan, crate::modes::plan_items())
        }
        Action::Chose(ChoiceKind::Plan, i) => {
            let Some(plan) = app.plan_to_decide.take() else {
                return;
            };
            match crate::modes::PLAN_CHOICES.get(i) {
                Some(crate::modes::PlanChoice::Implement) => {
                    agent.set_mode(agent_core::Mode::Default);
                    let message = AgentMessage::user(crate::modes::implement_message(&plan));
                    perform_prompt(agent, message, ui_tx);
                }
                Some(crate::modes::PlanChoice::KeepPlanning) => {
                    app.push_cell(CellKind::Notice(
                        "Still planning: say what to change, and the agent revises the plan."
                            .into(),
                    ));
                }
                _ => {
                    app.push_cell(CellKind::Notice("The plan was discarded.".into()));
                }
            }
        }
        Action::SetMode(mode) => agent.set_mode(mode),
        Action::SteerSubagent(id, text) => {
            let note = if ctx.host.steer_subagent(&id, &text) {
                format!("Sent to {id}: it reads it before its next step.")
            } else {
                format!("{id} is not running any more: nothing was sent.")
            };
            app.push_cell(CellKind::Notice(note));
        }
        Action::StopSubagent(id) => {
            let note = if ctx.host.stop_subagent(&id) {
                format!("Stopping {id} (its commands too); the main agent goes on.")
            } else {
                format!("{id} is not running.")
            };
            app.push_cell(CellKind::Notice(note));
        }
        Action::Choose(kind) => open_choice(app, input, kind, thinking_items()),
        Action::Chose(ChoiceKind::Model, i) => {
            if let Some(model) = choices.models.get(i).cloned() {
                match ctx.host.needs_key(&model) {
                    // No key for its provider: ask for one rather than switch to a model
                    // every request to would fail.
                    Some(ask) => {
                        input.popup = Some(Popup::Key {
                            ask,
                            choice: i,
                            typed: String::new(),
                            message: None,
                        });
                    }
                    None => switch_model(agent, app, input, model),
                }
            }
        }
        Action::CheckKey { choice, key } => {
            if let Some(model) = choices.models.get(choice).cloned() {
                let (host, tx) = (ctx.host.clone(), ui_tx.clone());
                tokio::spawn(async move {
                    let result = host.add_key(model, key).await;
                    let _ = tx.send(Ui::KeyChecked(choice, result));
                });
            }
        }
        Action::Chose(ChoiceKind::Thinking, i) => {
            if let Some(level) = ThinkingLevel::ALL.get(i).copied() {
                agent.set_thinking(level);
            }
        }
        Action::Chose(ChoiceKind::Session, i) => {
            if let Some(choice) = choices.sessions.get(i).cloned() {
                let (host, tx) = (ctx.host.clone(), ui_tx.clone());
                tokio::spawn(async move {
                    if let Err(err) = host.resume(choice.path).await {
                        let _ = tx.send(Ui::Notice(format!("Could not resume: {err}")));
                    }
                });
            }
        }
        Action::NewSession => {
            let (host, tx) = (ctx.host.clone(), ui_tx.clone());
            tokio::spawn(async move {
                if let Err(err) = host.new_session().await {
                    let _ = tx.send(Ui::Notice(format!("Could not start a new session: {err}")));
                }
            });
        }
        Action::Compact(instructions) => {
            let (agent, tx) = (agent.clone(), ui_tx.clone());
            tokio::spawn(async move {
                if let Err(err) = agent.compact(instructions).await {
                    let _ = tx.send(Ui::Notice(format!("Cannot compact: {err}")));
                }
            });
        }
        Action::SessionInfo => {
            let s = &app.status;
            let mut text = format!(
                "↑{} ↓{} tokens · cache read {} · ${:.4}",
                s.usage.input, s.usage.output, s.usage.cache_read, s.usage.cost
            );
            if let Some(run) = &app.last_run {
                text.push('\n');
                text.push_str(&crate::status::run_summary(run));
            }
            text.push('\n');
            text.push_str(&ctx.host.session_status());
            app.push_cell(CellKind::Notice(text));
        }
        Action::Redraw => {
            let (agent, tx) = (agent.clone(), ui_tx.clone());
            tokio::spawn(async move {
                let message = match agent.snapshot().await {
                    Ok(snapshot) => Ui::Redraw(snapshot.messages),
                    Err(err) => Ui::Notice(format!("Cannot redraw: {err}")),
                };
                let _ = tx.send(message);
            });
        }
        // Handled by the loop, which owns the screen.
        Action::Overlay | Action::ClearScreen | Action::Repaint | Action::Suspend => {}
        Action::Quit => app.should_quit = true,
    }
}

/// Switches to `model` (the status line and the notice follow the agent's `model_change`
/// event); a reasoning model's thinking level is picked next.
fn switch_model(agent: &Agent, app: &mut App, input: &mut InputState, model: llm::Model) {
    agent.set_model(model.clone());
    if model.reasoning {
        open_choice(app, input, ChoiceKind::Thinking, thinking_items());
    }
}

/// `/model`'s list: the model in use first, then every other the host offers once.
fn model_list(current: Option<&llm::Model>, offered: Vec<llm::Model>) -> Vec<llm::Model> {
    let same = |a: &llm::Model, b: &llm::Model| {
        a.provider == b.provider && a.id == b.id && a.base_url == b.base_url
    };
    let mut list: Vec<llm::Model> = current.into_iter().cloned().collect();
    for model in offered {
        if !list.iter().any(|m| same(m, &model)) {
            list.push(model);
        }
    }
    list
}

/// One line of `/model`: the model, then what it is (in use, where it runs, its window and
/// price, whether its provider still needs a key).
fn model_item(host: &dyn Host, model: &llm::Model, current: bool) -> (String, String) {
    let mut what = Vec::new();
    if current {
        what.push("● in use".to_string());
    }
    if llm::is_local_url(&model.base_url) {
        let place = model
            .base_url
            .split("://")
            .nth(1)
            .unwrap_or(&model.base_url)
            .trim_end_matches("/v1");
        what.push(format!("at {place}"));
    }
    what.push(format!(
        "{} ctx",
        crate::status::window(model.context_window)
    ));
    if model.cost.input > 0.0 || model.cost.output > 0.0 {
        what.push(format!(
            "${}/${} per M",
            model.cost.input, model.cost.output
        ));
    }
    if let Some(ask) = host.needs_key(model) {
        what.push(format!("needs a key ({})", ask.env));
    }
    (format!("{}/{}", model.provider, model.id), what.join(" · "))
}

fn thinking_items() -> Vec<(String, String)> {
    ThinkingLevel::ALL
        .iter()
        .map(|l| (l.to_string(), String::new()))
        .collect()
}

/// The message `text` stands for (a prompt template or a skill expanded by the host); `None`
/// when it cannot be sent, after saying why.
fn expand(host: &dyn Host, app: &mut App, text: String) -> Option<String> {
    match host.expand(&text) {
        Ok(Some(expanded)) => Some(expanded),
        Ok(None) => Some(text),
        Err(err) => {
            app.push_cell(CellKind::Error(err));
            None
        }
    }
}

/// The largest image the current model's wire API takes.
fn image_limit(app: &App) -> llm::ImageLimit {
    llm::image_limit(
        app.model
            .as_ref()
            .map_or(llm::Api::OpenaiCompletions, |m| m.api),
    )
}

/// `draft` expanded (a template or skill command) as the user message to send; `None` when
/// the expansion failed (the error is shown).
fn expanded(ctx: &Ctx<'_>, app: &mut App, draft: Draft) -> Option<AgentMessage> {
    let text = expand(ctx.host.as_ref(), app, draft.text)?;
    Some(user_message(
        app,
        ctx.cwd,
        Draft {
            text,
            images: draft.images,
        },
    ))
}

/// The user message of `draft`: its text, then its images and those of image files it
/// `@`-mentions (when the model takes images; otherwise the mention stays a name, and a notice
/// says so).
fn user_message(app: &mut App, cwd: &Path, draft: Draft) -> AgentMessage {
    let Draft { text, mut images } = draft;
    let mentioned = attach::image_mentions(&text, cwd);
    if !mentioned.is_empty() {
        if app.model.as_ref().is_some_and(|m| m.images) {
            let limit = image_limit(app);
            for path in mentioned {
                match attach::from_path(&path, limit) {
                    Ok(attachment) => images.push(attachment.image),
                    Err(why) => {
                        app.push_cell(CellKind::Error(format!("Not attached: {why}")));
                    }
                }
            }
        } else {
            let name = app.model.as_ref().map_or("this model", |m| m.id.as_str());
            app.push_cell(CellKind::Notice(format!(
                "{name} does not take images: the images you named with @ go as their names only."
            )));
        }
    }
    AgentMessage::User(llm::UserMessage::with_images(text, images))
}

fn perform_prompt(agent: &Agent, message: AgentMessage, ui_tx: &mpsc::UnboundedSender<Ui>) {
    let (agent, tx) = (agent.clone(), ui_tx.clone());
    tokio::spawn(async move {
        // The run may have ended and restarted in between: then it is a follow-up.
        if agent.prompt(message.clone()).await == Err(AgentError::Busy) {
            agent.follow_up(message);
            let _ = tx.send(Ui::Notice(
                "The agent was busy: your message was queued as a follow-up.".into(),
            ));
        }
    });
}

/// `!cmd`: the host runs it off the UI task and the output is shown; the model never sees
/// it. Returns the token that stops it.
fn run_shell(
    app: &mut App,
    host: Arc<dyn Host>,
    command: String,
    tx: mpsc::UnboundedSender<Ui>,
) -> CancellationToken {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!(
        "shell-{}",
        COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    app.start_tool_as(
        &id,
        "bash",
        agent_core::ToolView::Shell,
        serde_json::json!({"command": command}),
    );
    app.shell_running = true;
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    tokio::spawn(async move {
        let (updates, cell) = (tx.clone(), id.clone());
        let on_output = Box::new(move |tail: String| {
            let _ = updates.send(Ui::ShellOutput(cell.clone(), tail));
        });
        let mut result = host.run_shell(command, token, on_output).await;
        result.tool_call_id = id;
        let _ = tx.send(Ui::ShellDone(result));
    });
    cancel
}

/// Lists the files under `cwd` for the `@` picker, off the UI loop.
fn list_files(cwd: PathBuf, tx: mpsc::UnboundedSender<Ui>) {
    tokio::task::spawn_blocking(move || {
        let files: Vec<String> = ignore::WalkBuilder::new(&cwd)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|e| {
                e.path()
                    .strip_prefix(&cwd)
                    .ok()
                    .map(|p| p.display().to_string())
            })
            .take(MAX_FILES)
            .collect();
        let _ = tx.send(Ui::Files(files));
    });
}
