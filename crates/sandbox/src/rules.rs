//! Approval rules: the command prefixes a user allowed in a project ("always allow `cargo
//! test` here"), where they are kept, and whether a command may run without asking.
//!
//! Why: in `untrusted` mode every command that is not known read-only asks. Asking again for
//! the tenth `cargo test -p x` teaches people to stop reading the question; a remembered
//! prefix lets them answer once per project.
//!
//! What a rule covers: a prefix is a list of words compared with a simple command's words
//! after quote removal, word by word: `cargo test` covers `cargo test` and
//! `cargo 'test' -p x`, not `cargo testify` and not `cargo`. The words after the prefix may be
//! anything, even only known at run time (`cargo test $X`). A command line is allowed when
//! every simple command in it (those inside substitutions, subshells and groups too) is known
//! read-only or covered by a rule. No rule covers a simple command with a [`Hazard`]: an
//! output redirection to a file (`cargo test > log`), an assignment (`X=1 cargo test`), a
//! program named only at run time (`$CMD`), or an evaluating builtin (`eval`, `source`, …);
//! nor a line the parser cannot read ([`ParseError`]). The user allowed a program with its
//! arguments, not what a redirection or the environment does around it.
//!
//! Where rules live: only in the user's home, `$CODING_AGENT_HOME/approvals.toml`, keyed by
//! the project's canonical root. A repository cannot grant itself anything: there is no
//! project-level rules file, and nothing under the project is read to decide. The file is
//! written atomically, 0600 in a 0700 home, under a lock; a damaged file is an error naming
//! its line, never silently emptied.
//!
//! What it does not do: ask (the host does), or decide which mode asks (the policy does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::home_file::{self, StoreError};
use crate::shell::{self, Hazard, ParseError, SimpleCommand};

/// The file, in the home directory.
pub const APPROVALS_FILE: &str = "approvals.toml";

/// What to do with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Every command in it is known read-only: run it.
    ReadOnly,
    /// Every command in it is read-only or covered by one of the project's rules: run it.
    Allowed,
    /// Ask the user first.
    Ask(AskReason),
}

/// Why a command needs the user's answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskReason {
    /// The line is not in the part of bash the parser reads.
    #[error("the command cannot be checked: {0}")]
    Unreadable(ParseError),
    /// There is no command in it.
    #[error("there is no command to check")]
    Empty,
    /// A simple command does something no rule may allow.
    #[error("`{command}` {hazard}")]
    Hazard {
        /// The simple command, roughly as written.
        command: String,
        /// What it does.
        hazard: Hazard,
    },
    /// A simple command is neither read-only nor covered by a rule.
    #[error("`{0}` is neither read-only nor allowed by a rule")]
    NotAllowed(String),
}

/// The prefixes allowed in one project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectRules {
    prefixes: Vec<Vec<String>>,
}

impl ProjectRules {
    /// Rules made of these prefixes (as the store keeps them).
    pub fn new(prefixes: Vec<Vec<String>>) -> Self {
        Self { prefixes }
    }

    /// The prefixes, in the order they were added.
    pub fn prefixes(&self) -> &[Vec<String>] {
        &self.prefixes
    }

    /// Whether `command` may run without asking, and if not, why.
    pub fn decide(&self, command: &str) -> Decision {
        let commands = match shell::parse(command) {
            Ok(commands) => commands,
            Err(err) => return Decision::Ask(AskReason::Unreadable(err)),
        };
        if commands.is_empty() {
            return Decision::Ask(AskReason::Empty);
        }
        let mut all_read_only = true;
        for command in &commands {
            if let Some(hazard) = command.hazard() {
                return Decision::Ask(AskReason::Hazard {
                    command: command.display(),
                    hazard,
                });
            }
            if shell::is_read_only(command) {
                continue;
            }
            all_read_only = false;
            if !self.prefixes.iter().any(|p| covers(p, command)) {
                return Decision::Ask(AskReason::NotAllowed(command.display()));
            }
        }
        if all_read_only {
            Decision::ReadOnly
        } else {
            Decision::Allowed
        }
    }

    /// Whether `command` may run without asking.
    pub fn allows(&self, command: &str) -> bool {
        matches!(self.decide(command), Decision::ReadOnly | Decision::Allowed)
    }
}

/// The first word of a rule that allows the `fetch` tool a host (`["web:", "docs.rs"]`), kept
/// with the command rules so `/permissions` lists and revokes both. Such a rule never covers a
/// command, whatever the command's words.
pub const WEB_RULE: &str = "web:";

/// The rule that allows fetching from `host` (at public addresses).
pub fn web_rule(host: &str) -> Vec<String> {
    vec![WEB_RULE.to_string(), host.to_ascii_lowercase()]
}

