//! Inline mode against a terminal emulator: what it writes is read by vt100, in-process.

use agent_core::{AgentEvent, AgentMessage};
use llm::{AssistantContent, AssistantMessage, StreamEvent};

use super::*;
use crate::backend::tests::Wire;
use crate::status::Status;

struct Rig {
    wire: Wire,
    terminal: vt100::Parser,
    inline: Inline,
    app: App,
    input: InputState,
}

impl Rig {
    fn new(width: u16, height: u16) -> Self {
        let wire = Wire::default();
        let out = Out::to(Box::new(wire.clone()), Size::new(width, height));
        let mut app = App::new(Status::default());
        app.inline = true;
        Self {
            terminal: vt100::Parser::new(
                height.try_into().unwrap(),
                width.try_into().unwrap(),
                100_000,
            ),
            inline: Inline::to(out, width, height).unwrap(),
            wire,
            app,
            input: InputState::default(),
        }
    }

    /// The terminal reads what was written. Never an erase of the whole screen, or of all of
    /// it from the top-left corner: tmux (`scroll-on-clear`) moves the screen into the
    /// scrollback first, which would keep a copy of the live region there.
    fn feed(&mut self) {
        let bytes = std::mem::take(&mut *self.wire.0.lock().unwrap());
        const BELOW: &[u8] = b"\x1b[J";
        assert!(
            !bytes.windows(4).any(|w| w == b"\x1b[2J"),
            "the whole screen erased"
        );
        let mut rest = &bytes[..];
        while let Some(at) = rest.windows(BELOW.len()).position(|w| w == BELOW) {
            self.terminal.process(&rest[..at]);
            assert_ne!(
                self.terminal.screen().cursor_position(),
                (0, 0),
                "erased from the top-left corner down"
            );
            rest = &rest[at..];
            self.terminal.process(&rest[..BELOW.len()]);
            rest = &rest[BELOW.len()..];
        }
        self.terminal.process(rest);
    }

    fn frame(&mut self) {
        self.frame_written();
    }

