//! Image files named in text: a paste that is the path of dropped files, and `@shot.png` in a
//! prompt.
//!
//! Terminals paste a dropped file as its path, quoted when it has spaces (`'/a/my shot.png'`
//! on macOS and GNOME), with spaces escaped (`/a/my\ shot.png`, kitty, iTerm2 with some
//! settings), as a `file://` URL, or several at once separated by spaces or newlines. On
//! Windows a backslash separates directories, so it escapes nothing there.

use std::path::{Path, PathBuf};

/// The image extensions every provider takes.
const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// Whether a backslash escapes the next character in a pasted path: everywhere but Windows.
const BACKSLASH_ESCAPES: bool = !cfg!(windows);

/// Whether `path` names an image by its extension (any case).
pub fn is_image_path(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The image files a paste names, when the paste is nothing but paths of existing image files
/// (relative ones taken from `cwd`); `None` when it is anything else, and it stays text.
pub fn pasted_paths(text: &str, cwd: &Path) -> Option<Vec<PathBuf>> {
    pasted_paths_with(text, cwd, BACKSLASH_ESCAPES)
}

fn pasted_paths_with(text: &str, cwd: &Path, escapes: bool) -> Option<Vec<PathBuf>> {
    let words = split_words(text.trim(), escapes)?;
    if words.is_empty() {
        return None;
    }
    words
        .into_iter()
        .map(|word| {
            let path = resolve(&from_file_url(&word).unwrap_or(word), cwd);
            (is_image_path(&path) && path.is_file()).then_some(path)
        })
        .collect()
}

/// The image files `@`-mentioned in `prompt` (`@shot.png`, `@docs/ui.jpg`) that exist, in
/// order, each once.
pub fn image_mentions(prompt: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for word in prompt.split_whitespace() {
        let word = word.trim_start_matches(['(', '[', '"', '\'']);
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        // A mention ends a sentence or sits in brackets as often as not.
        let name = name.trim_end_matches(['.', ',', ';', ':', ')', ']', '!', '?', '"', '\'']);
        let path = resolve(name, cwd);
        if !name.is_empty() && is_image_path(&path) && path.is_file() && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// `~/…` from the home directory, a relative path from `cwd`.
fn resolve(word: &str, cwd: &Path) -> PathBuf {
    if let Some(rest) = word.strip_prefix("~/")
        && let Some(home) = platform::fs::home_dir()
    {
        return home.join(rest);
    }
    cwd.join(word)
}

/// The path of a `file://` URL, percent-decoded.
fn from_file_url(word: &str) -> Option<String> {
    let rest = word.strip_prefix("file://")?;
    // `file://host/path`: only the local host is this machine.
    let path = rest
        .strip_prefix("localhost")
        .unwrap_or(rest)
        .trim_start_matches(|c| c != '/');
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    let path = String::from_utf8(out).ok()?;
    // `file:///C:/x.png` on Windows.
    Some(match path.get(1..3) {
        Some(drive) if cfg!(windows) && drive.ends_with(':') => path[1..].to_string(),
        _ => path,
    })
}

/// Splits a paste into words as a shell would: whitespace separates, quotes group, a
/// backslash escapes (when `escapes`). `None` for an unclosed quote.
fn split_words(text: &str, escapes: bool) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        end if end == c => break,
                        '\\' if escapes && c == '"' => word.push(chars.next()?),
                        other => word.push(other),
                    }
                }
            }
            '\\' if escapes => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in files {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        dir
    }

    #[test]
    fn a_dropped_path_quoted_or_escaped_or_as_a_url_is_an_image() {
        let dir = dir_with(&["my shot.png", "b.JPG"]);
        let shot = dir.path().join("my shot.png");
        let full = shot.display().to_string();
        for paste in [
            format!("'{full}'"),
            format!("\"{full}\""),
            full.replace(' ', "\\ "),
            format!("file://{}", full.replace(' ', "%20")),
            format!("  '{full}' \n"),
        ] {
            assert_eq!(
                pasted_paths_with(&paste, Path::new("/"), true),
                Some(vec![shot.clone()]),
                "{paste}"
            );
        }
        // Several dropped at once, one relative to the working directory.
        assert_eq!(
            pasted_paths_with("'my shot.png' b.JPG", dir.path(), true),
            Some(vec![shot, dir.path().join("b.JPG")])
        );
    }

    #[test]
    fn a_paste_that_is_not_only_existing_images_stays_text() {
        let dir = dir_with(&["a.png", "notes.txt"]);
        for paste in [
            "notes.txt",
            "a.png notes.txt",
            "missing.png",
            "look at a.png",
            "'a.png",
            "",
        ] {
            assert_eq!(pasted_paths_with(paste, dir.path(), true), None, "{paste}");
        }
    }

    #[test]
    fn on_windows_a_backslash_is_a_separator_not_an_escape() {
        let words = split_words(r#""C:\Users\me\my shot.png" D:\b.png"#, false).unwrap();
        assert_eq!(words, [r"C:\Users\me\my shot.png", r"D:\b.png"]);
        let words = split_words(r"/a/my\ shot.png", true).unwrap();
        assert_eq!(words, ["/a/my shot.png"]);
    }

    #[test]
    fn mentions_name_existing_images_once_and_leave_the_rest() {
        let dir = dir_with(&["shot.png", "ui.webp", "main.rs"]);
        let found = image_mentions(
            "compare @shot.png with (@ui.webp). Also @main.rs, @gone.png and @shot.png",
            dir.path(),
        );
        assert_eq!(
            found,
            [dir.path().join("shot.png"), dir.path().join("ui.webp")]
        );
    }
}