/// The rule that allows fetching from `host` at a private or loopback address too: given
/// only when the user was asked about that address, so a public host allowed once cannot
/// later resolve to the machine's own services.
pub fn web_rule_private(host: &str) -> Vec<String> {
    vec![
        WEB_RULE.to_string(),
        host.to_ascii_lowercase(),
        "private".to_string(),
    ]
}

impl ProjectRules {
    /// Whether the user allowed fetching from `host` here.
    pub fn allows_host(&self, host: &str) -> bool {
        self.prefixes.contains(&web_rule(host)) || self.allows_private_host(host)
    }

    /// Whether the user allowed `host` here at a private or loopback address.
    pub fn allows_private_host(&self, host: &str) -> bool {
        self.prefixes.contains(&web_rule_private(host))
    }
}

/// Whether `prefix` covers `command`: its first words are the prefix's, literally.
fn covers(prefix: &[String], command: &SimpleCommand) -> bool {
    !prefix.is_empty()
        && prefix[0] != WEB_RULE
        && command.words.len() >= prefix.len()
        && prefix
            .iter()
            .zip(&command.words)
            .all(|(p, w)| w.value.as_deref() == Some(p.as_str()))
}

/// How [`suggest_prefix`] shapes the rule it offers for a program.
#[derive(Clone, Copy)]
enum Shape {
    /// Offer nothing: every rule for it would allow too much.
    Never,
    /// The program and its first operand, the script (`python x.py`, `sed s/a/b/`); nothing
    /// when a flag comes first (`python -c …`).
    Script,
    /// An interpreter whose `FLAG MODULE` names what it runs as a script does (`python -m
    /// pytest`, `python3 -m unittest`): the program, the flag and the module; otherwise as
    /// [`Shape::Script`].
    ScriptOrModule(&'static str),
    /// The program and its subcommand (`cargo test`); for the listed subcommands that run a
    /// named thing, that name too (`npm run build`).
    Subcommand(&'static [&'static str]),
}

/// Programs whose suggestion is not simply their name. Names are matched without a path and
/// without a version suffix (`/usr/bin/python3.12` is `python`).
const SUGGEST: &[(&str, Shape)] = &[
    // They run what their arguments name.
    ("sudo", Shape::Never),
    ("doas", Shape::Never),
    ("su", Shape::Never),
    ("env", Shape::Never),
    ("xargs", Shape::Never),
    ("nohup", Shape::Never),
    ("nice", Shape::Never),
    ("ionice", Shape::Never),
    ("timeout", Shape::Never),
    ("watch", Shape::Never),
    ("strace", Shape::Never),
    ("chroot", Shape::Never),
    ("unshare", Shape::Never),
    ("nsenter", Shape::Never),
    ("setsid", Shape::Never),
    ("stdbuf", Shape::Never),
    ("flock", Shape::Never),
    ("parallel", Shape::Never),
    ("ssh", Shape::Never),
    // Every use of them that is not read-only deletes, overwrites or runs something.
    ("rm", Shape::Never),
    ("rmdir", Shape::Never),
    ("shred", Shape::Never),
    ("dd", Shape::Never),
    ("mkfs", Shape::Never),
    ("truncate", Shape::Never),
    ("chmod", Shape::Never),
    ("chown", Shape::Never),
    ("chgrp", Shape::Never),
    ("kill", Shape::Never),
    ("pkill", Shape::Never),
    ("killall", Shape::Never),
    ("find", Shape::Never),
    // Interpreters: the script is part of the rule.
    ("bash", Shape::Script),
    ("sh", Shape::Script),
    ("zsh", Shape::Script),
    ("dash", Shape::Script),
    ("ksh", Shape::Script),
    ("fish", Shape::Script),
    ("python", Shape::ScriptOrModule("-m")),
    ("node", Shape::Script),
    ("perl", Shape::Script),
    ("ruby", Shape::Script),
    ("php", Shape::Script),
    ("lua", Shape::Script),
    ("awk", Shape::Script),
    ("gawk", Shape::Script),
    ("sed", Shape::Script),
    ("npx", Shape::Script),
    ("bunx", Shape::Script),
    // Tools with subcommands.
    ("cargo", Shape::Subcommand(&[])),
    ("git", Shape::Subcommand(&[])),
    ("go", Shape::Subcommand(&["run"])),
    (
        "npm",
        Shape::Subcommand(&["run", "run-script", "exec", "x"]),
    ),
    ("pnpm", Shape::Subcommand(&["run", "exec", "dlx"])),
    ("yarn", Shape::Subcommand(&["run", "exec", "dlx"])),
    ("bun", Shape::Subcommand(&["run", "x"])),
    ("deno", Shape::Subcommand(&["run", "task"])),
    ("uv", Shape::Subcommand(&["run", "tool"])),
    ("poetry", Shape::Subcommand(&["run"])),
    ("pip", Shape::Subcommand(&[])),
    ("docker", Shape::Subcommand(&["run", "exec"])),
    ("podman", Shape::Subcommand(&["run", "exec"])),
    ("kubectl", Shape::Subcommand(&["exec"])),
    ("make", Shape::Subcommand(&[])),
    ("just", Shape::Subcommand(&[])),
    ("rustup", Shape::Subcommand(&["run"])),
    ("gh", Shape::Subcommand(&[])),
    ("dotnet", Shape::Subcommand(&["run"])),
    ("mvn", Shape::Subcommand(&[])),
    ("gradle", Shape::Subcommand(&[])),
    ("gradlew", Shape::Subcommand(&[])),
    ("swift", Shape::Subcommand(&["run"])),
];

