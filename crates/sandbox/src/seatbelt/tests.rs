//! The generated profiles, checked two ways: their text against golden copies (one per mode),
//! and their meaning against every rule of the Linux scenario tests (`tests/confine.rs`),
//! through a small evaluator of the SBPL the generator writes. The evaluator is ours, not
//! Apple's: it checks that the rules say what we mean; whether macOS reads them the same
//! way is what a run on a real Mac checks (docs/sandbox.md says which rules have been).

use std::path::{Path, PathBuf};

use super::*;

/// An S-expression of SBPL.
#[derive(Clone, Debug, PartialEq)]
enum Sexp {
    Atom(String),
    Str(String),
    List(Vec<Sexp>),
}

fn parse(text: &str) -> Vec<Sexp> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut stack: Vec<Vec<Sexp>> = vec![Vec::new()];
    while i < chars.len() {
        match chars[i] {
            ';' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '(' => {
                stack.push(Vec::new());
                i += 1;
            }
            ')' => {
                let list = stack.pop().expect("balanced");
                stack
                    .last_mut()
                    .expect("an unmatched )")
                    .push(Sexp::List(list));
                i += 1;
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                while chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
                stack.last_mut().unwrap().push(Sexp::Str(s));
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            _ => {
                let start = i;
                while i < chars.len() && !chars[i].is_whitespace() && !"()".contains(chars[i]) {
                    i += 1;
                }
                let atom: String = chars[start..i].iter().collect();
                stack.last_mut().unwrap().push(Sexp::Atom(atom));
            }
        }
    }
    assert_eq!(stack.len(), 1, "unbalanced parentheses");
    stack.pop().unwrap()
}

