//! Drawing: places the lines the cells and the state produce. Only visible rows are built.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use agent_core::QueueKind;

use crate::app::App;
use crate::cells::View;
use crate::input::InputState;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const MAX_QUEUE_ROWS: usize = 4;

/// The rows under the transcript: spinner, question, queue, editor, status line.
pub struct Bottom {
    live: u16,
    question: Option<Vec<Line<'static>>>,
    question_rows: u16,
    queue: u16,
    /// The pinned checklist (`update_plan`), while a step is left.
    checklist: Vec<Line<'static>>,
    /// The subagent on screen (Ctrl+G): its transcript's end.
    subagent: Vec<Line<'static>>,
    editor: u16,
    width: u16,
}

impl Bottom {
    /// Laid out for a screen of `width` × `height`.
    pub fn new(app: &mut App, input: &InputState, width: u16, height: u16) -> Self {
        let question = app.approvals.first().map(|request| {
            crate::cells::approval::question_lines(request, app.approvals.len(), usize::from(width))
        });
        // The question never takes more than half the screen.
        let question_rows = question
            .as_ref()
            .map_or(0, |lines| (lines.len() as u16 + 1).min(height / 2));
        Self {
            live: u16::from(app.running || input.hint().is_some()),
            question,
            question_rows,
            queue: app.queue.len().min(MAX_QUEUE_ROWS) as u16,
            subagent: app.subagents.lines(width),
            checklist: app
                .checklist
                .as_ref()
                .map(|list| crate::modes::checklist_lines(list, usize::from(width)))
                .unwrap_or_default(),
            // Inside its borders.
            editor: app.editor.height(width.saturating_sub(2)) + 2,
            width,
        }
    }

    pub fn height(&self) -> u16 {
        self.live
            + self.question_rows
            + self.queue
            + self.checklist.len() as u16
            + self.subagent.len() as u16
            + self.editor
            + 1
    }

    /// Rows a popup needs above the editor beyond the ones under the transcript.
    pub fn popup_room(&self, input: &InputState) -> u16 {
        let above = self.live
            + self.question_rows
            + self.queue
            + self.checklist.len() as u16
            + self.subagent.len() as u16;
        input
            .popup
            .as_ref()
            .map_or(0, |p| popup_height(p, self.width).saturating_sub(above))
    }
}

/// The whole screen (alternate-screen mode): the transcript scrolled in the app, the rest below.
pub fn draw(frame: &mut Frame<'_>, app: &mut App, input: &mut InputState) {
    let area = frame.area();
    draw_screen(frame.buffer_mut(), area, app, input);
}

/// [`draw`] into `buf`; returns where the transcript is.
pub fn draw_screen(buf: &mut Buffer, area: Rect, app: &mut App, input: &mut InputState) -> Rect {
    let bottom = Bottom::new(app, input, area.width, area.height);
    let (transcript, editor, _) = draw_bottom(buf, app, input, bottom, area);
    input.page = usize::from(transcript.height);
    draw_transcript(buf, app, transcript, app.view(transcript.width));
    // Last: it covers the transcript's rows above the editor.
    if let Some(popup) = &input.popup {
        draw_popup(buf, popup, editor, area.y);
    }
    transcript
}

