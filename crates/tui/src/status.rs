//! The status line: model, thinking level, cwd, git branch, tokens, cost, context use.

use std::path::Path;

use llm::{ThinkingLevel, Usage};
use unicode_width::UnicodeWidthStr;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    pub model: String,
    pub thinking: Option<ThinkingLevel>,
    pub cwd: String,
    pub branch: Option<String>,
    /// What confines commands (`sandbox: landlock+seccomp`); empty: not shown.
    pub sandbox: String,
    pub context_window: u64,
    /// Sums over the session.
    pub usage: Usage,
    /// Tokens the last request used (input + cached + output): how full the context is.
    pub context_tokens: u64,
    /// MCP servers `(ready, enabled)`; `None`: none configured, not shown.
    pub mcp: Option<(usize, usize)>,
    /// `context_tokens` is the agent's own estimate: the server reports no usage.
    pub context_estimated: bool,
    /// The working mode; shown (first, never left out) unless it is the default.
    pub mode: agent_core::Mode,
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
            self.context_estimated = false;
        }
    }

    /// The line's segments, left to right.
    pub fn segments(&self) -> Vec<String> {
        self.parts().into_iter().map(|(_, text)| text).collect()
    }

    fn parts(&self) -> Vec<(Part, String)> {
        let mut out = Vec::new();
        match self.mode {
            agent_core::Mode::Default => {}
            agent_core::Mode::AutoEdit => out.push((Part::Mode, "auto-edit".to_string())),
            agent_core::Mode::Plan => out.push((Part::Mode, "⏸ plan mode".to_string())),
        }
        out.push((Part::Model, self.model.clone()));
        if let Some(level) = self.thinking {
            out.push((Part::Thinking, format!("thinking {level}")));
        }
        if !self.sandbox.is_empty() {
            out.push((Part::Sandbox, self.sandbox.clone()));
        }
        let mut place = self.cwd.clone();
        if let Some(branch) = &self.branch {
            place.push_str(&format!(" ({branch})"));
        }
        out.push((Part::Place, place));
        if let Some((ready, enabled)) = self.mcp.filter(|(_, enabled)| *enabled > 0) {
            out.push((Part::Mcp, format!("mcp {ready}/{enabled}")));
        }
        out.push((
            Part::Tokens,
            format!(
                "↑{} ↓{}",
                tokens(self.usage.input + self.usage.cache_read),
                tokens(self.usage.output)
            ),
        ));
        out.push((Part::Cost, format!("${:.3}", self.usage.cost)));
        if self.context_window > 0 {
            let percent = self.context_tokens as f64 * 100.0 / self.context_window as f64;
            // An estimate says so: `~`.
            let about = if self.context_estimated { "~" } else { "" };
            out.push((
                Part::Context,
                format!("{about}{percent:.0}% of {}", window(self.context_window)),
            ));
        }
        out
    }

    /// The segments that fit in `width` columns. Segments are shortened, then left out
    /// whole, in [`FIT_STEPS`] order (README, "The status line") rather than a number cut in
    /// half; only the model name itself is ever cut.
    pub fn line(&self, width: usize) -> String {
        let mut parts = self.parts();
        let joined = |parts: &[(Part, String)]| {
            parts
                .iter()
                .map(|(_, text)| text.as_str())
                .collect::<Vec<_>>()
                .join(" · ")
        };
        for step in FIT_STEPS {
            if joined(&parts).width() <= width {
                break;
            }
            match step {
                Fit::Shorten(part) => {
                    for (p, text) in &mut parts {
                        if p == &part {
                            *text = self.short(part, text);
                        }
                    }
                }
                Fit::Drop(part) => parts.retain(|(p, _)| *p != part),
                Fit::DropSandboxIfConfined => {
                    if !self.sandbox.contains("none") {
                        parts.retain(|(p, _)| *p != Part::Sandbox);
                    }
                }
                Fit::DropCostIfFree => {
                    if self.usage.cost == 0.0 {
                        parts.retain(|(p, _)| *p != Part::Cost);
                    }
                }
                Fit::DropMcpIfReady => {
                    let ready = self.mcp.is_none_or(|(ready, enabled)| ready == enabled);
                    if ready {
                        parts.retain(|(p, _)| *p != Part::Mcp);
                    }
                }
            }
        }
        crate::wrap::truncate(&joined(&parts), width)
    }

    /// The short form of a segment.
    fn short(&self, part: Part, text: &str) -> String {
        match part {
            // That commands are confined is what counts; `/status` says by what. A line
            // saying nothing confines them stays whole.
            Part::Sandbox if !text.contains("none") => "sandboxed".into(),
            Part::Place => {
                let name = self.cwd.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/");
                match &self.branch {
                    Some(branch) => format!("{name} ({branch})"),
                    None => name.to_string(),
                }
            }
            Part::Context if self.context_window > 0 => {
                let percent = self.context_tokens as f64 * 100.0 / self.context_window as f64;
                let about = if self.context_estimated { "~" } else { "" };
                format!("ctx {about}{percent:.0}%")
            }
            _ => text.to_string(),
        }
    }
}

