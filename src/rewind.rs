//! Going back: `/rewind` (to just before a user message: the files, the conversation or
//! both), `/tree` (any node of the session's tree), `/label` and `/fork`, for the TUI and RPC
//! alike.
//!
//! The files go first: when they cannot be restored without asking (someone else changed
//! them since), nothing at all happens yet, and the caller asks and tries again. The
//! conversation moves by `Agent::rewind`, whose `rewound` event the recorder turns into a
//! branch entry of the session file.

use agent_core::{AgentMessage, OnConflict, RestoreOutcome};
use session::{Leaf, NodeKind, SessionTree, SessionWriter};
use tui::{RewindPoint, RewindScope, Rewinding, TreeRow};

use crate::sessions::{Opened, Sessions};

impl Sessions {
    /// The user messages of the history, oldest first.
    pub async fn rewind_points(&self) -> Vec<RewindPoint> {
        let Ok(snapshot) = self.agent.snapshot().await else {
            return Vec::new();
        };
        snapshot
            .messages
            .iter()
            .enumerate()
            .filter_map(|(index, message)| match message {
                AgentMessage::User(user) => Some(RewindPoint {
                    index,
                    text: user.plain_text(),
                    checkpoints: self.checkpoints.count_since(index),
                }),
                _ => None,
            })
            .collect()
    }

    /// Goes back to just before history index `index`.
    pub async fn rewind(
        &self,
        index: usize,
        scope: RewindScope,
        on: OnConflict,
    ) -> Result<Rewinding, String> {
        let snapshot = self.agent.snapshot().await.map_err(|e| e.to_string())?;
        if snapshot.running {
            return Err("the agent is running; stop it first (Esc)".into());
        }
        let Some(AgentMessage::User(user)) = snapshot.messages.get(index) else {
            return Err(format!(
                "message {index} is not a user message of this history"
            ));
        };
        let text = user.plain_text();
        let mut code = None;
        if scope.code() {
            let outcome = self.checkpoints.rewind_code(&self.agent, index, on).await;
            if matches!(outcome, RestoreOutcome::Conflicts { .. }) {
                return Ok(Rewinding {
                    code: Some(outcome),
                    conversation: false,
                    text: None,
                });
            }
            code = Some(outcome);
        }
        if scope.conversation() {
            self.recorder.flush().await;
            let messages = snapshot.messages[..index].to_vec();
            self.agent
                .rewind(messages, None)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(Rewinding {
            code,
            conversation: scope.conversation(),
            text: scope.conversation().then_some(text),
        })
    }

    /// The history index of the message saved as entry `id` (for RPC, which names messages by
    /// their entry ids).
    pub async fn message_index(&self, id: &str) -> Result<usize, String> {
        let path = self.saved_path()?;
        self.recorder.flush().await;
        let loaded = tokio::task::spawn_blocking(move || session::load_session(&path))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        loaded
            .message_ids
            .iter()
            .position(|m| m == id)
            .ok_or_else(|| format!("entry {id} is not a message of the current branch"))
    }

    fn saved_path(&self) -> Result<std::path::PathBuf, String> {
        match self.current() {
            Some((path, _)) if path.exists() => Ok(path),
            Some(_) => Err("nothing was said yet, so there is nothing to go back to".into()),
            None => Err("this session is not saved (--no-session): it has no tree".into()),
        }
    }

    /// The session's tree (every branch the file holds).
    pub async fn tree(&self) -> Result<SessionTree, String> {
        let path = self.saved_path()?;
        self.recorder.flush().await;
        tokio::task::spawn_blocking(move || session::load_tree(&path))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }

    /// The tree as `/tree` lists it.
    pub async fn tree_rows(&self) -> Result<Vec<TreeRow>, String> {
        Ok(rows(&self.tree().await?))
    }

    /// Makes entry `id` the current leaf: a user message goes to the point just before it
    /// (its text comes back, to edit and send again); with `code`, the files go back to how
    /// they were there.
    pub async fn jump(&self, id: &str, code: bool, on: OnConflict) -> Result<Rewinding, String> {
        if self.agent.snapshot().await.is_ok_and(|s| s.running) {
            return Err("the agent is running; stop it first (Esc)".into());
        }
        let tree = self.tree().await?;
        let path = self.saved_path()?;
        let node = tree
            .nodes
            .iter()
            .find(|n| n.id == id)
            .ok_or_else(|| format!("the session has no node {id}"))?;
        let (leaf, text) = match node.kind {
            NodeKind::User => (user_parent(&path, id).await?, Some(node.text.clone())),
            _ => (Some(id.to_string()), None),
        };
        let at = leaf.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let leaf = match &at {
                Some(id) => Leaf::Entry(id),
                None => Leaf::Root,
            };
            session::load_session_at(&path, leaf)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let mut outcome = None;
        if code {
            let restored = self
                .checkpoints
                .jump_code(&self.agent, &loaded.timeline, on)
                .await;
            if matches!(restored, RestoreOutcome::Conflicts { .. }) {
                return Ok(Rewinding {
                    code: Some(restored),
                    conversation: false,
                    text: None,
                });
            }
            outcome = Some(restored);
        }
        self.checkpoints.prepare(loaded.timeline);
        // Root: the empty history before the first entry.
        let (messages, leaf) = match leaf {
            Some(leaf) => (loaded.messages, Some(leaf)),
            None => (Vec::new(), None),
        };
        self.agent
            .rewind(messages, leaf)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Rewinding {
            code: outcome,
            conversation: true,
            text,
        })
    }

