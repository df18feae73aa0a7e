//! Subagents: the `task` tool's children. Each is an agent-core agent of its own — its own
//! context, tools and session file — made from an agent definition, within what its parent
//! may do: the parent's tools are the ceiling of its tools, its calls go through the parent's
//! guard (sandbox, approvals, trust, mode), and its questions are asked in the parent's UI,
//! saying which subagent asks. Its events reach the parent's readers wrapped as
//! `subagent` events; only its final answer enters the parent's history.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use agent_core::{
    Agent, AgentConfig, AgentEvent, AgentMessage, ApprovalRequest, Hooks, ModeSwitch, Redactor,
    SubagentRef, ToolContext, ToolError, ToolOutput,
};
use async_trait::async_trait;
use extensions::{AgentDefinition, AgentDefinitions};
use llm::{Model, Provider, Registry, StopReason, StreamOptions, ThinkingLevel, Usage};
use serde_json::json;
use session::{Home, Recorder, RecorderSetup, SessionWriter};
use tokio::sync::Semaphore;

/// How deep subagents nest: a child may start children only when its definition allows it,
/// and a grandchild never does.
pub const MAX_DEPTH: usize = 2;

/// How many children run at once unless `[subagents] max_concurrent` says otherwise.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;

/// How often a running child's line under its `task` call is refreshed (its elapsed time).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What every child of one agent is made with.
#[derive(Clone)]
pub struct Kit {
    pub cwd: PathBuf,
    pub home: Home,
    pub registry: Registry,
    pub provider: Arc<dyn Provider>,
    /// The parent's tool options (bash's sandbox, plan-mode restriction and hidden keys,
    /// fetch's host check); a child that writes nothing also gets `read_only`.
    pub tool_options: tools::ToolOptions,
    /// Always holds: the read-only sandbox of a child whose definition writes nothing.
    pub read_only: sandbox::Restriction,
    /// The parent's guard (with its hook commands): the children's calls are checked by it.
    pub hooks: Arc<dyn Hooks>,
    pub stream_options: StreamOptions,
    /// The parent's mode: a child in plan mode is offered nothing that writes.
    pub mode: ModeSwitch,
    pub redactor: Redactor,
    /// The tools the parent has: a child gets at most these.
    pub parent_tools: Vec<String>,
    /// The parent's session file now (children's files go beside it); `None`: not saved.
    pub session: Arc<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    pub date: String,
}

/// The children of one agent, and starting them.
pub struct Subagents {
    /// Set once the parent's tools, guard and options exist (the `task` tool is made before).
    kit: OnceLock<Arc<Kit>>,
    definitions: AgentDefinitions,
    /// The agent whose `task` calls these are (set once it exists).
    parent: OnceLock<Agent>,
    /// How deep the parent is (the main agent: 0).
    depth: usize,
    /// How many of this agent's children run at once: each level has its own, so a child
    /// waiting for its own children never holds what they wait for.
    permits: Arc<Semaphore>,
    max_concurrent: usize,
    /// Shared by every level: ids, and the running children to steer and stop by id.
    registry: Arc<Registry_>,
}

/// The running children of the whole process, by id.
#[derive(Default)]
struct Registry_ {
    next: AtomicU64,
    running: Mutex<HashMap<String, Running>>,
}

/// A running child, its parent, and whether the user stopped it alone.
#[derive(Clone)]
struct Running {
    agent: Agent,
    parent: Agent,
    stopped: Arc<std::sync::atomic::AtomicBool>,
}

/// Takes a child out of the running ones however its `task` call ends — also when the call
/// is dropped (an aborted batch abandons a tool that does not stop in time): the child is
/// stopped and its questions withdrawn.
struct Leaving {
    registry: Arc<Registry_>,
    id: String,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        if let Some(running) = lock(&self.registry.running).remove(&self.id) {
            running.agent.stop();
            running.parent.withdraw_questions_of(&self.id);
        }
    }
}

