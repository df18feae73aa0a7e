//! Taking it back: snapshots of the workspace in a shadow git store under the agent's home
//! (never the user's `.git`), what changed between two of them, and restoring exactly the
//! paths the agent changed.
