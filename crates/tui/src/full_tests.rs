//! Alternate-screen frames against a terminal emulator (vt100, in-process): after every frame
//! the terminal shows exactly what the frame drew, however the transcript moved.

use super::*;
use crate::backend::tests::Wire;
use crate::inline::tests::{answer, assert_choices_shown, choices, events_of, row_text};
use crate::status::Status;

struct Rig {
    wire: Wire,
    terminal: vt100::Parser,
    full: Full,
    app: App,
    input: InputState,
    /// Bytes written by the frames so far.
    written: usize,
    /// Frames that moved the transcript's rows on the terminal.
    moves: usize,
}

impl Rig {
    fn new(width: u16, height: u16) -> Self {
        let wire = Wire::default();
        let out = Out::to(Box::new(wire.clone()), Size::new(width, height));
        Self {
            terminal: vt100::Parser::new(height.try_into().unwrap(), width.try_into().unwrap(), 0),
            full: Full::to(out, width, height).unwrap(),
            wire,
            app: App::new(Status::default()),
            input: InputState::default(),
            written: 0,
            moves: 0,
        }
    }

    /// Draws a frame; the terminal must then show what it drew.
    fn frame(&mut self) {
        self.full.frame(&mut self.app, &mut self.input).unwrap();
        let bytes = std::mem::take(&mut *self.wire.0.lock().unwrap());
        self.written += bytes.len();
        // Only a move sets a scroll region, and resets it.
        if bytes.windows(3).any(|w| w == b"\x1b[r") {
            self.moves += 1;
        }
        self.terminal.process(&bytes);
        let screen = self.terminal.screen();
        let shown = &self.full.shown;
        let (width, height) = (shown.area.width, shown.area.height);
        let rows: Vec<String> = screen.rows(0, width).collect();
        for y in 0..height {
            assert_eq!(
                rows[usize::from(y)].trim_end(),
                row_text(shown, y).trim_end(),
                "row {y} differs from the frame:\n{}",
                screen.contents()
            );
        }
        // And the transcript's rows are the screen drawn whole, from nothing: a row left as
        // it was must still be what it should show (styles included). (The rows under it are
        // drawn whole every frame; the spinner there moves with each drawing.)
        let mut whole = Buffer::empty(shown.area);
        ui::draw_screen(&mut whole, shown.area, &mut self.app, &mut self.input);
        for y in 0..self.full.transcript.bottom() {
            let row = |buf: &Buffer| {
                buf.content[usize::from(y) * usize::from(width)..][..usize::from(width)].to_vec()
            };
            assert!(
                row(shown) == row(&whole),
                "row {y} is {:?}, drawn whole it is {:?}",
                row_text(shown, y),
                row_text(&whole, y)
            );
        }
    }
}

/// Streams the answer with a frame after every delta; `still` keeps the transcript from
/// being moved (each frame then writes every row that changed).
fn stream(still: bool) -> Rig {
    let mut rig = Rig::new(60, 16);
    rig.frame();
    for event in events_of(answer(), 6) {
        rig.app.on_event(&event);
        if still {
            rig.full.transcript = Rect::default();
        }
        rig.frame();
    }
    rig
}

#[test]
fn a_streaming_answer_moves_the_rows_and_writes_the_new_ones() {
    let moved = stream(false);
    let still = stream(true);
    assert!(moved.moves > 10, "moved {} times", moved.moves);
    assert_eq!(still.moves, 0);
    // What the frames write when the rows move is a fraction of writing them again.
    assert!(
        moved.written * 2 < still.written,
        "{} bytes moving rows, {} writing them",
        moved.written,
        still.written
    );
}

#[test]
fn scrolling_the_transcript_up_and_down_shows_the_right_rows() {
    let mut rig = stream(false);
    for scroll in [1, 2, 7, 3, 30, 0, 12, 11, 0] {
        rig.app.scroll.from_end(scroll);
        rig.frame();
    }
    assert!(rig.moves > 15, "moved {} times", rig.moves);
}

#[test]
fn a_resize_draws_the_whole_screen_again() {
    let mut rig = stream(false);
    rig.terminal
        .screen_mut()
        .set_size(20.try_into().unwrap(), 50.try_into().unwrap());
    rig.full.resize(50, 20).unwrap();
    rig.frame();
    rig.app.scroll.from_end(4);
    rig.frame();
}

/// Ctrl+L: something else wrote over the screen; the next frame draws all of it again (the
/// rig checks every row against the frame).
#[test]
fn a_repaint_draws_over_what_something_else_wrote() {
    let mut rig = stream(false);
    // The spinner turns with the clock: its glyph may differ by the next frame.
    let shown = |rig: &Rig| -> String {
        let contents = rig.terminal.screen().contents();
        let spinner = |c: char| ('\u{2800}'..='\u{28ff}').contains(&c);
        contents.replace(spinner, "*")
    };
    let before = shown(&rig);
    rig.terminal
        .process(b"\x1b[3;5Hsomething else\x1b[12;1H\x1b[2Kwrote here");
    rig.full.repaint();
    rig.frame();
    assert_eq!(shown(&rig), before);
}

/// A popup over a streaming transcript, the editor growing and shrinking under it, and the
/// transcript scrolled up (its hint over the last row) and back: every frame is the screen
/// drawn whole, and the popup is on top of the transcript's rows.
#[test]
fn a_popup_stays_on_top_of_a_streaming_transcript() {
    let mut rig = Rig::new(60, 16);
    rig.frame();
    for (i, event) in events_of(answer(), 6).iter().enumerate() {
        rig.app.on_event(event);
        match i % 50 {
            5 => rig.input.popup = Some(choices(6)),
            15 => rig.input.popup = None,
            20 => rig.app.editor.set_text("a prompt\nof three\nlines"),
            30 => rig.app.scroll.from_end(3),
            35 => rig.app.editor.set_text(""),
            40 => rig.app.scroll.end(),
            _ => {}
        }
        rig.frame();
        if rig.input.popup.is_some() {
            assert_choices_shown(&rig.terminal, 6);
        }
    }
}

/// Wide characters (CJK, emoji) moving over narrow ones and back as the transcript moves and
/// scrolls: the terminal shows each frame exactly.
#[test]
fn wide_characters_moving_over_narrow_ones_leave_nothing_behind() {
    let mut rig = Rig::new(40, 12);
    rig.frame();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!(
            "第{i}段：你的帮助和耐心的解答 👍 then ascii words {i}\n\n🎉 家族 and more\n\n"
        ));
    }
    for event in events_of(text, 7) {
        rig.app.on_event(&event);
        rig.frame();
    }
    for scroll in [1, 3, 2, 9, 0, 5, 0] {
        rig.app.scroll.from_end(scroll);
        rig.frame();
    }
}