impl Subagents {
    pub fn new(definitions: AgentDefinitions, max_concurrent: usize) -> Arc<Self> {
        Arc::new(Self {
            kit: OnceLock::new(),
            definitions,
            parent: OnceLock::new(),
            depth: 0,
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            max_concurrent: max_concurrent.max(1),
            registry: Arc::default(),
        })
    }

    /// What the children are made with; call before the parent runs.
    pub fn equip(&self, kit: Kit) {
        let _ = self.kit.set(Arc::new(kit));
    }

    fn kit(&self) -> Result<&Arc<Kit>, String> {
        self.kit
            .get()
            .ok_or_else(|| "subagents are not ready yet".to_string())
    }

    /// The agent the `task` calls belong to; call once it is spawned.
    pub fn attach(&self, parent: &Agent) {
        let _ = self.parent.set(parent.clone());
    }

    /// Sends `text` to the running child `id` as steering; false when no such child runs.
    pub fn steer(&self, id: &str, text: &str) -> bool {
        match self.child(id) {
            Some(child) => {
                child.agent.steer(AgentMessage::user(text));
                true
            }
            None => false,
        }
    }

    /// Stops the running child `id` (its commands killed); its `task` call ends with what it
    /// had. False when no such child runs.
    pub fn stop(&self, id: &str) -> bool {
        match self.child(id) {
            Some(child) => {
                child.stopped.store(true, Ordering::SeqCst);
                child.agent.stop();
                // Its questions asked in the parent's UI wait for nobody now.
                child.parent.withdraw_questions_of(id);
                true
            }
            None => false,
        }
    }

    /// The ids of the running children.
    pub fn running(&self) -> Vec<String> {
        let running = lock(&self.registry.running);
        let mut ids: Vec<String> = running.keys().cloned().collect();
        ids.sort();
        ids
    }

    fn child(&self, id: &str) -> Option<Running> {
        lock(&self.registry.running).get(id).cloned()
    }

    /// The definition a job names (or the default), or why there is none.
    fn definition(&self, name: Option<&str>) -> Result<&AgentDefinition, String> {
        match name {
            None => Ok(self.definitions.default_agent()),
            Some(name) => self.definitions.get(name).ok_or_else(|| {
                let names: Vec<&str> = self
                    .definitions
                    .agents
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect();
                format!("no agent `{name}`; the agents are {}", names.join(", "))
            }),
        }
    }

    /// The tools a child of `definition` gets: its own list within the parent's, never the
    /// plan tools, and `task` only where it may nest.
    fn child_tools(&self, kit: &Kit, definition: &AgentDefinition) -> Vec<String> {
        kit.parent_tools
            .iter()
            .filter(|name| definition.allows(name))
            .filter(|name| *name != tools::SUBMIT_PLAN)
            .filter(|name| {
                *name != tools::TASK || (definition.tools.is_some() && self.depth + 2 <= MAX_DEPTH)
            })
            .cloned()
            .collect()
    }

    /// Makes the child agent of a job.
    async fn spawn_child(
        self: &Arc<Self>,
        definition: &AgentDefinition,
        subagent: &SubagentRef,
        parent: &Agent,
    ) -> Result<(Agent, Model, Vec<String>), String> {
        let kit = self.kit()?;
        let model = match &definition.model {
            Some(name) => kit.registry.get(name).ok_or_else(|| {
                format!(
                    "the agent `{}` names the model `{name}`, which is not known (see \
                     --list-models)",
                    definition.name
                )
            })?,
            None => parent.model().await.map_err(|e| e.to_string())?,
        };
        let names = self.child_tools(kit, definition);
        let mut options = kit.tool_options.clone();
        if !definition.writes() {
            // Its commands only read, whatever the parent's sandbox lets commands do.
            options.bash.restriction = Some(kit.read_only.clone());
        }
        // A child that may start children of its own gets a level of its own, whose ceiling
        // is the child: its tools, its (maybe read-only) options.
        let nested = names.iter().any(|n| n == tools::TASK).then(|| {
            let level = Kit {
                parent_tools: names.clone(),
                tool_options: options.clone(),
                ..(**kit).clone()
            };
            Arc::new(Self {
                kit: OnceLock::from(Arc::new(level)),
                definitions: self.definitions.clone(),
                parent: OnceLock::new(),
                depth: self.depth + 1,
                permits: Arc::new(Semaphore::new(self.max_concurrent)),
                max_concurrent: self.max_concurrent,
                registry: self.registry.clone(),
            })
        });
        options.delegate = nested
            .clone()
            .map(|nested| tools::Delegation(Arc::new(Delegator(nested))));
        let only: Vec<&str> = names.iter().map(String::as_str).collect();
        let tools = tools::build(&kit.cwd, &options, Some(&only)).map_err(|e| e.to_string())?;
        let mut config = AgentConfig::new(model.clone(), kit.provider.clone());
        config.system_prompt = system_prompt(definition, subagent, &only, kit);
        config.tools = tools;
        config.hooks = kit.hooks.clone();
        config.stream_options = kit.stream_options.clone();
        config.mode = kit.mode.clone();
        config.redactor = kit.redactor.clone();
        config.thinking = ThinkingLevel::Off;
        let child = Agent::spawn(config);
        if let Some(nested) = &nested {
            nested.attach(&child);
        }
        Ok((child, model, names))
    }