/// What a rule is checked against.
#[derive(Clone, Copy, Debug)]
enum Target<'a> {
    Path(&'a str),
    /// A socket of this kind: `unix` or `ip`.
    Socket(&'a str),
}

struct Evaluator {
    /// `(allow|deny, operations, filters)` in order.
    rules: Vec<(bool, Vec<String>, Vec<Sexp>)>,
    params: Vec<(String, PathBuf)>,
    default_allow: bool,
}

impl Evaluator {
    fn new(profile: &Profile) -> Evaluator {
        let mut rules = Vec::new();
        let mut default_allow = None;
        for form in parse(profile.text()) {
            let Sexp::List(items) = form else {
                panic!("a top-level atom")
            };
            let Some(Sexp::Atom(head)) = items.first() else {
                panic!("an empty form")
            };
            match head.as_str() {
                "version" => assert_eq!(items[1], Sexp::Atom("1".into())),
                "allow" | "deny" => {
                    let allow = head == "allow";
                    let ops: Vec<String> = items[1..]
                        .iter()
                        .take_while(|i| matches!(i, Sexp::Atom(_)))
                        .map(|i| match i {
                            Sexp::Atom(a) => a.clone(),
                            _ => unreachable!(),
                        })
                        .collect();
                    let filters = items[1 + ops.len()..].to_vec();
                    if ops == ["default"] {
                        default_allow = Some(allow);
                    } else {
                        rules.push((allow, ops, filters));
                    }
                }
                other => panic!("an unknown form {other}"),
            }
        }
        let evaluator = Evaluator {
            rules,
            params: profile.params().to_vec(),
            default_allow: default_allow.expect("a default"),
        };
        // Every parameter named is given, and every one given is named.
        let text = profile.text();
        for (name, _) in profile.params() {
            assert!(
                text.contains(&format!("(param \"{name}\")")),
                "{name} is never used"
            );
        }
        evaluator
    }

    fn param(&self, name: &str) -> String {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("the profile names {name}, which is not given"))
            .1
            .to_str()
            .unwrap()
            .to_string()
    }

    fn string(&self, value: &Sexp) -> String {
        match value {
            Sexp::Str(s) => s.clone(),
            Sexp::List(items) => match &items[0] {
                Sexp::Atom(a) if a == "param" => self.param(&self.string(&items[1])),
                Sexp::Atom(a) if a == "string-append" => {
                    items[1..].iter().map(|i| self.string(i)).collect()
                }
                other => panic!("not a string: {other:?}"),
            },
            Sexp::Atom(a) => panic!("not a string: {a}"),
        }
    }

    fn matches(&self, filter: &Sexp, target: Target<'_>) -> bool {
        let Sexp::List(items) = filter else {
            panic!("a filter that is not a list: {filter:?}")
        };
        let Sexp::Atom(kind) = &items[0] else {
            panic!("a filter without a name")
        };
        match (kind.as_str(), target) {
            ("require-all", _) => items[1..].iter().all(|f| self.matches(f, target)),
            ("require-any", _) => items[1..].iter().any(|f| self.matches(f, target)),
            ("require-not", _) => !self.matches(&items[1], target),
            ("subpath", Target::Path(path)) => {
                let root = self.string(&items[1]);
                path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/')))
            }
            ("literal" | "path", Target::Path(path)) => path == self.string(&items[1]),
            ("vnode-type", Target::Path(path)) => path.starts_with("/dev/"),
            ("subpath" | "literal" | "path" | "vnode-type", Target::Socket(_)) => false,
            ("remote" | "local", Target::Socket(socket)) => match &items[1] {
                Sexp::Atom(a) if a == "unix-socket" => socket == "unix",
                Sexp::Atom(a) if a == "ip" => socket == "ip",
                other => panic!("an unknown socket filter {other:?}"),
            },
            ("socket-domain", Target::Socket(socket)) => {
                items[1] == Sexp::Atom("AF_UNIX".into()) && socket == "unix"
            }
            (
                "global-name"
                | "local-name"
                | "target"
                | "ipc-posix-name-prefix"
                | "iokit-registry-entry-class"
                | "remote"
                | "local"
                | "socket-domain",
                _,
            ) => false,
            (other, _) => panic!("an unknown filter {other}"),
        }
    }

    /// Whether `operation` on `target` is allowed: the last rule that matches decides, the
    /// default otherwise. (The generator only writes allows after `(deny default)`, so the
    /// order makes no difference to its profiles.)
    fn allows(&self, operation: &str, target: Target<'_>) -> bool {
        let mut verdict = self.default_allow;
        for (allow, ops, filters) in &self.rules {
            let op_matches = ops.iter().any(|op| match op.strip_suffix('*') {
                Some(prefix) => operation.starts_with(prefix),
                None => operation == op,
            });
            if op_matches && (filters.is_empty() || filters.iter().any(|f| self.matches(f, target)))
            {
                verdict = *allow;
            }
        }
        verdict
    }

    fn writes(&self, path: impl AsRef<Path>) -> bool {
        let path = path.as_ref().to_str().unwrap();
        [
            "file-write-create",
            "file-write-data",
            "file-write-unlink",
            "file-write-mode",
        ]
        .iter()
        .all(|op| self.allows(op, Target::Path(path)))
    }

    fn writes_nothing_to(&self, path: impl AsRef<Path>) -> bool {
        let path = path.as_ref().to_str().unwrap();
        [
            "file-write-create",
            "file-write-data",
            "file-write-unlink",
            "file-write-mode",
            "file-write-owner",
            "file-write-times",
        ]
        .iter()
        .all(|op| !self.allows(op, Target::Path(path)))
    }

    fn reads(&self, path: &str) -> bool {
        self.allows("file-read-data", Target::Path(path))
    }
}

/// A workspace of the Linux scenarios, as plain rules (no file system involved, so the
/// golden copies are the same on every machine): the workspace with its `.git`, a temp
/// dir, the protected paths.
fn scenario_rules(network: bool) -> Rules {
    let ws = PathBuf::from("/Users/me/project");
    Rules {
        writable: vec![
            ws.clone(),
            "/private/tmp".into(),
            "/private/var/folders/xy/T".into(),
        ],
        read_only: vec![
            ws.join(".git/hooks"),
            ws.join(".git/config"),
            ws.join(".git/commondir"),
            ws.join(".coding-agent"),
        ],
        fixed: vec![ws.join(".git")],
        network,
        hidden: vec![
            "/Users/me/.coding-agent/auth.toml".into(),
            "/Users/me/.coding-agent/sessions".into(),
            "/Users/me/.ssh".into(),
        ],
    }
}

fn golden(name: &str, profile: &Profile) {
    let mut shown = profile.text().to_string();
    shown.push_str("\n; parameters\n");
    for (name, path) in profile.params() {
        shown.push_str(&format!("; -D{name}={}\n", path.display()));
    }
    insta::assert_snapshot!(name, shown);
}

