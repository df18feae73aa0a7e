//! The first-run setup screen: shown instead of an error when nothing is configured, no key
//! is set and no local server was found. The user picks a provider and pastes its key (never
//! shown), or enters a local server's URL, which is checked live; the screen ends with what
//! the host needs to start a working session.
//!
//! [`SetupScreen`] is plain state driven by keys ([`SetupScreen::key`]) and drawn by
//! [`SetupScreen::render`]; [`run`] puts it on the terminal. Checking a URL or a key is the
//! host's job (this crate knows nothing of HTTP): it is handed in as functions. A server that
//! answers but does not list its models gets its model's name asked; a pasted key is checked
//! with the provider before the screen ends.

use std::future::Future;
use std::pin::Pin;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

/// One line of the provider list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupChoice {
    /// A provider of the registry: its key is asked for, then `model` is used.
    Provider {
        name: String,
        model: String,
        /// The environment variable that would hold the key, shown as an alternative.
        env: String,
    },
    /// A server on this machine or the network, by URL.
    LocalServer,
}

/// What the screen ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupResult {
    Quit,
    Key {
        provider: String,
        model: String,
        key: String,
        /// What the provider said of the key (accepted, or why it could not be checked).
        checked: String,
    },
    /// A URL whose check succeeded, or that answers and whose model the user named.
    Server {
        url: String,
        /// The model the user named (the server does not list its models).
        model: Option<String>,
    },
}

/// What a URL check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckResult {
    /// Lines to show: the server and its models.
    Models(Vec<String>),
    /// Something answers there but lists no models: why (its model can be named instead).
    NoList(String),
    /// Nothing usable answers: why.
    Failed(String),
}

/// Checks a URL the user entered (the host lists the server's models, or says why not).
pub type Check = Box<dyn Fn(String) -> Pin<Box<dyn Future<Output = CheckResult> + Send>> + Send>;

/// Checks a key with a provider: `(provider, key)`; `Ok`: what it said (the screen ends),
/// `Err`: why the key was refused (asked again).
pub type KeyCheck = Box<
    dyn Fn(String, String) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send,
>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Choose,
    Key,
    Url,
    /// The URL answered: its models are shown; Enter starts.
    Found {
        url: String,
        lines: Vec<String>,
    },
    /// The URL answers but lists no models: the model's name is typed.
    Name {
        url: String,
        why: String,
    },
}

/// What a key asks the driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupAction {
    None,
    Done(SetupResult),
    /// Check this URL, then call [`SetupScreen::checked`].
    Check(String),
    /// Check this key with this provider, then call [`SetupScreen::key_checked`].
    CheckKey {
        provider: String,
        key: String,
    },
}

pub struct SetupScreen {
    choices: Vec<SetupChoice>,
    selected: usize,
    step: Step,
    /// The key or URL being typed. A key is never drawn, only its length.
    input: String,
    /// An error, or what is happening (checking a URL).
    message: Option<(String, bool)>,
    /// The local servers that were looked for, said once at the top.
    probed: String,
    /// Where a pasted key is stored, as the user's file system names it.
    auth_file: String,
}

impl SetupScreen {
    pub fn new(choices: Vec<SetupChoice>, probed: String) -> Self {
        Self {
            choices,
            selected: 0,
            step: Step::Choose,
            input: String::new(),
            message: None,
            probed,
            auth_file: "$CODING_AGENT_HOME/auth.toml".into(),
        }
    }

    /// Names the file a pasted key is stored in (the real path of this run).
    pub fn with_auth_file(mut self, path: String) -> Self {
        self.auth_file = path;
        self
    }

