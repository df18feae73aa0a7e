//! Rule matching, suggestions, and the store on real files.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use super::*;

fn words(prefix: &[&str]) -> Vec<String> {
    prefix.iter().map(|w| w.to_string()).collect()
}

fn rules(prefixes: &[&[&str]]) -> ProjectRules {
    ProjectRules::new(prefixes.iter().map(|p| words(p)).collect())
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_prefix_covers_whole_words_only() {
    let r = rules(&[&["cargo", "test"]]);
    assert!(r.allows("cargo test"));
    assert!(r.allows("cargo test -p x"));
    assert!(r.allows("cargo 'test' -p x"));
    assert!(r.allows("cargo test $FILTER"));
    assert!(!r.allows("cargo testify"));
    assert!(!r.allows("cargo"));
    assert!(!r.allows("cargo build"));
    assert!(!r.allows("/usr/bin/cargo test"));
    assert!(!r.allows("$CARGO test"));
}

#[test]
fn every_command_of_a_line_must_be_read_only_or_covered() {
    let r = rules(&[&["cargo", "test"]]);
    assert_eq!(r.decide("cargo test && git status"), Decision::Allowed);
    assert_eq!(r.decide("git status && git diff"), Decision::ReadOnly);
    assert_eq!(r.decide("cargo test 2>&1 | tail -n 20"), Decision::Allowed);
    assert_eq!(
        r.decide("cargo test; rm -rf /"),
        Decision::Ask(AskReason::NotAllowed("rm -rf /".into()))
    );
    assert_eq!(
        r.decide("cargo test $(rm x)"),
        Decision::Ask(AskReason::NotAllowed("rm x".into()))
    );
    assert_eq!(
        r.decide("echo `rm x`"),
        Decision::Ask(AskReason::NotAllowed("rm x".into()))
    );
    assert_eq!(
        r.decide("cargo test $(git rev-parse HEAD)"),
        Decision::Allowed
    );
    assert_eq!(
        r.decide("(cd x && cargo test)"),
        Decision::Ask(AskReason::NotAllowed("cd x".into()))
    );
}

#[test]
fn hazards_and_unreadable_lines_are_never_covered() {
    let r = rules(&[&["cargo", "test"], &["tee"]]);
    assert_eq!(
        r.decide("cargo test > log"),
        Decision::Ask(AskReason::Hazard {
            command: "cargo test".into(),
            hazard: Hazard::WritesFile("log".into())
        })
    );
    assert!(r.allows("cargo test > /dev/null 2>&1"));
    assert!(!r.allows("RUST_LOG=debug cargo test"));
    assert!(!r.allows("cargo test &> log"));
    assert!(matches!(
        r.decide("for x in a; do cargo test; done"),
        Decision::Ask(AskReason::Unreadable(_))
    ));
    assert_eq!(r.decide(""), Decision::Ask(AskReason::Empty));
    // A rule may still allow a program that writes where its arguments say.
    assert!(r.allows("cargo test | tee log"));
    let eval = rules(&[&["eval"]]);
    assert!(!eval.allows("eval ls"));
}

#[test]
fn suggestions() {
    let s = |c: &str| suggest_prefix(c).map(|p| p.join(" "));
    assert_eq!(s("cargo test -p x"), Some("cargo test".into()));
    assert_eq!(
        s("cargo test -p a && cargo test -p b"),
        Some("cargo test".into())
    );
    assert_eq!(s("cargo test && git status"), Some("cargo test".into()));
    assert_eq!(s("cargo build && npm test"), None);
    assert_eq!(s("npm run build"), Some("npm run build".into()));
    assert_eq!(s("npm run"), None);
    assert_eq!(s("npm test"), Some("npm test".into()));
    assert_eq!(s("uv run pytest -x"), Some("uv run pytest".into()));
    assert_eq!(s("git push origin main"), Some("git push".into()));
    assert_eq!(s("git -C x push"), None);
    assert_eq!(s("cargo +nightly test"), None);
    assert_eq!(s("make"), None);
    assert_eq!(s("make test"), Some("make test".into()));
    assert_eq!(s("pytest -x tests"), Some("pytest".into()));
    assert_eq!(s("./run.sh --fast"), Some("./run.sh".into()));
    assert_eq!(s("python3 script.py --x"), Some("python3 script.py".into()));
    // A module run is named like a script: the longest prefix safe to remember.
    assert_eq!(
        s("python3 -m unittest discover -v"),
        Some("python3 -m unittest".into())
    );
    assert_eq!(s("python -m pytest -x"), Some("python -m pytest".into()));
    assert_eq!(s("python3 -m"), None);
    assert_eq!(s("python3 -m -x"), None);
    assert_eq!(s("python3 -W error -m pytest"), None);
    assert_eq!(s("/usr/bin/python3.12 -c 'import os'"), None);
    assert_eq!(s("bash -c 'rm -rf /'"), None);
    assert_eq!(s("bash build.sh"), Some("bash build.sh".into()));
    assert_eq!(s("sed -i s/a/b/ x"), None);
    for never in [
        "rm -rf build",
        "/bin/rm x",
        "sudo make install",
        "env X=1 make",
        "xargs rm",
        "find . -delete",
        "dd if=x of=y",
        "mkfs.ext4 /dev/sda",
        "chmod +x y",
    ] {
        assert_eq!(s(never), None, "{never}");
    }
    // Nothing to allow, or nothing a rule could allow.
    assert_eq!(s("ls -la"), None);
    assert_eq!(s("cargo test > log"), None);
    assert_eq!(s("X=1 cargo test"), None);
    assert_eq!(s("if x; then y; fi"), None);
    assert_eq!(s("$(echo cargo) test"), None);
    // What is offered covers what was asked.
    for line in [
        "cargo test -p x",
        "npm run build -- --watch",
        "git commit -m 'x y'",
        "pytest -k a",
        "python3 -m unittest discover -s tests",
    ] {
        let prefix = suggest_prefix(line).unwrap();
        assert!(ProjectRules::new(vec![prefix]).allows(line), "{line}");
    }
}

#[cfg(unix)]
#[test]
fn store_round_trip_with_private_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let store = ApprovalStore::new(&home);
    // A missing file is empty; nothing is created by reading.
    assert_eq!(store.list(&project).unwrap(), Vec::<Vec<String>>::new());
    assert!(!home.exists());

    // Whatever the umask, the home is 0700 and the file 0600.
    let old = unsafe { libc::umask(0) };
    let added = store.add(&project, &words(&["cargo", "test"]));
    unsafe { libc::umask(old) };
    assert!(added.unwrap());
    assert!(!store.add(&project, &words(&["cargo", "test"])).unwrap());
    assert!(
        store
            .add(&project, &words(&["npm", "run", "build"]))
            .unwrap()
    );
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(&home.join("approvals.toml.lock")), 0o600);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // A fresh store reads the same rules, keyed by the canonical root.
    let again = ApprovalStore::new(&home);
    let via_dots = project.join("../project/.");
    assert_eq!(
        again.list(&via_dots).unwrap(),
        [words(&["cargo", "test"]), words(&["npm", "run", "build"])]
    );
    assert!(
        again
            .rules(&project)
            .unwrap()
            .allows("npm run build --prod")
    );
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(
        text.starts_with("# Commands coding-agent may run"),
        "{text}"
    );
    let root = project.canonicalize().unwrap();
    assert!(
        text.contains(&format!("[projects.\"{}\"]", root.display())),
        "{text}"
    );
    assert_eq!(
        again.list_all().unwrap().keys().collect::<Vec<_>>(),
        [&root]
    );
}

