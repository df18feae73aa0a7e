//! The shell commands run in: bash where there is one (`/bin/bash`; on Windows Git Bash, as
//! Claude Code does), else the system's own (`/bin/sh`; PowerShell on Windows). The bash
//! tool, hooks and `!cmd` all run through it, and the tool's description and the system
//! prompt name it, so the model writes commands for the shell that will run them.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The kind of shell, which decides how a command line is passed and written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellKind {
    /// GNU bash (on Windows, Git for Windows' bash).
    Bash,
    /// A POSIX shell without bash.
    Posix,
    /// PowerShell (`pwsh` 7 or Windows PowerShell 5).
    PowerShell,
}

/// A shell found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shell {
    pub kind: ShellKind,
    pub program: PathBuf,
}

/// The variable that names Git Bash when it is somewhere the search does not look.
pub const GIT_BASH_VAR: &str = "CODING_AGENT_GIT_BASH";

impl Shell {
    /// The shell of this machine, found once.
    pub fn detect() -> &'static Shell {
        static SHELL: OnceLock<Shell> = OnceLock::new();
        SHELL.get_or_init(|| {
            let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
            find(cfg!(windows), &var, &|p: &Path| p.is_file())
        })
    }

    /// The arguments that run `command` with this shell: `-c command` for bash and sh;
    /// for PowerShell, no profile, no prompts, and the command (its output as UTF-8).
    pub fn args(&self, command: &str) -> Vec<OsString> {
        match self.kind {
            ShellKind::Bash | ShellKind::Posix => vec!["-c".into(), command.into()],
            ShellKind::PowerShell => vec![
                "-NoLogo".into(),
                "-NoProfile".into(),
                "-NonInteractive".into(),
                "-Command".into(),
                format!("[Console]::OutputEncoding = [Text.Encoding]::UTF8; {command}").into(),
            ],
        }
    }

    /// Its name for the model and the user: `bash`, `sh`, `Git Bash`, `PowerShell`.
    pub fn name(&self) -> &'static str {
        match (self.kind, cfg!(windows)) {
            (ShellKind::Bash, true) => "Git Bash",
            (ShellKind::Bash, false) => "bash",
            (ShellKind::Posix, _) => "sh",
            (ShellKind::PowerShell, _) => "PowerShell",
        }
    }
}

/// Finds the shell: `windows` says which system's rules apply, `var` reads the environment
/// and `exists` says whether a file exists (tests give their own).
pub fn find(
    windows: bool,
    var: &dyn Fn(&str) -> Option<OsString>,
    exists: &dyn Fn(&Path) -> bool,
) -> Shell {
    if !windows {
        return if exists(Path::new("/bin/bash")) {
            Shell {
                kind: ShellKind::Bash,
                program: "/bin/bash".into(),
            }
        } else {
            Shell {
                kind: ShellKind::Posix,
                program: "/bin/sh".into(),
            }
        };
    }
    if let Some(bash) = git_bash(var, exists) {
        return Shell {
            kind: ShellKind::Bash,
            program: bash,
        };
    }
    let pwsh = on_path(var, "pwsh.exe", exists)
        // The Microsoft Store's alias under WindowsApps has been seen to fail when run from
        // another program.
        .filter(|p| !p.to_string_lossy().contains("WindowsApps"));
    let program = pwsh.unwrap_or_else(|| {
        let root = var("SystemRoot").unwrap_or_else(|| OsString::from(r"C:\Windows"));
        PathBuf::from(root).join(r"System32\WindowsPowerShell\v1.0\powershell.exe")
    });
    Shell {
        kind: ShellKind::PowerShell,
        program,
    }
}

/// Git for Windows' bash: the variable [`GIT_BASH_VAR`], then beside the `git.exe` on the
/// `PATH` (`…\Git\cmd\git.exe` or `…\Git\mingw64\bin\git.exe` → `…\Git\bin\bash.exe`), then
/// the usual install places. Never `System32\bash.exe`, which is WSL's, nor `usr\bin\bash.exe`,
/// which runs without Git's `PATH`.
fn git_bash(
    var: &dyn Fn(&str) -> Option<OsString>,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if let Some(named) = var(GIT_BASH_VAR) {
        let named = PathBuf::from(named);
        if exists(&named) {
            return Some(named);
        }
    }
    let mut candidates = Vec::new();
    if let Some(git) = on_path(var, "git.exe", exists) {
        for root in git.ancestors().skip(2).take(2) {
            candidates.push(root.join("bin").join("bash.exe"));
        }
    }
    for (base, below) in [
        ("ProgramFiles", r"Git\bin\bash.exe"),
        ("ProgramFiles(x86)", r"Git\bin\bash.exe"),
        ("LOCALAPPDATA", r"Programs\Git\bin\bash.exe"),
    ] {
        if let Some(base) = var(base) {
            candidates.push(PathBuf::from(base).join(below));
        }
    }
    candidates.into_iter().find(|c| exists(c))
}

