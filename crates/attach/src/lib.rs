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

pub use paths::{image_mentions, is_image_path, pasted_paths};
pub use prepare::{Attachment, from_clipboard, from_path, prepare};