    /// Draws a frame; what it wrote to the terminal.
    fn frame_written(&mut self) -> String {
        self.inline.frame(&mut self.app, &mut self.input).unwrap();
        let bytes = self.wire.0.lock().unwrap().clone();
        self.feed();
        self.same_as_the_terminal();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The oracle: every row under the conversation is what `shown` says it is.
    fn same_as_the_terminal(&self) {
        let screen = self.terminal.screen();
        let width = self.inline.width;
        let shown = &self.inline.shown;
        assert_eq!(shown.area, self.inline.live_area());
        let terminal_rows: Vec<String> = screen.rows(0, width).collect();
        for y in self.inline.content..self.inline.height {
            assert_eq!(
                terminal_rows[usize::from(y)].trim_end(),
                row_text(shown, y).trim_end(),
                "row {y} differs from what the live region thinks it shows:\n{}",
                screen.contents()
            );
        }
    }

    /// Applies `events`, drawing a frame after every `every`-th, and once more at the end.
    fn stream(&mut self, events: &[AgentEvent], every: usize) {
        for (i, event) in events.iter().enumerate() {
            self.app.on_event(event);
            if i % every == 0 {
                self.frame();
            }
        }
        self.frame();
    }

    /// What the UI does on the way out (the editor emptied, the popup gone, every cell
    /// finished and printed, the live region removed); then everything the terminal holds.
    fn quit(&mut self) -> Vec<String> {
        self.app.editor.set_text("");
        self.input.popup = None;
        for cell in &mut self.app.cells {
            cell.finish();
        }
        self.inline.print_finished(&mut self.app).unwrap();
        self.frame();
        self.inline.finish(&mut self.app).unwrap();
        self.feed();
        self.history()
    }

    /// Every row the terminal holds, scrollback first, trailing blanks and the blank rows
    /// at either end left out.
    fn history(&mut self) -> Vec<String> {
        let (rows, cols) = self.terminal.screen().size();
        let (rows, cols) = (rows.get(), cols.get());
        let kept = self.terminal.screen().scrollback_len();
        let mut lines = Vec::new();
        for offset in (1..=kept).rev() {
            self.terminal.screen_mut().set_scrollback(offset);
            let top = self
                .terminal
                .screen()
                .rows(0, cols)
                .next()
                .unwrap_or_default();
            lines.push(top.trim_end().to_string());
        }
        self.terminal.screen_mut().set_scrollback(0);
        let screen = self.terminal.screen();
        lines.extend(
            screen
                .rows(0, cols)
                .take(usize::from(rows))
                .map(|r| r.trim_end().to_string()),
        );
        let first = lines.iter().position(|l| !l.is_empty()).unwrap_or(0);
        let last = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        lines[first..last].to_vec()
    }
}

/// The text of row `y` of `buf`, as a terminal shows it (a wide character's second cell
/// is not a character of its own).
pub(crate) fn row_text(buf: &Buffer, y: u16) -> String {
    let mut text = String::new();
    let mut x = buf.area.x;
    while x < buf.area.right() {
        let symbol = buf[(x, y)].symbol();
        text.push_str(symbol);
        x += symbol.width().max(1) as u16;
    }
    text
}

pub(crate) fn answer() -> String {
    let mut text = String::new();
    for i in 1..=12 {
        text.push_str(&format!(
            "Paragraph {i} explains a step with **bold** words and `code`, long enough to wrap.\n\n"
        ));
        if i % 4 == 0 {
            text.push_str("```rust\nfn step() -> u32 {\n    1 + 2\n}\n```\n\n- one\n- two\n\n");
        }
    }
    text + "The end."
}

/// A conversation's events: a prompt, then the answer in deltas of `chunk` characters.
fn events(chunk: usize) -> Vec<AgentEvent> {
    events_of(answer(), chunk)
}

/// A prompt, then `text` as the answer in deltas of `chunk` characters.
pub(crate) fn events_of(text: String, chunk: usize) -> Vec<AgentEvent> {
    let mut events = vec![
        AgentEvent::AgentStart,
        AgentEvent::MessageEnd {
            message: AgentMessage::user("tell me"),
        },
        AgentEvent::MessageStart {
            message: AgentMessage::Assistant(AssistantMessage::empty("m", "p")),
        },
    ];
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chunk) {
        events.push(AgentEvent::MessageUpdate {
            event: StreamEvent::TextDelta {
                index: 0,
                delta: piece.iter().collect(),
            },
        });
    }
    let mut message = AssistantMessage::empty("m", "p");
    message.content = vec![AssistantContent::Text { text }];
    events.push(AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(message),
    });
    events
}

/// The conversation as printing it all at once puts it in the terminal.
fn printed_at_once(events: &[AgentEvent], width: u16) -> Vec<String> {
    let mut app = App::new(Status::default());
    for event in events {
        app.on_event(event);
    }
    for cell in &mut app.cells {
        cell.finish();
    }
    let view = app.view(width);
    let lines = printed::take_finished(&mut app, view);
    let mut rows: Vec<String> = lines
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect();
    while rows.last().is_some_and(|l| l.is_empty()) {
        rows.pop();
    }
    rows
}

/// Streamed in small deltas with a frame every few of them, the live region keeps its copy
/// of the screen exact through every scroll and every row it leaves behind, and the
/// terminal ends up holding the same conversation as printing it at once.
#[test]
fn the_screen_holds_what_printing_at_once_would() {
    for (chunk, every) in [(3, 1), (7, 3), (40, 1), (400, 2)] {
        let mut rig = Rig::new(60, 14);
        rig.frame();
        let script = events(chunk);
        rig.stream(&script, every);
        assert_eq!(
            rig.quit(),
            printed_at_once(&script, 60),
            "deltas of {chunk}, a frame every {every}"
        );
    }
}