    /// Pasted text (bracketed paste): into the key or URL being typed.
    pub fn paste(&mut self, text: &str) {
        if matches!(self.step, Step::Key | Step::Url | Step::Name { .. }) {
            self.input.push_str(text.trim());
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> SetupAction {
        if key.kind == KeyEventKind::Release {
            return SetupAction::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('d')) {
            return SetupAction::Done(SetupResult::Quit);
        }
        match self.step.clone() {
            Step::Choose => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    self.selected = self.selected.saturating_sub(1);
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
                }
                KeyCode::Home => self.selected = 0,
                KeyCode::End => self.selected = self.choices.len().saturating_sub(1),
                KeyCode::Esc | KeyCode::Char('q') => return SetupAction::Done(SetupResult::Quit),
                KeyCode::Enter => {
                    self.input.clear();
                    self.message = None;
                    self.step = match self.choices.get(self.selected) {
                        Some(SetupChoice::LocalServer) => Step::Url,
                        Some(SetupChoice::Provider { .. }) => Step::Key,
                        None => Step::Choose,
                    };
                }
                _ => {}
            },
            Step::Key | Step::Url | Step::Name { .. } => match key.code {
                KeyCode::Esc if matches!(self.step, Step::Name { .. }) => {
                    self.step = Step::Url;
                    self.input.clear();
                    self.message = None;
                }
                KeyCode::Esc => {
                    self.step = Step::Choose;
                    self.input.clear();
                    self.message = None;
                }
                KeyCode::Backspace => {
                    self.input.pop();
                }
                KeyCode::Char('u') if ctrl => self.input.clear(),
                KeyCode::Char(c) if !ctrl => self.input.push(c),
                KeyCode::Enter => return self.submit(),
                _ => {}
            },
            Step::Found { url, .. } => match key.code {
                KeyCode::Enter => {
                    return SetupAction::Done(SetupResult::Server { url, model: None });
                }
                KeyCode::Esc => {
                    self.step = Step::Url;
                    self.message = None;
                }
                _ => {}
            },
        }
        SetupAction::None
    }

    fn submit(&mut self) -> SetupAction {
        let typed = self.input.trim().to_string();
        if typed.is_empty() {
            return SetupAction::None;
        }
        match (&self.step, self.choices.get(self.selected)) {
            (Step::Key, Some(SetupChoice::Provider { name, .. })) => {
                self.message = Some((format!("Checking the key with {name} …"), false));
                SetupAction::CheckKey {
                    provider: name.clone(),
                    key: typed,
                }
            }
            (Step::Name { url, .. }, _) => SetupAction::Done(SetupResult::Server {
                url: url.clone(),
                model: Some(typed),
            }),
            (Step::Url, _) => {
                let url = if typed.contains("://") {
                    typed
                } else {
                    format!("http://{typed}")
                };
                self.message = Some((format!("Checking {url} …"), false));
                SetupAction::Check(url)
            }
            _ => SetupAction::None,
        }
    }

    /// The result of checking `url`.
    pub fn checked(&mut self, url: String, result: CheckResult) {
        match result {
            CheckResult::Models(lines) => {
                self.message = None;
                self.step = Step::Found { url, lines };
            }
            CheckResult::NoList(why) => {
                self.message = None;
                self.input.clear();
                self.step = Step::Name { url, why };
            }
            CheckResult::Failed(error) => self.message = Some((error, true)),
        }
    }

    /// What the provider said of the key typed: the screen ends with it, or asks again.
    pub fn key_checked(&mut self, result: Result<String, String>) -> SetupAction {
        let Some(SetupChoice::Provider { name, model, .. }) = self.choices.get(self.selected)
        else {
            return SetupAction::None;
        };
        match result {
            Ok(checked) => SetupAction::Done(SetupResult::Key {
                provider: name.clone(),
                model: model.clone(),
                key: std::mem::take(&mut self.input).trim().to_string(),
                checked,
            }),
            Err(refused) => {
                self.input.clear();
                self.message = Some((format!("{refused} — paste another key, or Esc"), true));
                SetupAction::None
            }
        }
    }