/// `name` in a directory of the `PATH`.
fn on_path(
    var: &dyn Fn(&str) -> Option<OsString>,
    name: &str,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let path = var("PATH")?;
    split_path(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| exists(candidate))
}

/// The directories of a Windows `PATH` (`;`-separated), on any system (tests).
fn split_path(path: &OsStr) -> impl Iterator<Item = PathBuf> + '_ {
    path.to_str()
        .unwrap_or_default()
        .split(';')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn find_with(env: &[(&str, &str)], files: &[&str]) -> Shell {
        let env: HashMap<String, OsString> = env
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let files: HashSet<PathBuf> = files.iter().map(PathBuf::from).collect();
        find(true, &|name| env.get(name).cloned(), &|p| files.contains(p))
    }

    fn joined(base: &str, below: &str) -> String {
        PathBuf::from(base)
            .join(below)
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn unix_runs_bash_or_sh() {
        let bash = find(false, &|_| None, &|p| p == Path::new("/bin/bash"));
        assert_eq!(bash.kind, ShellKind::Bash);
        assert_eq!(bash.args("ls"), ["-c", "ls"]);
        let sh = find(false, &|_| None, &|_| false);
        assert_eq!(sh.program, Path::new("/bin/sh"));
        assert_eq!(sh.kind, ShellKind::Posix);
    }

    #[test]
    fn git_bash_is_found_beside_git_on_the_path() {
        // Forward slashes separate on both systems, so the test means the same on each.
        let git_dir = "C:/Program Files/Git/cmd";
        let git = joined(git_dir, "git.exe");
        let bash = PathBuf::from(git_dir)
            .parent()
            .unwrap()
            .join("bin")
            .join("bash.exe");
        let shell = find_with(
            &[("PATH", &format!("C:/Windows/System32;{git_dir}"))],
            &[&git, bash.to_str().unwrap(), "C:/Windows/System32/bash.exe"],
        );
        assert_eq!(shell.kind, ShellKind::Bash);
        assert_eq!(shell.program, bash, "WSL's bash.exe is never taken");
    }

    #[test]
    fn git_bash_is_found_where_it_installs_and_where_the_user_says() {
        let installed = joined(r"C:\Users\me\AppData\Local", r"Programs\Git\bin\bash.exe");
        let shell = find_with(
            &[("LOCALAPPDATA", r"C:\Users\me\AppData\Local")],
            &[&installed],
        );
        assert_eq!(shell.program, PathBuf::from(&installed));
        let named = r"D:\tools\git\bin\bash.exe";
        let shell = find_with(
            &[
                (GIT_BASH_VAR, named),
                ("LOCALAPPDATA", r"C:\Users\me\AppData\Local"),
            ],
            &[&installed, named],
        );
        assert_eq!(shell.program, PathBuf::from(named));
    }

    #[test]
    fn without_git_bash_powershell_runs_commands() {
        let shell = find_with(&[("SystemRoot", r"C:\Windows")], &[]);
        assert_eq!(shell.kind, ShellKind::PowerShell);
        assert_eq!(
            shell.program,
            PathBuf::from(r"C:\Windows").join(r"System32\WindowsPowerShell\v1.0\powershell.exe")
        );
        let args = shell.args("Get-ChildItem");
        assert_eq!(
            args[..4],
            ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command"]
        );
        assert!(args[4].to_str().unwrap().ends_with("; Get-ChildItem"));
        // PowerShell 7 when it is on the PATH, but not the Store's alias.
        let pwsh = joined(r"C:\Program Files\PowerShell\7", "pwsh.exe");
        let shell = find_with(&[("PATH", r"C:\Program Files\PowerShell\7")], &[&pwsh]);
        assert_eq!(shell.program, PathBuf::from(&pwsh));
        let store = joined(
            r"C:\Users\me\AppData\Local\Microsoft\WindowsApps",
            "pwsh.exe",
        );
        let shell = find_with(
            &[("PATH", r"C:\Users\me\AppData\Local\Microsoft\WindowsApps")],
            &[&store],
        );
        assert!(shell.program.to_string_lossy().ends_with("powershell.exe"));
    }
}
