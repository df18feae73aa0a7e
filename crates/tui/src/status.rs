//! The status line: model, thinking level, cwd, git branch, tokens, cost, context use.

use std::path::Path;

use llm::{ThinkingLevel, Usage};

#[derive(Debug, Clone, Default)]
pub struct Status {
    pub model: String,
    pub thinking: Option<ThinkingLevel>,
    pub cwd: String,
    pub branch: Option<String>,
    pub context_window: u64,
    /// Sums over the session.
    pub usage: Usage,
    /// Tokens the last request used (input + cached + output): how full the context is.
    pub context_tokens: u64,
}

impl Status {
    pub fn new(
        model: &str,
        thinking: Option<ThinkingLevel>,
        cwd: &Path,
        context_window: u64,
    ) -> Self {
        Self {
            model: model.to_string(),
            thinking,
            cwd: short_path(cwd),
            branch: git_branch(cwd),
            context_window,
            ..Self::default()
        }
    }

    pub fn add_usage(&mut self, usage: &Usage) {
        self.usage.add(usage);
        let used = usage.input + usage.cache_read + usage.cache_write + usage.output;
        if used > 0 {
            self.context_tokens = used;
        }
    }

    /// The line's segments, left to right.
    pub fn segments(&self) -> Vec<String> {
        let mut out = vec![self.model.clone()];
        if let Some(level) = self.thinking {
            out.push(format!("thinking {}", level_name(level)));
        }
        let mut place = self.cwd.clone();
        if let Some(branch) = &self.branch {
            place.push_str(&format!(" ({branch})"));
        }
        out.push(place);
        out.push(format!(
            "↑{} ↓{}",
            tokens(self.usage.input + self.usage.cache_read),
            tokens(self.usage.output)
        ));
        out.push(format!("${:.3}", self.usage.cost));
        if self.context_window > 0 {
            let percent = self.context_tokens as f64 * 100.0 / self.context_window as f64;
            out.push(format!("{percent:.0}% of {}", tokens(self.context_window)));
        }
        out
    }
}

/// The level as it is written in config and flags (`off`, `medium`, …).
pub fn level_name(level: ThinkingLevel) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn tokens(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// `~/…` for paths under the home directory.
fn short_path(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display())
            .trim_end_matches('/')
            .to_string();
    }
    path.display().to_string()
}

/// The branch named in `.git/HEAD` of the nearest repository, read once at start.
fn git_branch(cwd: &Path) -> Option<String> {
    let root = cwd.ancestors().find(|dir| dir.join(".git").exists())?;
    let head = std::fs::read_to_string(root.join(".git/HEAD")).ok()?;
    match head.trim().strip_prefix("ref: refs/heads/") {
        Some(branch) => Some(branch.to_string()),
        None => Some(head.trim().chars().take(8).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_tokens_cost_and_context() {
        let mut status = Status {
            model: "gpt-5".into(),
            thinking: Some(ThinkingLevel::High),
            cwd: "~/repo".into(),
            branch: Some("main".into()),
            context_window: 200_000,
            ..Status::default()
        };
        status.add_usage(&Usage {
            input: 1_500,
            output: 300,
            cache_read: 48_500,
            cache_write: 0,
            cost: 0.0123,
        });
        assert_eq!(
            status.segments(),
            [
                "gpt-5",
                "thinking high",
                "~/repo (main)",
                "↑50.0k ↓300",
                "$0.012",
                "25% of 200.0k"
            ]
        );
    }
}