#[test]
fn golden_workspace_write() {
    golden("workspace_write", &Profile::new(&scenario_rules(true)));
}

#[test]
fn golden_workspace_write_without_network() {
    golden(
        "workspace_write_no_network",
        &Profile::new(&scenario_rules(false)),
    );
}

#[test]
fn golden_read_only() {
    let rules = Rules {
        network: false,
        ..Rules::default()
    };
    golden("read_only", &Profile::new(&rules));
}

#[test]
fn workspace_write_allows_the_workspace_and_temp_but_nothing_outside() {
    let eval = Evaluator::new(&Profile::new(&scenario_rules(true)));
    for path in [
        "/Users/me/project/inside.txt",
        "/Users/me/project/a/b/c",
        "/Users/me/project/.git/objects/ab/cdef",
        "/Users/me/project/.git/index",
        "/Users/me/project/.git/refs/heads/main",
        "/Users/me/project/.github/workflows/ci.yml",
        "/Users/me/project/.coding-agent-notes",
        "/private/tmp/scratch",
        "/private/var/folders/xy/T/pip-build",
    ] {
        assert!(eval.writes(path), "{path} should be writable");
    }
    for path in [
        "/Users/me/outside",
        "/Users/me/project-sibling/x",
        "/Users/me/.ssh/authorized_keys",
        "/etc/hosts",
        "/usr/local/bin/git",
        "/private/var/folders/xy/C/cache",
        "/Users/me",
        "/",
    ] {
        assert!(eval.writes_nothing_to(path), "{path} should be read-only");
    }
    // Reading is allowed everywhere but where hidden (the scenario hides ~/.ssh).
    assert!(eval.reads("/Users/me/.gitconfig"));
    assert!(eval.reads("/etc/hosts"));
}

#[test]
fn git_hooks_config_and_the_project_config_are_read_only_even_before_they_exist() {
    let eval = Evaluator::new(&Profile::new(&scenario_rules(true)));
    for path in [
        "/Users/me/project/.git/hooks",
        "/Users/me/project/.git/hooks/pre-commit",
        "/Users/me/project/.git/config",
        "/Users/me/project/.git/commondir",
        "/Users/me/project/.coding-agent",
        "/Users/me/project/.coding-agent/config.toml",
        "/Users/me/project/.coding-agent/skills/x/SKILL.md",
    ] {
        assert!(eval.writes_nothing_to(path), "{path} should be read-only");
    }
    // `.git` itself cannot be moved aside (and replaced by a file pointing at a copy with
    // hooks), but what is inside it is written by git.
    assert!(eval.writes_nothing_to("/Users/me/project/.git"));
    assert!(eval.writes("/Users/me/project/.git/HEAD"));
    // A name that only starts like a protected one is not protected.
    assert!(eval.writes("/Users/me/project/.git/config.lock.d/x"));
    assert!(eval.writes("/Users/me/project/.git/hooksx"));
}

#[test]
fn the_harmless_devices_stay_writable_in_every_mode() {
    for rules in [scenario_rules(true), Rules::default()] {
        let eval = Evaluator::new(&Profile::new(&rules));
        for device in WRITABLE_DEVICES {
            assert!(
                eval.allows("file-write-data", Target::Path(device)),
                "{device}"
            );
            // Written, not removed or replaced.
            assert!(
                !eval.allows("file-write-unlink", Target::Path(device)),
                "{device}"
            );
        }
        assert!(eval.writes_nothing_to("/dev/disk0"));
    }
}

#[test]
fn read_only_writes_nothing_and_has_no_network_by_default() {
    let ws = tempfile::tempdir().unwrap();
    let policy = Policy::new(SandboxMode::ReadOnly, ws.path(), &[], None);
    let rules = Rules::from_policy(&policy).unwrap();
    assert!(rules.writable.is_empty());
    assert!(!rules.network);
    let eval = Evaluator::new(&Profile::new(&rules));
    let inside = ws.path().canonicalize().unwrap().join("file");
    assert!(eval.writes_nothing_to(&inside));
    assert!(eval.writes_nothing_to("/private/tmp/x"));
    assert!(!eval.allows("network-outbound", Target::Socket("ip")));
    assert!(eval.allows("network-outbound", Target::Socket("unix")));
}

