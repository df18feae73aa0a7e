//! `cargo bench -p tui --bench render`: a resumed session of 10,000 messages, scrolled from the
//! bottom to the top a page at a time; reports the first frame, the first page up, and
//! per-frame times.

use std::time::{Duration, Instant};

use agent_core::AgentMessage;
use llm::{AssistantBuilder, StopReason, StreamEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tui::app::App;
use tui::input::InputState;
use tui::status::Status;

const MESSAGES: usize = 10_000;

fn main() {
    let mut history = Vec::with_capacity(MESSAGES);
    for i in 0..MESSAGES / 2 {
        history.push(AgentMessage::user(format!(
            "Question {i}: how does part {i} work?"
        )));
        let mut b = AssistantBuilder::new("m", "p");
        b.text_delta(&format!(
            "## Part {i}\n\nIt works by *composing* small pieces; see `part_{i}()`.\n\n- one\n- two\n\n```rust\nfn part_{i}() -> u32 {{ {i} }}\n```\n"
        ));
        let StreamEvent::Done { message } = b.done(StopReason::Stop) else {
            unreachable!()
        };
        history.push(AgentMessage::Assistant(message));
    }
    let mut app = App::new(Status::default());
    let loaded = Instant::now();
    app.load_all(&history);
    let load = loaded.elapsed();
    let mut input = InputState::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 50)).unwrap();

    let started = Instant::now();
    terminal
        .draw(|f| tui::ui::draw(f, &mut app, &mut input))
        .unwrap();
    let cold = started.elapsed();

    let mut frames: Vec<Duration> = Vec::new();
    loop {
        let before = app.scroll.at();
        app.scroll.up(48);
        let started = Instant::now();
        terminal
            .draw(|f| tui::ui::draw(f, &mut app, &mut input))
            .unwrap();
        frames.push(started.elapsed());
        // At the top a page up moves nothing.
        if app.scroll.at() == before {
            break;
        }
    }
    let first_page = frames[0];
    frames.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{MESSAGES} messages loaded into the UI in {:.0} ms; first frame {:.1} ms; first page up {:.1} ms",
        ms(load),
        ms(cold),
        ms(first_page)
    );
    println!(
        "scrolling {} pages: median {:.2} ms, p99 {:.2} ms, max {:.2} ms per frame (target < 5 ms)",
        frames.len(),
        ms(frames[frames.len() / 2]),
        ms(frames[frames.len() * 99 / 100]),
        ms(*frames.last().unwrap())
    );
}
