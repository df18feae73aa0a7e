//! `task`: hands a self-contained job to a subagent — a child agent with its own context —
//! and returns its final answer. The tool describes and checks the call; the host runs the
//! child ([`Delegate`]), since only the host can make an agent (provider, guard, sessions).

use std::sync::Arc;

use agent_core::{Mode, Tool, ToolContext, ToolError, ToolOutput, ToolView};
use async_trait::async_trait;
use serde_json::{Value, json};

pub const TASK: &str = "task";

/// One job for a subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// A few words for the user ("find the parser's callers").
    pub description: String,
    /// Everything the subagent needs to know: it sees nothing else of the conversation.
    pub prompt: String,
    /// The agent definition to use; the default one when absent.
    pub agent: Option<String>,
}

/// What runs subagents (the host).
#[async_trait]
pub trait Delegate: Send + Sync {
    /// The agents a job may name, as `(name, description)`, the default first.
    fn agents(&self) -> Vec<(String, String)>;
    /// Runs the job to its end; stops the subagent (and its commands) when `ctx.cancel` fires.
    async fn run(&self, job: Job, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// The host's delegate, as the tool options carry it.
#[derive(Clone)]
pub struct Delegation(pub Arc<dyn Delegate>);

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.0.agents().into_iter().map(|(n, _)| n).collect();
        f.debug_tuple("Delegation").field(&names).finish()
    }
}

pub struct TaskTool {
    delegate: Option<Arc<dyn Delegate>>,
    description: String,
}

impl TaskTool {
    /// Without a delegate the tool is offered to nobody.
    pub fn new(delegation: Option<Delegation>) -> Self {
        let delegate = delegation.map(|d| d.0);
        let mut description = "Hand a self-contained job to a subagent: a child agent with its \
            own context and tools, which works on it alone and returns its final answer as the \
            result. Use it for research across many files, or independent pieces of work; \
            several task calls in one reply run at the same time. The subagent sees nothing of \
            this conversation: put everything it needs in `prompt`, and say what to report."
            .to_string();
        if let Some(delegate) = &delegate {
            let agents: Vec<String> = delegate
                .agents()
                .into_iter()
                .enumerate()
                .map(|(i, (name, what))| {
                    let default = if i == 0 { " (the default)" } else { "" };
                    format!("- {name}{default}: {what}")
                })
                .collect();
            description.push_str("\n\nAgents:\n");
            description.push_str(&agents.join("\n"));
        }
        Self {
            delegate,
            description,
        }
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "3 to 6 words for the user: what the subagent does"},
                "prompt": {"type": "string", "description": "The whole job: context, what to do, what to report"},
                "agent": {"type": "string", "description": "Which agent (default: the first listed)"}
            },
            "required": ["description", "prompt"]
        })
    }

    fn view(&self) -> ToolView {
        ToolView::Task
    }

    /// Offered only where a host runs subagents.
    fn offered_in(&self, _mode: Mode) -> bool {
        self.delegate.is_some()
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(delegate) = &self.delegate else {
            return Err(ToolError("Subagents are not available here.".into()));
        };
        let text = |key: &str| args[key].as_str().map(str::trim).unwrap_or_default();
        if text("prompt").is_empty() {
            return Err(ToolError(
                "`prompt` is empty: say what the subagent is to do.".into(),
            ));
        }
        let job = Job {
            description: text("description").to_string(),
            prompt: text("prompt").to_string(),
            agent: Some(text("agent").to_string()).filter(|a| !a.is_empty()),
        };
        delegate.run(job, &ctx).await
    }
}
