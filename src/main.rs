//! `coding-agent`: parses flags, loads the config and wires the crates together.

mod auth;
mod checkpoints;
mod cli;
mod config;
mod doctor;
mod export;
mod first_run;
mod guard;
mod local;
mod modes;
mod project_servers;
mod rewind;
mod safety;
mod sessions;
mod setup;
mod subagents;
mod trust;

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Mode, Subcommand};
use crate::config::{Config, ScreenConfig};
use crate::modes::headless::Output;
use crate::setup::Fail;
use session::RepoFiles;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    let result = runtime.block_on(run(cli));
    // A worker thread stuck in the kernel (a hung network file system, say) must not keep the
    // process from ending: everything worth keeping was written before `run` returned.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(code) => code,
        Err(Fail(message)) => {
            eprintln!("coding-agent: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Fail> {
    if let Some(dir) = &cli.cwd {
        std::env::set_current_dir(dir)
            .map_err(|e| Fail(format!("cannot enter {}: {e}", dir.display())))?;
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Fail(format!("cannot read the current directory: {e}")))?;
    let home = setup::home()?;
    // Transcripts are private: tighten a home or sessions directory left open to others.
    for problem in home.secure() {
        eprintln!("coding-agent: warning: {problem}");
    }
    if let Some(Subcommand::Export {
        session,
        format,
        output,
    }) = &cli.command
    {
        return export_command(
            &cli,
            &home,
            &cwd,
            session.as_deref(),
            *format,
            output.clone(),
        );
    }
    if cli.command == Some(Subcommand::Doctor) {
        let config = Config::load(&home.config_file(), &cwd, false)
            .map_err(|e| Fail(format!("config error in {e}")))?;
        print!("{}", doctor::report(&cli, &config, &home, &cwd));
        return Ok(ExitCode::SUCCESS);
    }
    // Only the interactive mode can ask; and not when a picker or a listing comes first.
    let interactive = cli.print.is_none() && cli.mode == Mode::Interactive && !cli.list_models;
    let repo = trust::decide(&home, &cwd, cli.trust, interactive)?;
    let mut config = Config::load(&home.config_file(), &cwd, repo.files == RepoFiles::Read)
        .map_err(|e| Fail(format!("config error in {e}")))?;
    config.notices.extend(repo.notice);
    project_servers::gate(&mut config, &home, &cwd, interactive)?;
    let auth = auth::Auth::load(&home).map_err(|e| Fail(format!("auth file error in {e}")))?;
    config.stored_keys = auth.keys.clone();
    if config.model.is_none() {
        config.model = auth.model.clone();
    }
    if cli.list_models {
        let mut registry = setup::registry(&config)?;
        let (models, servers) = local::live_models(&auth).await;
        for model in models {
            registry.insert_model(model);
        }
        print!("{}", setup::list_models(&registry));
        println!("\nLocal servers: {servers}");
        return Ok(ExitCode::SUCCESS);
    }
    // What to run is checked before anything is started.
    let headless_prompt = match (&cli.print, cli.mode) {
        (Some(prompt), _) => Some(with_stdin(prompt.clone())?),
        (None, Mode::Json) => match &cli.prompt {
            Some(prompt) => Some(with_stdin(prompt.clone())?),
            None => return Err(Fail("--mode json needs a prompt".into())),
        },
        _ => None,
    };
    let resumed = setup::find_resumed(&cli, &home, &cwd)?;
    let registry = setup::registry(&config)?;
    // A session that ran on a local server resumes there, whatever keys are set.
    let resumed_on = match &resumed {
        Some(session) => local::resumed_server(&cli, &session.loaded).await?,
        None => None,
    };
    let found = match resumed_on {
        Some(preset) => local::Found::Use(preset),
        None => local::choose(&cli, &config, &auth, &registry).await?,
    };
    let preset = match found {
        local::Found::Use(preset) => Some(preset),
        local::Found::NotNeeded => None,
        // A resumed session names its model.
        local::Found::Nothing { .. } if resumed.is_some() => None,
        local::Found::Nothing { probed } => {
            let interactive_tty = headless_prompt.is_none()
                && cli.mode == Mode::Interactive
                && std::io::stdin().is_terminal()
                && std::io::stdout().is_terminal();
            if !interactive_tty {
                // No screen to ask on: say what to do, and what was looked for.
                return Err(Fail(format!(
                    "{}\n\n{}",
                    setup::no_key(),
                    local::probed_line(&probed)
                )));
            }
            tui::theme::init(config.theme.map_or_else(Default::default, |t| t.choice()));
            match first_run::run(&home, &registry, &probed).await? {
                first_run::Outcome::Quit => return Ok(ExitCode::SUCCESS),
                first_run::Outcome::Key {
                    provider,
                    key,
                    model,
                    checked,
                } => {
                    config.notices.push(checked);
                    config.stored_keys.insert(provider, key);
                    config.model = Some(model);
                    None
                }
                first_run::Outcome::Local(preset) => Some(preset),
            }
        }
    };
    let setup_theme = config.theme.map_or_else(Default::default, |t| t.choice());
    let mut setup = setup::build(&cli, &config, cwd, home, resumed, repo.files, preset).await?;
    setup.trust = repo.status;
    // The TUI shows them in the conversation; elsewhere they go to stderr.
    if headless_prompt.is_some() || cli.mode == Mode::Rpc {
        for notice in &setup.notices {
            eprintln!("coding-agent: note: {notice}");
        }
    }
    if !cli.images.is_empty() && headless_prompt.is_none() && cli.mode != Mode::Interactive {
        return Err(Fail(
            "-i/--image goes with a prompt; over RPC, send images with the prompt command".into(),
        ));
    }
    Ok(match (headless_prompt, cli.mode) {
        (Some(prompt), mode) => {
            let images = attach::prompt_images(&prompt, &cli.images, &setup.cwd, &setup.model)
                .map_err(|err| Fail(format!("-i/--image: {err}")))?;
            let output = if mode == Mode::Json {
                Output::Events
            } else {
                Output::Answer
            };
            modes::headless::run(setup, prompt, images, output).await
        }
        (None, Mode::Rpc) => modes::rpc::run(setup).await,
        (None, _) => {
            if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
                return Err(Fail(
                    "the interactive mode needs a terminal; use -p PROMPT or --mode json/rpc"
                        .into(),
                ));
            }
            let alternate = cli.alt_screen || config.screen == Some(ScreenConfig::Alternate);
            // Before the UI reads the terminal: the background query's answer comes on it.
            tui::theme::init(setup_theme);
            let screen = if alternate {
                tui::Screen::Alternate
            } else {
                tui::Screen::Inline
            };
            // Checked now, so a wrong path or a model without image input stops here.
            let images = attach::given_images(&cli.images, &setup.cwd, &setup.model)
                .map_err(|err| Fail(format!("-i/--image: {err}")))?;
            modes::interactive::run(setup, cli.prompt.clone(), images, screen).await
        }
    })
}

