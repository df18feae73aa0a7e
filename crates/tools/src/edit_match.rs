//! Finding an edit's `old_text` in a file: exactly first, then tolerant of the ways models
//! misquote code (trailing spaces, tabs for spaces, smart quotes, Unicode dashes, indentation).
//! When nothing matches, the closest region is found so the error can show it.

use std::collections::HashMap;
use std::ops::Range;

/// How an `old_text` was found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Exact(Range<usize>),
    /// Matched line by line after normalising each line.
    Tolerant(Range<usize>),
}

impl Found {
    pub fn range(&self) -> Range<usize> {
        match self {
            Found::Exact(r) | Found::Tolerant(r) => r.clone(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Occurs more than once; the 1-based lines where it starts.
    Ambiguous(Vec<usize>),
    /// Does not occur; the closest region, if any line of it occurs.
    NotFound(Option<Region>),
}

/// Lines `first..=last` (0-based) of the file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub first: usize,
    pub last: usize,
}

pub(crate) fn find(content: &str, old: &str) -> Result<Found, Miss> {
    let exact = occurrences(content, old);
    match exact.as_slice() {
        [start] => return Ok(Found::Exact(*start..start + old.len())),
        [] => {}
        many => {
            return Err(Miss::Ambiguous(
                many.iter().map(|&i| line_of(content, i)).collect(),
            ));
        }
    }
    let lines = line_spans(content);
    let wanted: Vec<&str> = old.strip_suffix('\n').unwrap_or(old).split('\n').collect();
    for normalise in [normalise_line as fn(&str) -> String, |l: &str| {
        normalise_line(l).trim_start().to_string()
    }] {
        let wanted_norm: Vec<String> = wanted.iter().map(|l| normalise(l)).collect();
        if wanted_norm.iter().all(|l| l.is_empty()) {
            break;
        }
        let have: Vec<String> = lines
            .iter()
            .map(|l| normalise(&content[l.clone()]))
            .collect();
        let starts: Vec<usize> = (0..lines.len().saturating_sub(wanted.len() - 1))
            .filter(|&i| {
                wanted_norm
                    .iter()
                    .enumerate()
                    .all(|(k, w)| have[i + k] == *w)
            })
            .collect();
        match starts.as_slice() {
            [start] => {
                let begin = lines[*start].start;
                let mut end = lines[start + wanted.len() - 1].end;
                // Take the newline too when the old text ended with one.
                if old.ends_with('\n') && content[end..].starts_with('\n') {
                    end += 1;
                }
                return Ok(Found::Tolerant(begin..end));
            }
            [] => continue,
            many => return Err(Miss::Ambiguous(many.iter().map(|i| i + 1).collect())),
        }
    }
    Err(Miss::NotFound(closest(content, &lines, &wanted)))
}

/// Where `needle` starts in `haystack`, overlapping occurrences included (`}\n}\n` occurs
/// twice in `}\n}\n}\n`, and an edit of it would be ambiguous).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        found.push(from + at);
        // Next char boundary after this start.
        from += at
            + haystack[from + at..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
        if from > haystack.len() {
            break;
        }
    }
    found
}

/// Byte spans of each line, without its newline.
fn line_spans(content: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, _) in content.match_indices('\n') {
        spans.push(start..i);
        start = i + 1;
    }
    if start < content.len() {
        spans.push(start..content.len());
    }
    spans
}

/// 1-based line number of byte `offset`.
pub(crate) fn line_of(content: &str, offset: usize) -> usize {
    content[..offset].matches('\n').count() + 1
}

/// Smart quotes and Unicode dashes as ASCII, tabs as four spaces, no trailing whitespace.
fn normalise_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => out.push('\''),
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => out.push('"'),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => out.push('-'),
            '\u{00A0}' | '\u{2007}' | '\u{202F}' => out.push(' '),
            '\t' => out.push_str("    "),
            c => out.push(c),
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// The window of the file sharing the most (trimmed, non-empty) lines with `wanted`.
fn closest(content: &str, lines: &[Range<usize>], wanted: &[&str]) -> Option<Region> {
    let key = |l: &str| normalise_line(l).trim().to_string();
    let mut positions: HashMap<String, Vec<usize>> = HashMap::new();
    for (k, line) in wanted.iter().enumerate() {
        let line = key(line);
        if !line.is_empty() {
            positions.entry(line).or_default().push(k);
        }
    }
    let mut votes: HashMap<isize, usize> = HashMap::new();
    for (j, span) in lines.iter().enumerate() {
        if let Some(ks) = positions.get(&key(&content[span.clone()])) {
            for &k in ks {
                *votes.entry(j as isize - k as isize).or_default() += 1;
            }
        }
    }
    let start = match votes.iter().max_by_key(|(start, n)| (**n, -**start)) {
        Some((&start, _)) => start,
        None => most_similar_line(content, lines, wanted)?,
    };
    let first = start.max(0) as usize;
    let last = ((start + wanted.len() as isize - 1).max(0) as usize).min(lines.len() - 1);
    Some(Region { first, last })
}

/// Where the window starts if its first non-empty line is the file line most like it (no line
/// is equal): compares character pairs, cheap enough for the largest files.
fn most_similar_line(content: &str, lines: &[Range<usize>], wanted: &[&str]) -> Option<isize> {
    let (k, target) = wanted
        .iter()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())?;
    let pairs = |s: &str| -> std::collections::HashSet<(char, char)> {
        let chars: Vec<char> = s.trim().chars().collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let target = pairs(target);
    let (best, score) = lines
        .iter()
        .enumerate()
        .map(|(j, span)| {
            let have = pairs(&content[span.clone()]);
            let shared = target.intersection(&have).count();
            let union = target.union(&have).count().max(1);
            (j, shared as f64 / union as f64)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (score >= 0.5).then_some(best as isize - k as isize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_matches_win() {
        assert_eq!(find("a\nb\nc\n", "b\n"), Ok(Found::Exact(2..4)));
    }

    #[test]
    fn ambiguous_matches_report_their_lines() {
        assert_eq!(find("x\ny\nx\n", "x"), Err(Miss::Ambiguous(vec![1, 3])));
        assert_eq!(
            find("}\n}\n}\n", "}\n}\n"),
            Err(Miss::Ambiguous(vec![1, 2]))
        );
    }

    #[test]
    fn tolerates_trailing_spaces_tabs_quotes_and_dashes() {
        let content = "fn main() {\n\tlet s = “hi”;   \n\tlet d = 1 – 2;\n}\n";
        let old = "    let s = \"hi\";\n    let d = 1 - 2;";
        let found = find(content, old).unwrap();
        assert!(matches!(found, Found::Tolerant(_)));
        assert_eq!(
            &content[found.range()],
            "\tlet s = “hi”;   \n\tlet d = 1 – 2;"
        );
    }

    #[test]
    fn tolerates_wrong_indentation_last() {
        let content = "if x {\n        call();\n}\n";
        let found = find(content, "call();\n").unwrap();
        // Exact substring match comes first here.
        assert_eq!(found, Found::Exact(15..23));
        let found = find(content, "\tcall();\n}").unwrap();
        assert_eq!(&content[found.range()], "        call();\n}");
    }

    #[test]
    fn misses_point_at_the_closest_region() {
        let content = "one\ntwo\nthree\nfour\nfive\n";
        match find(content, "three\nFOUR!\nfive") {
            Err(Miss::NotFound(Some(region))) => assert_eq!(region, Region { first: 2, last: 4 }),
            other => panic!("{other:?}"),
        }
        assert_eq!(find(content, "nothing like it"), Err(Miss::NotFound(None)));
    }
}
