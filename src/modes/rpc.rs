//! `--mode rpc`: commands as JSON lines on stdin, events and responses as JSON lines on stdout.
//! The protocol (every command with an example) is in docs/rpc.md; its types are in
//! `rpc_protocol`. Ends at the end of stdin, once the agent is idle.

use std::io::Write;
use std::process::ExitCode;

use agent_core::{AgentError, AgentMessage, ApprovalDecision, QueueKind};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::modes::rpc_protocol::{
    Answer, CheckpointView, Command, Data, QueueEntry, QueuedRef, Request, Response, RewindView,
    RewindWhat, RpcImage, SessionRef, State, StreamingBehavior, SubagentView, TreeNodeView,
    TreeView,
};
use crate::setup::Setup;

pub async fn run(setup: Setup) -> ExitCode {
    let mut events = setup.agent.subscribe();
    // The session_start hooks ran before anyone listened: their runs go first.
    for run in &setup.hook_runs {
        setup.agent.announce_hook_run(run.clone());
    }
    crate::checkpoints::prune_in_background(&setup.sessions.home);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stop = crate::modes::headless::stop_signals();
    loop {
        tokio::select! {
            _ = stop.recv() => {
                // Stop what runs (killing its commands), start nothing more, save, and leave;
                // a second signal leaves at once.
                setup.agent.stop();
                tokio::select! {
                    _ = setup.agent.wait_idle() => {}
                    _ = stop.recv() => crate::modes::headless::exit_at_once(),
                }
                while let Ok(event) = events.try_recv() {
                    emit(&event);
                }
                break;
            }
            event = events.recv() => match event {
                Some(event) => emit(&event),
                None => break,
            },
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => emit(&handle(&setup, &line).await),
                Err(err) if err.kind() == std::io::ErrorKind::InvalidData => {
                    emit(&Response::new(Value::Null, "parse", Err(format!("not UTF-8: {err}"))));
                }
                Ok(None) | Err(_) => {
                    // Finish what was asked, then stop.
                    let _ = setup.agent.wait_idle().await;
                    while let Ok(event) = events.try_recv() {
                        emit(&event);
                    }
                    break;
                }
            },
        }
    }
    for error in setup.sessions.recorder().finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    ExitCode::SUCCESS
}

fn emit(value: &impl Serialize) {
    let line = serde_json::to_string(value).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    // A closed stdout ends the output, not the agent's work.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

async fn handle(setup: &Setup, line: &str) -> Response {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(err) => return Response::new(Value::Null, "parse", Err(format!("not JSON: {err}"))),
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let name = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let request: Request = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(err) => {
            let error = if name.is_empty() {
                "`type` is required".to_string()
            } else if err.to_string().starts_with("unknown variant") {
                format!("unknown command `{name}`")
            } else {
                format!("invalid `{name}` command: {err}")
            };
            return Response::new(id, &name, Err(error));
        }
    };
    let name = request.command.name();
    Response::new(request.id, name, execute(setup, request.command).await)
}

/// As in -p: a prompt sent while MCP servers still start waits for them (once they are ready
/// or failed, this goes on at once).
async fn prompt_when_ready(
    setup: &Setup,
    message: AgentMessage,
    deadline: Option<std::time::Duration>,
) -> Result<(), AgentError> {
    if let Some(mcp) = &setup.mcp {
        mcp.wait_ready().await;
    }
    match deadline {
        Some(deadline) => setup.agent.prompt_within(message, deadline).await,
        None => setup.agent.prompt(message).await,
    }
}

