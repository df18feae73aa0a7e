//! Calling a tool directly, as the loop would.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_core::{Tool, ToolContext, ToolOutput};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub fn tool(dir: &Path, name: &str) -> Arc<dyn Tool> {
    tools::build(dir, &tools::ToolOptions::default(), Some(&[name]))
        .unwrap()
        .remove(0)
}

/// Runs the tool after checking the arguments against its schema, like the loop does.
/// `Ok` is the output; `Err` the error text.
pub async fn call(dir: &Path, name: &str, args: Value) -> Result<ToolOutput, String> {
    call_with(
        dir,
        name,
        args,
        CancellationToken::new(),
        Arc::new(Mutex::new(Vec::new())),
    )
    .await
}

pub async fn call_with(
    dir: &Path,
    name: &str,
    mut args: Value,
    cancel: CancellationToken,
    updates: Arc<Mutex<Vec<ToolOutput>>>,
) -> Result<ToolOutput, String> {
    let tool = tool(dir, name);
    agent_core::validate_arguments(&tool.parameters(), &mut args).map_err(|e| e.to_string())?;
    let ctx = ToolContext::new("call-1", cancel, move |u| updates.lock().unwrap().push(u));
    tool.execute(args, ctx).await.map_err(|e| e.0)
}

pub fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            llm::UserContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    #[cfg(unix)]
    return unsafe { libc::geteuid() == 0 };
    #[cfg(not(unix))]
    false
}

/// Copies the executable `from` to `to` (mode 0755) with `install`, in its own process: a file
/// this process had open for writing would be inherited by any child another test thread
/// forks meanwhile, and running the copy then fails with "Text file busy".
pub fn copy_executable(from: &std::path::Path, to: &std::path::Path) {
    let status = std::process::Command::new("install")
        .args(["-m", "0755"])
        .arg(from)
        .arg(to)
        .status()
        .expect("install runs (coreutils)");
    assert!(
        status.success(),
        "install {} {}",
        from.display(),
        to.display()
    );
}
