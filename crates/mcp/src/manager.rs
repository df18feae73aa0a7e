//! The configured servers as background tasks. Each starts on its own task the moment the
//! manager starts: nothing waits for it (the TUI's first frame and first prompt do not);
//! when one is ready its tools are handed to the agent ([`ExtraTools`]) and every change is
//! announced ([`McpStatus`]). Headless modes call [`McpManager::wait_ready`] before their
//! first model call. A server that fails, times out or exits keeps its reason for `/mcp`,
//! and can be restarted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{ExtraTools, McpServerStatus, McpState, McpStatus, Tool};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::{Launch, StderrTail, connect};
use crate::config::ServerConfig;
use crate::search::{McpSearch, score};
use crate::tool::McpTool;

type Notify = Box<dyn Fn(McpStatus) + Send + Sync>;

/// The MCP servers of this agent; cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// For the search tool, which must not keep the manager alive.
    me: std::sync::Weak<Inner>,
    configs: BTreeMap<String, ServerConfig>,
    launch: Launch,
    /// Definitions above this many tokens go behind `mcp_search`; follows the model.
    budget_tokens: std::sync::atomic::AtomicU64,
    share: f64,
    extra: ExtraTools,
    notify: Mutex<Option<Notify>>,
    state: Mutex<State>,
    /// Bumped on every change; `wait_ready` watches it.
    changes: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    servers: BTreeMap<String, Slot>,
    /// Tools `mcp_search` found: offered while in search mode.
    activated: BTreeSet<String>,
}

struct Slot {
    state: McpState,
    tools: Vec<Arc<McpTool>>,
    /// The server's tools that are not offered, each with why.
    left_out: Vec<String>,
    error: Option<String>,
    /// Which start this is: a late report from a replaced task is dropped.
    generation: u64,
    task: Option<JoinHandle<()>>,
}

