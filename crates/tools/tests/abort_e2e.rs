//! Over HTTP against mock-llm: the model runs `sleep 30` through bash, the user aborts; within
//! a second nothing of that command is alive, and the next request carries the call's result.
//!
//! Unix only: the commands are bash's, and the checks are process groups and signals.
#![cfg(unix)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Agent, AgentConfig, AgentEvent, AgentMessage};

use llm::{Api, Model, ModelCost};
use mock_llm::{MockServer, Reply, Script};
use serde_json::json;

#[tokio::test]
async fn aborting_a_running_command_kills_its_group_and_pairs_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("echo $$ > {}; sleep 30 & sleep 30", pid_file.display());
    let server = MockServer::start(Script {
        replies: vec![
            Reply::tool_call("bash", json!({"command": command})),
            Reply::text("Stopped, as asked."),
        ],
    })
    .await
    .unwrap();
    let model = Model {
        id: "mock-model".into(),
        provider: "mock".into(),
        api: Api::OpenaiCompletions,
        base_url: server.url(),
        context_window: 32_000,
        max_output: 1_000,
        reasoning: false,
        images: false,
        cost: ModelCost::default(),
    };
    let mut config = AgentConfig::new(model, Arc::new(llm::Router::new()));
    config.tools = tools::all_tools(dir.path());
    let agent = Agent::spawn(config);
    let mut events = agent.subscribe();

    agent
        .prompt(AgentMessage::user("run the slow thing"))
        .await
        .unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(event, AgentEvent::ToolExecutionStart { .. }) {
            break;
        }
    }
    let pgid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(tools::group_alive(pgid as u32));

    let aborted = Instant::now();
    agent.abort();
    while tools::group_alive(pgid as u32) && aborted.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !tools::group_alive(pgid as u32),
        "a process of the command outlived the abort by 1 s"
    );
    agent.wait_idle().await.unwrap();

    agent
        .prompt(AgentMessage::user("ok, stop there"))
        .await
        .unwrap();
    agent.wait_idle().await.unwrap();
    let requests = server
        .wait_for_requests(2, Duration::from_secs(10))
        .await
        .unwrap();
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
    let call_id = messages[1]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(messages[2]["tool_call_id"], call_id);
    assert!(
        messages[2]["content"].as_str().unwrap().contains("Aborted"),
        "{}",
        messages[2]
    );
}