    /// Runs one job to its end (see [`tools::Delegate::run`]).
    async fn run_job(
        self: &Arc<Self>,
        job: tools::Job,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let parent = self
            .parent
            .get()
            .cloned()
            .ok_or_else(|| ToolError("subagents are not ready yet".into()))?;
        let definition = self.definition(job.agent.as_deref()).map_err(ToolError)?;
        // Bounded: a reply with ten task calls runs them `max_concurrent` at a time.
        let _permit = tokio::select! {
            permit = self.permits.clone().acquire_owned() => permit.map_err(|_| ToolError("subagents are shut down".into()))?,
            _ = ctx.cancel.cancelled() => return Err(ToolError("Aborted before the subagent started.".into())),
        };
        let n = self.registry.next.fetch_add(1, Ordering::Relaxed) + 1;
        let subagent = SubagentRef {
            id: format!("{}-{n}", definition.name),
            name: definition.name.clone(),
        };
        let (child, model, names) = self
            .spawn_child(definition, &subagent, &parent)
            .await
            .map_err(ToolError)?;
        let mut events = child.subscribe();
        let session = self.record(&child, &model, &subagent);
        let running = Running {
            agent: child.clone(),
            parent: parent.clone(),
            stopped: Arc::default(),
        };
        lock(&self.registry.running).insert(subagent.id.clone(), running.clone());
        let leaving = Leaving {
            registry: self.registry.clone(),
            id: subagent.id.clone(),
        };
        let started = Instant::now();
        let mut outcome = self
            .follow(&child, &parent, &subagent, &job, ctx, &mut events)
            .await;
        if running.stopped.load(Ordering::SeqCst) && outcome.1 == Stopped::No {
            outcome.1 = Stopped::ByUser;
            outcome.0 = Err(match outcome.0 {
                Ok(text) | Err(text) if text.trim().is_empty() => "the user stopped it".into(),
                Ok(text) | Err(text) => format!("the user stopped it. What it had:\n\n{text}"),
            });
        }
        drop(leaving);
        let _ = child.wait_idle().await;
        let mut session_path = None;
        if let Some((recorder, path)) = session {
            for error in recorder.finish().await {
                eprintln!("coding-agent: the subagent's session could not be saved: {error}");
            }
            session_path = Some(path);
        }
        let (answer, stopped, progress) = outcome;
        let details = json!({
            "subagent": subagent,
            "model": format!("{}/{}", model.provider, model.id),
            "tools": names,
            "session": session_path,
            "usage": progress.usage,
            "tool_calls": progress.calls,
            "duration_ms": started.elapsed().as_millis() as u64,
        });
        match (answer, stopped) {
            (Ok(text), _) => Ok(ToolOutput {
                details: Some(details),
                ..ToolOutput::text(text)
            }),
            (Err(why), Stopped::ByParent) => Err(ToolError(format!(
                "Aborted: the subagent {} was stopped with this run ({why}).",
                subagent.id
            ))),
            (Err(why), _) => Ok(ToolOutput {
                details: Some(details),
                is_error: true,
                ..ToolOutput::text(format!(
                    "The subagent {} did not finish: {why}",
                    subagent.id
                ))
            }),
        }
    }