/// `coding-agent export`: the session's current branch, written where asked.
fn export_command(
    cli: &Cli,
    home: &session::Home,
    cwd: &std::path::Path,
    query: Option<&str>,
    format: Option<export::Format>,
    output: Option<std::path::PathBuf>,
) -> Result<ExitCode, Fail> {
    let path = match query {
        Some(query) if std::path::Path::new(query).is_file() => query.into(),
        Some(query) => session::find_session(home, cwd, query)
            .map_err(|e| Fail(format!("no session `{query}`: {e}")))?,
        None => session::latest_session_path(home, cwd)
            .map_err(|e| Fail(format!("cannot read the latest session: {e}")))?
            .ok_or_else(|| Fail(format!("no session to export in {}", cwd.display())))?,
    };
    let format = format.unwrap_or_else(|| {
        output
            .as_deref()
            .map_or(export::Format::Html, export::Format::of_path)
    });
    // The keys the agent knows, as it would redact them from tool output.
    let mut config = Config::load(&home.config_file(), cwd, false)
        .map_err(|e| Fail(format!("config error in {e}")))?;
    config.stored_keys = auth::Auth::load(home).map(|a| a.keys).unwrap_or_default();
    let registry = setup::registry(&config)?;
    let redactor = setup::redactor(cli, &config, &registry);
    // A message at a time: a session of any size is never held whole.
    let failed = |e: std::io::Error| Fail(format!("cannot export {}: {e}", path.display()));
    match output {
        Some(out) if out.as_os_str() == "-" => {
            let stdout = std::io::stdout().lock();
            export::stream(&path, std::io::BufWriter::new(stdout), format, &redactor)
                .map_err(failed)?;
        }
        out => {
            let id = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.rsplit_once('_'))
                .map_or("session", |(_, id)| id);
            let out = out.unwrap_or_else(|| cwd.join(format!("{id}.{}", format.extension())));
            let file = export::create(&out)
                .map_err(|e| Fail(format!("cannot write {}: {e}", out.display())))?;
            let count = export::stream(&path, std::io::BufWriter::new(file), format, &redactor)
                .map_err(failed)?;
            println!("Exported {count} messages to {}", out.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The prompt, with piped standard input appended.
fn with_stdin(prompt: String) -> Result<String, Fail> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(prompt);
    }
    let mut piped = String::new();
    stdin
        .lock()
        .read_to_string(&mut piped)
        .map_err(|e| Fail(format!("cannot read standard input: {e}")))?;
    Ok(if piped.trim().is_empty() {
        prompt
    } else {
        format!("{prompt}\n\n{}", piped.trim_end())
    })
}