/// The user message of a command: its text expanded (a template or skill), then its images
/// and the image files it `@`-mentions, each checked and scaled for the current model.
async fn user_message(
    setup: &Setup,
    message: &str,
    images: Vec<RpcImage>,
) -> Result<AgentMessage, String> {
    use base64::Engine as _;
    let text = setup.expand(message)?;
    let model = setup.agent.model().await.map_err(|e| e.to_string())?;
    let mut attached = attach::prompt_images(&text, &[], &setup.cwd, &model)?;
    if !images.is_empty() {
        if !model.images {
            return Err(attach::not_taken(&model));
        }
        let limit = llm::image_limit(model.api);
        for (i, image) in images.into_iter().enumerate() {
            let number = i + 1;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(image.data.trim())
                .map_err(|err| format!("image {number}: its data is not base64 ({err})"))?;
            let prepared = attach::prepare(bytes, limit)
                .map_err(|err| format!("image {number} ({}): {err}", image.mime_type))?;
            attached.push(prepared.image);
        }
    }
    Ok(AgentMessage::User(llm::UserMessage::with_images(
        text, attached,
    )))
}

async fn execute(setup: &Setup, command: Command) -> Result<Option<Data>, String> {
    let agent = &setup.agent;
    let queued = |id, kind| {
        Some(Data::Queued {
            queued: QueuedRef { id, kind },
        })
    };
    match command {
        Command::Prompt {
            message,
            images,
            streaming_behavior,
            deadline,
        } => {
            let message = user_message(setup, &message, images).await?;
            match prompt_when_ready(setup, message.clone(), deadline).await {
                Ok(()) => Ok(None),
                Err(AgentError::Busy) => match streaming_behavior {
                    Some(StreamingBehavior::Steer) => {
                        Ok(queued(agent.steer(message), QueueKind::Steer))
                    }
                    Some(StreamingBehavior::FollowUp) => {
                        Ok(queued(agent.follow_up(message), QueueKind::FollowUp))
                    }
                    None => Err("the agent is busy: send `steer` or `follow_up`, or give \
                             `streaming_behavior`"
                        .into()),
                },
                Err(err) => Err(err.to_string()),
            }
        }
        Command::Steer { message, images } => Ok(queued(
            agent.steer(user_message(setup, &message, images).await?),
            QueueKind::Steer,
        )),
        Command::FollowUp { message, images } => Ok(queued(
            agent.follow_up(user_message(setup, &message, images).await?),
            QueueKind::FollowUp,
        )),
        Command::Abort => {
            agent.abort();
            Ok(None)
        }
        Command::GetState => {
            let s = agent.snapshot().await.map_err(|e| e.to_string())?;
            let queue = s
                .steering
                .iter()
                .chain(&s.follow_up)
                .map(|q| QueueEntry {
                    id: q.id,
                    kind: q.kind,
                    text: q.message.preview(),
                })
                .collect();
            Ok(Some(Data::State(Box::new(State {
                model: format!("{}/{}", s.model.provider, s.model.id),
                thinking: s.thinking,
                mode: s.mode,
                busy: s.running,
                messages: s.messages.len(),
                queue,
                approvals: s.approvals,
                subagents: setup.subagents.running(),
                session: session_ref(setup),
            }))))
        }
        Command::SetModel { model } => match setup.registry.get(&model) {
            Some(found) => {
                agent.set_model(found);
                Ok(None)
            }
            None => Err(format!(
                "unknown model `{model}` (`coding-agent --list-models` lists them)"
            )),
        },
        Command::SetThinking { level } => {
            agent.set_thinking(level);
            Ok(None)
        }
        Command::SubagentSteer { subagent, message } => {
            if setup.subagents.steer(&subagent, &message) {
                Ok(None)
            } else {
                Err(format!("no subagent `{subagent}` is running"))
            }
        }
        Command::SubagentAbort { subagent } => {
            if setup.subagents.stop(&subagent) {
                Ok(None)
            } else {
                Err(format!("no subagent `{subagent}` is running"))
            }
        }
        Command::SetMode { mode } => {
            agent.set_mode(mode);
            Ok(None)
        }
        Command::GetMessages => {
            let s = agent.snapshot().await.map_err(|e| e.to_string())?;
            Ok(Some(Data::Messages {
                messages: s.messages,
            }))
        }
        Command::Compact { instructions } => agent
            .compact(instructions)
            .await
            .map(|()| None)
            .map_err(|e| e.to_string()),
        Command::Approve {
            request_id,
            decision,
            reason,
        } => {
            let open = agent.snapshot().await.map_err(|e| e.to_string())?;
            if !open.approvals.iter().any(|r| r.id == request_id) {
                return Err(format!("no question {request_id} is waiting for an answer"));
            }
            let decision = match decision {
                Answer::Approve => ApprovalDecision::Approve,
                Answer::ApproveAlways => ApprovalDecision::ApproveAlways,
                Answer::Deny => ApprovalDecision::Deny { reason },
            };
            agent.decide(request_id, decision);
            Ok(None)
        }
        Command::NewSession => {
            setup.sessions.new_session().await?;
            Ok(Some(Data::Session {
                session: session_ref(setup),
            }))
        }
        Command::Undo { on_conflict } => {
            let restore = setup.sessions.checkpoints.undo(agent, on_conflict).await;
            Ok(Some(Data::Restore { restore }))
        }
        Command::Redo { on_conflict } => {
            let restore = setup.sessions.checkpoints.redo(agent, on_conflict).await;
            Ok(Some(Data::Restore { restore }))
        }
        Command::Checkpoints => Ok(Some(Data::Checkpoints {
            checkpoints: setup
                .sessions
                .checkpoints
                .list()
                .into_iter()
                .map(|c| CheckpointView {
                    record: c.record,
                    at: c.at,
                    undone: c.undone,
                })
                .collect(),
        })),
        Command::Rewind {
            entry_id,
            restore,
            on_conflict,
        } => {
            let sessions = &setup.sessions;
            // A user message of the current branch: back to just before it. Anything else
            // (another branch, an answer): the conversation goes there.
            let done = match sessions.message_index(&entry_id).await {
                Ok(index) if is_user(setup, index).await => {
                    sessions.rewind(index, restore.scope(), on_conflict).await?
                }
                _ if restore == RewindWhat::Code => {
                    return Err(format!(
                        "entry {entry_id} is not a user message of the current branch: only \
                         `conversation` or `both` can go there"
                    ));
                }
                _ => {
                    let code = restore == RewindWhat::Both;
                    sessions.jump(&entry_id, code, on_conflict).await?
                }
            };
            Ok(Some(Data::Rewind {
                rewind: RewindView {
                    code: done.code,
                    conversation: done.conversation,
                    text: done.text,
                },
            }))
        }
        Command::GetTree => {
            let tree = setup.sessions.tree().await?;
            let nodes = tree
                .nodes
                .iter()
                .map(|n| TreeNodeView {
                    id: n.id.clone(),
                    parent: n.parent.map(|p| tree.nodes[p].id.clone()),
                    kind: match n.kind {
                        session::NodeKind::User => "user",
                        session::NodeKind::Assistant => "assistant",
                        session::NodeKind::Compaction => "compaction",
                    },
                    text: n.text.clone(),
                    label: n.label.clone(),
                    checkpoints: n.checkpoints,
                    subagents: n
                        .subagents
                        .iter()
                        .map(|s| SubagentView {
                            id: s.id.clone(),
                            session: s.session.clone(),
                        })
                        .collect(),
                })
                .collect();
            Ok(Some(Data::Tree {
                tree: TreeView {
                    nodes,
                    current: tree.current.map(|i| tree.nodes[i].id.clone()),
                    branches: tree.branches,
                },
            }))
        }
        Command::Label { name } => setup.sessions.label(&name).await.map(|()| None),
        Command::Fork => {
            setup.sessions.fork().await?;
            Ok(Some(Data::Session {
                session: session_ref(setup),
            }))
        }
        Command::McpRestart { name } => match &setup.mcp {
            Some(mcp) => mcp.restart(&name).map(|()| None),
            None => Err("no MCP servers are configured".into()),
        },
    }
}

async fn is_user(setup: &Setup, index: usize) -> bool {
    setup
        .agent
        .snapshot()
        .await
        .is_ok_and(|s| matches!(s.messages.get(index), Some(AgentMessage::User(_))))
}

fn session_ref(setup: &Setup) -> Option<SessionRef> {
    setup
        .sessions
        .current()
        .map(|(path, id)| SessionRef { id, path })
}