/// The prefix to offer as "always allow … in this project" for `command`, or `None` when
/// there is none worth offering.
///
/// Policy: every simple command that is not read-only must get the same suggestion (so
/// `cargo test -p a && cargo test -p b` offers `cargo test`, and `cargo build && npm test`
/// nothing); a line with a [`Hazard`] or that cannot be read gets nothing, since no rule
/// would cover it. One command's suggestion is its program (`pytest -x` → `pytest`), with
/// the subcommand for tools that have them (`cargo test -p x` → `cargo test`, `git push
/// origin` → `git push`), plus the script for runners and interpreters (`npm run build` →
/// `npm run build`, `python x.py` → `python x.py`, `python3 -m pytest -x` → `python3 -m
/// pytest`). Nothing is offered for wrappers that run
/// their arguments (`sudo`, `env`, `xargs`, …), for programs whose every other use destroys
/// or runs something (`rm`, `dd`, `chmod`, `find`, …), for an interpreter given a flag first
/// (`bash -c …`), or for a tool without a literal subcommand (`cargo +nightly test`, `make`).
pub fn suggest_prefix(command: &str) -> Option<Vec<String>> {
    let commands = shell::parse(command).ok()?;
    let mut suggestion: Option<Vec<String>> = None;
    for command in &commands {
        if command.hazard().is_some() {
            return None;
        }
        if shell::is_read_only(command) {
            continue;
        }
        let this = suggest_one(command)?;
        match &suggestion {
            Some(earlier) if *earlier != this => return None,
            _ => suggestion = Some(this),
        }
    }
    suggestion
}

fn suggest_one(command: &SimpleCommand) -> Option<Vec<String>> {
    let program = command.words.first()?.value.clone()?;
    let operand = |i: usize| {
        command
            .words
            .get(i)
            .and_then(|w| w.value.clone())
            .filter(|w| !w.is_empty() && !w.starts_with(['-', '+']))
    };
    let base = Path::new(&program)
        .file_name()
        .map_or(program.as_str(), |n| n.to_str().unwrap_or(""));
    let name = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let shape = SUGGEST
        .iter()
        .find(|(n, _)| *n == name || (*n == "mkfs" && base.starts_with("mkfs")))
        .map(|(_, shape)| *shape);
    match shape {
        None => Some(vec![program]),
        Some(Shape::Never) => None,
        Some(Shape::Script) => Some(vec![program, operand(1)?]),
        Some(Shape::ScriptOrModule(flag)) => {
            let first = command.words.get(1).and_then(|w| w.value.clone());
            if first.as_deref() == Some(flag) {
                Some(vec![program, flag.to_string(), operand(2)?])
            } else {
                Some(vec![program, operand(1)?])
            }
        }
        Some(Shape::Subcommand(runners)) => {
            let sub = operand(1)?;
            if runners.contains(&sub.as_str()) {
                Some(vec![program, sub, operand(2)?])
            } else {
                Some(vec![program, sub])
            }
        }
    }
}

/// Why a prefix cannot be a rule, if it cannot.
fn prefix_problem(prefix: &[String]) -> Option<&'static str> {
    match prefix.first() {
        None => Some("a rule needs at least one word"),
        Some(program) if program.is_empty() => Some("the program name is empty"),
        Some(program) if shell::is_evaluator(program) => {
            Some("it runs commands no rule can see into")
        }
        Some(_) => None,
    }
}

/// The rules of every project, in `$CODING_AGENT_HOME/approvals.toml`.
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    #[serde(default)]
    projects: BTreeMap<Spanned<String>, ProjectIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectIn {
    #[serde(default)]
    allow: Vec<Spanned<Vec<String>>>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    projects: BTreeMap<&'a str, ProjectOut<'a>>,
}