    /// The screen's lines, for drawing and for tests.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = crate::theme::palette().dim;
        let mut out = vec![
            Line::styled("coding-agent — first run", bold),
            Line::raw(""),
            Line::raw("No model is configured and no API key is set."),
            Line::styled(self.probed.clone(), dim),
            Line::raw(""),
        ];
        match &self.step {
            Step::Choose => {
                out.push(Line::raw("Pick a provider (↑/↓, Enter), or q to quit:"));
                for (i, choice) in self.choices.iter().enumerate() {
                    let label = match choice {
                        SetupChoice::Provider { name, model, .. } => {
                            format!("{name}  ({model})")
                        }
                        SetupChoice::LocalServer => {
                            "A local server by URL (llama.cpp, Ollama, LM Studio, vLLM, …)"
                                .to_string()
                        }
                    };
                    let (marker, style) = if i == self.selected {
                        ("› ", bold.patch(crate::theme::palette().accent))
                    } else {
                        ("  ", Style::default())
                    };
                    out.push(Line::from(vec![Span::styled(
                        format!("{marker}{label}"),
                        style,
                    )]));
                }
            }
            Step::Key => {
                if let Some(SetupChoice::Provider { name, env, .. }) =
                    self.choices.get(self.selected)
                {
                    out.push(Line::raw(format!(
                        "Paste your {name} API key and press Enter (Esc goes back)."
                    )));
                    out.push(Line::styled(
                        format!(
                            "It is stored in {} (mode 0600); {env} in the environment works \
                             too.",
                            self.auth_file
                        ),
                        dim,
                    ));
                }
                out.push(Line::raw(""));
                let shown = match self.input.chars().count() {
                    0 => "key: (nothing yet)".to_string(),
                    n => format!("key: {n} characters (not shown)"),
                };
                out.push(Line::styled(shown, bold));
            }
            Step::Url => {
                out.push(Line::raw(
                    "Enter the server's URL and press Enter (Esc goes back), e.g. \
                     http://127.0.0.1:8080",
                ));
                out.push(Line::raw(""));
                out.push(Line::styled(format!("url: {}", self.input), bold));
            }
            Step::Name { url, why } => {
                out.push(Line::styled(format!("{url} answers, but: {why}."), bold));
                out.push(Line::raw(
                    "It does not list its models: type the name of the model it serves (the \
                     one it expects in requests) and press Enter (Esc: another URL).",
                ));
                out.push(Line::raw(""));
                out.push(Line::styled(format!("model: {}", self.input), bold));
            }
            Step::Found { url, lines } => {
                out.push(Line::styled(format!("{url} answers:"), bold));
                out.extend(lines.iter().map(|l| Line::raw(format!("  {l}"))));
                out.push(Line::raw(""));
                out.push(Line::raw(
                    "Press Enter to start a session with it (Esc: another URL).",
                ));
            }
        }
        if let Some((message, error)) = &self.message {
            out.push(Line::raw(""));
            let style = if *error {
                crate::theme::palette().error
            } else {
                dim
            };
            out.push(Line::styled(message.clone(), style));
        }
        out
    }

    pub fn render(&self, frame: &mut Frame, area: Rect) {
        let inner = Rect {
            x: area.x + 1,
            width: area.width.saturating_sub(2),
            ..area
        };
        frame.render_widget(
            Paragraph::new(self.lines()).wrap(Wrap { trim: false }),
            inner,
        );
    }
}

