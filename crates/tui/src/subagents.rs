//! The subagents the TUI has seen: each one's transcript, built from its events the way the
//! main one is, and which one is on screen (Ctrl+G). The main view shows each running child
//! as a line under its `task` call; this is the closer look, where typing steers that child
//! and Esc stops it alone.

use agent_core::{AgentEvent, SubagentRef};
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::cells::View;
use crate::status::Status;

/// Rows the viewed child's transcript takes above the editor (its title included).
pub const VIEW_ROWS: usize = 14;

/// Finished children whose transcripts are kept (the oldest go first).
const KEPT_FINISHED: usize = 8;

pub struct SubagentView {
    pub subagent: SubagentRef,
    /// Its transcript, from its own events.
    pub app: Box<App>,
    pub running: bool,
}

#[derive(Default)]
pub struct Subagents {
    list: Vec<SubagentView>,
    /// The child on screen, by index into `list`.
    viewing: Option<usize>,
}

impl Subagents {
    /// One event of `subagent` (the wrapped event, as it sent it).
    pub fn on_event(&mut self, subagent: &SubagentRef, event: &AgentEvent) {
        let i = match self.list.iter().position(|v| v.subagent.id == subagent.id) {
            Some(i) => i,
            None => {
                self.forget_old();
                let mut app = App::new(Status::default());
                app.inline = true;
                self.list.push(SubagentView {
                    subagent: subagent.clone(),
                    app: Box::new(app),
                    running: false,
                });
                self.list.len() - 1
            }
        };
        let view = &mut self.list[i];
        match event {
            AgentEvent::AgentStart => view.running = true,
            AgentEvent::AgentEnd { .. } => view.running = false,
            _ => {}
        }
        // What it would ask of a runtime (a plan choice, say) is not this screen's to do.
        let _ = view.app.on_event(event);
    }

    /// Drops the oldest finished children beyond [`KEPT_FINISHED`] (never the one shown).
    fn forget_old(&mut self) {
        let finished = self.list.iter().filter(|v| !v.running).count();
        if finished < KEPT_FINISHED {
            return;
        }
        if let Some(i) = self
            .list
            .iter()
            .enumerate()
            .position(|(i, v)| !v.running && Some(i) != self.viewing)
        {
            self.list.remove(i);
            self.viewing = self.viewing.map(|v| if v > i { v - 1 } else { v });
        }
    }

    /// Ctrl+G: the next child, running ones first; after the last, back to the main view.
    /// Returns the child now shown.
    pub fn cycle(&mut self) -> Option<&SubagentRef> {
        let mut order: Vec<usize> = (0..self.list.len())
            .filter(|&i| self.list[i].running)
            .collect();
        order.extend(
            (0..self.list.len())
                .rev()
                .filter(|&i| !self.list[i].running),
        );
        self.viewing = match self
            .viewing
            .and_then(|v| order.iter().position(|&i| i == v))
        {
            None => order.first().copied(),
            Some(at) => order.get(at + 1).copied(),
        };
        self.viewed()
    }

    /// The child on screen.
    pub fn viewed(&self) -> Option<&SubagentRef> {
        self.viewing.map(|i| &self.list[i].subagent)
    }

    /// Whether the child on screen still runs.
    pub fn viewed_running(&self) -> bool {
        self.viewing.is_some_and(|i| self.list[i].running)
    }

    /// Back to the main view.
    pub fn close(&mut self) {
        self.viewing = None;
    }

    /// How many children run now.
    pub fn running(&self) -> usize {
        self.list.iter().filter(|v| v.running).count()
    }

    /// The viewed child's rows: a title, then the end of its transcript.
    pub fn lines(&mut self, width: u16) -> Vec<Line<'static>> {
        let Some(i) = self.viewing else {
            return Vec::new();
        };
        let palette = crate::theme::palette();
        let view = &mut self.list[i];
        // What the keys do here: a finished child can only be closed.
        let keys = if view.running {
            "(running) · Enter steers it · Esc stops it"
        } else {
            "(finished) · Esc closes it"
        };
        let title = format!("── subagent {} {keys} · Ctrl+G next ", view.subagent.id);
        let mut out = vec![Line::from(Span::styled(
            crate::wrap::truncate(&title, usize::from(width)),
            palette.accent,
        ))];
        let room = VIEW_ROWS - 1;
        let cell_view = View {
            width,
            expand_tools: false,
            show_thinking: false,
        };
        // Only the rows shown are copied, from the end: a long answer costs no more per frame
        // than a short one.
        let mut tail: Vec<Line<'static>> = Vec::new();
        for cell in view.app.cells.iter_mut().rev() {
            let wanted = room - tail.len();
            tail.extend(cell.rows(cell_view).iter().rev().take(wanted).cloned());
            if tail.len() >= room {
                break;
            }
            tail.push(Line::default());
        }
        tail.reverse();
        out.extend(tail);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::AgentMessage;

    fn child(id: &str) -> SubagentRef {
        SubagentRef {
            id: id.into(),
            name: "explore".into(),
        }
    }

    #[test]
    fn ctrl_g_visits_running_children_first_then_returns_to_the_main_view() {
        let mut subagents = Subagents::default();
        for id in ["explore-1", "explore-2"] {
            subagents.on_event(&child(id), &AgentEvent::AgentStart);
        }
        subagents.on_event(
            &child("explore-1"),
            &AgentEvent::MessageEnd {
                message: AgentMessage::user("find the parser"),
            },
        );
        assert_eq!(subagents.running(), 2);
        assert_eq!(subagents.cycle().unwrap().id, "explore-1");
        let shown: Vec<String> = subagents.lines(60).iter().map(|l| l.to_string()).collect();
        assert!(
            shown[0].contains("subagent explore-1 (running)"),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|l| l.contains("find the parser")),
            "{shown:?}"
        );
        assert_eq!(subagents.cycle().unwrap().id, "explore-2");
        subagents.on_event(
            &child("explore-2"),
            &AgentEvent::AgentEnd {
                messages: Vec::new(),
                summary: agent_core::RunSummary::default(),
            },
        );
        let title = subagents.lines(80)[0].to_string();
        assert!(
            title.contains("explore-2 (finished) · Esc closes it"),
            "{title}"
        );
        assert!(subagents.cycle().is_none(), "back to the main view");
        assert!(subagents.lines(60).is_empty());
    }

    /// A child's streaming delta redraws nothing unless that child is on screen.
    #[test]
    fn a_hidden_childs_deltas_leave_the_screen_alone() {
        let mut app = App::new(Status::default());
        let delta = AgentEvent::Subagent {
            subagent: child("explore-1"),
            event: Box::new(AgentEvent::MessageUpdate {
                event: llm::StreamEvent::Start,
            }),
        };
        let start = AgentEvent::Subagent {
            subagent: child("explore-1"),
            event: Box::new(AgentEvent::AgentStart),
        };
        app.on_event(&start);
        assert!(
            app.dirty,
            "a settled event of a child is drawn (its count, its end)"
        );
        app.dirty = false;
        app.on_event(&delta);
        assert!(!app.dirty);
        app.subagents.cycle();
        app.on_event(&delta);
        assert!(app.dirty, "the child on screen streams");
    }
}
