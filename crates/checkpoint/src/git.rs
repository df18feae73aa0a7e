//! Running the `git` binary against the shadow store, isolated from everything of the
//! user's: its own `GIT_DIR`, the session's own `GIT_INDEX_FILE`, the workspace as
//! `GIT_WORK_TREE`, no system or global config (so no user filter, hook path, autocrlf or
//! fsmonitor changes what is stored), and every inherited `GIT_*` variable removed (an agent
//! started from a git hook inherits `GIT_DIR`, which would point us at the user's repository).
//!
//! Why the binary and not gitoxide: see `docs/checkpoints.md` ("git binary or gitoxide").
//! In short, staging the workspace (ignore rules, the stat-cached index) is the whole
//! job, git does it in a few milliseconds per call, and gix would add ~100 crates to the build
//! for a part of it.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::error::{CheckpointError, Result};

/// The oldest git the store works with: `GIT_CONFIG_GLOBAL` came in 2.32.
const MIN_VERSION: (u32, u32) = (2, 32);

/// Settings every command runs with, in the command scope (`GIT_CONFIG_COUNT`): they win over
/// the store's own config file, and nothing needs writing when they change.
const SETTINGS: &[(&str, &str)] = &[
    ("core.bare", "false"),
    // Bytes in, the same bytes out: no line-ending conversion or filters on add.
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.filemode", "true"),
    ("core.fsmonitor", "false"),
    ("core.logAllRefUpdates", "false"),
    ("core.quotePath", "false"),
    ("commit.gpgSign", "false"),
    ("advice.addEmbeddedRepo", "false"),
    // Packing and garbage collection are the store's to run (snapshots, prune).
    ("gc.auto", "0"),
    // The store's directory is ours even when the workspace belongs to another user.
    ("safe.directory", "*"),
];

/// The commands of one session's view of the store.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    program: PathBuf,
    git_dir: PathBuf,
    work_tree: PathBuf,
    index: PathBuf,
    excludes_file: Option<PathBuf>,
}

/// The version `git version` reports, checked against [`MIN_VERSION`].
pub(crate) fn check_version(program: &Path) -> Result<()> {
    let out = base_command(program)
        .arg("version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| spawn_error(program, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().trim_start_matches("git version ").to_string();
    let mut numbers = version
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse::<u32>().ok());
    match (numbers.next(), numbers.next()) {
        (Some(major), Some(minor)) if (major, minor) >= MIN_VERSION => Ok(()),
        _ => Err(CheckpointError::GitTooOld { found: version }),
    }
}

/// The user's global excludes file, as their git would use it: `core.excludesFile` from their
/// system and global config, else `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
/// Read once here because the store's commands run without the user's config.
pub(crate) fn user_excludes_file(
    program: &Path,
    home: Option<&OsStr>,
    xdg_config_home: Option<&OsStr>,
) -> Option<PathBuf> {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let keep = [
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_SYSTEM",
            "GIT_CONFIG_NOSYSTEM",
        ];
        if key.as_encoded_bytes().starts_with(b"GIT_") && !keep.iter().any(|k| key == *k) {
            cmd.env_remove(key);
        }
    }
    match home {
        Some(home) => cmd.env("HOME", home),
        None => cmd.env_remove("HOME"),
    };
    match xdg_config_home {
        Some(xdg) => cmd.env("XDG_CONFIG_HOME", xdg),
        None => cmd.env_remove("XDG_CONFIG_HOME"),
    };
    // From the root, so no repository's local config is read.
    let out = cmd
        .args(["config", "--path", "--get", "core.excludesFile"])
        .current_dir("/")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let configured = out.stdout.strip_suffix(b"\n").unwrap_or(&out.stdout);
    let path = if out.status.success() && !configured.is_empty() {
        platform::fs::path_from_bytes(configured)
    } else {
        match xdg_config_home.filter(|x| !x.is_empty()) {
            Some(xdg) => PathBuf::from(xdg).join("git/ignore"),
            None => PathBuf::from(home?).join(".config/git/ignore"),
        }
    };
    path.is_file().then_some(path)
}

fn base_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if key.as_encoded_bytes().starts_with(b"GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    cmd
}

fn spawn_error(program: &Path, e: std::io::Error) -> CheckpointError {
    if e.kind() == std::io::ErrorKind::NotFound {
        CheckpointError::GitNotFound {
            program: program.to_path_buf(),
        }
    } else {
        CheckpointError::Io {
            path: program.to_path_buf(),
            source: e,
        }
    }
}

