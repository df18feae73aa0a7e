//! The programs that run without asking in `untrusted` mode, and the flags that take them off
//! that list: one table, [`READ_ONLY`], and one for git's subcommands, [`GIT_READ_ONLY`].
//!
//! "Read-only" means the command, as written, neither writes files nor runs other programs.
//! It does not mean harmless to read (`cat ~/.ssh/id_ed25519` is read-only), nor that what a
//! repository configured cannot run: git runs `core.fsmonitor`, a pager or textconv filters
//! that the repository's own `.git/config` names. Kernel confinement is what contains those.
//!
//! Flags are matched conservatively, so a refusal may be a false alarm but a write never
//! slips through: a short flag `-o` is refused anywhere in a cluster (`-ro`), a long flag
//! `--output` also in any abbreviation GNU getopt and git would accept (`--out=x`), and a
//! single-dash long flag (`find`'s `-delete`) exactly, or by prefix where it ends in `*`.
//! A program with any refused flag or argument rule needs every argument literal: a `$VAR`
//! or a glob could expand to the refused flag (a file named `-delete`).

use super::{SimpleCommand, parse};

/// What a read-only program's arguments may be, beyond its refused flags.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Args {
    /// Anything, opaque words included: no argument makes it write.
    Any,
    /// Literal words without the refused flags.
    Checked,
    /// As `Checked`, and at most one operand (`uniq IN OUT` writes `OUT`).
    OneOperand,
    /// As `Checked`, and operands only when listing (`git branch NAME` creates a branch).
    OperandsOnlyWithList,
    /// Nothing but the refused list's complement: only the flags in `refused` are allowed
    /// (`git remote -v`; `git remote add` writes).
    OnlyThese,
}

/// One read-only program (or git subcommand).
struct Entry {
    name: &'static str,
    args: Args,
    /// Flags that write or run something (for `OnlyThese`: the only flags allowed).
    refused: &'static [&'static str],
}

const fn entry(name: &'static str, args: Args, refused: &'static [&'static str]) -> Entry {
    Entry {
        name,
        args,
        refused,
    }
}

/// The programs that may run without asking, and what takes each off the list.
const READ_ONLY: &[Entry] = &[
    entry("ls", Args::Any, &[]),
    entry("cat", Args::Any, &[]),
    entry("sleep", Args::Any, &[]),
    entry("head", Args::Any, &[]),
    entry("tail", Args::Any, &[]),
    entry("wc", Args::Any, &[]),
    entry("pwd", Args::Any, &[]),
    entry("echo", Args::Any, &[]),
    // `printf -v NAME` sets a shell variable (`PATH`) for the commands after it.
    entry("printf", Args::Checked, &["-v"]),
    // `--pre` and `--hostname-bin` run a program.
    entry("rg", Args::Checked, &["--pre", "--hostname-bin"]),
    entry("grep", Args::Any, &[]),
    entry(
        "find",
        Args::Checked,
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint*", "-fls",
        ],
    ),
    entry("which", Args::Any, &[]),
    // `file -C` compiles a magic file, writing `NAME.mgc`.
    entry("file", Args::Checked, &["-C", "--compile"]),
    entry("stat", Args::Any, &[]),
    entry("du", Args::Any, &[]),
    entry("df", Args::Any, &[]),
    // `-o` writes the listing to a file; `-R` reruns tree with `-o 00Tree.html` in each
    // directory.
    entry("tree", Args::Checked, &["-o", "-R"]),
    entry(
        "sort",
        Args::Checked,
        &["-o", "--output", "--compress-program"],
    ),
    entry("uniq", Args::OneOperand, &[]),
    entry("cut", Args::Any, &[]),
    entry("diff", Args::Any, &[]),
    entry("cmp", Args::Any, &[]),
    // git: the options before the subcommand are checked apart (`GIT_GLOBAL`); these flags
    // are refused after any subcommand.
    entry(
        "git",
        Args::Checked,
        &["--output", "--ext-diff", "--open-files-in-pager"],
    ),
];