/// While a reply streams and scrolls the screen, the rows under it (here an editor holding a
/// draft) are moved on the terminal, not written again each frame.
#[test]
fn a_streaming_reply_moves_the_rows_under_it_instead_of_writing_them_again() {
    let mut rig = Rig::new(60, 14);
    rig.app.editor.set_text("QQQQQQQQ");
    rig.frame();
    let script = events(5);
    let mut rewritten = 0;
    for event in &script {
        rig.app.on_event(event);
        if rig.frame_written().contains("QQQQ") {
            rewritten += 1;
        }
    }
    assert!(script.len() > 200, "{} events", script.len());
    // Once more than at the start: when the spinner's row comes in under the reply.
    assert!(
        rewritten <= 1,
        "{rewritten} of {} frames wrote the editor again",
        script.len()
    );
    rig.app.editor.set_text("");
    assert_eq!(rig.quit(), printed_at_once(&script, 60));
}

/// A block taller than the live region (a list of 30 items on a 16-row screen) is printed
/// from its top while it streams, and once it ends. Printing from the screen's first row
/// erases the rows under it without treating the screen as cleared (the oracle in `feed`).
#[test]
fn a_block_taller_than_the_live_region_is_printed_once() {
    let items: String = (0..30).map(|i| format!("- item {i:02}\n")).collect();
    let script = events_of(format!("A list:\n\n{items}\nThe end."), 4);
    let mut rig = Rig::new(60, 16);
    rig.frame();
    rig.stream(&script, 2);
    let history = rig.quit();
    assert_eq!(history, printed_at_once(&script, 60));
    assert_eq!(
        history.iter().filter(|l| l.contains("item 07")).count(),
        1,
        "{history:#?}"
    );
}

/// Idle, the terminal's (hidden) cursor waits at the editor's caret, where an input method
/// opens its window; while the agent works, at the top of the live region, so a terminal that
/// shrinks drops the live region's rows rather than pushing them into the scrollback.
#[test]
fn the_cursor_waits_at_the_caret_when_idle_and_above_the_live_region_while_working() {
    let mut rig = Rig::new(60, 14);
    rig.app.editor.set_text("写一个函数");
    rig.frame();
    let screen = rig.terminal.screen();
    let row = screen
        .rows(0, 60)
        .position(|r| r.contains("写一个函数"))
        .expect("the editor's text is on the screen") as u16;
    // Inside the editor's border, after five characters two columns wide.
    assert_eq!(screen.cursor_position(), (row, 1 + 10));
    let script = events(40);
    rig.stream(&script[..6], 1);
    assert!(rig.app.running);
    assert_eq!(
        rig.terminal.screen().cursor_position(),
        (rig.inline.content, 0)
    );
}

/// A popup listing `n` choices ("choice 1" …).
pub(crate) fn choices(n: usize) -> crate::popup::Popup {
    crate::popup::Popup::choice(
        crate::action::ChoiceKind::Session,
        (1..=n)
            .map(|n| (format!("choice {n}"), String::new()))
            .collect(),
        0,
    )
}

/// The terminal shows the first and the last of the popup's `n` choices (nothing drawn over
/// it).
pub(crate) fn assert_choices_shown(terminal: &vt100::Parser, n: usize) {
    let screen = terminal.screen().contents();
    assert!(
        screen.contains("choice 1") && screen.contains(&format!("choice {n}")),
        "{screen}"
    );
}

/// The bottom of the live region changing mid-stream — a popup over the editor (room kept
/// above it), a queued message, a prompt of several lines being typed — keeps the copy of
/// the screen exact, and the conversation whole.
#[test]
fn the_bottom_changing_keeps_the_copy_of_the_screen_exact() {
    let mut rig = Rig::new(60, 16);
    for (i, event) in events(11).iter().enumerate() {
        rig.app.on_event(event);
        match i % 60 {
            5 => rig.input.popup = Some(choices(8)),
            20 => rig.input.popup = None,
            25 => rig.app.queue.push(crate::app::QueuedView {
                id: i as u64,
                kind: agent_core::QueueKind::FollowUp,
                text: "and then this".into(),
            }),
            35 => rig.app.editor.set_text("a prompt\nof three\nlines"),
            45 => {
                rig.app.queue.clear();
                rig.app.editor.set_text("");
            }
            _ => {}
        }
        rig.frame();
        if rig.input.popup.is_some() {
            // On top of the answer's rows in the live region.
            assert_choices_shown(&rig.terminal, 8);
        }
    }
    rig.app.queue.clear();
    assert_eq!(rig.quit(), printed_at_once(&events(11), 60));
}