/// One step of fitting the status line to a narrow terminal.
#[derive(Debug, Clone, Copy)]
enum Fit {
    Shorten(Part),
    Drop(Part),
    /// The MCP count, while every server is ready (one still starting or failed stays).
    DropMcpIfReady,
    /// The cost, while nothing was spent (a local model).
    DropCostIfFree,
    /// What confines commands, unless nothing does (that warning outlasts the token counts).
    DropSandboxIfConfined,
}

/// How the status line narrows, first step first: shorter forms, then what matters least. The
/// token counts and the context share go last: they are what a long session is watched by.
const FIT_STEPS: [Fit; 13] = [
    Fit::Shorten(Part::Sandbox),
    Fit::DropCostIfFree,
    Fit::Shorten(Part::Place),
    Fit::Shorten(Part::Context),
    Fit::DropMcpIfReady,
    Fit::Drop(Part::Thinking),
    Fit::Drop(Part::Place),
    Fit::Drop(Part::Cost),
    Fit::Drop(Part::Mcp),
    Fit::DropSandboxIfConfined,
    Fit::Drop(Part::Tokens),
    Fit::Drop(Part::Sandbox),
    Fit::Drop(Part::Context),
];

/// The status line as last laid out, kept while neither the status nor the width changes:
/// laying it out again for every streaming frame was a visible share of the frame.
#[derive(Debug, Default)]
pub struct LineCache {
    laid_out: Option<(usize, Status, String)>,
}

impl LineCache {
    pub fn line(&mut self, status: &Status, width: usize) -> &str {
        let fresh = matches!(&self.laid_out, Some((w, s, _)) if *w == width && s == status);
        if !fresh {
            self.laid_out = Some((width, status.clone(), status.line(width)));
        }
        self.laid_out.as_ref().map_or("", |(_, _, text)| text)
    }
}

/// The segments of the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Mode,
    Model,
    Thinking,
    Sandbox,
    Place,
    Mcp,
    Tokens,
    Cost,
    Context,
}

/// The last run in one line: model calls and how they stopped, tool outcomes, tokens, cost.
pub fn run_summary(run: &agent_core::RunSummary) -> String {
    use agent_core::ToolOutcome::*;
    let calls = run.stop_reasons.len();
    let mut line = format!(
        "Last run: {calls} model call{}",
        if calls == 1 { "" } else { "s" }
    );
    if let Some(last) = run.stop_reasons.last() {
        line.push_str(&format!(" (last: {})", stop_name(*last)));
    }
    let outcomes: Vec<String> = [
        (Ok, "ok"),
        (Error, "failed"),
        (Skipped, "skipped"),
        (Blocked, "blocked"),
        (Aborted, "aborted"),
    ]
    .iter()
    .filter_map(|(outcome, name)| {
        let n = run.count(*outcome);
        (n > 0).then(|| format!("{n} {name}"))
    })
    .collect();
    if !outcomes.is_empty() {
        line.push_str(&format!(" · tools: {}", outcomes.join(", ")));
    }
    line.push_str(&format!(
        " · ↑{} ↓{} · ${:.4}",
        tokens(run.usage.input + run.usage.cache_read),
        tokens(run.usage.output),
        run.usage.cost
    ));
    line
}