/// git's read-only subcommands.
const GIT_READ_ONLY: &[Entry] = &[
    entry("status", Args::Checked, &[]),
    entry("diff", Args::Checked, &[]),
    entry("log", Args::Checked, &[]),
    entry("show", Args::Checked, &[]),
    entry(
        "branch",
        Args::OperandsOnlyWithList,
        &[
            "-d",
            "-D",
            "-m",
            "-M",
            "-c",
            "-C",
            "-f",
            "-u",
            "-t",
            "--delete",
            "--move",
            "--copy",
            "--force",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "--track",
            "--no-track",
            "--create-reflog",
            "--recurse-submodules",
        ],
    ),
    entry("rev-parse", Args::Checked, &[]),
    entry("ls-files", Args::Checked, &[]),
    entry("blame", Args::Checked, &[]),
    // `-O` opens the matches in a pager or editor it names.
    entry("grep", Args::Checked, &["-O"]),
    entry("describe", Args::Checked, &[]),
    entry("remote", Args::OnlyThese, &["-v", "--verbose"]),
];

/// Options git may be given before a read-only subcommand (`-C DIR` takes a value). `-c`,
/// `--config-env`, `--exec-path`, `--git-dir`, `-p` and the rest are refused: they can make
/// git run what they name.
const GIT_GLOBAL: &[&str] = &[
    "--no-pager",
    "-P",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--no-replace-objects",
];

/// Whether every command in `command` is a read-only program with read-only arguments (and
/// there is at least one). Fails closed: a line this module cannot read is not read-only.
pub fn is_known_read_only(command: &str) -> bool {
    match parse(command) {
        Ok(commands) => !commands.is_empty() && commands.iter().all(is_read_only),
        Err(_) => false,
    }
}

/// Whether one simple command is read-only: no hazard, and its program and arguments pass
/// the table. A command of redirections alone (`< file`) is read-only.
pub(crate) fn is_read_only(command: &SimpleCommand) -> bool {
    if command.hazard().is_some() {
        return false;
    }
    let Some((program, args)) = command.words.split_first() else {
        return true;
    };
    let Some(name) = program.value.as_deref() else {
        return false;
    };
    let Some(entry) = READ_ONLY.iter().find(|e| e.name == name) else {
        return false;
    };
    if entry.args == Args::Any {
        return true;
    }
    let Some(args) = args
        .iter()
        .map(|w| w.value.as_deref())
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    if name == "git" {
        return git_is_read_only(entry, &args);
    }
    args_pass(entry, &args)
}

fn git_is_read_only(git: &Entry, args: &[&str]) -> bool {
    let mut rest = args;
    let sub = loop {
        match rest {
            ["-C", _dir, tail @ ..] => rest = tail,
            [flag, tail @ ..] if GIT_GLOBAL.contains(flag) => rest = tail,
            [sub, tail @ ..] if !sub.starts_with('-') => {
                rest = tail;
                break *sub;
            }
            _ => return false,
        }
    };
    let Some(entry) = GIT_READ_ONLY.iter().find(|e| e.name == sub) else {
        return false;
    };
    args_pass(git, rest) && args_pass(entry, rest)
}

/// Whether `args` (all literal) pass `entry`'s flags and operand rule.
fn args_pass(entry: &Entry, args: &[&str]) -> bool {
    let is_flag = |a: &&str| a.starts_with('-') && *a != "-";
    match entry.args {
        Args::Any => true,
        Args::OnlyThese => args.iter().all(|a| entry.refused.contains(a)),
        Args::Checked | Args::OneOperand | Args::OperandsOnlyWithList => {
            if args
                .iter()
                .any(|a| entry.refused.iter().any(|f| flag_matches(a, f)))
            {
                return false;
            }
            let operands = args.iter().filter(|a| !is_flag(a)).count();
            match entry.args {
                Args::OneOperand => operands <= 1,
                Args::OperandsOnlyWithList => {
                    operands == 0 || args.iter().any(|a| *a == "-l" || *a == "--list")
                }
                _ => true,
            }
        }
    }
}

/// Whether argument `arg` is (or may be) the refused flag `flag`.
fn flag_matches(arg: &str, flag: &str) -> bool {
    if let Some(long) = flag.strip_prefix("--") {
        // `--out=x` and `--out` are `--output` to getopt_long and to git: any prefix of
        // at least one letter counts.
        let Some(given) = arg.strip_prefix("--") else {
            return false;
        };
        let name = given.split('=').next().unwrap_or(given);
        return !name.is_empty() && long.starts_with(name);
    }
    let Some(short) = flag.strip_prefix('-') else {
        return arg == flag;
    };
    if short.chars().count() == 1 {
        // A cluster (`-ro`) or an attached value (`-ofile`): refused wherever it appears.
        return arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(short);
    }
    match flag.strip_suffix('*') {
        Some(stem) => arg.starts_with(stem),
        None => arg == flag,
    }
}
