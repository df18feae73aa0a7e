//! Tools that come and go while the agent runs (an MCP server's tools arrive when it is
//! ready): one shared list the host replaces whenever it changes. The loop reads it before
//! every model call, so a tool that arrives mid-run is offered from the next call on, and a
//! call made before then simply lacks it.

use std::sync::Arc;

use tokio::sync::watch;

use crate::Tool;

pub(crate) type List = Arc<Vec<Arc<dyn Tool>>>;

/// A handle to the agent's extra tools; cheap to clone. Replacing the list is synchronous, so a
/// tool that makes others callable (`mcp_search`) has done so before its result goes back.
#[derive(Clone)]
pub struct ExtraTools {
    tx: Arc<watch::Sender<List>>,
}

impl Default for ExtraTools {
    fn default() -> Self {
        Self {
            tx: Arc::new(watch::channel(Arc::new(Vec::new())).0),
        }
    }
}

impl ExtraTools {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the whole list (announced as `tools_changed`). A name that clashes with a
    /// built-in tool is ignored: the built-in wins.
    pub fn set(&self, tools: Vec<Arc<dyn Tool>>) {
        self.tx.send_replace(Arc::new(tools));
    }

    /// The list as it is now.
    pub fn current(&self) -> List {
        self.tx.borrow().clone()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<List> {
        self.tx.subscribe()
    }

    /// The built-in tools followed by the extra ones whose names are free.
    pub(crate) fn merged(&self, builtin: &List) -> List {
        let extra = self.current();
        if extra.is_empty() {
            return builtin.clone();
        }
        let mut all: Vec<Arc<dyn Tool>> = builtin.as_ref().clone();
        for tool in extra.iter() {
            if !all.iter().any(|t| t.name() == tool.name()) {
                all.push(tool.clone());
            }
        }
        Arc::new(all)
    }
}