/// `git init --bare` of a new store (mode 0600 files and 0700 directories through
/// `--shared=0600`, whatever the umask).
pub(crate) fn init(program: &Path, git_dir: &Path) -> Result<()> {
    let out = base_command(program)
        .args(["init", "--quiet", "--bare", "--shared=0600"])
        .arg(git_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(program, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(failure("init", &out.status, &out.stderr))
    }
}

fn failure(command: &str, status: &std::process::ExitStatus, stderr: &[u8]) -> CheckpointError {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    CheckpointError::Git {
        command: command.to_string(),
        status: status.to_string(),
        stderr: lines[lines.len().saturating_sub(4)..].join(" / "),
    }
}

impl Git {
    pub(crate) fn new(
        program: PathBuf,
        git_dir: PathBuf,
        work_tree: PathBuf,
        index: PathBuf,
        excludes_file: Option<PathBuf>,
    ) -> Self {
        Self {
            program,
            git_dir,
            work_tree,
            index,
            excludes_file,
        }
    }

    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub(crate) fn index(&self) -> &Path {
        &self.index
    }

    /// A command in the workspace, against the store and the session's index. Pathspecs are
    /// literal: a file named `*.rs` is a file, not a pattern.
    fn command(&self) -> Command {
        let mut cmd = base_command(&self.program);
        cmd.current_dir(&self.work_tree)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_AUTHOR_NAME", "coding-agent")
            .env("GIT_AUTHOR_EMAIL", "checkpoints@coding-agent.invalid")
            .env("GIT_COMMITTER_NAME", "coding-agent")
            .env("GIT_COMMITTER_EMAIL", "checkpoints@coding-agent.invalid");
        cmd.env("GIT_LITERAL_PATHSPECS", "1");
        let mut settings: Vec<(&str, OsString)> = SETTINGS
            .iter()
            .map(|&(k, v)| (k, OsString::from(v)))
            .collect();
        if let Some(file) = &self.excludes_file {
            settings.push(("core.excludesFile", file.clone().into_os_string()));
        }
        cmd.env("GIT_CONFIG_COUNT", settings.len().to_string());
        for (i, (key, value)) in settings.into_iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        cmd
    }

    /// Runs `git <args>`, feeding `stdin` if given, and returns its standard output.
    pub(crate) fn run<I, S>(&self, args: I, stdin: Option<&[u8]>) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let name = args
            .iter()
            .take(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = self
            .command()
            .args(&args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error(&self.program, e))?;
        // Feed stdin from a thread while this one drains the output: neither pipe can fill up
        // and block the other.
        let output = std::thread::scope(|scope| {
            if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
                scope.spawn(move || {
                    // A child that exits early closes the pipe; its status tells why.
                    let _ = pipe.write_all(bytes);
                });
            }
            child.wait_with_output()
        })
        .map_err(CheckpointError::io(&self.program))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(failure(&name, &output.status, &output.stderr))
        }
    }

    /// A `git cat-file --batch` process, for reading many blobs through one process.
    pub(crate) fn blob_reader(&self) -> Result<BlobReader> {
        let mut child = self
            .command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| spawn_error(&self.program, e))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(parse_error("cat-file", "no pipes"));
        };
        Ok(BlobReader {
            child,
            input: Some(input),
            output: BufReader::new(output),
        })
    }
}

pub(crate) fn parse_error(command: &str, detail: impl Into<String>) -> CheckpointError {
    CheckpointError::Parse {
        command: command.to_string(),
        detail: detail.into(),
    }
}

/// One `git cat-file --batch`: an object id in, its content out, in turn (git flushes after
/// each object).
pub(crate) struct BlobReader {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
}

impl BlobReader {
    /// The content of the blob `id`.
    pub(crate) fn read(&mut self, id: &str) -> Result<Vec<u8>> {
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| parse_error("cat-file", "closed"))?;
        writeln!(input, "{id}")
            .and_then(|()| input.flush())
            .map_err(|e| parse_error("cat-file", e.to_string()))?;
        let mut header = String::new();
        self.output
            .read_line(&mut header)
            .map_err(|e| parse_error("cat-file", e.to_string()))?;
        let mut fields = header.split_whitespace();
        let (Some(_), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(parse_error("cat-file", format!("{id}: {}", header.trim())));
        };
        let size: usize = size
            .parse()
            .map_err(|_| parse_error("cat-file", header.trim().to_string()))?;
        if kind != "blob" {
            return Err(parse_error("cat-file", format!("{id} is a {kind}")));
        }
        // The content, then the newline git puts after it.
        let mut content = vec![0; size + 1];
        self.output
            .read_exact(&mut content)
            .map_err(|e| parse_error("cat-file", e.to_string()))?;
        content.truncate(size);
        Ok(content)
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        // Closing its input ends cat-file; wait so no zombie is left.
        self.input.take();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_excludes_file_is_found_as_their_git_would() {
        let git = Path::new("git");
        let home = tempfile::tempdir().unwrap();
        let home_os = home.path().as_os_str();
        assert_eq!(user_excludes_file(git, Some(home_os), None), None);
        // The default place.
        let default = home.path().join(".config/git/ignore");
        std::fs::create_dir_all(default.parent().unwrap()).unwrap();
        std::fs::write(&default, "*.swp\n").unwrap();
        assert_eq!(user_excludes_file(git, Some(home_os), None), Some(default));
        // A configured file wins, `~` expanded.
        std::fs::write(home.path().join("my-ignore"), "*.bak\n").unwrap();
        std::fs::write(
            home.path().join(".gitconfig"),
            "[core]\n\texcludesFile = ~/my-ignore\n",
        )
        .unwrap();
        if std::env::var_os("GIT_CONFIG_GLOBAL").is_none() {
            assert_eq!(
                user_excludes_file(git, Some(home_os), None),
                Some(home.path().join("my-ignore"))
            );
        }
    }

    #[test]
    fn this_machines_git_is_new_enough_and_a_missing_one_is_named() {
        check_version(Path::new("git")).unwrap();
        let err = check_version(Path::new("/nonexistent/git")).unwrap_err();
        assert!(matches!(err, CheckpointError::GitNotFound { .. }), "{err}");
    }
}
