//! Whether this run may read the repository's own files (its `.coding-agent/` config and
//! SYSTEM.md, its AGENTS.md and CLAUDE.md): they steer the model, so a cloned repository gets
//! that only once the user trusted it. The interactive mode asks once, on the terminal, before
//! the UI starts; headless modes never ask and read them only with `--trust`. The answer is
//! remembered in the user's home with a fingerprint of `.coding-agent/`: when a command later
//! changes that directory, the user is asked again.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use sandbox::{Trust, TrustStore};
use session::{Home, RepoFiles};

use crate::setup::Fail;

/// What this run may read, a line for the user when something was left out, and what
/// `/status` says of the repository's trust.
pub struct RepoTrust {
    pub files: RepoFiles,
    pub notice: Option<String>,
    pub status: String,
}

/// Decides (asking when `may_ask` and the terminal allows) whether the repository of `cwd`
/// may steer this run.
pub fn decide(home: &Home, cwd: &Path, trust_flag: bool, may_ask: bool) -> Result<RepoTrust, Fail> {
    let root = session::repository_root(cwd);
    // The agent's own home may be the `.coding-agent` of a repository at `$HOME`.
    let own = home.root().canonicalize().ok();
    let wants: Vec<_> = sandbox::wants(&root, cwd)
        .into_iter()
        .filter(|path| {
            let canonical = path.canonicalize().ok();
            !matches!((&canonical, &own), (Some(p), Some(h)) if p.starts_with(h))
        })
        .collect();
    let read = |status: String| RepoTrust {
        files: RepoFiles::Read,
        notice: None,
        status,
    };
    if wants.is_empty() {
        return Ok(read(format!(
            "{}: nothing in it steers the model (no AGENTS.md, CLAUDE.md or .coding-agent/), \
             so there is nothing to trust",
            root.display()
        )));
    }
    if trust_flag {
        return Ok(read(format!(
            "{}: trusted for this run (--trust): its {} loaded",
            root.display(),
            names(&root, &wants)
        )));
    }
    let store = TrustStore::new(home.root());
    let state = store
        .state(&root)
        .map_err(|e| Fail(format!("cannot read the trusted repositories: {e}")))?;
    let trusted = || {
        read(format!(
            "{}: trusted (remembered in {}): its {} loaded",
            root.display(),
            home.root().join(sandbox::TRUST_FILE).display(),
            names(&root, &wants)
        ))
    };
    if state == Trust::Trusted {
        return Ok(trusted());
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if may_ask && terminal {
        let seen = sandbox::fingerprint(&root);
        if ask(&root, &wants, state) {
            store
                .trust(&root, &seen)
                .map_err(|e| Fail(format!("cannot remember the answer: {e}")))?;
            return Ok(trusted());
        }
    }
    let changed = if state == Trust::Changed {
        " (its .coding-agent/ changed since you trusted it)"
    } else {
        ""
    };
    let status = format!(
        "{}: not trusted{changed}: its {} not loaded (run coding-agent in it and answer yes, or \
         pass --trust for one run)",
        root.display(),
        names(&root, &wants)
    );
    Ok(RepoTrust {
        files: RepoFiles::Skip,
        status,
        notice: Some(format!(
            "{} is not trusted{changed}: its {} {} not loaded. Run coding-agent in it and \
             answer yes to trust it, or pass --trust for one run.",
            root.display(),
            names(&root, &wants),
            if wants.len() == 1 { "was" } else { "were" }
        )),
    })
}

fn names(root: &Path, wants: &[std::path::PathBuf]) -> String {
    wants
        .iter()
        .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The question, on the terminal: yes only on an explicit `y`.
fn ask(root: &Path, wants: &[std::path::PathBuf], state: Trust) -> bool {
    let mut err = std::io::stderr();
    let why = match state {
        Trust::Changed => "Its .coding-agent/ changed since you trusted it.",
        _ => "You have not run coding-agent here before.",
    };
    let mut text = format!(
        "{} wants to give the agent its own instructions and settings. {why}",
        root.display()
    );
    for path in wants {
        text.push_str(&format!(
            "\n  {}",
            path.strip_prefix(root).unwrap_or(path).display()
        ));
    }
    text.push_str("\nTrust this repository (its files can steer the model)? [y/N] ");
    // Wrapped here at words (and paths at `/`): the terminal's own wrap splits words.
    let _ = write!(err, "{}", tui::wrap_for_terminal(&text));
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}
