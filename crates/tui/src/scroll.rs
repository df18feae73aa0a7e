//! Where the transcript view stands: following the end, or held at one row of one cell.
//!
//! A held view is kept as a cell and a row in it, not as a count of rows from the end: then
//! drawing, scrolling and output arriving below cost the rows moved over and shown, never the
//! whole transcript. (A `/redraw` of a long session holds tens of thousands of cells; summing
//! their heights laid every one of them out, fences highlighted, for each Home or PgUp.)

use std::collections::VecDeque;
use std::ops::Range;

use crate::cells::{Cell, View};

/// How many rows below the view the hint counts at most.
const COUNTED: usize = 2_000;
/// The cells drawn lately keep their rows, at most this many cells and [`KEPT_ROWS`] rows
/// together; those drawn longer ago drop theirs. Otherwise browsing a long conversation, or
/// following one on the alternate screen, keeps all of it laid out (~0.9 MB a 100 KB answer).
/// The cells on screen keep theirs whatever their size.
const KEPT: usize = 200;
pub(crate) const KEPT_ROWS: usize = 4_000;

/// A row of the transcript: row `row` of cell `cell`'s block (its rows, then the blank
/// separator under it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub cell: usize,
    pub row: usize,
}

/// Moves asked for since the last frame: to the top first if asked, then by `rows`
/// (negative: towards the start).
#[derive(Debug, Default)]
struct Move {
    top: bool,
    rows: isize,
}

/// The view's position; moves are applied at the next frame, which knows the width.
#[derive(Debug, Default)]
pub struct Scroll {
    /// The row at the view's bottom; `None` follows the end.
    at: Option<Mark>,
    pending: Move,
    /// Cells drawn, least lately first, and their heights then.
    drawn: VecDeque<(usize, usize)>,
    /// The view the held row was last placed in, and its cell's height then.
    placed: Option<(View, usize)>,
}

/// Where a frame of a held view stands.
pub struct Held {
    /// The row at the view's bottom.
    pub bottom: Mark,
    /// Rows below the view, and whether there are more than that.
    pub below: usize,
    pub more_below: bool,
}

impl Scroll {
    pub fn up(&mut self, rows: usize) {
        let rows = isize::try_from(rows).unwrap_or(isize::MAX);
        self.pending.rows = self.pending.rows.saturating_sub(rows);
    }

    pub fn down(&mut self, rows: usize) {
        let rows = isize::try_from(rows).unwrap_or(isize::MAX);
        self.pending.rows = self.pending.rows.saturating_add(rows);
    }

    pub fn top(&mut self) {
        self.pending = Move { top: true, rows: 0 };
    }

    /// Follows the end again.
    pub fn end(&mut self) {
        self.at = None;
        self.pending = Move::default();
    }

    /// `rows` rows up from the end.
    pub fn from_end(&mut self, rows: usize) {
        self.end();
        self.up(rows);
    }

    /// The row at the view's bottom, as of the last frame; `None` while following the end.
    pub fn at(&self) -> Option<Mark> {
        self.at
    }

    /// Forgets where it was (the transcript was emptied).
    pub fn reset(&mut self) {
        self.end();
        self.drawn.clear();
    }

