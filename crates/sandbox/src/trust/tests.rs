//! Fingerprints, what a repository wants, and the trust store on real directories.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use super::*;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A repository with a `.coding-agent/` holding a config and a hook.
fn repo(tmp: &Path) -> PathBuf {
    let root = tmp.join("repo");
    write(
        &root.join(".coding-agent/config.toml"),
        "thinking = \"low\"\n",
    );
    write(&root.join(".coding-agent/hooks/pre.sh"), "echo hi\n");
    fs::create_dir_all(root.join(".git")).unwrap();
    root
}

#[cfg(unix)]
#[test]
fn fingerprint_is_stable_and_sees_every_change() {
    let tmp = tempfile::tempdir().unwrap();
    let root = repo(tmp.path());
    let first = fingerprint(&root);
    assert_eq!(first, fingerprint(&root));
    assert!(is_fingerprint(first.as_str()), "{first}");
    // The same tree elsewhere has the same fingerprint: only relative paths count.
    let twin = tmp.path().join("twin");
    write(
        &twin.join(".coding-agent/config.toml"),
        "thinking = \"low\"\n",
    );
    write(&twin.join(".coding-agent/hooks/pre.sh"), "echo hi\n");
    assert_eq!(fingerprint(&twin), first);

    let dir = root.join(".coding-agent");
    let mut seen = vec![first.clone()];
    let mut changed = |what: &str| {
        let now = fingerprint(&root);
        assert!(
            !seen.contains(&now),
            "{what} left the fingerprint as it was"
        );
        seen.push(now);
    };
    write(&dir.join("config.toml"), "thinking = \"high\"\n");
    changed("new content");
    write(&dir.join("SYSTEM.md"), "");
    changed("a new empty file");
    fs::rename(dir.join("hooks/pre.sh"), dir.join("hooks/post.sh")).unwrap();
    changed("a rename");
    fs::create_dir(dir.join("empty")).unwrap();
    changed("a new directory");
    std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
    changed("a symbolic link");
    fs::remove_dir_all(&dir).unwrap();
    changed("removing .coding-agent");
    // No `.coding-agent/` at all is a fingerprint too, and differs from an empty one.
    assert_eq!(
        fingerprint(&root),
        fingerprint(tmp.path().join("none").as_path())
    );
    fs::create_dir(&dir).unwrap();
    changed("an empty .coding-agent");
}

#[cfg(unix)]
#[test]
fn fingerprint_follows_file_links_but_not_directory_links_and_never_opens_fifos() {
    let tmp = tempfile::tempdir().unwrap();
    let root = repo(tmp.path());
    let dir = root.join(".coding-agent");
    let outside = tmp.path().join("outside.toml");
    write(&outside, "a");
    std::os::unix::fs::symlink(&outside, dir.join("linked.toml")).unwrap();
    let before = fingerprint(&root);
    write(&outside, "b");
    assert_ne!(
        fingerprint(&root),
        before,
        "the linked file's content counts"
    );
    // A link to `/` is not walked (it would read the whole disk).
    std::os::unix::fs::symlink("/", dir.join("everything")).unwrap();
    let fifo = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let root_for_thread = root.clone();
    std::thread::spawn(move || tx.send(fingerprint(&root_for_thread)).unwrap());
    let with_fifo = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("fingerprinting blocked on a FIFO or walked a directory link");
    assert_eq!(with_fifo, fingerprint(&root));
}

#[test]
fn wants_lists_what_the_repository_would_load() {
    let tmp = tempfile::tempdir().unwrap();
    let root = repo(tmp.path());
    let cwd = root.join("crates/core");
    write(&root.join("AGENTS.md"), "rules");
    write(&root.join("CLAUDE.md"), "rules");
    write(&root.join("crates/CLAUDE.md"), "crates");
    write(&cwd.join(".coding-agent/SYSTEM.md"), "prompt");
    write(&root.join("elsewhere/AGENTS.md"), "not on the way");
    write(&tmp.path().join("AGENTS.md"), "above the root");
    assert_eq!(
        wants(&root, &cwd),
        [
            root.join(".coding-agent/config.toml"),
            root.join(".coding-agent/hooks/pre.sh"),
            root.join("AGENTS.md"),
            root.join("CLAUDE.md"),
            root.join("crates/CLAUDE.md"),
            cwd.join(".coding-agent/SYSTEM.md"),
        ]
    );
    // A cwd outside the root: the root alone.
    assert_eq!(wants(&root, tmp.path()).len(), 4);
    let plain = tmp.path().join("plain");
    fs::create_dir_all(plain.join("src")).unwrap();
    assert!(wants(&plain, &plain.join("src")).is_empty());
}