impl McpManager {
    /// The servers of `configs`, not started yet. `context_window × share` is the budget for
    /// all tool definitions together.
    pub fn new(
        configs: BTreeMap<String, ServerConfig>,
        launch: Launch,
        context_window: u64,
        share: f64,
        extra: ExtraTools,
    ) -> Self {
        let servers = configs
            .iter()
            .map(|(name, config)| {
                let slot = Slot {
                    state: if config.enabled() {
                        McpState::Starting
                    } else {
                        McpState::Disabled
                    },
                    tools: Vec::new(),
                    left_out: Vec::new(),
                    error: None,
                    generation: 0,
                    task: None,
                };
                (name.clone(), slot)
            })
            .collect();
        let share = if share.is_finite() {
            share.clamp(0.0, 1.0)
        } else {
            0.1
        };
        Self {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                configs,
                launch,
                budget_tokens: std::sync::atomic::AtomicU64::new(budget(context_window, share)),
                share,
                extra,
                notify: Mutex::new(None),
                state: Mutex::new(State {
                    servers,
                    activated: BTreeSet::new(),
                }),
                changes: watch::channel(0).0,
            }),
        }
    }

    /// The list the manager fills: give it to the agent (`AgentConfig::extra_tools`).
    pub fn extra_tools(&self) -> ExtraTools {
        self.inner.extra.clone()
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.configs.is_empty()
    }

    /// Starts every enabled server in the background; `notify` hears every change of state.
    /// Must be called on a tokio runtime.
    pub fn start(&self, notify: impl Fn(McpStatus) + Send + Sync + 'static) {
        *self.inner.notify.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(notify));
        let names: Vec<String> = self
            .inner
            .configs
            .iter()
            .filter(|(_, c)| c.enabled())
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            Inner::spawn(&self.inner, &name);
        }
        self.inner.publish();
    }

    /// Stops the server `name` (if it runs) and starts it again.
    pub fn restart(&self, name: &str) -> Result<(), String> {
        let config = self.inner.configs.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.inner.configs.keys().map(String::as_str).collect();
            format!(
                "no MCP server `{name}` (configured: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
        if !config.enabled() {
            return Err(format!("MCP server `{name}` is disabled in the config"));
        }
        Inner::spawn(&self.inner, name);
        self.inner.publish();
        Ok(())
    }

    /// Resolves when no server is starting any more (each is bounded by its startup
    /// timeout): headless modes call it before their first model call.
    pub async fn wait_ready(&self) {
        let mut changes = self.inner.changes.subscribe();
        loop {
            if !self.inner.any_starting() {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Servers marked `required` that failed, with why.
    pub fn required_failures(&self) -> Vec<(String, String)> {
        let state = self.inner.lock();
        state
            .servers
            .iter()
            .filter(|(name, slot)| {
                slot.state == McpState::Failed
                    && self.inner.configs.get(*name).is_some_and(|c| c.required)
            })
            .map(|(name, slot)| (name.clone(), slot.error.clone().unwrap_or_default()))
            .collect()
    }

    /// The model changed: the budget is a share of its window (a smaller window may put the
    /// tools behind `mcp_search`, a larger one bring them back).
    pub fn set_context_window(&self, context_window: u64) {
        let new = budget(context_window, self.inner.share);
        let old = self
            .inner
            .budget_tokens
            .swap(new, std::sync::atomic::Ordering::Relaxed);
        if old != new {
            self.inner.publish();
        }
    }

    /// The servers as they are now.
    pub fn status(&self) -> McpStatus {
        self.inner.status(&self.inner.lock())
    }
}

fn budget(context_window: u64, share: f64) -> u64 {
    (context_window as f64 * share) as u64
}

impl Inner {
    fn budget(&self) -> u64 {
        self.budget_tokens
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn any_starting(&self) -> bool {
        self.lock()
            .servers
            .values()
            .any(|s| s.state == McpState::Starting)
    }

    /// (Re)starts `name` on a task of its own.
    fn spawn(this: &Arc<Self>, name: &str) {
        let Some(config) = this.configs.get(name).cloned() else {
            return;
        };
        let mut state = this.lock();
        let Some(slot) = state.servers.get_mut(name) else {
            return;
        };
        if let Some(task) = slot.task.take() {
            // Dropping its service closes the connection and kills a stdio server.
            task.abort();
        }
        slot.generation += 1;
        slot.state = McpState::Starting;
        slot.tools.clear();
        let generation = slot.generation;
        let inner = Arc::downgrade(this);
        let server = name.to_string();
        slot.task = Some(tokio::spawn(async move {
            let stderr = StderrTail::default();
            let Some(launch) = inner.upgrade() else {
                return;
            };
            let timeout = config.startup_timeout();
            let started = tokio::time::timeout(timeout, async {
                let connected = connect(&config, &launch.launch, &stderr).await?;
                let tools = connected
                    .service
                    .peer()
                    .list_all_tools()
                    .await
                    .map_err(|e| format!("listing its tools failed: {e}"))?;
                Ok::<_, String>((connected, tools))
            })
            .await;
            drop(launch);
            let (connected, listed) = match started {
                Err(_) => {
                    let mut why = format!(
                        "did not start within {} s (startup_timeout_secs)",
                        timeout.as_secs_f64()
                    );
                    append_stderr(&mut why, &stderr);
                    report(&inner, &server, generation, Err(why));
                    return;
                }
                Ok(Err(why)) => {
                    report(&inner, &server, generation, Err(why));
                    return;
                }
                Ok(Ok(started)) => started,
            };
            let crate::client::Connected {
                service,
                _group: group,
                _child: child,
            } = connected;
            let peer = service.peer().clone();
            let mut ready = Ready::default();
            for tool in listed.iter().filter(|t| config.offers(&t.name)) {
                match McpTool::new(&server, tool, config.tool_timeout(), peer.clone()) {
                    Ok(tool) => ready.tools.push(Arc::new(tool)),
                    Err(why) => ready.left_out.push(why),
                }
            }
            report(&inner, &server, generation, Ok(ready));
            let reason = service.waiting().await;
            drop(group);
            drop(child);
            let mut why = match reason {
                Ok(rmcp::service::QuitReason::Closed) => "the server exited".to_string(),
                Ok(other) => format!("the connection ended ({other:?})"),
                Err(e) => format!("the connection task failed: {e}"),
            };
            stderr.settle().await;
            append_stderr(&mut why, &stderr);
            report(&inner, &server, generation, Err(why));
        }));
    }

    /// Everything that follows from the current state: the tools offered, the status told.
    fn publish(&self) {
        let (tools, status) = {
            let state = self.lock();
            let status = self.status(&state);
            let ready: Vec<&Arc<McpTool>> = state
                .servers
                .values()
                .filter(|s| s.state == McpState::Ready)
                .flat_map(|s| s.tools.iter())
                .collect();
            let tools: Vec<Arc<dyn Tool>> = if status.search_mode {
                let search: Arc<dyn Tool> = Arc::new(McpSearch::new(self.me.clone(), ready.len()));
                std::iter::once(search)
                    .chain(
                        ready
                            .iter()
                            .filter(|t| state.activated.contains(t.name()))
                            .map(|t| (*t).clone() as Arc<dyn Tool>),
                    )
                    .collect()
            } else {
                ready
                    .iter()
                    .map(|t| (*t).clone() as Arc<dyn Tool>)
                    .collect()
            };
            (tools, status)
        };
        self.extra.set(tools);
        self.changes.send_modify(|n| *n += 1);
        if let Some(notify) = self
            .notify
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            notify(status);
        }
    }

    fn status(&self, state: &State) -> McpStatus {
        let servers: Vec<McpServerStatus> = state
            .servers
            .iter()
            .map(|(name, slot)| McpServerStatus {
                name: name.clone(),
                state: slot.state,
                tools: slot.tools.iter().map(|t| t.name().to_string()).collect(),
                tokens: slot.tools.iter().map(|t| t.tokens()).sum(),
                error: slot.error.clone(),
                left_out: slot.left_out.clone(),
            })
            .collect();
        let total: u64 = servers
            .iter()
            .filter(|s| s.state == McpState::Ready)
            .map(|s| s.tokens)
            .sum();
        McpStatus {
            search_mode: total > self.budget(),
            budget_tokens: self.budget(),
            servers,
        }
    }

    /// The best matches of `query` among the ready tools, made callable.
    pub(crate) fn search_and_activate(&self, query: &str, limit: usize) -> Vec<(String, String)> {
        let found: Vec<(String, String)> = {
            let mut state = self.lock();
            let mut scored: Vec<(usize, String, String)> = state
                .servers
                .values()
                .filter(|s| s.state == McpState::Ready)
                .flat_map(|s| s.tools.iter())
                .map(|t| {
                    (
                        score(query, t.name(), t.description()),
                        t.name().to_string(),
                        t.description().to_string(),
                    )
                })
                .filter(|(score, _, _)| *score > 0)
                .collect();
            scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            scored.truncate(limit);
            for (_, name, _) in &scored {
                state.activated.insert(name.clone());
            }
            scored.into_iter().map(|(_, n, d)| (n, d)).collect()
        };
        if !found.is_empty() {
            self.publish();
        }
        found
    }
}

fn append_stderr(why: &mut String, stderr: &StderrTail) {
    let said = stderr.last(3);
    if !said.is_empty() {
        why.push_str(&format!("; stderr: {said}"));
    }
}

/// A server task's news: ready with its tools, or failed and why.
/// A started server's tools: those offered, and why the others are not.
#[derive(Default)]
struct Ready {
    tools: Vec<Arc<McpTool>>,
    left_out: Vec<String>,
}

fn report(
    inner: &std::sync::Weak<Inner>,
    server: &str,
    generation: u64,
    outcome: Result<Ready, String>,
) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    {
        let mut state = inner.lock();
        let Some(slot) = state.servers.get_mut(server) else {
            return;
        };
        if slot.generation != generation {
            return;
        }
        match outcome {
            Ok(ready) => {
                slot.state = McpState::Ready;
                slot.tools = ready.tools;
                slot.left_out = ready.left_out;
                slot.error = None;
            }
            Err(why) => {
                slot.state = McpState::Failed;
                slot.tools.clear();
                slot.left_out.clear();
                slot.error = Some(why);
            }
        }
    }
    inner.publish();
}