    /// Applies the moves asked for since the last frame to `cells` laid out in `view` for a
    /// transcript area `height` rows tall; `None` when the view follows the end.
    pub fn settle(&mut self, cells: &mut [Cell], view: View, height: usize) -> Option<Held> {
        let moves = std::mem::take(&mut self.pending);
        // Following the end, and not asked up: nothing to measure.
        if self.at.is_none() && !moves.top && moves.rows >= 0 {
            return None;
        }
        if cells.is_empty() || height == 0 {
            self.at = None;
            return None;
        }
        let mut cells = Measure { cells, view };
        let first = Mark { cell: 0, row: 0 };
        let last = cells.last();
        // A new width (or tool output expanded, thinking shown) wraps the held cell anew:
        // the same text is as far down it in proportion, not at the same row.
        if let (Some(at), Some((placed, rows))) = (&mut self.at, self.placed)
            && placed != view
            && at.cell < cells.cells.len()
        {
            let now = cells.block(at.cell);
            at.row = at.row * now / rows.max(1);
        }
        let start = if moves.top {
            cells.down(first, height - 1)
        } else {
            self.at
        };
        let at = match moves.rows {
            0 => start,
            up if up < 0 => Some(cells.up(start.unwrap_or(last), up.unsigned_abs())),
            down => start.and_then(|m| cells.down(m, down.unsigned_abs())),
        };
        // Output that shrank (a running command's tail replaced by its result) or a new
        // width may leave the row past its cell.
        let at = at.map(|m| {
            let cell = m.cell.min(last.cell);
            Mark {
                cell,
                row: m.row.min(cells.block(cell) - 1),
            }
        });
        // Not above the start: the view's top row is at most the transcript's first.
        let at = at.and_then(|m| {
            if cells.up_by(m, height - 1) < height - 1 {
                cells.down(first, height - 1)
            } else {
                Some(m)
            }
        });
        self.at = at.filter(|m| *m != last);
        self.placed = self.at.map(|m| (view, cells.block(m.cell)));
        let bottom = self.at?;
        let (below, more_below) = cells.below(bottom, COUNTED);
        Some(Held {
            bottom,
            below,
            more_below,
        })
    }

    /// Notes the cells a frame drew, `shown`, and drops the rows of those drawn least lately
    /// while more than [`KEPT`] cells or [`KEPT_ROWS`] rows are kept.
    pub fn drawn(&mut self, cells: &mut [Cell], shown: Range<usize>, view: View) {
        for cell in shown.clone() {
            if let Some(at) = self.drawn.iter().position(|&(c, _)| c == cell) {
                self.drawn.remove(at);
            }
            let rows = cells.get_mut(cell).map_or(0, |c| c.height(view));
            self.drawn.push_back((cell, rows));
        }
        let mut rows: usize = self.drawn.iter().map(|&(_, rows)| rows).sum();
        while self.drawn.len() > KEPT || rows > KEPT_ROWS {
            let Some(&(old, held)) = self.drawn.front() else {
                break;
            };
            if shown.contains(&old) {
                break;
            }
            self.drawn.pop_front();
            rows -= held;
            if let Some(old) = cells.get_mut(old).filter(|c| c.is_done()) {
                old.forget_rows();
            }
        }
    }
}

/// Cells measured in one view. A cell measured but not drawn does not keep its rows: its
/// height is kept instead.
struct Measure<'a> {
    cells: &'a mut [Cell],
    view: View,
}

