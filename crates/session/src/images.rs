//! A session's images, stored once each by content beside its file:
//! `sessions/<cwd>/<name>.spill/images/<sha256>`. The session file holds only the hash, so a
//! session with a hundred screenshots loads as fast as one without, and an image the history
//! carries on every request is written once. The bytes are read when a request sends them
//! ([`llm::ImageContent::base64`]).

use std::io;
use std::path::{Path, PathBuf};

use agent_core::AgentMessage;
use llm::{ImageContent, UserContent};
use sha2::{Digest, Sha256};

use crate::spill::{create_spill_dir, spill_dir};

/// Where the images of `session_file` are kept.
pub fn images_dir(session_file: &Path) -> PathBuf {
    spill_dir(session_file).join("images")
}

/// The content of `message` that may hold images.
fn content_of(message: &AgentMessage) -> &[UserContent] {
    match message {
        AgentMessage::User(user) => &user.content,
        AgentMessage::ToolResult(result) => &result.content,
        _ => &[],
    }
}

fn images_of(message: &mut AgentMessage) -> impl Iterator<Item = &mut ImageContent> {
    let content = match message {
        AgentMessage::User(user) => &mut user.content[..],
        AgentMessage::ToolResult(result) => &mut result.content[..],
        _ => &mut [],
    };
    content.iter_mut().filter_map(|c| match c {
        UserContent::Image(image) => Some(image),
        UserContent::Text { .. } => None,
    })
}

/// `message` as `session_file` holds it: each image stored in the session's image directory
/// and referred to by its hash. `None` when the message has no image (nothing to change).
pub(crate) fn stored(
    message: &AgentMessage,
    session_file: &Path,
) -> io::Result<Option<AgentMessage>> {
    // Checked before any copy: every message the session records passes here.
    let has_image = content_of(message)
        .iter()
        .any(|c| matches!(c, UserContent::Image(_)));
    if !has_image {
        return Ok(None);
    }
    let dir = images_dir(session_file);
    create_spill_dir(session_file)?;
    platform::fs::create_private_dirs(&spill_dir(session_file), &dir)?;
    let mut copy = message.clone();
    for image in images_of(&mut copy) {
        store(image, &dir)?;
    }
    Ok(Some(copy))
}

/// Writes `image`'s bytes to `dir` under their hash (unless an earlier message stored them)
/// and leaves only the reference in `image`.
fn store(image: &mut ImageContent, dir: &Path) -> io::Result<()> {
    let already_here = image.data.is_empty()
        && image.sha256.as_ref().is_some_and(|sha| {
            image.stored_at.as_deref() == Some(&dir.join(sha)) && dir.join(sha).is_file()
        });
    if !already_here {
        // Fresh bytes, or an image of another session's (a fork): stored here too.
        let bytes = image.bytes().map_err(io::Error::other)?;
        let sha = hex(&Sha256::digest(&bytes));
        let path = dir.join(&sha);
        if !path.is_file() {
            platform::fs::write_private_atomic(&path, &bytes)?;
        }
        image.sha256 = Some(sha);
        image.stored_at = Some(path);
    }
    image.data.clear();
    Ok(())
}

/// Points each image reference of a message read from `session_file` at its stored bytes.
pub(crate) fn locate(message: &mut AgentMessage, session_file: &Path) {
    let mut images = images_of(message).filter(|i| i.data.is_empty()).peekable();
    if images.peek().is_none() {
        return;
    }
    let dir = images_dir(session_file);
    for image in images {
        // Only a hash names a file: anything else in the field must not reach outside.
        if let Some(sha) = image.sha256.as_deref().filter(|s| is_sha256(s)) {
            image.stored_at = Some(dir.join(sha));
        }
    }
}

fn is_sha256(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