#[cfg(unix)]
#[test]
fn an_existing_open_home_is_made_private() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    ApprovalStore::new(&home)
        .add(tmp.path(), &words(&["make"]))
        .unwrap();
    assert_eq!(mode(&home), 0o700);
}

#[test]
fn projects_are_kept_apart_and_revoke_removes_one_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let store = ApprovalStore::new(&tmp.path().join("home"));
    store.add(&a, &words(&["cargo", "test"])).unwrap();
    store.add(&a, &words(&["make"])).unwrap();
    store.add(&b, &words(&["npm", "test"])).unwrap();
    assert!(store.rules(&a).unwrap().allows("cargo test"));
    assert!(!store.rules(&b).unwrap().allows("cargo test"));
    assert!(store.rules(&b).unwrap().allows("npm test"));

    assert!(store.revoke(&a, &words(&["cargo", "test"])).unwrap());
    assert!(!store.revoke(&a, &words(&["cargo", "test"])).unwrap());
    assert!(!store.revoke(&b, &words(&["cargo", "test"])).unwrap());
    assert_eq!(store.list(&a).unwrap(), [words(&["make"])]);
    assert!(store.rules(&b).unwrap().allows("npm test"));
    // The last rule of a project takes the project out of the file.
    assert!(store.revoke(&a, &words(&["make"])).unwrap());
    let roots = store.list_all().unwrap();
    assert_eq!(
        roots.keys().collect::<Vec<_>>(),
        [&b.canonicalize().unwrap()]
    );
}

