//! grep, find and ls over generated trees.

mod common;

use common::{call, text};
use serde_json::json;
use std::fs;
use std::path::Path;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, body: &str| {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    };
    write(
        "src/main.rs",
        "fn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n",
    );
    write("src/lib.rs", "pub fn Answer() -> u32 {\n    42\n}\n");
    write("docs/notes.md", "The answer is 42.\n");
    write("target/debug/out.rs", "let answer = 42;\n");
    write(".hidden/secret.rs", "let answer = 42;\n");
    write("bin/blob.bin", "answer\0\0binary");
    write("long.txt", &format!("answer {}\n", "y".repeat(2000)));
    write(".gitignore", "target/\n");
    // The walker honours .gitignore only inside a git repository, like ripgrep.
    fs::create_dir(root.join(".git")).unwrap();
    dir
}

async fn grep(root: &Path, args: serde_json::Value) -> String {
    text(&call(root, "grep", args).await.unwrap())
}

#[tokio::test]
async fn grep_finds_matches_and_respects_gitignore_hidden_and_binary() {
    let dir = tree();
    let out = grep(dir.path(), json!({"pattern": "answer"})).await;
    assert!(out.contains("src/main.rs:2:     let answer = 42;"), "{out}");
    assert!(out.contains("docs/notes.md:1: The answer is 42."), "{out}");
    assert!(!out.contains("target/"), "gitignored: {out}");
    assert!(!out.contains(".hidden"), "hidden: {out}");
    assert!(!out.contains("blob.bin"), "binary: {out}");
    assert!(
        out.contains("long.txt:1: answer yyy") && out.contains("[line cut at 500 chars]"),
        "{out}"
    );
}

#[tokio::test]
async fn grep_options_narrow_and_widen() {
    let dir = tree();
    let out = grep(
        dir.path(),
        json!({"pattern": "answer", "glob": "*.rs", "ignore_case": true}),
    )
    .await;
    assert!(out.contains("src/lib.rs:1: pub fn Answer()"), "{out}");
    assert!(!out.contains("notes.md"), "{out}");
    let out = grep(dir.path(), json!({"pattern": "{answer}", "literal": true})).await;
    assert_eq!(out.lines().count(), 1, "{out}");
    let out = grep(
        dir.path(),
        json!({"pattern": "let answer", "path": "src", "context": 1}),
    )
    .await;
    assert_eq!(
        out,
        "src/main.rs-1- fn main() {\nsrc/main.rs:2:     let answer = 42;\nsrc/main.rs-3-     println!(\"{answer}\");\n"
    );
    let out = grep(dir.path(), json!({"pattern": "42", "limit": 2})).await;
    assert!(
        out.contains("[Showing 2 matches; the limit was reached"),
        "{out}"
    );
    let out = grep(dir.path(), json!({"pattern": "zebra"})).await;
    assert_eq!(out, "No matches for `zebra`.");
}

#[tokio::test]
async fn grep_reports_bad_patterns_and_paths() {
    let dir = tree();
    let err = call(dir.path(), "grep", json!({"pattern": "(unclosed"}))
        .await
        .unwrap_err();
    assert!(err.starts_with("Invalid pattern:"), "{err}");
    let err = call(
        dir.path(),
        "grep",
        json!({"pattern": "x", "path": "nowhere"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "nowhere does not exist.");
}

#[tokio::test]
async fn find_matches_names_or_paths_sorted() {
    let dir = tree();
    let out = text(
        &call(dir.path(), "find", json!({"pattern": "*.rs"}))
            .await
            .unwrap(),
    );
    assert_eq!(out, "src/lib.rs\nsrc/main.rs");
    let out = text(
        &call(dir.path(), "find", json!({"pattern": "docs/*.md"}))
            .await
            .unwrap(),
    );
    assert_eq!(out, "docs/notes.md");
    let out = text(
        &call(dir.path(), "find", json!({"pattern": "*", "limit": 2}))
            .await
            .unwrap(),
    );
    assert!(out.contains("[Showing 2 of"), "{out}");
    let out = text(
        &call(dir.path(), "find", json!({"pattern": "*.py"}))
            .await
            .unwrap(),
    );
    assert_eq!(out, "No files match `*.py`.");
}

#[tokio::test]
async fn ls_lists_one_level_sorted_with_directory_slashes() {
    let dir = tree();
    let out = text(&call(dir.path(), "ls", json!({})).await.unwrap());
    assert_eq!(out, "bin/\ndocs/\nlong.txt\nsrc/");
    let out = text(
        &call(dir.path(), "ls", json!({"path": "src"}))
            .await
            .unwrap(),
    );
    assert_eq!(out, "lib.rs\nmain.rs");
    let err = call(dir.path(), "ls", json!({"path": "long.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("is a file"), "{err}");
    let err = call(dir.path(), "ls", json!({"path": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Cannot list missing: no such file or directory.");
}

#[tokio::test]
async fn grep_skips_and_names_a_file_with_a_line_over_16_mb() {
    let dir = tempfile::tempdir().unwrap();
    let mut huge = vec![b'x'; 17 * 1024 * 1024];
    huge.extend_from_slice(b" needle\n");
    std::fs::write(dir.path().join("bundle.min.js"), huge).unwrap();
    std::fs::write(dir.path().join("small.txt"), "a needle\n").unwrap();
    let out = call(dir.path(), "grep", json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "small.txt:1: a needle\n[Skipped 1 file(s) with a line longer than 16 MB: \
         bundle.min.js. Search them with bash (e.g. `grep -o`).]"
    );
}