#[derive(Serialize)]
struct ProjectOut<'a> {
    allow: &'a [Vec<String>],
}

const HEADER: &str = "\
# Commands coding-agent may run without asking, per project (written by coding-agent).
# Each rule is a list of words: [\"cargo\", \"test\"] allows `cargo test` with any arguments.
";

type Projects = BTreeMap<String, Vec<Vec<String>>>;

impl ApprovalStore {
    /// The store in the home directory `home` (`$CODING_AGENT_HOME`).
    pub fn new(home: &Path) -> Self {
        Self {
            path: home.join(APPROVALS_FILE),
        }
    }

    /// The file the rules are kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules of the project whose root is `project_root` (none when the file is
    /// missing or does not name it).
    pub fn rules(&self, project_root: &Path) -> Result<ProjectRules, StoreError> {
        Ok(ProjectRules::new(self.list(project_root)?))
    }

    /// The prefixes allowed in the project, in the order they were added.
    pub fn list(&self, project_root: &Path) -> Result<Vec<Vec<String>>, StoreError> {
        let key = home_file::root_key(project_root)?;
        Ok(self.load()?.remove(&key).unwrap_or_default())
    }

    /// Every project in the file with its prefixes, by canonical root.
    pub fn list_all(&self) -> Result<BTreeMap<PathBuf, Vec<Vec<String>>>, StoreError> {
        Ok(self
            .load()?
            .into_iter()
            .map(|(root, prefixes)| (PathBuf::from(root), prefixes))
            .collect())
    }

    /// Allows `prefix` in the project; `false` when it already was.
    pub fn add(&self, project_root: &Path, prefix: &[String]) -> Result<bool, StoreError> {
        if let Some(reason) = prefix_problem(prefix) {
            return Err(StoreError::InvalidPrefix {
                prefix: prefix.join(" "),
                reason,
            });
        }
        let key = home_file::root_key(project_root)?;
        self.update(|projects| {
            let prefixes = projects.entry(key).or_default();
            if prefixes.iter().any(|p| p == prefix) {
                return false;
            }
            prefixes.push(prefix.to_vec());
            true
        })
    }

    /// Removes `prefix` from the project's rules; `false` when it was not there.
    pub fn revoke(&self, project_root: &Path, prefix: &[String]) -> Result<bool, StoreError> {
        let key = home_file::root_key(project_root)?;
        self.update(|projects| {
            let Some(prefixes) = projects.get_mut(&key) else {
                return false;
            };
            let before = prefixes.len();
            prefixes.retain(|p| p != prefix);
            let removed = prefixes.len() != before;
            if prefixes.is_empty() {
                projects.remove(&key);
            }
            removed
        })
    }

    /// Reads, changes and writes the file under the lock; writes only when `change` says it
    /// changed something.
    fn update(&self, change: impl FnOnce(&mut Projects) -> bool) -> Result<bool, StoreError> {
        let _lock = home_file::lock(&self.path)?;
        let mut projects = self.load()?;
        if !change(&mut projects) {
            return Ok(false);
        }
        let out = FileOut {
            projects: projects
                .iter()
                .map(|(root, allow)| (root.as_str(), ProjectOut { allow }))
                .collect(),
        };
        let body = toml::to_string(&out)
            .map_err(|err| StoreError::io(&self.path)(std::io::Error::other(err.to_string())))?;
        home_file::write_atomic(&self.path, &format!("{HEADER}\n{body}"))?;
        Ok(true)
    }

    fn load(&self) -> Result<Projects, StoreError> {
        let Some(text) = home_file::read_optional(&self.path)? else {
            return Ok(Projects::new());
        };
        let damaged = |offset: Option<usize>, message: &str| {
            StoreError::damaged(&self.path, &text, offset, message)
        };
        let file: FileIn = toml::from_str(&text)
            .map_err(|err| damaged(err.span().map(|s| s.start), err.message()))?;
        let mut projects = Projects::new();
        for (root, project) in file.projects {
            if !Path::new(root.get_ref()).is_absolute() {
                return Err(damaged(
                    Some(root.span().start),
                    "a project root must be an absolute path",
                ));
            }
            let mut prefixes = Vec::new();
            for prefix in project.allow {
                if let Some(reason) = prefix_problem(prefix.get_ref()) {
                    return Err(damaged(Some(prefix.span().start), reason));
                }
                prefixes.push(prefix.into_inner());
            }
            projects.insert(root.into_inner(), prefixes);
        }
        Ok(projects)
    }
}

#[cfg(test)]
mod tests;