    /// Prompts the child and passes its events on until it is idle; answers its questions
    /// through the parent; stops it when the parent's run is aborted.
    async fn follow(
        &self,
        child: &Agent,
        parent: &Agent,
        subagent: &SubagentRef,
        job: &tools::Job,
        ctx: &ToolContext,
        events: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    ) -> (Result<String, String>, Stopped, Progress) {
        let mut progress = Progress::new(subagent, &job.description);
        if let Err(err) = child.prompt(AgentMessage::user(&job.prompt)).await {
            return (Err(err.to_string()), Stopped::No, progress);
        }
        ctx.update(progress.output());
        let mut stopped = Stopped::No;
        let mut ticker = tokio::time::interval(PROGRESS_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                event = events.recv() => {
                    let Some(event) = event else { break };
                    let end = matches!(event, AgentEvent::AgentEnd { .. });
                    self.pass_on(child, parent, subagent, &mut progress, event);
                    if end {
                        // Done, unless its queued steering started another run (the agent
                        // starts it before it answers anything else): then follow that one,
                        // still passing its events on and still stoppable.
                        if !child.running().await.unwrap_or(false) {
                            while let Ok(event) = events.try_recv() {
                                self.pass_on(child, parent, subagent, &mut progress, event);
                            }
                            break;
                        }
                    }
                    if progress.changed {
                        ctx.update(progress.output());
                    }
                }
                _ = ticker.tick() => ctx.update(progress.output()),
                _ = ctx.cancel.cancelled(), if stopped == Stopped::No => {
                    stopped = Stopped::ByParent;
                    child.stop();
                }
            }
        }
        let answer = child
            .inspect(|messages| {
                messages.iter().rev().find_map(|m| match m {
                    AgentMessage::Assistant(a) => Some(a.clone()),
                    _ => None,
                })
            })
            .await
            .ok()
            .flatten();
        let answer = match answer {
            None => Err("it gave no answer".to_string()),
            Some(a) if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => {
                let why = a
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "it failed".into());
                match a.text().trim() {
                    "" => Err(why),
                    text => Err(format!("{why}. What it had said:\n\n{text}")),
                }
            }
            Some(a) if a.text().trim().is_empty() => Err("its last answer was empty".into()),
            Some(a) => Ok(a.text()),
        };
        (answer, stopped, progress)
    }

    /// One child event: to the parent's readers, into the progress, and a question to the
    /// parent's user.
    fn pass_on(
        &self,
        child: &Agent,
        parent: &Agent,
        subagent: &SubagentRef,
        progress: &mut Progress,
        event: AgentEvent,
    ) {
        progress.observe(&event);
        if let AgentEvent::ApprovalRequested { request } = &event {
            let (child, parent) = (child.clone(), parent.clone());
            let id = request.id;
            let asked = ApprovalRequest {
                subagent: Some(subagent.clone()),
                ..request.clone()
            };
            tokio::spawn(async move {
                let decision = parent.ask_user(asked).await;
                child.decide(id, decision);
            });
        }
        parent.forward(subagent.clone(), event);
    }

    /// Starts recording the child's conversation in its own file beside the parent's.
    fn record(
        &self,
        child: &Agent,
        model: &Model,
        subagent: &SubagentRef,
    ) -> Option<(Recorder, PathBuf)> {
        let kit = self.kit().ok()?;
        let parent_file = (kit.session)()?;
        let dir = session::spill_dir(&parent_file).join("subagents");
        let root = parent_file.parent()?;
        if let Err(err) = platform::fs::create_private_dirs(root, &dir) {
            eprintln!("coding-agent: the subagent's session cannot be saved: {err}");
            return None;
        }
        // `<parent's spill>/subagents/<start ms>_<id>.jsonl`: never among the sessions
        // `--continue` and `/resume` list, and removed with the parent's file. The time keeps
        // apart the children of a parent resumed later, whose ids start at 1 again.
        let path = dir.join(format!("{}_{}.jsonl", llm::now_millis(), subagent.id));
        let writer =
            SessionWriter::create_at(&kit.home, &path, &kit.cwd, model, ThinkingLevel::Off);
        let recorder = Recorder::spawn(
            child.subscribe_settled(),
            Some(writer),
            RecorderSetup {
                home: kit.home.clone(),
                cwd: kit.cwd.clone(),
                model: model.clone(),
                thinking: ThinkingLevel::Off,
            },
        );
        Some((recorder, path))
    }
}

