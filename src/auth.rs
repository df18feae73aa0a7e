//! `$CODING_AGENT_HOME/auth.toml`: what the first-run setup screen stored — API keys pasted
//! there, the model chosen, local servers entered by URL. Mode 0600, read at startup like the
//! environment's keys (an environment variable or the config wins over it).
//!
//! ```toml
//! model = "openai/gpt-5"
//! local_servers = ["http://127.0.0.1:8081", "http://127.0.0.1:9000"]
//! [keys]
//! openai = "sk-…"
//! [server_models]
//! "http://127.0.0.1:9000" = "my-model"
//! ```

use std::collections::BTreeMap;

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// The model the setup screen ended with, used when nothing else names one.
    pub model: Option<String>,
    /// Local servers entered by URL; probed with the usual ports.
    #[serde(default)]
    pub local_servers: Vec<String>,
    /// Provider name → API key.
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
    /// Server URL → the model the user named for it: a server that does not list its models.
    #[serde(default)]
    pub server_models: BTreeMap<String, String>,
}

impl Auth {
    pub fn path(home: &session::Home) -> PathBuf {
        home.root().join("auth.toml")
    }

    /// The stored file; none yet is empty. A file that does not parse is an error naming it.
    pub fn load(home: &session::Home) -> Result<Self, String> {
        let path = Self::path(home);
        match std::fs::read_to_string(&path) {
            // Only where and what: toml's full message quotes the line, which may be a key.
            Ok(text) => toml::from_str(&text).map_err(|e| {
                let line = e
                    .span()
                    .map_or(0, |span| text[..span.start].matches('\n').count() + 1);
                format!("{}: line {line}: {}", path.display(), e.message())
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Writes the file, readable by its owner only, replacing it whole (a crash leaves the
    /// old file or the new one, never half of one).
    pub fn save(&self, home: &session::Home) -> std::io::Result<PathBuf> {
        let path = Self::path(home);
        platform::fs::ensure_private_dir(home.root())?;
        platform::fs::write_private_atomic(&path, self.render().as_bytes())?;
        Ok(path)
    }

    fn render(&self) -> String {
        // A JSON string literal is a valid TOML basic string.
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let mut out = String::from("# Written by coding-agent's setup screen. Keep it private.\n");
        if let Some(model) = &self.model {
            out.push_str(&format!("model = {}\n", quote(model)));
        }
        if !self.local_servers.is_empty() {
            let urls: Vec<String> = self.local_servers.iter().map(|u| quote(u)).collect();
            out.push_str(&format!("local_servers = [{}]\n", urls.join(", ")));
        }
        out.push_str("[keys]\n");
        for (provider, key) in &self.keys {
            out.push_str(&format!("{} = {}\n", quote(provider), quote(key)));
        }
        if !self.server_models.is_empty() {
            out.push_str("[server_models]\n");
            for (url, model) in &self.server_models {
                out.push_str(&format!("{} = {}\n", quote(url), quote(model)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_files_read_back_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let home = session::Home::new(dir.path());
        assert_eq!(Auth::load(&home).unwrap(), Auth::default());
        let mut auth = Auth {
            model: Some("openai/gpt-5".into()),
            local_servers: vec!["http://127.0.0.1:8081".into()],
            ..Auth::default()
        };
        auth.keys.insert("openai".into(), "sk-\"odd\\key".into());
        auth.server_models
            .insert("http://127.0.0.1:9000".into(), "my-model".into());
        let path = auth.save(&home).unwrap();
        assert_eq!(Auth::load(&home).unwrap(), auth);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "keys = 3").unwrap();
        assert!(Auth::load(&home).unwrap_err().contains("auth.toml"));
        // A damaged file's error names the line, never quotes it (it may hold a key).
        std::fs::write(&path, "[keys]\nopenai = \"sk-secret-in-a-broken-line\n").unwrap();
        let err = Auth::load(&home).unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
    }
}
