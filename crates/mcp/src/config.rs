//! `[mcp_servers.NAME]` in config.toml, in Codex's shape so users can paste theirs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// One server: a command to start (stdio) or a URL (streamable HTTP).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program of a stdio server.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to the server's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables of the agent's environment the server gets even when they are hidden from
    /// commands (provider keys); the rest is inherited anyway.
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// Where the server starts (default: the agent's working directory).
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable-HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request to `url`.
    #[serde(default, alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// Headers for `url` whose values come from environment variables (name → variable).
    #[serde(default)]
    pub env_http_headers: BTreeMap<String, String>,
    /// An environment variable holding a bearer token for `url`.
    #[serde(alias = "bearer_token_env_var")]
    pub bearer_token_env: Option<String>,
    /// Off: configured but not started (default on).
    pub enabled: Option<bool>,
    /// How long the server may take to start and list its tools (default 30 s).
    #[serde(alias = "startup_timeout_sec")]
    pub startup_timeout_secs: Option<f64>,
    /// How long one tool call may take (default 120 s).
    #[serde(alias = "tool_timeout_sec")]
    pub tool_timeout_secs: Option<f64>,
    /// A headless run (`-p`, JSON) fails when this server cannot start.
    #[serde(default)]
    pub required: bool,
    /// Only these tools are offered (default: all).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// Whether a stdio server runs in the sandbox commands run in (default on).
    pub sandbox: Option<bool>,
}

/// How a server is reached, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio { command: String, args: Vec<String> },
    Http { url: String },
}

impl ServerConfig {
    pub fn enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    pub fn startup_timeout(&self) -> Duration {
        secs(self.startup_timeout_secs, 30.0)
    }

    pub fn tool_timeout(&self) -> Duration {
        secs(self.tool_timeout_secs, 120.0)
    }

    pub fn sandboxed(&self) -> bool {
        self.sandbox != Some(false)
    }

    /// Exactly one of `command` and `url`.
    pub fn transport(&self) -> Result<Transport, String> {
        match (&self.command, &self.url) {
            (Some(command), None) if !command.trim().is_empty() => Ok(Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
            }),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Transport::Http { url: url.clone() })
            }
            (None, Some(url)) => Err(format!("`url` must be http:// or https://, not `{url}`")),
            (Some(_), Some(_)) => Err("set either `command` or `url`, not both".into()),
            _ => Err("set `command` (a stdio server) or `url` (streamable HTTP)".into()),
        }
    }

    /// Whether the server's tool `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name));
        allowed && !self.disabled_tools.iter().any(|n| n == name)
    }
}

fn secs(value: Option<f64>, default: f64) -> Duration {
    let value = value
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(value.min(86_400.0))
}

/// A server name as tools carry it: `mcp__NAME__tool` must stay a valid tool name for every
/// provider (letters, digits, `_`, `-`).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.contains("__")
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "MCP server name `{name}`: use letters, digits, `-` and single `_` only"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_shaped_entries_parse() {
        // Codex's own key names are accepted too.
        let codex: ServerConfig = serde_json::from_str(
            r#"{"url": "http://127.0.0.1:1/mcp", "bearer_token_env_var": "T",
                "startup_timeout_sec": 20, "tool_timeout_sec": 60, "required": true,
                "http_headers": {"X-A": "1"}, "env_http_headers": {"X-B": "B_VAR"}}"#,
        )
        .unwrap();
        assert_eq!(codex.bearer_token_env.as_deref(), Some("T"));
        assert_eq!(codex.startup_timeout(), Duration::from_secs(20));
        assert_eq!(codex.tool_timeout(), Duration::from_secs(60));
        assert!(codex.required && codex.headers["X-A"] == "1");
        let servers: BTreeMap<String, ServerConfig> = toml_like(
            r#"{
                "docs": {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"A": "1"},
                         "startup_timeout_secs": 5, "disabled_tools": ["drop"]},
                "remote": {"url": "https://example.invalid/mcp", "bearer_token_env": "TOKEN",
                           "enabled": false}
            }"#,
        );
        let docs = &servers["docs"];
        assert_eq!(
            docs.transport().unwrap(),
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "docs-mcp".into()]
            }
        );
        assert_eq!(docs.startup_timeout(), Duration::from_secs(5));
        assert_eq!(docs.tool_timeout(), Duration::from_secs(120));
        assert!(docs.offers("search") && !docs.offers("drop"));
        assert!(!servers["remote"].enabled());
        assert!(matches!(
            servers["remote"].transport(),
            Ok(Transport::Http { .. })
        ));
    }

    #[test]
    fn bad_entries_say_why() {
        let both = ServerConfig {
            command: Some("x".into()),
            url: Some("http://x".into()),
            ..ServerConfig::default()
        };
        assert!(both.transport().unwrap_err().contains("not both"));
        assert!(ServerConfig::default().transport().is_err());
        assert!(check_name("a__b").is_err());
        assert!(check_name("git-hub_2").is_ok());
        let only = ServerConfig {
            enabled_tools: Some(vec!["a".into()]),
            ..ServerConfig::default()
        };
        assert!(only.offers("a") && !only.offers("b"));
    }

    fn toml_like(json: &str) -> BTreeMap<String, ServerConfig> {
        serde_json::from_str(json).unwrap()
    }
}
