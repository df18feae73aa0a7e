//! `--mode rpc`: commands as JSON lines on stdin, events and responses as JSON lines on stdout.
//!
//! In: `{"id": 1, "type": "prompt", "message": "…"}`; types: prompt, steer, follow_up, abort,
//! set_model {model}, get_state, get_messages, compact {instructions?}, new_session.
//! Out: every agent event as it happens (`{"type": "agent_start"}`, …) and one
//! `{"type": "response", "id": …, "command": …, "success": …, "data"?: …, "error"?: …}` per
//! command. Ends at the end of stdin, once the agent is idle.

use std::io::Write;
use std::process::ExitCode;

use agent_core::AgentMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::setup::{self, Setup};

pub async fn run(mut setup: Setup) -> ExitCode {
    let mut events = setup.agent.subscribe();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stop = crate::modes::headless::stop_signals();
    loop {
        tokio::select! {
            _ = stop.recv() => {
                // Stop what runs (killing its commands), save, and leave.
                setup.agent.abort();
                let _ = setup.agent.wait_idle().await;
                break;
            }
            event = events.recv() => match event {
                Some(event) => emit(&serde_json::to_value(&event).unwrap_or(Value::Null)),
                None => break,
            },
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    let response = handle(&mut setup, &line).await;
                    emit(&response);
                }
                Err(err) if err.kind() == std::io::ErrorKind::InvalidData => {
                    emit(&response(&Value::Null, "parse", Err(format!("not UTF-8: {err}"))));
                }
                Ok(None) | Err(_) => {
                    // Finish what was asked, then stop.
                    let _ = setup.agent.wait_idle().await;
                    while let Ok(event) = events.try_recv() {
                        emit(&serde_json::to_value(&event).unwrap_or(Value::Null));
                    }
                    break;
                }
            },
        }
    }
    for error in setup.recorder.finish().await {
        eprintln!("coding-agent: the session could not be saved: {error}");
    }
    ExitCode::SUCCESS
}

fn emit(value: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}");
    let _ = stdout.flush();
}

async fn handle(setup: &mut Setup, line: &str) -> Value {
    let request: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(err) => return response(&Value::Null, "parse", Err(format!("not JSON: {err}"))),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let command = request
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let text = |key: &str| request.get(key).and_then(Value::as_str).map(str::to_string);
    let agent = &setup.agent;
    let result: Result<Option<Value>, String> = match command.as_str() {
        "prompt" | "steer" | "follow_up" => match text("message") {
            None => Err("`message` (a string) is required".into()),
            Some(message) => {
                let message = AgentMessage::user(message);
                match command.as_str() {
                    "prompt" => agent
                        .prompt(message)
                        .await
                        .map(|_| None)
                        .map_err(|e| e.to_string()),
                    "steer" => {
                        agent.steer(message);
                        Ok(None)
                    }
                    _ => {
                        agent.follow_up(message);
                        Ok(None)
                    }
                }
            }
        },
        "abort" => {
            agent.abort();
            Ok(None)
        }
        "set_model" => match text("model").map(|name| (setup.registry.get(&name), name)) {
            None => Err("`model` (provider/id) is required".into()),
            Some((None, name)) => Err(format!("unknown model `{name}`")),
            Some((Some(model), _)) => {
                agent.set_model(model.clone());
                setup.recorder.model(model.clone());
                setup.model = model;
                Ok(None)
            }
        },
        "get_state" => match agent.snapshot().await {
            Ok(s) => Ok(Some(json!({
                "model": format!("{}/{}", s.model.provider, s.model.id),
                "thinking": s.thinking,
                "running": s.running,
                "messages": s.messages.len(),
                "steering": s.steering.iter().map(AgentMessage::preview).collect::<Vec<_>>(),
                "follow_up": s.follow_up.iter().map(AgentMessage::preview).collect::<Vec<_>>(),
                "session": setup.session.as_ref().map(|(path, id)| json!({"id": id, "path": path})),
            }))),
            Err(e) => Err(e.to_string()),
        },
        "get_messages" => agent
            .snapshot()
            .await
            .map(|s| Some(json!({"messages": s.messages})))
            .map_err(|e| e.to_string()),
        "compact" => agent
            .compact(text("instructions"))
            .await
            .map(|_| None)
            .map_err(|e| e.to_string()),
        "new_session" => match agent.reset(Vec::new()).await {
            Ok(()) => {
                let writer = setup::new_writer(setup);
                setup.session = writer
                    .as_ref()
                    .map(|w| (w.path().to_path_buf(), w.header().id.clone()));
                setup.recorder.switch(writer);
                Ok(setup.session.as_ref().map(|(_, id)| json!({"session": id})))
            }
            Err(e) => Err(e.to_string()),
        },
        "" => Err("`type` is required".into()),
        other => Err(format!("unknown command `{other}`")),
    };
    response(&id, &command, result)
}

fn response(id: &Value, command: &str, result: Result<Option<Value>, String>) -> Value {
    let mut out =
        json!({"type": "response", "id": id, "command": command, "success": result.is_ok()});
    match result {
        Ok(Some(data)) => out["data"] = data,
        Ok(None) => {}
        Err(error) => out["error"] = json!(error),
    }
    out
}
