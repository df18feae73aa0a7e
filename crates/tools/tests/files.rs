//! read, write and edit against real files: limits and every error path.

mod common;

#[cfg(unix)]
use common::running_as_root;
use common::{call, text};
use serde_json::json;
use std::fs;

#[tokio::test]
async fn read_numbers_lines_and_pages_through_long_files() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    fs::write(dir.path().join("long.txt"), &body).unwrap();
    let out = call(dir.path(), "read", json!({"path": "long.txt"}))
        .await
        .unwrap();
    let shown = text(&out);
    assert!(shown.starts_with("     1\tline 1\n"), "{}", &shown[..40]);
    assert!(shown.contains("  2000\tline 2000\n"));
    assert!(!shown.contains("line 2001\n"));
    assert!(
        shown.contains("[Showing lines 1-2000 of 2500. Use offset=2001 to read on.]"),
        "{}",
        &shown[shown.len() - 100..]
    );
    let out = call(
        dir.path(),
        "read",
        json!({"path": "long.txt", "offset": 2001, "limit": 2}),
    )
    .await
    .unwrap();
    assert!(text(&out).starts_with("  2001\tline 2001\n  2002\tline 2002\n"));
    let err = call(
        dir.path(),
        "read",
        json!({"path": "long.txt", "offset": 9000}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "offset 9000 is past the end of long.txt (2500 lines).");
}

#[tokio::test]
async fn read_stops_at_50_kb() {
    let dir = tempfile::tempdir().unwrap();
    let line = "x".repeat(999);
    let body: String = (0..200).map(|_| format!("{line}\n")).collect();
    fs::write(dir.path().join("wide.txt"), body).unwrap();
    let out = text(
        &call(dir.path(), "read", json!({"path": "wide.txt"}))
            .await
            .unwrap(),
    );
    assert!(out.len() <= 50 * 1024 + 200, "{}", out.len());
    assert!(out.contains("Use offset="), "says how to read on");
}

#[tokio::test]
async fn read_refuses_binaries_directories_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog"), b"\x7fELF\x02\x01\x01\0\0\0rest").unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let err = call(dir.path(), "read", json!({"path": "prog"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "prog is a binary file (14 B, ELF executable); it is not shown."
    );
    let err = call(dir.path(), "read", json!({"path": "sub"}))
        .await
        .unwrap_err();
    assert_eq!(err, "sub is a directory; use `ls` to list it.");
    let err = call(dir.path(), "read", json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Cannot read nope.txt: no such file or directory.");
    let err = call(dir.path(), "read", json!({"path": "prog/inner"}))
        .await
        .unwrap_err();
    assert!(err.contains("not a directory"), "{err}");
}

#[tokio::test]
async fn read_shows_non_utf8_and_crlf_text_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("latin1.txt"), b"caf\xe9\r\nna\xefve\r\n").unwrap();
    let out = text(
        &call(dir.path(), "read", json!({"path": "latin1.txt"}))
            .await
            .unwrap(),
    );
    assert!(
        out.starts_with("     1\tcaf\u{fffd}\n     2\tna\u{fffd}ve\n"),
        "{out:?}"
    );
    assert!(out.contains("not valid UTF-8"));
}

#[tokio::test]
async fn read_returns_images_as_image_content() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("dot.png"), b"\x89PNG\r\n\x1a\nfake").unwrap();
    let out = call(dir.path(), "read", json!({"path": "dot.png"}))
        .await
        .unwrap();
    assert!(matches!(&out.content[1], llm::UserContent::Image(i) if i.mime_type == "image/png"));
}

/// Set in the copy of this test binary that runs as `nobody`.
#[cfg(unix)]
const AS_NOBODY: &str = "TOOLS_TEST_AS_NOBODY";