/// A turn with tools: two calls run side by side, stream output, one asks for approval
/// (the question takes rows at the bottom), they finish out of order, and a second answer
/// streams. The copy of the screen stays exact and the conversation ends up whole, in order.
#[test]
fn tools_and_a_question_keep_the_copy_of_the_screen_exact() {
    use agent_core::{ApprovalDecision, ApprovalRequest, ToolOutput};
    let start = |id: &str| AgentEvent::ToolExecutionStart {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        arguments: serde_json::json!({"command": format!("run {id}")}),
    };
    let update = |id: &str, lines: usize| AgentEvent::ToolExecutionUpdate {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        partial: ToolOutput::text(
            (1..=lines)
                .map(|n| format!("{id} line {n}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    };
    let end = |id: &str| {
        let output = (1..=8).map(|n| format!("{id} line {n}\n")).collect();
        crate::printed::tests::bash_end(id, output)
    };
    let question = AgentEvent::ApprovalRequested {
        request: ApprovalRequest {
            id: 1,
            tool_call_id: "b".into(),
            tool_name: "bash".into(),
            subject: "run b".into(),
            reason: "runs outside the sandbox".into(),
            justification: Some("it needs the network".into()),
            diff: None,
            rule: None,
            subagent: None,
        },
    };
    let answered = AgentEvent::ApprovalDecided {
        id: 1,
        decision: ApprovalDecision::Approve,
    };
    let mut script = events(13);
    script.pop(); // the answer's end comes with the tools
    let mut first = AssistantMessage::empty("m", "p");
    first.content = vec![AssistantContent::Text { text: answer() }];
    script.push(AgentEvent::MessageEnd {
        message: AgentMessage::Assistant(first),
    });
    script.extend([start("a"), start("b"), update("a", 3), question.clone()]);
    script.extend([update("a", 6), answered.clone(), update("b", 2), end("b")]);
    script.extend([update("a", 8), end("a")]);
    script.extend(events(17).into_iter().skip(2));
    let expected = printed_at_once(&script, 60);
    assert!(
        expected.iter().any(|l| l.contains("run b")),
        "{expected:#?}"
    );
    for every in [1, 4] {
        let mut rig = Rig::new(60, 18);
        rig.stream(&script, every);
        assert_eq!(rig.quit(), expected, "a frame every {every}");
    }
}

/// Through resizes mid-stream, the copy of the screen stays exact.
#[test]
fn resizing_keeps_the_copy_of_the_screen_exact() {
    let mut rig = Rig::new(60, 14);
    for (i, event) in events(9).iter().enumerate() {
        rig.app.on_event(event);
        if i % 25 == 10 {
            let (width, height) = if i % 50 == 10 { (45, 12) } else { (70, 18) };
            rig.terminal
                .screen_mut()
                .set_size(height.try_into().unwrap(), width.try_into().unwrap());
            rig.inline.resize(width, height).unwrap();
            rig.feed();
        }
        rig.frame();
    }
}

/// A window being dragged sends many sizes between two frames. Nothing is written until the
/// frame, which prints the conversation again once, inside its synchronized update, and leaves
/// the screen as one resize straight to the last size does: with the height changing (the
/// whole screen printed again) and with only the width changing (the rows it showed).
#[test]
fn resizes_between_frames_are_printed_for_once_by_the_frame() {
    let drags: [&[(u16, u16)]; 2] = [
        &[(45, 12), (70, 18), (52, 15)],
        &[(45, 14), (70, 14), (52, 14)],
    ];
    for sizes in drags {
        let (width, height) = *sizes.last().unwrap();
        let mut dragged = Rig::new(60, 14);
        let mut direct = Rig::new(60, 14);
        for rig in [&mut dragged, &mut direct] {
            // Mid-answer: part of it is in the conversation, the rest in the live region.
            let script = events(9);
            rig.stream(&script[..script.len() / 2], 5);
        }
        for &(w, h) in sizes {
            let screen = dragged.terminal.screen_mut();
            screen.set_size(h.try_into().unwrap(), w.try_into().unwrap());
            dragged.inline.resize(w, h).unwrap();
        }
        assert!(
            dragged.wire.0.lock().unwrap().is_empty(),
            "written before the frame"
        );
        let written = dragged.frame_written();
        assert!(written.starts_with(SYNC_BEGIN), "{written:?}");
        // The reprint erases the top row, then everything under it.
        assert_eq!(written.matches("\x1b[1;1H\x1b[2K").count(), 1, "{sizes:?}");

        direct
            .terminal
            .screen_mut()
            .set_size(height.try_into().unwrap(), width.try_into().unwrap());
        direct.inline.resize(width, height).unwrap();
        direct.frame();
        // The spinner's frame follows the clock: two rigs drawn a tick apart (a loaded
        // machine) differ there and nowhere else.
        let still =
            |text: String| text.replace(['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'], "⠿");
        assert_eq!(
            still(dragged.terminal.screen().contents()),
            still(direct.terminal.screen().contents()),
            "{sizes:?}"
        );
    }
}

/// Ctrl+L: something else wrote over the conversation and the live region. The next frame
/// prints the rows of the conversation the screen showed and the live region again, where
/// they were: the terminal holds what it held before, and nothing goes into the scrollback
/// twice.
#[test]
fn a_repaint_prints_the_screen_again_and_nothing_twice() {
    let mut rig = Rig::new(60, 14);
    let script = events(9);
    rig.stream(&script[..script.len() / 2], 5);
    let before = rig.history();
    rig.terminal
        .process(b"\x1b[2;5Hsomething else\x1b[13;1H\x1b[2Kwrote here");
    assert_ne!(rig.history(), before);
    rig.inline.repaint();
    let written = rig.frame_written();
    assert!(written.starts_with(SYNC_BEGIN), "{written:?}");
    assert_eq!(rig.history(), before);
}

/// Lines printed as runs of text reach the terminal exactly as their cells would: the same
/// characters, styles and colours in every cell, and the same cells left unwritten (trailing
/// blanks). The plain lines (ASCII, box drawing, bullets) take the run path; the others fall
/// back to the cells.
#[test]
fn lines_written_as_runs_match_lines_written_as_cells() {
    use ratatui::style::{Style, Stylize};
    const WIDTH: u16 = 24;
    let lines: Vec<(Line<'static>, bool)> = vec![
        (Line::from("hello world   "), true),
        (
            Line::from(vec![
                Span::from("fn").bold(),
                Span::from(" x "),
                Span::from("y").red(),
                Span::from("   "),
            ]),
            true,
        ),
        (
            Line::from(vec![Span::from("cursor"), Span::from("  ").reversed()]),
            true,
        ),
        (
            Line::from(vec![Span::from("bg").on_blue(), Span::from(" ").on_blue()]),
            true,
        ),
        (
            Line::from(vec![Span::from("dim "), Span::from("not").bold()])
                .style(Style::new().cyan()),
            true,
        ),
        (
            Line::from(vec![
                Span::from("both").bold().italic(),
                Span::styled(" less", Style::new().remove_modifier(Modifier::BOLD)),
            ])
            .style(Style::new().fg(Color::Indexed(200))),
            true,
        ),
        (Line::from(""), true),
        (Line::from("    "), true),
        (Line::from("exactly twenty-four cols"), true),
        (
            Line::from(vec![
                Span::from("│ ").dark_gray(),
                Span::from("• it… › ┌─┐ ·  "),
            ]),
            true,
        ),
        (Line::from("• e\u{301} combining"), false),
        (Line::from("中文 and ascii"), false),
        (Line::from("tab\there"), false),
        (Line::from("this line is wider than the screen"), false),
        (Line::from("whole row").style(Style::new().on_blue()), false),
        (Line::from("right").right_aligned(), false),
    ];
    let height = lines.len() as u16;
    let screen = |runs: bool| {
        let wire = Wire::default();
        let mut out = Out::to(Box::new(wire.clone()), Size::new(WIDTH, height));
        let mut buffer = Buffer::empty(Rect::new(0, 0, WIDTH, 1));
        for (row, (line, plain)) in (0..).zip(&lines) {
            queue!(out, MoveTo(0, row), Clear(ClearType::UntilNewLine)).unwrap();
            let done = runs && write_runs(&mut out, line, WIDTH).unwrap();
            assert_eq!(done, runs && *plain, "{line:?}");
            if !done {
                write_cells(&mut out, &mut buffer, line).unwrap();
            }
        }
        Write::flush(&mut out).unwrap();
        let mut terminal =
            vt100::Parser::new(height.try_into().unwrap(), WIDTH.try_into().unwrap(), 0);
        terminal.process(&wire.0.lock().unwrap());
        terminal
    };
    let (runs, cells) = (screen(true), screen(false));
    for y in 0..height {
        for x in 0..WIDTH {
            let (a, b) = (
                runs.screen().cell(y, x).unwrap(),
                cells.screen().cell(y, x).unwrap(),
            );
            let at = format!("cell ({x}, {y}) of {:?}", lines[usize::from(y)].0);
            assert_eq!(a.contents(), b.contents(), "{at}");
            assert_eq!(a.has_contents(), b.has_contents(), "{at}");
            assert_eq!(
                (a.bold(), a.dim(), a.italic(), a.underline(), a.inverse()),
                (b.bold(), b.dim(), b.italic(), b.underline(), b.inverse()),
                "{at}"
            );
            assert_eq!(
                (a.fgcolor(), a.bgcolor()),
                (b.fgcolor(), b.bgcolor()),
                "{at}"
            );
        }
    }
    // What the cell path leaves unwritten, the run path does too: nothing after "world".
    assert!(!runs.screen().cell(0, 11).unwrap().has_contents());
    assert!(
        runs.screen().cell(2, 7).unwrap().has_contents(),
        "a reversed space shows"
    );
}

#[test]
fn the_text_a_screen_showed_is_found_at_another_width() {
    let lines = |rows: &[&str]| -> Vec<Line<'static>> {
        rows.iter().map(|r| Line::from(r.to_string())).collect()
    };
    // Narrower: the same words over more rows, bullets and blank rows not counted.
    let shown = lines(&["• two three", "  four", "", "five"]);
    let rows = lines(&["• one", "  two", "  three", "  four", "", "five"]);
    assert_eq!(same_text_from(&rows, &shown), 1);
    // Wider: the row the shown text starts in, even where it starts mid-row.
    let shown = lines(&["three", "four five"]);
    let rows = lines(&["one two three", "four five"]);
    assert_eq!(same_text_from(&rows, &shown), 0);
    let rows = lines(&["zero", "one two three", "four five"]);
    assert_eq!(same_text_from(&rows, &shown), 1);
    // Only rows without letters shown: as many rows.
    assert_eq!(same_text_from(&rows, &lines(&["", "───"])), 1);
    // More shown than there is: everything.
    assert_eq!(same_text_from(&lines(&["a"]), &lines(&["a b c"])), 0);
}

/// `count` turns: "Question i", and "Answer i, over two lines." (one row at 60 columns).
fn questions_and_answers(count: usize) -> Vec<AgentMessage> {
    (0..count)
        .flat_map(|i| {
            let mut answer = AssistantMessage::empty("m", "p");
            answer.content = vec![AssistantContent::Text {
                text: format!("Answer {i}, over\ntwo lines."),
            }];
            [
                AgentMessage::user(format!("Question {i}")),
                AgentMessage::Assistant(answer),
            ]
        })
        .collect()
}

/// A whole conversation to print at once (`/redraw` of a long session): a frame prints a
/// frame's worth of it and asks for the next, laying out only what it prints, until the
/// terminal holds all of it, in order, once.
#[test]
fn a_backlog_of_rows_is_printed_a_frame_at_a_time() {
    let messages = questions_and_answers(2_500);
    let mut whole = App::new(Status::default());
    whole.load_all(&messages);
    let view = whole.view(60);
    let all: Vec<String> = printed::take_finished(&mut whole, view)
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect();
    assert!(all.len() > 2 * printed::ROWS_A_FRAME, "{} rows", all.len());

    let mut rig = Rig::new(60, 14);
    rig.app.load_all(&messages);
    let mut frames = 0;
    loop {
        let written = rig.frame_written();
        frames += 1;
        let printed = written.matches("Question").count();
        // A frame's worth: whole cells, a few rows past the budget at most.
        assert!(
            printed * 4 <= printed::ROWS_A_FRAME + 8,
            "frame {frames} printed {printed} questions"
        );
        if !rig.inline.backlog() {
            break;
        }
        assert!(frames < 100, "the backlog never ends");
    }
    assert!(frames >= 3, "printed in {frames} frames");
    let mut held = rig.quit();
    while all.len() > held.len() && held.first().is_some_and(|l| l.is_empty()) {
        held.remove(0);
    }
    let mut all = all;
    while all.last().is_some_and(|l| l.is_empty()) {
        all.pop();
    }
    assert_eq!(held, all);
}

/// The terminal grows while it still reads rows printed for its old height (a window dragged
/// during a `/redraw`): every row is still in it, in order. Rows placed at the old height's
/// rows were written over the ones a taller screen no longer scrolled away.
#[test]
fn rows_read_by_a_terminal_grown_meanwhile_are_all_kept() {
    let messages = questions_and_answers(400);
    for (rows, cols) in [(20, 60), (30, 60), (20, 40), (10, 60), (8, 40)] {
        let mut rig = Rig::new(60, 14);
        rig.app.load_all(&messages);
        // The terminal has its new size before it reads the frame drawn for the old one.
        rig.terminal
            .screen_mut()
            .set_size(rows.try_into().unwrap(), cols.try_into().unwrap());
        rig.inline.frame(&mut rig.app, &mut rig.input).unwrap();
        rig.feed();
        rig.inline.resize(cols, rows).unwrap();
        let held = rig.quit();
        let mut from = 0;
        for i in 0..400 {
            for text in [format!("Question {i}"), format!("Answer {i}, over two")] {
                let at = held[from..]
                    .iter()
                    .position(|l| l.contains(&text))
                    .unwrap_or_else(|| {
                        panic!("{text:?} lost at {rows}×{cols}:\n{}", held.join("\n"))
                    });
                from += at + 1;
            }
        }
    }
}

/// With the transcript overlay open over a backlog, frames draw only the overlay: no frame is
/// due for the backlog (the runtime drew the overlay again every 16 ms) until it closes.
#[test]
fn a_backlog_waits_while_the_overlay_is_open() {
    let messages: Vec<AgentMessage> = (0..3_000)
        .flat_map(|i| {
            [
                AgentMessage::user(format!("Question {i}")),
                AgentMessage::user(format!("Question {i} again")),
            ]
        })
        .collect();
    let mut rig = Rig::new(60, 14);
    rig.app.load_all(&messages);
    rig.frame();
    assert!(rig.inline.backlog());
    let wire = Wire::default();
    let screen = Rect::new(0, 0, 60, 14);
    rig.inline.overlay = Some(
        Terminal::with_options(
            Out::to(Box::new(wire.clone()), screen.as_size()),
            TerminalOptions {
                viewport: Viewport::Fixed(screen),
            },
        )
        .unwrap(),
    );
    rig.inline.frame(&mut rig.app, &mut rig.input).unwrap();
    assert!(!rig.inline.backlog());
    assert!(!wire.0.lock().unwrap().is_empty(), "the overlay was drawn");
    rig.inline.overlay = None;
    assert!(rig.inline.backlog());
}
