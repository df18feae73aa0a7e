//! What a user attaches to a message besides text: images.
//!
//! - [`prepare`] checks bytes are an image every provider takes (PNG, JPEG, GIF, WebP), scales
//!   one the provider would refuse down to its [`llm::ImageLimit`] (aspect ratio kept) and
//!   describes it for the editor's chip.
//! - [`pasted_paths`] reads a paste as the paths of dropped files, the way terminals paste
//!   them (quoted, backslash-escaped, `file://`); [`image_mentions`] finds `@shot.png` in a
//!   prompt.
//! - [`from_clipboard`] takes the image on this display's clipboard.
//!
//! The TUI, `-i/--image` and RPC all go through here, so an image is checked and scaled the
//! same way whichever door it came in by.

mod paths;
mod prepare;

use std::path::{Path, PathBuf};

use llm::{ImageContent, Model};

pub use paths::{image_mentions, is_image_path, pasted_paths};
pub use prepare::{Attachment, from_clipboard, from_path, prepare};

/// The images of a prompt given outside the TUI (`-i` paths, then the image files it
/// `@`-mentions), read and prepared for `model`; `Err` names what cannot be sent: an image for
/// a model that takes none, or a file that is not a usable image.
pub fn prompt_images(
    prompt: &str,
    given: &[PathBuf],
    cwd: &Path,
    model: &Model,
) -> Result<Vec<ImageContent>, String> {
    if !model.images && given.is_empty() {
        // A mention is also just a file's name: without image input it goes as text.
        return Ok(Vec::new());
    }
    let mentioned = image_mentions(prompt, cwd);
    let mut images: Vec<ImageContent> = given_images(given, cwd, model)?
        .into_iter()
        .map(|a| a.image)
        .collect();
    let limit = llm::image_limit(model.api);
    for path in mentioned {
        images.push(from_path(&path, limit)?.image);
    }
    Ok(images)
}

/// The `-i` images (relative paths from `cwd`), read and prepared for `model`; `Err` when
/// the model takes none or a file is not a usable image.
pub fn given_images(
    given: &[PathBuf],
    cwd: &Path,
    model: &Model,
) -> Result<Vec<Attachment>, String> {
    if given.is_empty() {
        return Ok(Vec::new());
    }
    if !model.images {
        return Err(not_taken(model));
    }
    let limit = llm::image_limit(model.api);
    given
        .iter()
        .map(|path| from_path(&cwd.join(path), limit))
        .collect()
}

/// Why `model` gets no image.
pub fn not_taken(model: &Model) -> String {
    format!(
        "{} does not take images; pick a model that does (--list-models), or mark it `images = true` in config.toml's [[models]]",
        model.id
    )
}
