//! FIFOs, sockets and devices: read, write and edit refuse them before opening them for
//! content, grep and find never open them. Each call has a deadline so a regression fails
//! instead of hanging the suite.
//!
//! Unix only: the commands are bash's, and the checks are process groups and signals.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{call, text};
use serde_json::json;

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
}

/// A directory holding `fifo` (a FIFO) and `plain.txt`.
fn dir_with_fifo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    std::fs::write(dir.path().join("plain.txt"), "needle here\n").unwrap();
    (dir, fifo)
}

/// Runs the tool with a deadline. On a hang, a reader and writer are attached to the FIFO so
/// the blocked call (and the runtime's blocking thread) can finish, then the test fails.
async fn call_within(
    dir: &Path,
    fifo: &Path,
    name: &str,
    args: serde_json::Value,
) -> Result<String, String> {
    let call = call(dir, name, args);
    match tokio::time::timeout(Duration::from_secs(5), call).await {
        Ok(result) => result.map(|out| text(&out)),
        Err(_) => {
            // O_RDWR on a FIFO never blocks on Linux, and releases both kinds of waiter.
            let unblock = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(fifo);
            std::thread::sleep(Duration::from_millis(200));
            drop(unblock);
            panic!("`{name}` blocked on the FIFO");
        }
    }
}

#[tokio::test]
async fn read_refuses_a_fifo() {
    let (dir, fifo) = dir_with_fifo();
    let err = call_within(dir.path(), &fifo, "read", json!({"path": "fifo"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "fifo is a FIFO (named pipe), not a regular file; it cannot be read."
    );
}

#[tokio::test]
async fn read_refuses_a_device_and_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let err = call(dir.path(), "read", json!({"path": "/dev/zero"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "/dev/zero is a character device, not a regular file; it cannot be read."
    );
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let err = call(dir.path(), "read", json!({"path": "sock"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "sock is a socket, not a regular file; it cannot be read."
    );
}

#[tokio::test]
async fn write_refuses_a_fifo_and_leaves_it_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let (dir, fifo) = dir_with_fifo();
    let err = call_within(
        dir.path(),
        &fifo,
        "write",
        json!({"path": "fifo", "content": "data"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "fifo is a FIFO (named pipe), not a regular file; it cannot be written."
    );
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let err = call(
        dir.path(),
        "write",
        json!({"path": "/dev/null", "content": "data"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("is a character device"), "{err}");
}

#[tokio::test]
async fn edit_refuses_a_fifo() {
    let (dir, fifo) = dir_with_fifo();
    let err = call_within(
        dir.path(),
        &fifo,
        "edit",
        json!({"path": "fifo", "edits": [{"old_text": "a", "new_text": "b"}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "fifo is a FIFO (named pipe), not a regular file; it cannot be edited."
    );
}

#[tokio::test]
async fn grep_and_find_never_open_a_fifo() {
    let (dir, fifo) = dir_with_fifo();
    let out = call_within(dir.path(), &fifo, "grep", json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert_eq!(out, "plain.txt:1: needle here\n");
    let out = call_within(
        dir.path(),
        &fifo,
        "grep",
        json!({"pattern": "needle", "path": "fifo"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "No matches for `needle`.");
    let out = call_within(dir.path(), &fifo, "find", json!({"pattern": "*"}))
        .await
        .unwrap();
    assert_eq!(out, "fifo\nplain.txt");
}