#[cfg(unix)]
#[tokio::test]
async fn read_reports_permission_denied() {
    if running_as_root() {
        // Root reads every file: run this very test again as nobody (CI runs as root).
        let status = as_nobody("read_reports_permission_denied");
        assert!(status.success(), "the test failed when run as nobody");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    fs::write(&path, "x").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let err = call(dir.path(), "read", json!({"path": "secret"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Cannot read secret: permission denied.");
    if std::env::var_os(AS_NOBODY).is_some() {
        println!("checked as nobody");
    }
}

/// Runs test `name` of this binary as `nobody` (from a copy it can execute) and checks that it
/// really ran there.
#[cfg(unix)]
fn as_nobody(name: &str) -> std::process::ExitStatus {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("tests");
    common::copy_executable(&std::env::current_exe().unwrap(), &copy);
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--",
        ])
        .arg(&copy)
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(AS_NOBODY, "1")
        .current_dir(dir.path())
        .output()
        .expect("setpriv runs (util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("checked as nobody"),
        "the check did not run as nobody: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.status
}

#[tokio::test]
async fn write_creates_parents_and_reports_size() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        dir.path(),
        "write",
        json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "Created a/b/c.txt: 8 bytes, 2 lines.");
    assert_eq!(
        fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "one\ntwo\n"
    );
    let out = call(
        dir.path(),
        "write",
        json!({"path": "a/b/c.txt", "content": "one\n2\n"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "Replaced a/b/c.txt: 6 bytes, 2 lines.");
    let one = call(
        dir.path(),
        "write",
        json!({"path": "one.txt", "content": "x\n"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&one), "Created one.txt: 2 bytes, 1 line.");
    let diff = out.details.unwrap()["diff"].as_str().unwrap().to_string();
    assert!(diff.contains("-two\n+2\n"), "{diff}");
    let err = call(dir.path(), "write", json!({"path": "a/b", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err, "a/b is a directory.");
}

#[cfg(unix)]
#[tokio::test]
async fn write_keeps_permissions_and_follows_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.sh");
    fs::write(&script, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&script, dir.path().join("link.sh")).unwrap();
    call(
        dir.path(),
        "write",
        json!({"path": "link.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await
    .unwrap();
    assert!(
        fs::symlink_metadata(dir.path().join("link.sh"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&script).unwrap(), "#!/bin/sh\necho hi\n");
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[tokio::test]
async fn edit_replaces_and_returns_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("m.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    let edits = json!([{"old_text": "println!(\"hi\");", "new_text": "println!(\"hello\");"}]);
    let out = call(dir.path(), "edit", json!({"path": "m.rs", "edits": edits}))
        .await
        .unwrap();
    assert_eq!(text(&out), "Edited m.rs: 1 replacement, +1 -1 lines.");
    let details = out.details.unwrap();
    assert!(
        details["diff"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"hello\");")
    );
    assert_eq!(details["first_line"], 2);
    assert_eq!(
        fs::read_to_string(dir.path().join("m.rs")).unwrap(),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
}

#[tokio::test]
async fn edit_preserves_crlf_and_bom() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("w.txt"), "\u{feff}alpha\r\nbeta\r\n").unwrap();
    let edits = json!([{"old_text": "alpha\nbeta", "new_text": "alpha\ngamma"}]);
    call(dir.path(), "edit", json!({"path": "w.txt", "edits": edits}))
        .await
        .unwrap();
    assert_eq!(
        fs::read(dir.path().join("w.txt")).unwrap(),
        "\u{feff}alpha\r\ngamma\r\n".as_bytes()
    );
}

#[tokio::test]
async fn edit_keeps_each_line_s_ending_in_a_mixed_file() {
    let dir = tempfile::tempdir().unwrap();
    // Mostly CRLF with one LF line, as a file touched by two editors ends up.
    fs::write(dir.path().join("m.txt"), "one\r\ntwo\nthree\r\nfour\r\n").unwrap();
    let edits = json!([{"old_text": "three\nfour\n", "new_text": "3\n4\n5\n"}]);
    call(dir.path(), "edit", json!({"path": "m.txt", "edits": edits}))
        .await
        .unwrap();
    assert_eq!(
        fs::read(dir.path().join("m.txt")).unwrap(),
        b"one\r\ntwo\n3\r\n4\r\n5\r\n"
    );
}

#[tokio::test]
async fn write_keeps_the_crlf_endings_and_bom_of_the_file_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("w.txt"), "\u{feff}one\r\ntwo\r\n").unwrap();
    let out = call(
        dir.path(),
        "write",
        json!({"path": "w.txt", "content": "one\nTWO\nthree\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        fs::read(dir.path().join("w.txt")).unwrap(),
        "\u{feff}one\r\nTWO\r\nthree\r\n".as_bytes()
    );
    // The diff compares lines, not endings: one line kept, one changed, one added.
    let details = out.details.unwrap();
    assert_eq!(
        (details["added"].as_u64(), details["removed"].as_u64()),
        (Some(2), Some(1))
    );
    // A new file is written as given.
    call(
        dir.path(),
        "write",
        json!({"path": "new.txt", "content": "a\nb\n"}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read(dir.path().join("new.txt")).unwrap(), b"a\nb\n");
}

#[tokio::test]
async fn edit_errors_explain_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let original = "let a = 1;\nlet b = 2;\nlet a = 1;\n";
    fs::write(dir.path().join("x.rs"), original).unwrap();
    let cases = [
        (
            json!([{"old_text": "let a = 1;", "new_text": "x"}]),
            "occurs 2 times in x.rs (at lines 1, 3)",
        ),
        (
            json!([{"old_text": "let c = 3;", "new_text": "x"}]),
            "was not found in x.rs",
        ),
        (
            json!([{"old_text": "let b = 2;\nlet a", "new_text": "x"}, {"old_text": "2;\nlet a = 1;", "new_text": "y"}]),
            "overlap",
        ),
        (
            json!([{"old_text": "", "new_text": "x"}]),
            "`old_text` is empty",
        ),
        (
            json!([{"old_text": "let b = 3;", "new_text": "x"}]),
            "     2\tlet b = 2;",
        ),
    ];
    for (edits, expected) in cases {
        let err = call(dir.path(), "edit", json!({"path": "x.rs", "edits": edits}))
            .await
            .unwrap_err();
        assert!(err.contains(expected), "{err}");
        assert_eq!(
            fs::read_to_string(dir.path().join("x.rs")).unwrap(),
            original
        );
    }
    let err = call(
        dir.path(),
        "edit",
        json!({"path": "missing.rs", "edits": [{"old_text": "a", "new_text": "b"}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "Cannot edit missing.rs: no such file or directory.");
    fs::write(dir.path().join("bin.dat"), b"\xff\xfe\x00abc").unwrap();
    let err = call(
        dir.path(),
        "edit",
        json!({"path": "bin.dat", "edits": [{"old_text": "abc", "new_text": "d"}]}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "bin.dat is not valid UTF-8 text; it cannot be edited safely."
    );
}

#[tokio::test]
async fn edit_tolerates_smart_quotes_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("q.py"), "msg = “hello”  \nprint(msg)\n").unwrap();
    let edits = json!([{"old_text": "msg = \"hello\"\n", "new_text": "msg = \"bye\"\n"}]);
    let out = call(dir.path(), "edit", json!({"path": "q.py", "edits": edits}))
        .await
        .unwrap();
    assert!(
        text(&out).contains("matched only after normalising"),
        "{}",
        text(&out)
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("q.py")).unwrap(),
        "msg = \"bye\"\nprint(msg)\n"
    );
}