#[cfg(unix)]
#[test]
fn trust_changed_and_revoked() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = repo(tmp.path());
    let store = TrustStore::new(&home);
    assert_eq!(store.state(&root).unwrap(), Trust::Untrusted);
    assert!(!home.exists(), "asking creates nothing");

    let seen = fingerprint(&root);
    store.trust(&root, &seen).unwrap();
    assert_eq!(store.state(&root).unwrap(), Trust::Trusted);
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(store.path()), 0o600);
    // Another path to the same directory is the same repository.
    assert_eq!(
        store.state(&root.join("../repo/.")).unwrap(),
        Trust::Trusted
    );

    // A command plants a hook: ask again.
    write(&root.join(".coding-agent/hooks/evil.sh"), "curl … | sh");
    assert_eq!(store.state(&root).unwrap(), Trust::Changed);
    // The user trusts the new state.
    store.trust(&root, &fingerprint(&root)).unwrap();
    assert_eq!(store.state(&root).unwrap(), Trust::Trusted);
    assert_eq!(
        store.list().unwrap(),
        [(root.canonicalize().unwrap(), fingerprint(&root))]
    );

    assert!(store.revoke(&root).unwrap());
    assert!(!store.revoke(&root).unwrap());
    assert_eq!(store.state(&root).unwrap(), Trust::Untrusted);
}

#[test]
fn trust_records_what_the_user_saw_not_what_is_there_now() {
    let tmp = tempfile::tempdir().unwrap();
    let root = repo(tmp.path());
    let store = TrustStore::new(&tmp.path().join("home"));
    let seen = fingerprint(&root);
    // Planted while the question was open.
    write(&root.join(".coding-agent/config.toml"), "planted");
    store.trust(&root, &seen).unwrap();
    assert_eq!(store.state(&root).unwrap(), Trust::Changed);
}

#[test]
fn repositories_are_kept_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let a = repo(&tmp.path().join("a"));
    let b = repo(&tmp.path().join("b"));
    let store = TrustStore::new(&tmp.path().join("home"));
    store.trust(&a, &fingerprint(&a)).unwrap();
    assert_eq!(store.state(&a).unwrap(), Trust::Trusted);
    assert_eq!(store.state(&b).unwrap(), Trust::Untrusted);
    store.trust(&b, &fingerprint(&b)).unwrap();
    store.revoke(&a).unwrap();
    assert_eq!(store.state(&a).unwrap(), Trust::Untrusted);
    assert_eq!(store.state(&b).unwrap(), Trust::Trusted);
}

#[test]
fn a_damaged_trust_file_is_an_error_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = repo(tmp.path());
    let store = TrustStore::new(tmp.path());
    let good = fingerprint(&root);
    let cases = [
        (
            format!("[repositories.\"/x\"]\nfingerprint = \"{good}\"\nwhen = 1\n"),
            3,
        ),
        (
            "[repositories.\"/x\"]\nfingerprint = \"md5:00\"\n".to_string(),
            2,
        ),
        (
            format!("\n[repositories.\"x\"]\nfingerprint = \"{good}\"\n"),
            2,
        ),
        ("[repositories.\"/x\"]\n".to_string(), 1),
        ("repositories = [\n".to_string(), 1),
    ];
    for (text, line) in cases {
        fs::write(store.path(), &text).unwrap();
        let err = store.state(&root).unwrap_err();
        assert!(
            matches!(&err, StoreError::Damaged { line: at, .. } if *at == line),
            "{text}: {err}"
        );
        assert!(store.trust(&root, &good).is_err());
        assert_eq!(fs::read_to_string(store.path()).unwrap(), text);
    }
}