#[test]
fn the_network_switch_keeps_unix_sockets_either_way() {
    let off = Evaluator::new(&Profile::new(&scenario_rules(false)));
    assert!(!off.allows("network-outbound", Target::Socket("ip")));
    assert!(!off.allows("system-socket", Target::Socket("ip")));
    assert!(!off.allows("network-bind", Target::Socket("ip")));
    assert!(off.allows("network-outbound", Target::Socket("unix")));
    assert!(off.allows("system-socket", Target::Socket("unix")));
    let on = Evaluator::new(&Profile::new(&scenario_rules(true)));
    assert!(on.allows("network-outbound", Target::Socket("ip")));
    assert!(on.allows("network-bind", Target::Socket("ip")));
    assert!(on.allows("system-socket", Target::Socket("ip")));
}

/// The agent's own files and the `deny_read` paths are neither read nor written; the rest of
/// the agent's home (skills) and everything else stay readable (issue 45).
#[test]
fn hidden_paths_are_not_read() {
    let eval = Evaluator::new(&Profile::new(&scenario_rules(true)));
    assert!(!eval.reads("/Users/me/.coding-agent/auth.toml"));
    assert!(!eval.reads("/Users/me/.coding-agent/sessions/x/1.jsonl"));
    assert!(!eval.reads("/Users/me/.ssh/id_ed25519"));
    assert!(!eval.reads("/Users/me/.ssh"));
    assert!(eval.reads("/Users/me/.coding-agent/skills/pdf/run.py"));
    assert!(eval.reads("/Users/me/.sshrc"));
    assert!(eval.reads("/Users/me/project/src/main.rs"));
    assert!(eval.reads("/usr/bin/git"));
    // A policy whose agent home is under a writable root: hidden there means not written
    // either.
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().join("agent-home");
    std::fs::create_dir_all(home.join("skills")).unwrap();
    std::fs::write(home.join("auth.toml"), "").unwrap();
    let ws = temp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let policy = Policy::new(SandboxMode::WorkspaceWrite, &ws, &[], None).hiding(Some(&home), &[]);
    let eval = Evaluator::new(&Profile::new(&Rules::from_policy(&policy).unwrap()));
    let home = crate::policy::resolve(&home).unwrap();
    let auth = home.join("auth.toml");
    assert!(!eval.reads(auth.to_str().unwrap()));
    assert!(!eval.writes(&auth));
    assert!(eval.reads(home.join("skills/x").to_str().unwrap()));
}

#[test]
fn processes_run_and_signal_only_their_own() {
    let eval = Evaluator::new(&Profile::new(&scenario_rules(false)));
    assert!(eval.allows("process-exec", Target::Path("/bin/bash")));
    assert!(eval.allows("process-fork", Target::Path("/bin/bash")));
    // `(target same-sandbox)` only: the agent and the user's other processes are out of
    // reach (the evaluator never matches a target filter).
    assert!(!eval.allows("signal", Target::Path("/")));
}