impl Measure<'_> {
    /// Rows of cell `i`'s block: its rows and the separator under it.
    fn block(&mut self, i: usize) -> usize {
        let cell = &mut self.cells[i];
        let held = cell.holds_rows();
        let height = cell.height(self.view);
        if !held && cell.is_done() {
            cell.forget_rows();
        }
        height + 1
    }

    fn last(&mut self) -> Mark {
        let cell = self.cells.len() - 1;
        Mark {
            cell,
            row: self.block(cell) - 1,
        }
    }

    /// `rows` rows towards the start, stopping at the first row.
    fn up(&mut self, mut at: Mark, mut rows: usize) -> Mark {
        while rows > at.row {
            if at.cell == 0 {
                return Mark { cell: 0, row: 0 };
            }
            rows -= at.row + 1;
            at.cell -= 1;
            at.row = self.block(at.cell) - 1;
        }
        at.row -= rows;
        at
    }

    /// How many rows above `at` there are, counting at most `most`.
    fn up_by(&mut self, at: Mark, most: usize) -> usize {
        let mut rows = at.row;
        let mut cell = at.cell;
        while rows < most && cell > 0 {
            cell -= 1;
            rows += self.block(cell);
        }
        rows.min(most)
    }

    /// `rows` rows towards the end; `None` past the last row.
    fn down(&mut self, mut at: Mark, rows: usize) -> Option<Mark> {
        at.row += rows;
        loop {
            let block = self.block(at.cell);
            if at.row < block {
                return Some(at);
            }
            at.row -= block;
            at.cell += 1;
            if at.cell == self.cells.len() {
                return None;
            }
        }
    }

    /// Rows under `at`, counting at most `most` (and whether there are more).
    fn below(&mut self, at: Mark, most: usize) -> (usize, bool) {
        let mut rows = self.block(at.cell) - 1 - at.row;
        for cell in at.cell + 1..self.cells.len() {
            if rows > most {
                break;
            }
            rows += self.block(cell);
        }
        (rows.min(most), rows > most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::CellKind;

    const VIEW: View = View {
        width: 40,
        expand_tools: false,
        show_thinking: false,
    };

    /// Notices of as many rows as `sizes` says.
    fn cells(sizes: &[usize]) -> Vec<Cell> {
        sizes
            .iter()
            .map(|&n| {
                let text = (0..n).map(|i| format!("line {i}")).collect::<Vec<_>>();
                Cell::new(CellKind::Notice(text.join("\n")))
            })
            .collect()
    }

    fn total(cells: &mut [Cell]) -> usize {
        cells.iter_mut().map(|c| c.height(VIEW) + 1).sum()
    }

    /// The bottom row of a held view counted from the end, as the old row count was.
    fn from_end(cells: &mut [Cell], held: &Held) -> usize {
        let mut rows = cells[held.bottom.cell].height(VIEW) - held.bottom.row;
        for cell in &mut cells[held.bottom.cell + 1..] {
            rows += cell.height(VIEW) + 1;
        }
        rows
    }

    #[test]
    fn moves_count_rows_as_a_row_count_from_the_end_would() {
        let mut cells = cells(&[3, 1, 5, 2, 7, 1, 1, 4]);
        let total = total(&mut cells);
        let height = 6;
        let mut scroll = Scroll::default();
        // (move, rows from the end expected): up and down across cells, past the start and
        // back past the end.
        let steps: [(isize, usize); 9] = [
            (-1, 1),
            (-4, 5),
            (-10, 15),
            (3, 12),
            (-100, total - height),
            (2, total - height - 2),
            (-1, total - height - 1),
            (1000, 0),
            (-2, 2),
        ];
        for (step, expected) in steps {
            if step < 0 {
                scroll.up(step.unsigned_abs());
            } else {
                scroll.down(step as usize);
            }
            let held = scroll.settle(&mut cells, VIEW, height);
            let got = held.as_ref().map_or(0, |h| from_end(&mut cells, h));
            assert_eq!(got, expected, "after {step}");
            assert_eq!(held.is_none(), expected == 0);
            if let Some(held) = held {
                assert_eq!(held.below, expected);
                assert!(!held.more_below);
            }
        }
    }

    #[test]
    fn the_top_shows_the_first_row_and_output_below_does_not_move_it() {
        let mut cells = cells(&[3, 1, 5, 2, 7]);
        let mut scroll = Scroll::default();
        scroll.top();
        let held = scroll.settle(&mut cells, VIEW, 6).unwrap();
        assert_eq!(held.bottom, Mark { cell: 1, row: 1 });
        cells.push(Cell::new(CellKind::Notice("more".into())));
        let held = scroll.settle(&mut cells, VIEW, 6).unwrap();
        assert_eq!(held.bottom, Mark { cell: 1, row: 1 });
        // A transcript shorter than the view has nothing to scroll.
        let mut short = self::cells(&[1, 1]);
        scroll.top();
        assert!(scroll.settle(&mut short, VIEW, 6).is_none());
        assert!(scroll.at.is_none());
    }

    #[test]
    fn the_top_of_a_long_transcript_measures_a_screen_and_a_count_not_the_transcript() {
        let mut cells = cells(&vec![2; 50_000]);
        let mut scroll = Scroll::default();
        scroll.top();
        let held = scroll.settle(&mut cells, VIEW, 30).unwrap();
        assert_eq!(held.bottom, Mark { cell: 9, row: 2 });
        assert!(held.more_below);
        assert_eq!(held.below, COUNTED);
        let measured = cells.iter().filter(|c| c.is_measured()).count();
        assert!(measured < 1_000, "{measured} cells measured");
        // Measuring keeps no rows.
        assert_eq!(cells.iter().filter(|c| c.holds_rows()).count(), 0);
        // Paging through all of it, drawing each page, keeps a bounded number laid out.
        for _ in 0..6_000 {
            scroll.down(28);
            let Some(held) = scroll.settle(&mut cells, VIEW, 30) else {
                break;
            };
            let shown = held.bottom.cell.saturating_sub(10)..held.bottom.cell + 1;
            for cell in shown.clone() {
                cells[cell].rows(VIEW);
            }
            scroll.drawn(&mut cells, shown, VIEW);
        }
        assert!(scroll.at.is_none(), "paged to the end");
        let laid_out = cells.iter().filter(|c| c.holds_rows()).count();
        assert!(laid_out <= KEPT + 11, "{laid_out} cells laid out");
    }

    #[test]
    fn the_cells_on_screen_keep_their_rows_whatever_their_size() {
        let big = KEPT_ROWS * 3 / 4;
        let mut cells = cells(&[big, big, big]);
        let mut scroll = Scroll::default();
        for shown in [0..1, 0..2, 1..3, 1..3] {
            for cell in shown.clone() {
                cells[cell].rows(VIEW);
            }
            scroll.drawn(&mut cells, shown.clone(), VIEW);
            for cell in shown.clone() {
                assert!(cells[cell].holds_rows(), "cell {cell} of {shown:?} dropped");
            }
        }
        // The one scrolled away was over the budget.
        assert!(!cells[0].holds_rows());
    }

    #[test]
    fn a_cell_that_shrinks_under_the_view_keeps_it_in_the_transcript() {
        let mut cells = cells(&[3, 1, 9]);
        let mut scroll = Scroll::default();
        scroll.up(1);
        let held = scroll.settle(&mut cells, VIEW, 4).unwrap();
        assert_eq!(held.bottom, Mark { cell: 2, row: 8 });
        *cells[2].edit() = CellKind::Notice("one".into());
        // Its last row now: the end, so the view follows again.
        assert!(scroll.settle(&mut cells, VIEW, 4).is_none());
    }

    #[test]
    fn a_new_width_keeps_the_same_text_in_a_held_cell() {
        let text = (0..40)
            .map(|i| format!("line {i:02} with words enough to wrap at a narrow width"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut cells = vec![
            Cell::new(CellKind::Notice(text)),
            Cell::new(CellKind::Notice("end".into())),
        ];
        // The text line a held row shows: the last row at or above it that starts one.
        let line_at = |cells: &mut [Cell], view: View, at: Mark| -> u32 {
            let rows = cells[at.cell].rows(view);
            let rows: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
            let start = rows[..=at.row]
                .iter()
                .rev()
                .find(|r| r.contains("line "))
                .unwrap();
            let number = start.split("line ").nth(1).unwrap();
            number[..2].parse().unwrap()
        };
        let mut scroll = Scroll::default();
        scroll.up(30);
        let held = scroll.settle(&mut cells, VIEW, 5).unwrap();
        let was = line_at(&mut cells, VIEW, held.bottom);
        let narrow = View { width: 20, ..VIEW };
        let held = scroll.settle(&mut cells, narrow, 5).unwrap();
        let is = line_at(&mut cells, narrow, held.bottom);
        assert!(
            was.abs_diff(is) <= 1,
            "line {was} held, line {is} shown at the new width"
        );
    }
}