/// Why a child stopped before its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    No,
    /// The parent's run was aborted (or hit its deadline).
    ByParent,
    /// The user stopped this child alone.
    ByUser,
}

/// What the line under a `task` call says while its child runs.
struct Progress {
    label: String,
    started: Instant,
    tool: Option<String>,
    calls: usize,
    usage: Usage,
    /// Something the line shows changed since it was last sent.
    changed: bool,
    subagent: SubagentRef,
}

impl Progress {
    fn new(subagent: &SubagentRef, description: &str) -> Self {
        Self {
            label: description.to_string(),
            started: Instant::now(),
            tool: None,
            calls: 0,
            usage: Usage::default(),
            changed: true,
            subagent: subagent.clone(),
        }
    }

    fn observe(&mut self, event: &AgentEvent) {
        // Its own subagents' tokens count in its cost.
        if let (
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(answer),
            },
            true,
        ) = event.unwrapped()
        {
            self.usage.add(&answer.usage);
            self.changed = true;
            return;
        }
        match event {
            AgentEvent::ToolExecutionStart { tool_name, .. } => {
                self.tool = Some(tool_name.clone());
                self.calls += 1;
                self.changed = true;
            }
            AgentEvent::ToolExecutionEnd { .. } => {
                self.tool = None;
                self.changed = true;
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(answer),
            } => {
                self.usage.add(&answer.usage);
                self.changed = true;
            }
            _ => {}
        }
    }

    /// The partial output of the `task` call: one line of text, the same as details.
    fn output(&mut self) -> ToolOutput {
        self.changed = false;
        let doing = match &self.tool {
            Some(tool) => format!("running {tool}"),
            None => "thinking".to_string(),
        };
        let line = format!(
            "{} · {doing} · {}s · ↑{} ↓{} · {} tool calls",
            self.subagent.id,
            self.started.elapsed().as_secs(),
            self.usage.input + self.usage.cache_read,
            self.usage.output,
            self.calls
        );
        ToolOutput {
            details: Some(json!({
                "subagent": self.subagent,
                "description": self.label,
                "tool": self.tool,
                "tool_calls": self.calls,
                "usage": self.usage,
                "elapsed_ms": self.started.elapsed().as_millis() as u64,
            })),
            ..ToolOutput::text(line)
        }
    }
}

/// The child's system prompt: its definition's, then its tools and where it works.
fn system_prompt(
    definition: &AgentDefinition,
    subagent: &SubagentRef,
    tools: &[&str],
    kit: &Kit,
) -> String {
    format!(
        "{}\n\n# Tools\n\n{}\n\n# Where you work\n\nWorking directory: {}\nToday: {}\n\nYou \
         are the subagent `{}`: another agent gave you this job and reads only your final \
         message. Make it a complete, self-contained report of what you found or did.",
        definition.prompt.trim(),
        tools::prompt_section(tools),
        kit.cwd.display(),
        kit.date,
        subagent.id
    )
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `task` tool's view of [`Subagents`].
pub struct Delegator(pub Arc<Subagents>);

#[async_trait]
impl tools::Delegate for Delegator {
    fn agents(&self) -> Vec<(String, String)> {
        self.0
            .definitions
            .agents
            .iter()
            .map(|a| (a.name.clone(), a.description.clone()))
            .collect()
    }

    async fn run(&self, job: tools::Job, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.run_job(job, ctx).await
    }
}
