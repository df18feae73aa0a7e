//! Paths as git prints them (bytes, `-z`), the checks a path passes before the store writes
//! or deletes it, the store's directory name for a workspace, and paths in JSON (a
//! checkpoint lives in the session file; a file name need not be UTF-8).

use std::path::{Component, Path, PathBuf};

use crate::error::{CheckpointError, Result};

/// A path from git's NUL-separated output.
pub(crate) fn from_bytes(bytes: &[u8]) -> PathBuf {
    platform::fs::path_from_bytes(bytes)
}

/// The NUL-separated records of git's `-z` output, without empty ones.
pub(crate) fn split_nul(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|&b| b == 0).filter(|r| !r.is_empty())
}

/// A workspace-relative path the store may touch: relative, made of plain names only (no
/// `..`, no `.`, no root), and never inside a `.git` (the user's repository, or a nested
/// one, is never written or deleted).
pub(crate) fn check_relative(path: &Path) -> Result<()> {
    let bad = |reason| {
        Err(CheckpointError::InvalidPath {
            path: path.to_path_buf(),
            reason,
        })
    };
    if path.as_os_str().is_empty() {
        return bad("empty path");
    }
    for component in path.components() {
        match component {
            Component::Normal(name) if name == ".git" => {
                return bad("inside a .git directory");
            }
            Component::Normal(_) => {}
            _ => return bad("not a plain path inside the workspace"),
        }
    }
    Ok(())
}

/// A directory name for a workspace: readable (the tail of the path) and unique through a
/// hash of the whole path. The same scheme as the session directories (`session` crate);
/// repeated here rather than depending on that crate for fifteen lines.
pub(crate) fn workspace_slug(workspace: &Path) -> String {
    let text = workspace.to_string_lossy();
    let readable: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let readable = readable.trim_matches('-');
    let chars: Vec<char> = readable.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(60)..].iter().collect();
    format!(
        "{tail}-{:08x}",
        fnv1a(&platform::fs::path_bytes(workspace)) as u32
    )
}

/// FNV-1a: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Serde for a path: a JSON string when it is UTF-8 (nearly always), else its bytes as an
/// array, so a checkpoint of an oddly named file still round-trips exactly.
pub(crate) mod serde_path {
    use super::*;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub(crate) fn serialize<S: Serializer>(
        path: &Path,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match path.to_str() {
            Some(text) => s.serialize_str(text),
            None => platform::fs::path_bytes(path).serialize(s),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<PathBuf, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(text) => PathBuf::from(text),
            Repr::Bytes(bytes) => from_bytes(&bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_outside_git_pass() {
        assert!(check_relative(Path::new("src/a.rs")).is_ok());
        assert!(check_relative(Path::new("a/.gitignore")).is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".git/HEAD",
            "sub/.git/config",
            "./a",
        ] {
            assert!(check_relative(Path::new(bad)).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn slugs_are_readable_and_distinct() {
        let slug = workspace_slug(Path::new("/home/me/my.project"));
        assert!(slug.starts_with("home-me-my-project-"), "{slug}");
        assert_ne!(
            workspace_slug(Path::new("/a-b")),
            workspace_slug(Path::new("/a/b"))
        );
    }
}
