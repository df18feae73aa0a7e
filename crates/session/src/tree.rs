//! The session as a tree, for `/tree`: every branch the file holds (rewinds, `/tree` jumps, a
//! crash repair), not just the one the history follows.
//!
//! Only what a person recognises is a node: user messages, the assistant's replies and
//! compaction summaries. Tool results, notices and bookkeeping entries (checkpoints, model
//! switches, labels) hang off the node before them; the checkpoints are counted there, so the
//! tree can say which nodes have code to restore.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use agent_core::AgentMessage;

use crate::entry::{Entry, EntryBody};
use crate::load::scan_entries;

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    User,
    Assistant,
    Compaction,
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// The entry id: what `Leaf::Entry` and the RPC `rewind` take.
    pub id: String,
    pub kind: NodeKind,
    /// The message on one line, cut short.
    pub text: String,
    /// The nearest node above it (an index into [`SessionTree::nodes`]).
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// The name `/label` gave it.
    pub label: Option<String>,
    /// Checkpoints taken between this node and the next one on its branch.
    pub checkpoints: usize,
    /// The subagents its `task` calls ran, with where each one's conversation is.
    pub subagents: Vec<SubagentLink>,
}

/// A subagent a `task` call ran: its id (`explore-1`) and its own session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentLink {
    pub id: String,
    pub session: Option<String>,
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct SessionTree {
    /// In file order: a parent always comes before its children.
    pub nodes: Vec<TreeNode>,
    /// The node the current leaf is at (or just below, after bookkeeping entries).
    pub current: Option<usize>,
    /// How many branches the file holds: entries no other entry continues.
    pub branches: usize,
}

impl SessionTree {
    /// The nodes from the root to the current leaf.
    pub fn current_path(&self) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = self.current;
        while let Some(i) = at {
            path.push(i);
            at = self.nodes[i].parent;
        }
        path.reverse();
        path
    }

    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].parent.is_none())
    }
}

const PREVIEW_CHARS: usize = 120;

/// Reads the tree of the session file at `path`. Damaged lines are skipped, as when loading.
pub fn load_tree(path: &Path) -> io::Result<SessionTree> {
    let mut tree = SessionTree::default();
    // For each entry: the node it is or hangs under.
    let mut node_of: Vec<Option<usize>> = Vec::new();
    let mut has_child: Vec<bool> = Vec::new();
    let mut labels: HashMap<String, String> = HashMap::new();
    scan_entries(path, |entry: Entry, here, parent| {
        if let Some(p) = parent {
            has_child[p] = true;
        }
        has_child.push(false);
        let above = parent.and_then(|p| node_of[p]);
        let node = match &entry.body {
            EntryBody::Message(AgentMessage::User(user)) => {
                Some((NodeKind::User, one_line(&user.plain_text())))
            }
            EntryBody::Message(AgentMessage::Assistant(assistant)) => {
                let text = assistant.text();
                let text = if text.trim().is_empty() {
                    let names: Vec<&str> =
                        assistant.tool_calls().map(|c| c.name.as_str()).collect();
                    format!("[{}]", names.join(", "))
                } else {
                    one_line(&text)
                };
                Some((NodeKind::Assistant, text))
            }
            EntryBody::Message(AgentMessage::CompactionSummary(_))
            | EntryBody::Compaction { .. } => Some((
                NodeKind::Compaction,
                "[earlier conversation compacted]".into(),
            )),
            EntryBody::Checkpoint(_) => {
                if let Some(a) = above {
                    tree.nodes[a].checkpoints += 1;
                }
                None
            }
            EntryBody::Label { target, name } => {
                labels.insert(target.clone(), name.clone());
                None
            }
            // A `task` result names its subagent: listed under the reply that called it.
            EntryBody::Message(AgentMessage::ToolResult(result)) => {
                let details = result.details.as_ref();
                let id = details.and_then(|d| d["subagent"]["id"].as_str());
                if let (Some(a), Some(id)) = (above, id) {
                    tree.nodes[a].subagents.push(SubagentLink {
                        id: id.to_string(),
                        session: details
                            .and_then(|d| d["session"].as_str())
                            .map(str::to_string),
                    });
                }
                None
            }
            _ => None,
        };
        match node {
            Some((kind, text)) => {
                let i = tree.nodes.len();
                tree.nodes.push(TreeNode {
                    id: entry.id,
                    kind,
                    text,
                    parent: above,
                    children: Vec::new(),
                    label: None,
                    checkpoints: 0,
                    subagents: Vec::new(),
                });
                if let Some(a) = above {
                    tree.nodes[a].children.push(i);
                }
                node_of.push(Some(i));
            }
            None => node_of.push(above),
        }
        debug_assert_eq!(node_of.len(), here + 1);
    })?;
    tree.current = node_of.last().copied().flatten();
    tree.branches = has_child.iter().filter(|c| !**c).count();
    for node in &mut tree.nodes {
        node.label = labels.remove(&node.id);
    }
    Ok(tree)
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}
