//! A hook run as one line of the transcript: a hook the user configured must never run —
//! or fail — unseen, but it must not crowd the conversation either.

use agent_core::{HookOutcome, HookRun};

use crate::cells::CellKind;

/// The cell for `run`: a notice when it went as the hook meant, an error when it failed.
pub fn hook_cell(run: &HookRun) -> CellKind {
    let what = match run.outcome {
        HookOutcome::Ok => "ran",
        HookOutcome::Rewrote => "rewrote the call",
        HookOutcome::Blocked => "blocked",
        HookOutcome::Warning => "warning",
        HookOutcome::TimedOut => "timed out",
        HookOutcome::Failed => "failed",
    };
    let command = one_line(&run.command, 60);
    let mut line = format!(
        "hook {} {what} ({} ms) · {command}",
        run.event, run.duration_ms
    );
    if let Some(message) = &run.message {
        line.push_str(" — ");
        line.push_str(&one_line(message, 200));
    }
    match run.outcome {
        HookOutcome::Ok | HookOutcome::Rewrote | HookOutcome::Blocked => CellKind::Notice(line),
        HookOutcome::Warning | HookOutcome::TimedOut | HookOutcome::Failed => CellKind::Error(line),
    }
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None if text.lines().nth(1).is_some() => format!("{line}…"),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_run_is_one_compact_line() {
        let run = HookRun {
            event: "pre_tool_use".into(),
            command: "./guard.sh".into(),
            outcome: HookOutcome::Blocked,
            duration_ms: 12,
            tool_call_id: Some("c1".into()),
            message: Some("no rm -rf\nsecond line".into()),
        };
        assert!(matches!(
            hook_cell(&run),
            CellKind::Notice(line)
                if line == "hook pre_tool_use blocked (12 ms) · ./guard.sh — no rm -rf…"
        ));
        let slow = HookRun {
            outcome: HookOutcome::TimedOut,
            ..run
        };
        assert!(matches!(hook_cell(&slow), CellKind::Error(line) if line.contains("timed out")));
    }
}