    /// Names the newest message of the session.
    pub async fn label(&self, name: &str) -> Result<(), String> {
        let name = name.trim();
        if name.is_empty() {
            return Err("usage: /label NAME".into());
        }
        self.saved_path()?;
        self.recorder.label(name.to_string()).await.map(|_| ())
    }

    /// Copies the current branch into a new session file and records there from now on;
    /// the old file stays as it was. Returns the new session's id.
    pub async fn fork(&self) -> Result<String, String> {
        if self.agent.snapshot().await.is_ok_and(|s| s.running) {
            return Err("the agent is running; stop it first (Esc)".into());
        }
        let path = self.saved_path()?;
        self.recorder.flush().await;
        let (home, cwd) = (self.home.clone(), self.cwd.clone());
        let (loaded, writer) = tokio::task::spawn_blocking(move || {
            let loaded = session::load_session(&path).map_err(|e| e.to_string())?;
            let writer = SessionWriter::fork(&home, &cwd, &loaded).map_err(|e| e.to_string())?;
            Ok::<_, String>((loaded, writer))
        })
        .await
        .map_err(|e| e.to_string())??;
        let id = writer.header().id.clone();
        self.checkpoints.prepare(loaded.timeline);
        self.switch(
            Opened::Writer(Box::new(writer)),
            loaded.messages,
            agent_core::ResetReason::Fork,
        )
        .await?;
        Ok(id)
    }
}

/// The parent entry of the user message `id` (`None`: it is the first entry).
async fn user_parent(path: &std::path::Path, id: &str) -> Result<Option<String>, String> {
    let (path, id) = (path.to_path_buf(), id.to_string());
    tokio::task::spawn_blocking(move || {
        let loaded =
            session::load_session_at(&path, Leaf::Entry(&id)).map_err(|e| e.to_string())?;
        let at = loaded.message_ids.iter().position(|m| *m == id);
        match at {
            Some(i) => Ok(loaded.parent_of_message(i)),
            None => Err(format!("entry {id} is not a message")),
        }
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Depth-first, in file order; a node's children are indented one step when there is more
/// than one of them (a single line of conversation stays flat).
fn rows(tree: &SessionTree) -> Vec<TreeRow> {
    let path: std::collections::HashSet<usize> = tree.current_path().into_iter().collect();
    let mut out = Vec::with_capacity(tree.nodes.len());
    let mut stack: Vec<(usize, usize)> = tree.roots().map(|r| (r, 0)).collect();
    let roots = stack.len();
    stack.reverse();
    if roots > 1 {
        for item in &mut stack {
            item.1 = 1;
        }
    }
    while let Some((i, depth)) = stack.pop() {
        let node = &tree.nodes[i];
        out.push(TreeRow {
            id: node.id.clone(),
            depth,
            user: node.kind == NodeKind::User,
            text: node.text.clone(),
            label: node.label.clone(),
            checkpoints: node.checkpoints,
            subagents: node.subagents.iter().map(|s| s.id.clone()).collect(),
            on_path: path.contains(&i),
            current: tree.current == Some(i),
        });
        let child_depth = if node.children.len() > 1 {
            depth + 1
        } else {
            depth
        };
        for &child in node.children.iter().rev() {
            stack.push((child, child_depth));
        }
    }
    out
}