fn stop_name(reason: llm::StopReason) -> &'static str {
    match reason {
        llm::StopReason::Stop => "finished",
        llm::StopReason::ToolUse => "tool use",
        llm::StopReason::Length => "cut off at the output limit",
        llm::StopReason::Error => "error",
        llm::StopReason::Aborted => "aborted",
    }
}

/// The model as the status line names it: a model on a local server with its server and the
/// window it really has (`ollama · qwen3:8b · 40k ctx`), since that differs per server and
/// per launch; a hosted model by its id.
pub fn model_label(model: &llm::Model) -> String {
    if llm::is_local_url(&model.base_url) {
        // llama.cpp names its model by the file's path: its name is what tells it apart.
        let name = model.id.rsplit('/').next().unwrap_or(&model.id);
        // A window the server did not say is marked as assumed.
        let assumed = if llm::local::window_assumed(model) {
            "?"
        } else {
            ""
        };
        format!(
            "{} · {name} · {} ctx{assumed}",
            model.provider,
            window(model.context_window)
        )
    } else {
        model.id.clone()
    }
}

/// A context window, written the same way wherever it is shown: a round number as one
/// ("200k", "1M"; providers size windows in thousands), a whole number of binary thousands as
/// those (local servers size theirs so: `num_ctx` 40960 is "40k"), anything else as
/// [`tokens`] writes counts.
pub fn window(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n if n >= 1_024 && n % 1_024 == 0 => format!("{}k", n / 1_024),
        n => tokens(n),
    }
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
    if let Some(home) = platform::fs::home_dir()
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
    fn the_kept_line_follows_the_status_and_the_width() {
        let mut status = Status {
            model: "gpt-5".into(),
            cwd: "~/repo".into(),
            context_window: 200_000,
            ..Status::default()
        };
        let mut cache = LineCache::default();
        assert_eq!(cache.line(&status, 80), status.line(80));
        status.add_usage(&Usage {
            input: 1_500,
            output: 20,
            cost: 0.25,
            ..Usage::default()
        });
        let line = cache.line(&status, 80).to_string();
        assert!(line.contains("$0.250"), "{line}");
        assert_eq!(line, status.line(80));
        status.model = "claude".into();
        assert_eq!(cache.line(&status, 80), status.line(80));
        assert_eq!(cache.line(&status, 20), status.line(20));
        assert_ne!(status.line(20), status.line(80));
    }

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
                "25% of 200k"
            ]
        );
    }

    #[test]
    fn a_local_models_window_reads_the_same_in_its_label_and_its_context_share() {
        let model = llm::Model {
            id: "qwen3:8b".into(),
            provider: "ollama".into(),
            api: llm::Api::OpenaiCompletions,
            base_url: "http://127.0.0.1:11434/v1".into(),
            context_window: 4_096,
            max_output: 1_024,
            reasoning: false,
            images: false,
            cost: llm::ModelCost::default(),
        };
        let status = Status {
            model: model_label(&model),
            context_window: model.context_window,
            ..Status::default()
        };
        let line = status.line(200);
        assert!(line.starts_with("ollama · qwen3:8b · 4k ctx"), "{line}");
        assert!(line.ends_with("0% of 4k"), "{line}");
        assert_eq!(window(131_072), "128k");
        assert_eq!(window(128_000), "128k");
        assert_eq!(window(1_000_000), "1M");
        assert_eq!(window(40_960), "40k");
        assert_eq!(window(100_500), "100.5k");
        assert_eq!(window(512), "512");
    }

    #[test]
    fn a_narrow_line_leaves_whole_segments_out_instead_of_cutting_a_number() {
        let status = Status {
            model: "gpt-5".into(),
            thinking: Some(ThinkingLevel::Medium),
            cwd: "~/src/project".into(),
            branch: Some("main".into()),
            context_window: 400_000,
            ..Status::default()
        };
        let full = status.segments().join(" · ");
        assert_eq!(status.line(200), full);
        // First what says nothing (a cost of nothing), then shorter forms.
        let narrow = status.line(full.chars().count() - 1);
        assert!(!narrow.contains('$'), "{narrow}");
        assert!(narrow.contains("· ~/src/project (main) ·"), "{narrow}");
        let narrower = status.line(narrow.chars().count() - 1);
        assert!(narrower.contains("· project (main) ·"), "{narrower}");
        assert!(narrower.ends_with("0% of 400k"), "{narrower}");
        assert_eq!(status.line(16), "gpt-5 · ctx 0%");
        assert_eq!(status.line(3), "gp…");
    }

    /// The order README gives, at the widths people use: the token counts stay longest, and
    /// the directory and branch show whenever there is room for them.
    #[test]
    fn the_line_narrows_in_the_documented_order() {
        let mut status = Status {
            model: "llama.cpp · smollm2 · 2k ctx".into(),
            thinking: Some(ThinkingLevel::Off),
            cwd: "~/src/project".into(),
            branch: Some("main".into()),
            sandbox: "sandbox: landlock+seccomp+mountns".into(),
            context_window: 2_048,
            ..Status::default()
        };
        status.add_usage(&Usage {
            input: 1_200,
            output: 300,
            cost: 0.0,
            ..Usage::default()
        });
        let at = |w: usize| status.line(w);
        assert_eq!(
            at(136),
            "llama.cpp · smollm2 · 2k ctx · thinking off · sandbox: landlock+seccomp+mountns · \
             ~/src/project (main) · ↑1.2k ↓300 · $0.000 · 73% of 2k"
        );
        // Shorter forms and what says nothing (no cost on a free model) go first.
        assert_eq!(
            at(100),
            "llama.cpp · smollm2 · 2k ctx · thinking off · sandboxed · project (main) · \
             ↑1.2k ↓300 · 73% of 2k"
        );
        assert_eq!(
            at(80),
            "llama.cpp · smollm2 · 2k ctx · sandboxed · project (main) · ↑1.2k ↓300 · ctx 73%"
        );
        assert_eq!(
            at(60),
            "llama.cpp · smollm2 · 2k ctx · ↑1.2k ↓300 · ctx 73%"
        );
        assert_eq!(at(50), "llama.cpp · smollm2 · 2k ctx · ctx 73%");
        // Nothing confines commands: that warning outlasts the token counts.
        status.sandbox = "sandbox: none".into();
        assert_eq!(
            status.line(60),
            "llama.cpp · smollm2 · 2k ctx · sandbox: none · ctx 73%"
        );
    }

    #[test]
    fn a_run_in_one_line() {
        let run = agent_core::RunSummary {
            stop_reasons: vec![llm::StopReason::ToolUse, llm::StopReason::Stop],
            tools: vec![
                agent_core::ToolRun {
                    id: "a".into(),
                    name: "bash".into(),
                    outcome: agent_core::ToolOutcome::Ok,
                },
                agent_core::ToolRun {
                    id: "b".into(),
                    name: "edit".into(),
                    outcome: agent_core::ToolOutcome::Skipped,
                },
            ],
            usage: Usage {
                input: 2_000,
                output: 100,
                ..Usage::default()
            },
            ..agent_core::RunSummary::default()
        };
        assert_eq!(
            run_summary(&run),
            "Last run: 2 model calls (last: finished) · tools: 1 ok, 1 skipped · ↑2.0k ↓100 · $0.0000"
        );
    }
}
