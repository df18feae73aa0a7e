use proptest::prelude::*;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

use super::*;

fn plain(lines: &[Line<'static>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// Columns a line takes on screen, counted the way ratatui's buffer draws it (per grapheme).
fn drawn_width(line: &Line<'static>) -> usize {
    line.spans.iter().map(|s| width(&s.content)).sum()
}

#[test]
fn wraps_at_spaces_with_an_indent() {
    let line = Line::from("- one two three four five");
    assert_eq!(
        plain(&wrap(&line, 12, 2)),
        ["- one two", "  three four", "  five"]
    );
}

#[test]
fn paths_break_at_a_slash_not_inside_a_name() {
    let line = Line::from("skills in /home/u/.coding-agent/skills/ are read");
    let wrapped = plain(&wrap(&line, 27, 0));
    assert_eq!(
        wrapped,
        ["skills in /home/", "u/.coding-agent/skills/ are", "read"]
    );
    // Outside a path a hyphen is still a place to break.
    let line = Line::from("a well-known word");
    assert_eq!(plain(&wrap(&line, 8, 0)), ["a well-", "known", "word"]);
}

#[test]
fn text_printed_before_the_ui_breaks_between_words() {
    let question = "/home/u/src/project wants to give the agent its own instructions and \
                    settings. You have not run coding-agent here before.\n  AGENTS.md\nTrust \
                    this repository? [y/N] ";
    let wrapped = wrap_text(question, 24);
    let words: Vec<&str> = question.split_whitespace().collect();
    for row in wrapped.lines() {
        assert!(crate::wrap::width(row) <= 24, "{row:?}");
        for word in row.split_whitespace() {
            // Whole words, or a path or hyphenated word broken after its `/` or `-`.
            assert!(
                words.iter().any(|w| *w == word
                    || (w.contains(word) && (word.ends_with('/') || word.ends_with('-'))
                        || w.ends_with(word) && w.len() > word.len())),
                "{word:?} in {wrapped:?}"
            );
        }
    }
    assert!(wrapped.ends_with("[y/N] "), "{wrapped:?}");
}

#[test]
fn breaks_long_words_hard() {
    let line = Line::from("abcdefghij");
    assert_eq!(plain(&wrap(&line, 4, 0)), ["abcd", "efgh", "ij"]);
}

#[test]
fn keeps_styles_across_breaks() {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let line = Line::from(vec![Span::raw("aa "), Span::styled("bbbb cc", bold)]);
    let wrapped = wrap(&line, 7, 0);
    assert_eq!(plain(&wrapped), ["aa bbbb", "cc"]);
    assert_eq!(wrapped[1].spans[0].style, bold);
}

#[test]
fn cjk_breaks_between_ideographs_and_loses_nothing() {
    // The text a user reported: at 60 columns a character vanished at the wrap point and the
    // whole text moved below the marker.
    let text =
        "非常感谢你的帮助和耐心的解答，我学到了很多关于这个问题的知识，希望以后还能继续向你请教";
    let line = Line::from(vec![Span::raw("› "), Span::raw(text)]);
    let wrapped = plain(&wrap(&line, 60, 2));
    assert!(wrapped[0].starts_with("› 非常感谢"), "{wrapped:?}");
    assert!(wrapped.iter().all(|l| width(l) <= 60), "{wrapped:?}");
    let joined: String = wrapped.iter().map(|l| l.trim_start()).collect();
    assert_eq!(joined, format!("› {text}"));
    // Each line is filled: only the last is short.
    for l in &wrapped[..wrapped.len() - 1] {
        assert!(width(l) >= 59, "{wrapped:?}");
    }
}

#[test]
fn a_long_first_word_starts_after_the_marker() {
    let line = Line::from("› supercalifragilisticexpialidocious_and_then_some");
    let wrapped = plain(&wrap(&line, 20, 2));
    assert_eq!(wrapped[0], "› supercalifragilist");
    assert!(wrapped[1..].iter().all(|l| l.starts_with("  ")));
}

#[test]
fn emoji_sequences_and_combining_marks_stay_whole() {
    let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
    let thumbs = "👍🏽";
    let accented = "e\u{301}";
    let text = format!("{family}{thumbs}{accented}{family}{thumbs}{accented}");
    let wrapped = plain(&wrap(&Line::from(text.clone()), 4, 0));
    for l in &wrapped {
        assert!(width(l) <= 4, "{wrapped:?}");
        for g in l.graphemes(true) {
            assert!(
                [family, thumbs, accented].contains(&g),
                "split grapheme {g:?} in {wrapped:?}"
            );
        }
    }
    assert_eq!(wrapped.concat(), text);
}

#[test]
fn indentation_wider_than_the_line_shrinks_instead_of_leaving_a_blank_line() {
    let wrapped = plain(&wrap(&Line::from("            let x = 1;"), 8, 0));
    assert_eq!(wrapped, ["     let", "x = 1;"]);
    let wrapped = plain(&wrap(&Line::from("            abcdefghij"), 8, 0));
    assert_eq!(wrapped, ["abcdefgh", "ij"]);
}

#[test]
fn tabs_expand_to_the_next_stop() {
    let wrapped = plain(&wrap(&Line::from("a\tb\tc"), 40, 0));
    assert_eq!(wrapped, ["a   b   c"]);
}

#[test]
fn truncates_with_an_ellipsis_at_grapheme_boundaries() {
    assert_eq!(truncate("hello", 5), "hello");
    assert_eq!(truncate("hello world", 6), "hello…");
    assert_eq!(truncate("日本語のテキスト", 7), "日本語…");
    assert_eq!(truncate("👍🏽👍🏽👍🏽", 5), "👍🏽👍🏽…");
    assert_eq!(truncate("abc", 0), "");
    assert_eq!(truncate("abc", 1), "…");
    assert_eq!(truncate("a\tbcdefgh", 6), "a   b…");
}

/// Text drawn from what breaks wrapping: CJK, emoji with modifiers and ZWJ sequences,
/// combining marks, tabs, spaces, long words.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z]{1,12}",
        1 => "[a-z]{20,60}",
        3 => "[一-龥]{1,10}",
        1 => "[ぁ-ゖ]{1,6}",
        2 => Just(" ".to_string()),
        1 => Just("  ".to_string()),
        1 => Just("\t".to_string()),
        1 => Just("👍🏽".to_string()),
        1 => Just("👨\u{200d}👩\u{200d}👧".to_string()),
        1 => Just("🏳\u{fe0f}\u{200d}🌈".to_string()),
        1 => Just("e\u{301}\u{323}".to_string()),
        1 => Just("한국어".to_string()),
        1 => Just("-".to_string()),
        1 => Just("，。".to_string()),
        1 => Just("(x)".to_string()),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// Checks that `lines` are `text` (tabs expanded) cut into pieces, with nothing lost but
/// spaces at the cuts, each cut between graphemes, and each continuation line starting with
/// `indent` spaces.
fn assert_lossless(text: &str, column: usize, lines: &[String], indent: usize) {
    let expanded = expand_tabs(text, column);
    let boundaries: Vec<usize> = expanded
        .grapheme_indices(true)
        .map(|(i, _)| i)
        .chain([expanded.len()])
        .collect();
    let mut pos = 0;
    for (i, line) in lines.iter().enumerate() {
        let content = if i == 0 {
            line.as_str()
        } else {
            assert!(
                line.starts_with(&" ".repeat(indent)) || line.is_empty(),
                "line {i} lacks its indent: {lines:?}"
            );
            line.get(indent..).unwrap_or_default()
        };
        // Spaces at the cut may have been swallowed by the break.
        let rest = &expanded[pos..];
        let spaces = rest.len() - rest.trim_start_matches(' ').len();
        let skip = (0..=spaces)
            .find(|&k| rest[k..].starts_with(content))
            .unwrap_or_else(|| {
                panic!("line {i} {content:?} is not next in {expanded:?}: {lines:?}")
            });
        pos += skip;
        assert!(
            boundaries.contains(&pos),
            "line {i} starts inside a grapheme: {lines:?}"
        );
        pos += content.len();
        assert!(
            boundaries.contains(&pos),
            "line {i} ends inside a grapheme: {lines:?}"
        );
    }
    assert!(
        expanded[pos..].chars().all(|c| c == ' '),
        "lost {:?} of {expanded:?}: {lines:?}",
        &expanded[pos..]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn wrapping_loses_nothing_and_fits(text in text(), width in 4usize..50) {
        let lines = wrap(&Line::from(text.clone()), width, 0);
        for line in &lines {
            prop_assert!(drawn_width(line) <= width, "{:?} wider than {width}", plain(&lines));
            prop_assert!(line.width() <= width, "{:?} wider than {width}", plain(&lines));
        }
        assert_lossless(&text, 0, &plain(&lines), 0);
    }

    #[test]
    fn a_marker_keeps_continuations_aligned(text in text(), width in 4usize..50) {
        let line = Line::from(vec![Span::raw("› "), Span::raw(text.clone())]);
        let lines = wrap(&line, width, 2);
        for line in &lines {
            prop_assert!(drawn_width(line) <= width, "{:?} wider than {width}", plain(&lines));
        }
        let mut plain = plain(&lines);
        prop_assert!(plain[0].starts_with('›'));
        // The marker's space belongs to the text (it may be the first break).
        plain[0] = plain[0]['›'.len_utf8()..].to_string();
        assert_lossless(&format!(" {text}"), 1, &plain, 2);
    }

    #[test]
    fn printable_ascii_is_a_grapheme_a_byte(text in "[ -~]{0,200}") {
        prop_assert_eq!(ascii_graphemes(&text), graphemes(&text));
    }

    #[test]
    fn truncation_fits_and_keeps_a_prefix(text in text(), width in 0usize..30) {
        let cut = truncate(&text, width);
        prop_assert!(width_of(&cut) <= width);
        let kept = cut.strip_suffix('…').unwrap_or(&cut);
        prop_assert!(expand_tabs(&text, 0).starts_with(kept));
    }
}

fn width_of(text: &str) -> usize {
    width(text)
}