/// A hostile path cannot change the rules: the text is the same whatever the workspace is
/// called, and the path reaches `sandbox-exec` only as a parameter's value.
#[test]
fn a_path_with_quotes_and_parentheses_cannot_change_the_rules() {
    let plain = Profile::new(&scenario_rules(true));
    let evil_root = PathBuf::from(r#"/Users/me/x") (allow file-write* (subpath "/")) ("#);
    let mut evil_rules = scenario_rules(true);
    let swap = |p: &PathBuf| {
        let rest = p.strip_prefix("/Users/me/project").unwrap();
        if rest.as_os_str().is_empty() {
            evil_root.clone()
        } else {
            evil_root.join(rest)
        }
    };
    evil_rules.writable[0] = evil_root.clone();
    evil_rules.read_only = evil_rules.read_only.iter().map(swap).collect();
    evil_rules.fixed = evil_rules.fixed.iter().map(swap).collect();
    let evil = Profile::new(&evil_rules);
    assert_eq!(evil.text(), plain.text(), "the text depends on a path");
    assert!(!evil.text().contains("/Users/me"));
    assert_eq!(evil.param("WRITABLE_0"), Some(evil_root.as_path()));
    let args = evil.arguments();
    assert_eq!(args[0], "-p");
    assert!(args.iter().any(|a| {
        let a = a.to_str().unwrap();
        a.starts_with("-DWRITABLE_0=") && a.ends_with(r#"(subpath "/")) ("#)
    }));
    let eval = Evaluator::new(&evil);
    assert!(eval.writes_nothing_to("/etc/hosts"));
    assert!(eval.writes_nothing_to("/Users/me/outside"));
    assert!(eval.writes(evil_root.join("inside")));
    assert!(eval.writes_nothing_to(evil_root.join(".git/hooks/pre-commit")));
}

/// Rules made from a real policy: the protected paths and `.git` come from the disk, and
/// `.coding-agent/` is protected although it does not exist.
#[test]
fn a_policy_s_rules_protect_what_exists_and_what_does_not_yet() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let policy = Policy::new(SandboxMode::WorkspaceWrite, &ws, &[], Some(false));
    let rules = Rules::from_policy(&policy).unwrap();
    assert_eq!(rules.writable[0], ws);
    assert_eq!(rules.fixed, [ws.join(".git")]);
    assert!(!rules.network);
    let eval = Evaluator::new(&Profile::new(&rules));
    assert!(eval.writes(ws.join("src/main.rs")));
    assert!(eval.writes_nothing_to(ws.join(".coding-agent/config.toml")));
    assert!(eval.writes_nothing_to(ws.join(".coding-agent")));
    assert!(eval.writes_nothing_to(ws.join(".git/hooks/post-checkout")));
    // Without a `.git` yet, `git init` may make one.
    let bare = tempfile::tempdir().unwrap();
    let policy = Policy::new(SandboxMode::WorkspaceWrite, bare.path(), &[], None);
    let rules = Rules::from_policy(&policy).unwrap();
    assert!(rules.fixed.is_empty());
    let eval = Evaluator::new(&Profile::new(&rules));
    let bare = bare.path().canonicalize().unwrap();
    assert!(eval.writes(bare.join(".git")));
    assert!(eval.writes(bare.join(".git/objects/pack")));
    assert!(eval.writes_nothing_to(bare.join(".git/hooks/pre-commit")));
    assert!(
        Rules::from_policy(&Policy::new(SandboxMode::DangerFullAccess, &ws, &[], None)).is_none()
    );
}

/// A worktree's `.git` is a file naming its git directory elsewhere: that directory is
/// writable (commits work) but its hooks, config and pointers are not, nor the `.git` file.
#[test]
fn a_worktree_s_git_files_are_protected_where_they_live() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let main = root.join("main");
    let wt = root.join("wt");
    let git_dir = main.join(".git/worktrees/wt");
    std::fs::create_dir_all(&git_dir).unwrap();
    std::fs::create_dir_all(main.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(wt.join(".git"), format!("gitdir: {}\n", git_dir.display())).unwrap();
    std::fs::write(git_dir.join("commondir"), "../..\n").unwrap();
    let policy = Policy::new(SandboxMode::WorkspaceWrite, &wt, &[], None);
    let mut rules = Rules::from_policy(&policy).unwrap();
    // The scene lives in a temp dir, which is writable as such: left out, what is written
    // is what the worktree's rules allow.
    rules.writable.retain(|r| !policy.temp_dirs().contains(r));
    let eval = Evaluator::new(&Profile::new(&rules));
    assert!(eval.writes(wt.join("file")));
    assert!(eval.writes(git_dir.join("index")));
    assert!(eval.writes(main.join(".git/objects/ab/cd")));
    for path in [
        wt.join(".git"),
        git_dir.join("commondir"),
        git_dir.join("config.worktree"),
        main.join(".git/hooks/pre-commit"),
        main.join(".git/config"),
        // The git directories themselves cannot be moved aside.
        git_dir.clone(),
        main.join(".git"),
    ] {
        assert!(eval.writes_nothing_to(&path), "{}", path.display());
    }
    assert!(eval.writes_nothing_to(root.join("main/file")));
}

#[test]
fn the_evaluator_notices_a_missing_parameter() {
    let mut profile = Profile::new(&scenario_rules(true));
    profile.params.retain(|(n, _)| n != "WRITABLE_0");
    let eval = Evaluator::new(&profile);
    let missing = std::panic::catch_unwind(|| eval.writes("/Users/me/project/x"));
    assert!(missing.is_err());
}