/// Shows the screen on the terminal until it ends; the terminal is restored afterwards.
pub async fn run(
    mut screen: SetupScreen,
    check: Check,
    check_key: KeyCheck,
) -> std::io::Result<SetupResult> {
    let _guard = crate::terminal::enter(crate::Screen::Alternate)?;
    let mut terminal = crate::terminal::fullscreen()?;
    let mut events = crate::terminal_input::TerminalInput::take();
    loop {
        terminal.draw(|frame| screen.render(frame, frame.area()))?;
        let action = match events.next().await {
            None => return Ok(SetupResult::Quit),
            Some(Err(e)) => return Err(e),
            Some(Ok(Event::Key(key))) => screen.key(key),
            Some(Ok(Event::Paste(text))) => {
                screen.paste(&text);
                SetupAction::None
            }
            Some(Ok(Event::Resize(width, height))) => {
                terminal.backend_mut().set_size(width, height);
                SetupAction::None
            }
            Some(Ok(_)) => SetupAction::None,
        };
        match action {
            SetupAction::None => {}
            SetupAction::Done(result) => return Ok(result),
            SetupAction::Check(url) => {
                terminal.draw(|frame| screen.render(frame, frame.area()))?;
                let result = check(url.clone()).await;
                screen.checked(url, result);
            }
            SetupAction::CheckKey { provider, key } => {
                terminal.draw(|frame| screen.render(frame, frame.area()))?;
                let result = check_key(provider, key).await;
                if let SetupAction::Done(result) = screen.key_checked(result) {
                    return Ok(result);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(screen: &mut SetupScreen, code: KeyCode) -> SetupAction {
        screen.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn text(screen: &SetupScreen) -> String {
        screen
            .lines()
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn screen() -> SetupScreen {
        SetupScreen::new(
            vec![
                SetupChoice::Provider {
                    name: "openai".into(),
                    model: "openai/gpt-5".into(),
                    env: "OPENAI_API_KEY".into(),
                },
                SetupChoice::LocalServer,
            ],
            "No local server answered at http://127.0.0.1:11434 (Ollama).".into(),
        )
    }

    #[test]
    fn a_pasted_key_is_never_shown_and_ends_the_screen() {
        let mut s = screen();
        assert!(text(&s).contains("› openai  (openai/gpt-5)"));
        press(&mut s, KeyCode::Enter);
        s.paste("sk-secret-123");
        press(&mut s, KeyCode::Char('x'));
        let shown = text(&s);
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("14 characters (not shown)"), "{shown}");
        // Checked with the provider before anything ends: refused, it is asked again.
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::CheckKey {
                provider: "openai".into(),
                key: "sk-secret-123x".into()
            }
        );
        assert_eq!(
            s.key_checked(Err("openai answered 401: Incorrect API key".into())),
            SetupAction::None
        );
        let shown = text(&s);
        assert!(shown.contains("answered 401: Incorrect API key"), "{shown}");
        assert!(shown.contains("key: (nothing yet)"), "{shown}");
        s.paste("sk-right-456");
        press(&mut s, KeyCode::Enter);
        assert_eq!(
            s.key_checked(Ok("openai accepted the key".into())),
            SetupAction::Done(SetupResult::Key {
                provider: "openai".into(),
                model: "openai/gpt-5".into(),
                key: "sk-right-456".into(),
                checked: "openai accepted the key".into(),
            })
        );
    }

    #[test]
    fn a_url_is_checked_its_error_shown_and_its_models_listed() {
        let mut s = screen();
        press(&mut s, KeyCode::Down);
        press(&mut s, KeyCode::Enter);
        for c in "127.0.0.1:9".chars() {
            press(&mut s, KeyCode::Char(c));
        }
        let url = "http://127.0.0.1:9".to_string();
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::Check(url.clone())
        );
        s.checked(
            url.clone(),
            CheckResult::Failed("connection refused".into()),
        );
        assert!(text(&s).contains("connection refused"));
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::Check(url.clone())
        );
        s.checked(
            url.clone(),
            CheckResult::Models(vec!["llama.cpp · smollm2 · 2k ctx".into()]),
        );
        assert!(text(&s).contains("smollm2"));
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::Done(SetupResult::Server { url, model: None })
        );
    }

    #[test]
    fn a_server_without_a_model_list_gets_its_model_named() {
        let mut s = screen();
        press(&mut s, KeyCode::Down);
        press(&mut s, KeyCode::Enter);
        s.paste("http://127.0.0.1:9");
        let url = "http://127.0.0.1:9".to_string();
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::Check(url.clone())
        );
        s.checked(
            url.clone(),
            CheckResult::NoList("http://127.0.0.1:9/v1/models answered 404".into()),
        );
        let shown = text(&s);
        assert!(shown.contains("answered 404"), "{shown}");
        assert!(shown.contains("type the name of the model"), "{shown}");
        s.paste("my-model");
        assert!(text(&s).contains("model: my-model"));
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            SetupAction::Done(SetupResult::Server {
                url,
                model: Some("my-model".into())
            })
        );
    }
}
