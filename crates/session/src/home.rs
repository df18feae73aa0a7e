//! The home directory: `$CODING_AGENT_HOME`, default `~/.coding-agent`.

use std::path::{Path, PathBuf};

/// Where config, global instructions and sessions live. Everything that reads or writes there
/// takes a `Home`, so tests point it at a temporary directory without touching the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `$CODING_AGENT_HOME` if set and not empty, else `~/.coding-agent`; `None` when neither
    /// that variable nor `$HOME` is known.
    pub fn from_env() -> Option<Self> {
        Self::resolve(
            std::env::var_os("CODING_AGENT_HOME"),
            platform::fs::home_dir().map(PathBuf::into_os_string),
        )
    }

    fn resolve(
        explicit: Option<std::ffi::OsString>,
        user_home: Option<std::ffi::OsString>,
    ) -> Option<Self> {
        match explicit.filter(|v| !v.is_empty()) {
            Some(root) => Some(Self::new(root)),
            None => user_home
                .filter(|v| !v.is_empty())
                .map(|home| Self::new(PathBuf::from(home).join(".coding-agent"))),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// The directory holding the sessions of one working directory.
    pub fn sessions_dir_for(&self, cwd: &Path) -> PathBuf {
        self.sessions_dir()
            .join(crate::ids::cwd_slug(&cwd.to_string_lossy()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_home_wins_and_default_is_dot_dir() {
        let home = Home::resolve(Some("/x/h".into()), Some("/users/me".into())).unwrap();
        assert_eq!(home.root(), Path::new("/x/h"));
        let home = Home::resolve(Some("".into()), Some("/users/me".into())).unwrap();
        assert_eq!(home.root(), Path::new("/users/me/.coding-agent"));
        assert_eq!(Home::resolve(None, None), None);
        assert_eq!(
            home.config_file(),
            Path::new("/users/me/.coding-agent/config.toml")
        );
    }
}