#[test]
fn a_damaged_file_is_an_error_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ApprovalStore::new(tmp.path());
    let cases = [
        ("[projects.\"/x\"]\nallow = [[\"cargo\", \"test\"]\n", 2),
        ("[projects.\"/x\"]\nallow = [[\"cargo\"]]\nextra = 1\n", 3),
        ("\n\n[projects.\"relative/x\"]\nallow = [[\"make\"]]\n", 3),
        ("[projects.\"/x\"]\nallow = [\n  [\"make\"],\n  [],\n]\n", 4),
        ("[projects.\"/x\"]\nallow = [[\"eval\"]]\n", 2),
        ("[projects.\"/x\"]\nallow = \"make\"\n", 2),
    ];
    for (text, line) in cases {
        std::fs::write(store.path(), text).unwrap();
        let err = store.list(tmp.path()).unwrap_err();
        let StoreError::Damaged { path, line: at, .. } = &err else {
            panic!("{text}: {err}");
        };
        assert_eq!((path.as_path(), *at), (store.path(), line), "{text}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}:{line}:", store.path().display()))
        );
        // Adding refuses too, and leaves the file as it was.
        assert!(store.add(tmp.path(), &words(&["make"])).is_err());
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), text);
    }
}

#[test]
fn invalid_prefixes_and_roots_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ApprovalStore::new(&tmp.path().join("home"));
    for prefix in [
        vec![],
        words(&[""]),
        words(&["eval"]),
        words(&["source", "x"]),
    ] {
        assert!(matches!(
            store.add(tmp.path(), &prefix),
            Err(StoreError::InvalidPrefix { .. })
        ));
    }
    assert!(matches!(
        store.add(&tmp.path().join("missing"), &words(&["make"])),
        Err(StoreError::ProjectRoot { .. })
    ));
}

#[test]
fn concurrent_adds_keep_every_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().to_path_buf();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (home, project) = (home.clone(), project.clone());
            std::thread::spawn(move || {
                let store = ApprovalStore::new(&home);
                for j in 0..5 {
                    store
                        .add(&project, &[format!("tool{i}"), format!("{j}")])
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(ApprovalStore::new(&home).list(&project).unwrap().len(), 40);
}

/// A host allowed for the fetch tool is not a command allowed: a command spelled like the
/// rule (a script named `web:` on the PATH) is still asked about.
#[test]
fn a_web_rule_allows_a_host_and_never_a_command() {
    let rules = ProjectRules::new(vec![web_rule("Docs.RS")]);
    assert!(rules.allows_host("docs.rs"));
    assert!(!rules.allows_host("evil.example"));
    assert!(!rules.allows("web: docs.rs"));
    assert!(!rules.allows("'web:' docs.rs --upload ~/.ssh"));
    // Allowed at public addresses only: not at private ones.
    assert!(!rules.allows_private_host("docs.rs"));
    let rules = ProjectRules::new(vec![web_rule_private("intranet")]);
    assert!(rules.allows_host("intranet") && rules.allows_private_host("intranet"));
    assert!(!rules.allows("web: intranet private"));
}