/// The live region of inline mode, drawn into `buf` at `area`: what of the transcript is not
/// in the scrollback yet (its last rows), then the rest, laid out as `bottom` (for the whole
/// screen). The area was sized for it. Returns how many blank rows come before the transcript's
/// first one (the room a popup needs that the transcript does not fill), and where the
/// editor's caret is.
pub fn draw_live(
    buf: &mut Buffer,
    area: Rect,
    app: &mut App,
    input: &mut InputState,
    bottom: Bottom,
    transcript: &[Line<'static>],
) -> (u16, Option<Position>) {
    let (above, editor, caret) = draw_bottom(buf, app, input, bottom, area);
    let skip = transcript.len().saturating_sub(usize::from(above.height));
    let rows = &transcript[skip..];
    // Rows left over (room kept for a popup) go above, so the text stays next to the editor.
    let pad = above.height - rows.len() as u16;
    for (row, line) in (above.y + pad..).zip(rows) {
        render_line(line, Rect::new(above.x, row, above.width, 1), buf);
    }
    // Last: it covers the rows above the editor.
    if let Some(popup) = &input.popup {
        draw_popup(buf, popup, editor, area.y);
    }
    (pad, caret)
}

/// The full-screen transcript (Ctrl+O in inline mode): everything, tool output whole,
/// thinking shown.
pub fn draw_overlay(frame: &mut Frame<'_>, app: &mut App, input: &mut InputState) {
    let area = frame.area();
    let [transcript, footer] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    input.page = usize::from(transcript.height);
    let view = View {
        width: transcript.width,
        expand_tools: true,
        show_thinking: true,
    };
    draw_transcript(frame.buffer_mut(), app, transcript, view);
    frame.render_widget(
        Paragraph::new(Line::styled(
            " transcript · ↑↓ PgUp PgDn Home End scroll · esc, q or ctrl+o returns",
            crate::theme::palette().selected,
        )),
        footer,
    );
}

/// Draws everything under the transcript (a popup is the caller's, drawn over the rest);
/// returns the area left for the transcript, the editor's, and where the editor's caret is
/// (when the editor shows it).
fn draw_bottom(
    buf: &mut Buffer,
    app: &mut App,
    input: &mut InputState,
    bottom: Bottom,
    area: Rect,
) -> (Rect, Rect, Option<Position>) {
    // Stacked from the bottom up by hand: ratatui's layout solver, run every frame, was a
    // sixth of this function. On a screen too short for all of it the rows nearest the bottom
    // win.
    let mut top = area.bottom();
    let mut take = |rows: u16| {
        let rows = rows.min(top - area.y);
        top -= rows;
        Rect::new(area.x, top, area.width, rows)
    };
    let status = take(1);
    let editor = take(bottom.editor);
    let queue = take(bottom.queue);
    let checklist = take(bottom.checklist.len() as u16);
    let subagent = take(bottom.subagent.len() as u16);
    let asking = take(bottom.question_rows);
    let live = take(bottom.live);
    let transcript = Rect::new(area.x, area.y, area.width, top - area.y);
    draw_live_line(buf, app, input, live);
    if let Some(mut lines) = bottom.question {
        // Too tall: the middle (the diff) gives way, the keys that answer stay.
        let room = usize::from(asking.height).saturating_sub(1);
        if lines.len() > room && room >= 2 {
            let keys = lines.split_off(lines.len() - 1);
            lines.truncate(room - 1);
            lines.extend(keys);
        }
        // A blank row above sets it apart from the transcript.
        let mut rows = vec![Line::default()];
        rows.extend(lines);
        Paragraph::new(rows).render(asking, buf);
    }
    draw_queue(buf, app, queue);
    Paragraph::new(bottom.checklist).render(checklist, buf);
    Paragraph::new(bottom.subagent).render(subagent, buf);
    let caret = draw_editor(buf, app, editor);
    draw_status(buf, app, status);
    (transcript, editor, caret)
}

fn draw_transcript(buf: &mut Buffer, app: &mut App, area: Rect, view: View) {
    let height = usize::from(area.height);
    // Held by a cell and a row in it: only the cells moved over and shown are laid out
    // (see `scroll`); following the output, only the visible ones.
    let held = app.scroll.settle(&mut app.cells, view, height);
    // The cells up to the one at the view's bottom, and its rows under the view.
    let (shown, mut skip) = match &held {
        Some(held) => {
            let cell = held.bottom.cell;
            let block = app.cells[cell].height(view) + 1;
            (cell + 1, block - 1 - held.bottom.row)
        }
        None => (app.cells.len(), 0),
    };

    // Filled from the bottom up, each row drawn straight from its cell (short transcripts sit
    // at the bottom, next to the editor).
    let mut row = area.bottom();
    let mut first = shown;
    for index in (0..shown).rev() {
        if row == area.y {
            break;
        }
        first = index;
        let rows = app.cells[index].rows(view);
        // The blank separator sits below each cell.
        let separator = Line::default();
        let lines = rows
            .iter()
            .chain(std::iter::once(&separator))
            .rev()
            .skip(skip);
        skip = 0;
        for line in lines {
            if row == area.y {
                break;
            }
            row -= 1;
            render_line(line, Rect::new(area.x, row, area.width, 1), buf);
        }
    }
    // Following the end too: cells that scrolled away, done long ago, drop their rows.
    app.scroll.drawn(&mut app.cells, first..shown, view);
    if let Some(held) = held.filter(|h| h.below > 0) {
        let more = if held.more_below { "+" } else { "" };
        let hint = format!(" ↓ {}{more} more lines (End) ", held.below);
        let width = hint.chars().count() as u16;
        let at = Rect::new(
            area.right().saturating_sub(width),
            area.bottom().saturating_sub(1),
            width.min(area.width),
            1,
        );
        Paragraph::new(hint)
            .style(crate::theme::palette().banner)
            .render(at, buf);
    }
}

fn draw_live_line(buf: &mut Buffer, app: &App, input: &InputState, area: Rect) {
    if area.height == 0 {
        return;
    }
    let line = if let Some(hint) = input.hint().filter(|_| app.editor.is_empty()) {
        Line::styled(hint, crate::theme::palette().warning)
    } else if let Some(started) = app.run_started {
        let elapsed = started.elapsed();
        let frame_index = (elapsed.as_millis() / 80) as usize % SPINNER.len();
        // Nothing moves until the user answers: say so, not how long the run has taken.
        let (what, detail) = if app.approvals.is_empty() {
            (
                "Working",
                format!(" ({}s · esc to interrupt)", elapsed.as_secs()),
            )
        } else {
            (
                "Waiting for your approval",
                " (the keys are below the question · esc to stop)".to_string(),
            )
        };
        let mut spans = vec![
            Span::styled(
                format!("{} ", SPINNER[frame_index]),
                crate::theme::palette().accent,
            ),
            Span::styled(what, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(detail, crate::theme::palette().dim),
        ];
        if app.compacting {
            spans.push(Span::styled(
                " · compacting the context…",
                crate::theme::palette().warning,
            ));
        }
        if let Some((what, until)) = &app.retry {
            let left = until
                .saturating_duration_since(std::time::Instant::now())
                .as_secs_f64()
                .ceil();
            spans.push(Span::styled(
                format!(" · retrying in {left:.0}s {what}"),
                crate::theme::palette().warning,
            ));
        }
        if app.abort_requested {
            spans.push(Span::styled(
                " · stopping…",
                crate::theme::palette().warning,
            ));
        }
        Line::from(spans)
    } else {
        Line::default()
    };
    Paragraph::new(line).render(area, buf);
}

fn draw_queue(buf: &mut Buffer, app: &App, area: Rect) {
    // Steering first: it is delivered first.
    let ordered = app
        .queue
        .iter()
        .filter(|q| q.kind == QueueKind::Steer)
        .chain(app.queue.iter().filter(|q| q.kind == QueueKind::FollowUp));
    let lines: Vec<Line<'static>> = ordered
        .take(MAX_QUEUE_ROWS)
        .map(|q| {
            let (label, style) = match q.kind {
                QueueKind::Steer => ("steer: ", crate::theme::palette().warning),
                QueueKind::FollowUp => ("follow-up: ", crate::theme::palette().info),
            };
            let first = q.text.lines().next().unwrap_or_default();
            let room = usize::from(area.width).saturating_sub(label.len());
            Line::from(vec![
                Span::styled(label, style),
                Span::raw(crate::wrap::truncate(first, room)),
            ])
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}

fn draw_editor(buf: &mut Buffer, app: &mut App, area: Rect) -> Option<Position> {
    let border = if app.running {
        crate::theme::palette().warning
    } else {
        crate::theme::palette().dim
    };
    let title = if app.running {
        " steer (enter) · follow-up (alt+enter) "
    } else {
        ""
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(Span::styled(title, crate::theme::palette().dim));
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.is_empty() {
        return None;
    }
    let view = app.editor.view(inner.width, inner.height);
    Paragraph::new(view.lines).render(inner, buf);
    // The caret is drawn (the terminal's cursor is hidden: where inline mode leaves it
    // depends on what is running, see `Inline::frame`).
    let (x, y) = view.cursor;
    if x < inner.width && y < inner.height {
        let caret = Position::new(inner.x + x, inner.y + y);
        let cell = &mut buf[caret];
        cell.set_style(cell.style().add_modifier(Modifier::REVERSED));
        return Some(caret);
    }
    None
}

fn draw_status(buf: &mut Buffer, app: &mut App, area: Rect) {
    let text = app.status_line.line(&app.status, usize::from(area.width));
    Line::styled(text, crate::theme::palette().dim).render(area, buf);
}

/// Most choices a popup shows; the list scrolls to keep the selection visible.
const POPUP_ROWS: usize = 10;

/// Most lines one choice wraps to.
const POPUP_ITEM_LINES: usize = 3;

/// Rows a popup takes on a screen `width` wide, borders included.
fn popup_height(popup: &crate::popup::Popup, width: u16) -> u16 {
    popup_lines(popup, popup_width(width)).1.len() as u16 + 2
}

/// As wide as the editor (a choice's words are what the user decides on), up to a readable
/// width.
fn popup_width(editor: u16) -> u16 {
    editor.min(POPUP_MAX_WIDTH)
}

/// The title for the top border, and the lines inside a popup `width` wide: the visible
/// choices, each wrapped (the label first, what it is after it, a long one on up to three
/// lines, paths broken at `/`). A title too long for the border comes first inside, wrapped,
/// so what Enter does is never cut off.
fn popup_lines(popup: &crate::popup::Popup, width: u16) -> (Option<String>, Vec<Line<'static>>) {
    let first = popup.selected().saturating_sub(POPUP_ROWS - 1);
    // A key popup selects nothing: its rows say what to do.
    let selects = !matches!(popup, crate::popup::Popup::Key { .. });
    let room = usize::from(width.saturating_sub(2));
    let dim = crate::theme::palette().dim;
    let mut lines = Vec::new();
    let mut title = popup.title();
    if let Some(text) = title.take_if(|t| crate::wrap::width(t) > room) {
        let style = crate::theme::palette().accent.add_modifier(Modifier::BOLD);
        let line = Line::styled(text.trim().to_string(), style);
        lines.extend(crate::wrap::wrap(&line, room.saturating_sub(1), 1));
        for line in &mut lines {
            line.spans.insert(0, Span::raw(" "));
        }
    }
    for (i, (label, what)) in popup
        .rows()
        .into_iter()
        .enumerate()
        .skip(first)
        .take(POPUP_ROWS)
    {
        let style = if selects && i == popup.selected() {
            crate::theme::palette().selected
        } else {
            Style::default()
        };
        let mut spans = vec![Span::styled(format!(" {label} "), style)];
        if !what.is_empty() {
            spans.push(Span::styled(format!(" {what}"), dim));
        }
        let mut wrapped = crate::wrap::wrap(&Line::from(spans), room, 3);
        if wrapped.len() > POPUP_ITEM_LINES {
            wrapped.truncate(POPUP_ITEM_LINES);
            let last = wrapped.pop().unwrap_or_default();
            let text: String = last.spans.iter().map(|s| s.content.as_ref()).collect();
            let cut = crate::wrap::truncate(&format!("{text}…"), room);
            wrapped.push(Line::styled(cut, dim));
        }
        lines.extend(wrapped);
    }
    (title, lines)
}

/// Above the editor, not above `top` (the top of what is drawn).
fn draw_popup(buf: &mut Buffer, popup: &crate::popup::Popup, editor: Rect, top: u16) {
    let width = popup_width(editor.width);
    let (title, lines) = popup_lines(popup, width);
    let height = (lines.len() as u16 + 2).min(editor.y.saturating_sub(top));
    if height < 3 {
        return;
    }
    let area = Rect::new(editor.x, editor.y - height, width, height);
    Clear.render(area, buf);
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(crate::theme::palette().accent);
    if let Some(title) = title {
        block = block.title(Line::styled(
            title,
            crate::theme::palette().accent.add_modifier(Modifier::BOLD),
        ));
    }
    Paragraph::new(lines).block(block).render(area, buf);
}

/// The widest a popup gets: beyond it a line is too long to read at a glance.
const POPUP_MAX_WIDTH: u16 = 120;

/// `line.render(area, buf)`, with the cells of a plain line set directly: most rows of a
/// conversation are printable ASCII plus our bullets and bars, and ratatui splits every span
/// into graphemes and measures each (8% of a paced stream's CPU on the alternate screen, where
/// every visible row is drawn each frame). Lines this does not cover (any other character, an
/// alignment) go through ratatui; `renders_lines_as_ratatui_does` holds the two to the same
/// cells.
fn render_line(line: &Line<'_>, area: Rect, buf: &mut Buffer) {
    if !left_aligned(line) {
        line.render(area, buf);
        return;
    }
    let row = area.intersection(buf.area);
    if row.is_empty() || line.spans.iter().all(|span| span.content.is_empty()) {
        return;
    }
    let row = Rect { height: 1, ..row };
    buf.set_style(row, line.style);
    // One pass: a character past the right edge is still looked at, since it may join the last
    // one drawn (a combining mark) and make the line ratatui's to draw. ratatui then draws it
    // whole over the cells set so far, which were set as it sets them.
    let mut x = row.x;
    for span in &line.spans {
        for c in span.content.chars() {
            if !one_cell(c) {
                line.render(area, buf);
                return;
            }
            if x < row.right() {
                buf[(x, row.y)].set_char(c).set_style(span.style);
                x += 1;
            }
        }
    }
}

/// A left-aligned line of [`one_cell`] characters only: each character is one cell, in order.
pub(crate) fn plain(line: &Line<'_>) -> bool {
    left_aligned(line)
        && line
            .spans
            .iter()
            .all(|span| span.content.chars().all(one_cell))
}

fn left_aligned(line: &Line<'_>) -> bool {
    matches!(
        line.alignment,
        None | Some(ratatui::layout::Alignment::Left)
    )
}

/// A character that is a grapheme of its own, one column wide, whatever surrounds it: printable
/// ASCII, box drawing and the bullets the cells use.
fn one_cell(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{2500}'..='\u{257f}' | '•' | '·' | '›' | '…')
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    #[test]
    fn renders_lines_as_ratatui_does() {
        let bold = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
        let lines = [
            Line::default(),
            Line::raw("plain text"),
            Line::from(vec![
                Span::styled("  fn ", bold),
                Span::raw("main() {}"),
                Span::styled("", bold),
                Span::styled(" // note", Style::new().fg(Color::DarkGray)),
            ]),
            Line::styled("reversed row", Style::new().bg(Color::Blue)),
            Line::from(vec![Span::styled(
                "x",
                Style::new().remove_modifier(Modifier::BOLD),
            )])
            .style(Style::new().add_modifier(Modifier::BOLD)),
            Line::raw("a line longer than the area it is drawn into"),
            Line::raw("wide 你好 and é"),
            Line::raw("centred").centered(),
            Line::raw("tab\there"),
            Line::from(vec![
                Span::styled("│ ", Style::new().fg(Color::DarkGray)),
                Span::raw("• item · more › next… ┌─┐"),
            ]),
            Line::raw("• e\u{301} combining after a bullet"),
            Line::raw("•\u{200d}• joined"),
            // At width 5 the mark comes just past the edge, and joins the last cell drawn.
            Line::raw("abcde\u{301} a mark after the fifth column"),
        ];
        for line in &lines {
            for width in [0, 1, 5, 20, 60] {
                // Drawn over cells that already hold something, as a frame's buffer may.
                let area = Rect::new(0, 0, 60, 2);
                let mut expected = Buffer::filled(area, ratatui::buffer::Cell::new("#"));
                let mut got = expected.clone();
                let row = Rect::new(3, 1, width, 1);
                line.render(row, &mut expected);
                render_line(line, row, &mut got);
                assert_eq!(got, expected, "{line:?} at width {width}");
            }
        }
    }

    /// The transcript scrolled about (held by cell and row, see `scroll`) shows the rows a
    /// count from the end of the whole transcript gives: up, down, past either end, Home,
    /// End, with cells of every size and output arriving below a held view.
    #[test]
    fn a_scrolled_transcript_shows_the_rows_counted_from_its_end() {
        use crate::cells::CellKind;
        let mut app = App::new(crate::status::Status::default());
        for (i, rows) in [1, 4, 2, 9, 1, 3, 12, 1, 5].into_iter().enumerate() {
            let text = (0..rows)
                .map(|r| format!("cell {i} row {r}"))
                .collect::<Vec<_>>();
            app.push_cell(CellKind::Notice(text.join("\n")));
        }
        let area = Rect::new(0, 0, 50, 7);
        let view = View {
            width: area.width,
            expand_tools: false,
            show_thinking: false,
        };
        let whole = |app: &mut App| -> Vec<String> {
            let mut rows = Vec::new();
            for cell in &mut app.cells {
                rows.extend(cell.rows(view).iter().map(|l| l.to_string()));
                rows.push(String::new());
            }
            rows
        };
        let shown = |app: &mut App| -> Vec<String> {
            let mut buf = Buffer::empty(area);
            draw_transcript(&mut buf, app, area, view);
            (0..area.height)
                .map(|y| {
                    let row: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
                    // The hint covers the right of the last row.
                    row.split(" ↓ ").next().unwrap().trim_end().to_string()
                })
                .collect()
        };
        let height = usize::from(area.height);
        let mut from_end = 0usize;
        let moves: [(&str, usize); 14] = [
            ("up", 1),
            ("up", 5),
            ("down", 2),
            ("up", 9),
            ("more", 0),
            ("up", 3),
            ("home", 0),
            ("down", 4),
            ("up", 1),
            ("down", 1000),
            ("up", 2),
            ("more", 0),
            ("end", 0),
            ("up", 40),
        ];
        for (step, rows) in moves {
            let total = whole(&mut app).len();
            match step {
                "up" => {
                    app.scroll.up(rows);
                    from_end = (from_end + rows).min(total - height);
                }
                "down" => {
                    app.scroll.down(rows);
                    from_end = from_end.saturating_sub(rows);
                }
                "home" => {
                    app.scroll.top();
                    from_end = total - height;
                }
                "end" => {
                    app.scroll.end();
                    from_end = 0;
                }
                _ => {
                    // Output arrives: a held view stays where it is.
                    app.push_cell(CellKind::Notice("new\noutput".into()));
                    if from_end > 0 {
                        from_end += 3;
                    }
                }
            }
            let all = whole(&mut app);
            let end = all.len() - from_end;
            let expected: Vec<String> = all[end - height..end]
                .iter()
                .map(|r| r.trim_end().to_string())
                .collect();
            assert_eq!(shown(&mut app), expected, "after {step} {rows}");
        }
    }

    /// Following the end of a long conversation (the alternate screen) keeps a bounded number
    /// of rows laid out, not every cell that was ever on screen.
    #[test]
    fn following_the_end_keeps_a_bounded_number_of_rows_laid_out() {
        use crate::cells::CellKind;
        let mut app = App::new(crate::status::Status::default());
        let area = Rect::new(0, 0, 60, 20);
        let view = View {
            width: area.width,
            expand_tools: false,
            show_thinking: false,
        };
        let mut buf = Buffer::empty(area);
        for i in 0..300 {
            let lines: Vec<String> = (0..100).map(|j| format!("cell {i} line {j}")).collect();
            app.push_cell(CellKind::Notice(lines.join("\n")));
            draw_transcript(&mut buf, &mut app, area, view);
        }
        let last: String = (0..area.width).map(|x| buf[(x, 18)].symbol()).collect();
        assert_eq!(last.trim_end(), "  cell 299 line 99");
        let held: usize = app
            .cells
            .iter_mut()
            .filter(|c| c.holds_rows())
            .map(|c| c.height(view))
            .sum();
        // The budget, and the two cells a screen shows over it.
        assert!(
            held <= crate::scroll::KEPT_ROWS + 200,
            "{held} rows laid out"
        );
    }

    /// Home in a transcript of many cells lays out a screen and the rows the hint counts,
    /// not the transcript.
    #[test]
    fn the_top_of_a_long_transcript_lays_out_a_screen_of_it() {
        use crate::cells::CellKind;
        let mut app = App::new(crate::status::Status::default());
        for i in 0..20_000 {
            app.push_cell(CellKind::Notice(format!("cell {i}")));
        }
        let area = Rect::new(0, 0, 60, 20);
        let view = View {
            width: area.width,
            expand_tools: false,
            show_thinking: false,
        };
        app.scroll.top();
        let mut buf = Buffer::empty(area);
        draw_transcript(&mut buf, &mut app, area, view);
        let first: String = (0..area.width).map(|x| buf[(x, 0)].symbol()).collect();
        assert_eq!(first.trim_end(), "· cell 0");
        let touched = app
            .cells
            .iter()
            .filter(|c| c.is_measured() || c.holds_rows())
            .count();
        assert!(touched < 2_000, "{touched} cells laid out");
    }
}
