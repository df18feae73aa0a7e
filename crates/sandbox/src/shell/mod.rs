//! Reading a bash command line well enough to judge it, and no further.
//!
//! Why: before a command runs in `untrusted` mode the agent must know whether it is one of a
//! few read-only programs, or covered by a prefix the user allowed. Both questions are about
//! the simple commands the line would run, so this module finds them: it splits the line at
//! `&&`, `||`, `;`, `|`, `|&`, `&` and newlines, removes quotes (single, double, backslash),
//! notes leading `NAME=value` assignments and every redirection, and descends into subshells
//! `( … )`, groups `{ …; }`, command substitutions `$( … )` and `` `…` ``, process
//! substitutions `<( … )` and `>( … )`, and the substitutions inside unquoted here-documents.
//! Every command found in there is one more simple command of the line, judged like the
//! others: `echo $(rm x)` runs `rm x`, so it is not read-only.
//!
//! What it guarantees: it is a *recogniser* for a deliberately small part of bash, and it
//! fails closed. Anything outside that part is a [`ParseError`] and the command is asked
//! about: control flow (`if`, `for`, `while`, `case`, `[[`, functions), arithmetic (`$((`,
//! `((`, `$[`), `${…}` beyond a plain name, `$'…'` and `$"…"` quoting, arrays, extglobs,
//! unterminated quotes or here-documents, nesting deeper than [`MAX_DEPTH`]. A word whose value
//! is only known when it runs (`$VAR`, a substitution, a glob, `~`, braces) is kept as an
//! *opaque* word: it may stand as an argument of a program that takes any argument, never as a
//! program name nor where a refused flag could hide.
//!
//! What it does not do: expand anything, or know what a program does with its arguments (the
//! table in `read_only.rs` does, for its few programs). `cd` changes where later commands
//! run; aliases and functions are not expanded (a non-interactive bash does not expand
//! aliases, and a function definition is refused).
//!
//! Why hand-written: `shlex` and `shell-words` split words but do not see operators,
//! redirections or substitutions; `brush-parser` parses all of bash, but it pulls `bon`,
//! `cached`, `insta`, `peg` and `tracing` into the agent and its AST changed with each minor
//! version, and a full AST would still need this module's walk to refuse what it does not
//! understand. A recogniser whose every accepted construct is listed here is easier to trust.

mod read_only;
#[cfg(test)]
mod tests;

pub use read_only::is_known_read_only;
pub(crate) use read_only::is_read_only;

/// How deeply subshells, groups and substitutions may nest before the line is refused (a
/// guard against a stack overflow on hostile input, far beyond what people write).
pub const MAX_DEPTH: usize = 32;

/// Why a command line could not be read: the caller must treat it as unsafe and ask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A quote, substitution, group or here-document that is never closed.
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    /// A construct this recogniser does not accept (control flow, arithmetic, …).
    #[error("`{0}` is not understood here")]
    Unsupported(String),
    /// Something bash itself would reject.
    #[error("syntax error near `{0}`")]
    Syntax(String),
}

/// What makes a simple command unsafe whatever the user's rules say: a prefix rule allows
/// a program with its arguments, not what a redirection or an expansion does around it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Hazard {
    /// Output redirected to a file (`>`, `>>`, `>|`, `&>`, `2>`, `<>`, `>&file`), anything
    /// but `/dev/null`.
    #[error("writes to `{0}`")]
    WritesFile(String),
    /// A `NAME=value` assignment: it can change which program runs and what it does (`PATH`,
    /// `LD_PRELOAD`, `GIT_EXTERNAL_DIFF`).
    #[error("sets `{0}`")]
    Assignment(String),
    /// The program's name is only known when it runs (`$CMD`, `$(…)`, a glob).
    #[error("runs a program only known at run time: `{0}`")]
    DynamicProgram(String),
    /// A builtin that runs text as commands (`eval`, `exec`, `source`, `.`, `command`,
    /// `builtin`, `trap`).
    #[error("`{0}` runs commands this check cannot see")]
    Evaluates(String),
    /// A redirection from or to bash's network paths (`/dev/tcp/HOST/PORT`,
    /// `/dev/udp/HOST/PORT`): a connection, not a file.
    #[error("connects to the network through `{0}`")]
    Network(String),
    /// A redirection from a path only known at run time (`< $F`): it may be a network path.
    #[error("reads a path only known at run time: `{0}`")]
    DynamicPath(String),
}

/// Whether a redirection's target is one of bash's network paths.
fn is_network_path(target: &Word) -> bool {
    target
        .value
        .as_deref()
        .is_some_and(|v| v.starts_with("/dev/tcp/") || v.starts_with("/dev/udp/"))
}

/// Builtins that run their arguments as commands: nothing can be said of what they run.
const EVALUATORS: &[&str] = &["eval", "exec", "source", ".", "command", "builtin", "trap"];

/// Whether `program` is one of [`EVALUATORS`].
pub(crate) fn is_evaluator(program: &str) -> bool {
    EVALUATORS.contains(&program)
}

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word after quote removal; `None` when part of it is only known at run time.
    pub(crate) value: Option<String>,
    /// The word as written, for messages.
    pub(crate) raw: String,
}

/// A redirection, by what it can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// Reads: `<`, `<&file`, a here-document or here-string.
    Input,
    /// Reads from a path only known at run time (`< $F`).
    DynamicInput(Word),
    /// Opens a network connection (`< /dev/tcp/host/port`, `> /dev/udp/host/port`).
    Network(Word),
    /// Copies or closes a descriptor: `2>&1`, `>&-`.
    Duplicate,
    /// Opens a file for writing.
    Output(Word),
}

/// One simple command: assignments, words, redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// Leading `NAME=value` words, as written.
    pub(crate) assignments: Vec<String>,
    /// The program and its arguments.
    pub(crate) words: Vec<Word>,
    pub(crate) redirects: Vec<Redirect>,
}

impl SimpleCommand {
    /// The first reason no rule may cover this command, if any.
    pub(crate) fn hazard(&self) -> Option<Hazard> {
        if let Some(assignment) = self.assignments.first() {
            return Some(Hazard::Assignment(assignment.clone()));
        }
        for redirect in &self.redirects {
            match redirect {
                Redirect::Network(target) => return Some(Hazard::Network(target.raw.clone())),
                Redirect::DynamicInput(target) => {
                    return Some(Hazard::DynamicPath(target.raw.clone()));
                }
                Redirect::Output(target) if target.value.as_deref() != Some("/dev/null") => {
                    return Some(Hazard::WritesFile(target.raw.clone()));
                }
                _ => {}
            }
        }
        let program = self.words.first()?;
        match &program.value {
            None => Some(Hazard::DynamicProgram(program.raw.clone())),
            Some(name) if is_evaluator(name) => Some(Hazard::Evaluates(name.clone())),
            Some(_) => None,
        }
    }

    /// The command as written, roughly (for messages).
    pub(crate) fn display(&self) -> String {
        let words = self.words.iter().map(|w| w.raw.as_str());
        self.assignments
            .iter()
            .map(String::as_str)
            .chain(words)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every simple command of a line, substitutions' included, in the order they were read.
pub(crate) fn parse(command: &str) -> Result<Vec<SimpleCommand>, ParseError> {
    let mut parser = Parser::new(command, 0);
    parser.list(End::Eof)?;
    Ok(parser.commands)
}

/// Reserved words that start constructs this recogniser refuses.
const RESERVED: &[&str] = &[
    "if", "then", "elif", "else", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "coproc", "[[", "]]",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The end of the input.
    Eof,
    /// An unmatched `)`: the end of `$(`, `(`, `<(` or `>(`.
    Paren,
}

/// A here-document whose body is still to be read at the next newline.
struct PendingHereDoc {
    delimiter: String,
    strip_tabs: bool,
    /// Unquoted delimiter: the body's substitutions run.
    expands: bool,
}

/// The simple command being read.
#[derive(Default)]
struct Builder {
    command: SimpleCommand,
    /// After `)` or `}`: only redirections and operators may follow.
    closed: bool,
}

impl Builder {
    fn at_command_position(&self) -> bool {
        !self.closed && self.command.words.is_empty() && self.command.assignments.is_empty()
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    commands: Vec<SimpleCommand>,
    heredocs: Vec<PendingHereDoc>,
}

impl Parser {
    fn new(text: &str, depth: usize) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
            depth,
            commands: Vec::new(),
            heredocs: Vec::new(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn deeper(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::Unsupported(format!(
                "nesting deeper than {MAX_DEPTH}"
            )));
        }
        Ok(())
    }

    /// Commands separated by operators and newlines, up to `end`.
    fn list(&mut self, end: End) -> Result<(), ParseError> {
        let mut current = Builder::default();
        let mut groups = 0usize;
        let heredocs_before = self.heredocs.len();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if end == End::Paren {
                    return Err(ParseError::Unterminated("`(`"));
                }
                self.finish(&mut current);
                if groups > 0 {
                    return Err(ParseError::Unterminated("`{`"));
                }
                if !self.heredocs.is_empty() {
                    return Err(ParseError::Unterminated("here-document"));
                }
                return Ok(());
            };
            let next = self.peek_at(1);
            match c {
                '\n' => {
                    self.pos += 1;
                    self.finish(&mut current);
                    self.read_heredocs()?;
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                ';' if next == Some(';') => return Err(ParseError::Unsupported(";;".into())),
                ';' => {
                    self.pos += 1;
                    self.finish(&mut current);
                }
                '&' if next == Some('>') => {
                    self.pos += 1;
                    self.redirect(&mut current, true)?;
                }
                '&' | '|' => {
                    self.pos += 1;
                    if matches!((c, next), ('&', Some('&')) | ('|', Some('|' | '&'))) {
                        self.pos += 1;
                    }
                    self.finish(&mut current);
                }
                ')' if end == End::Paren => {
                    self.pos += 1;
                    self.finish(&mut current);
                    if groups > 0 {
                        return Err(ParseError::Unterminated("`{`"));
                    }
                    // `$(cat <<E)` with the body on the lines after: bash versions disagree
                    // on where that body is, so this reader does not guess.
                    if self.heredocs.len() > heredocs_before {
                        return Err(ParseError::Unsupported(
                            "a here-document whose body is outside its `( … )`".into(),
                        ));
                    }
                    return Ok(());
                }
                ')' => return Err(ParseError::Syntax(")".into())),
                '(' if next == Some('(') => return Err(ParseError::Unsupported("((".into())),
                '(' if current.at_command_position() => {
                    self.pos += 1;
                    self.deeper()?;
                    self.list(End::Paren)?;
                    self.depth -= 1;
                    current.closed = true;
                }
                '(' => return Err(ParseError::Unsupported("(".into())),
                '<' | '>' if next != Some('(') => self.redirect(&mut current, false)?,
                _ if self.fd_redirect_ahead() => {
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    self.redirect(&mut current, false)?;
                }
                _ => {
                    let word = self.word()?;
                    self.place_word(&mut current, &mut groups, word)?;
                }
            }
        }
    }

    /// Puts a word where it belongs: a reserved word, an assignment, or the next word.
    fn place_word(
        &mut self,
        current: &mut Builder,
        groups: &mut usize,
        word: Word,
    ) -> Result<(), ParseError> {
        if current.closed {
            return Err(ParseError::Syntax(word.raw));
        }
        // Reserved words only count unquoted and in command position.
        let plain = word.value.as_deref() == Some(word.raw.as_str());
        if current.at_command_position() && plain {
            match word.raw.as_str() {
                "{" => {
                    *groups += 1;
                    return Ok(());
                }
                "}" if *groups > 0 => {
                    *groups -= 1;
                    current.closed = true;
                    return Ok(());
                }
                "}" => return Err(ParseError::Syntax("}".into())),
                // Negation and timing change nothing that runs.
                "!" | "time" => return Ok(()),
                w if RESERVED.contains(&w) => return Err(ParseError::Unsupported(word.raw)),
                _ => {}
            }
        }
        if current.command.words.is_empty() && is_assignment(&word.raw) {
            current.command.assignments.push(word.raw);
        } else {
            current.command.words.push(word);
        }
        Ok(())
    }

    fn finish(&mut self, current: &mut Builder) {
        let done = std::mem::take(current);
        let command = done.command;
        if !command.words.is_empty()
            || !command.assignments.is_empty()
            || !command.redirects.is_empty()
        {
            self.commands.push(command);
        }
    }

    /// Spaces, tabs and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(), self.peek_at(1)) {
                (Some(' ' | '\t'), _) => self.pos += 1,
                (Some('\\'), Some('\n')) => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Digits right before `<` or `>`: a redirection of that descriptor (`2>`).
    fn fd_redirect_ahead(&self) -> bool {
        let digits = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        digits > 0
            && matches!(self.peek_at(digits), Some('<' | '>'))
            && self.peek_at(digits + 1) != Some('(')
    }

    /// A redirection operator at `pos` (after `&` for `&>`), then its target.
    fn redirect(&mut self, current: &mut Builder, both: bool) -> Result<(), ParseError> {
        #[derive(PartialEq)]
        enum Op {
            In,
            Out,
            DupOut,
            DupIn,
            HereDoc { strip_tabs: bool },
            HereString,
        }
        let c = self.peek();
        let next = self.peek_at(1);
        let (op, len) = match (c, next, self.peek_at(2)) {
            (Some('>'), Some('>'), _) => (Op::Out, 2),
            (Some('>'), Some('|'), _) => (Op::Out, 2),
            (Some('>'), Some('&'), _) if !both => (Op::DupOut, 2),
            (Some('>'), _, _) => (Op::Out, 1),
            (Some('<'), Some('<'), Some('<')) => (Op::HereString, 3),
            (Some('<'), Some('<'), Some('-')) => (Op::HereDoc { strip_tabs: true }, 3),
            (Some('<'), Some('<'), _) => (Op::HereDoc { strip_tabs: false }, 2),
            (Some('<'), Some('&'), _) => (Op::DupIn, 2),
            (Some('<'), Some('>'), _) => (Op::Out, 2),
            (Some('<'), _, _) => (Op::In, 1),
            _ => return Err(ParseError::Syntax("&".into())),
        };
        self.pos += len;
        self.skip_blanks();
        let target = self.word()?;
        if target.raw.is_empty() {
            return Err(ParseError::Syntax("redirection without a target".into()));
        }
        let redirect = match op {
            // A file read from bash's network paths is a connection (data can leave in the
            // request, and DNS carries the host name out).
            Op::In | Op::Out | Op::DupIn | Op::DupOut if is_network_path(&target) => {
                Redirect::Network(target)
            }
            Op::In if target.value.is_none() => Redirect::DynamicInput(target),
            Op::In | Op::HereString => Redirect::Input,
            Op::Out => Redirect::Output(target),
            Op::DupOut | Op::DupIn => {
                let is_fd = target.value.as_deref().is_some_and(|v| {
                    let digits = v.trim_end_matches('-');
                    (v == "-" || !digits.is_empty()) && digits.chars().all(|c| c.is_ascii_digit())
                });
                match (is_fd, op == Op::DupOut) {
                    (true, _) => Redirect::Duplicate,
                    // `>&file` writes the file, like `&>file`.
                    (false, true) => Redirect::Output(target),
                    (false, false) if target.value.is_none() => Redirect::DynamicInput(target),
                    (false, false) => Redirect::Input,
                }
            }
            Op::HereDoc { strip_tabs } => {
                let Some(delimiter) = target.value else {
                    return Err(ParseError::Unsupported(format!(
                        "here-document delimiter {}",
                        target.raw
                    )));
                };
                let expands = !target.raw.contains(['\'', '"', '\\']);
                self.heredocs.push(PendingHereDoc {
                    delimiter,
                    strip_tabs,
                    expands,
                });
                Redirect::Input
            }
        };
        current.command.redirects.push(redirect);
        Ok(())
    }

    /// Reads the bodies of the here-documents started on the line just ended.
    fn read_heredocs(&mut self) -> Result<(), ParseError> {
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.pos >= self.chars.len() {
                    return Err(ParseError::Unterminated("here-document"));
                }
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let mut line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                if doc.strip_tabs {
                    line = line.trim_start_matches('\t').to_string();
                }
                if line == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if doc.expands {
                let mut inner = Parser::new(&body, self.depth);
                inner.expand_text()?;
                self.commands.append(&mut inner.commands);
            }
        }
        Ok(())
    }

    /// The text of an unquoted here-document: only `$` and backquotes mean anything.
    fn expand_text(&mut self) -> Result<(), ParseError> {
        let mut value = String::new();
        let mut opaque = false;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 2,
                '$' => self.dollar(&mut value, &mut opaque, true)?,
                '`' => self.backquote(false)?,
                _ => self.pos += 1,
            }
        }
        Ok(())
    }

    /// One word, up to the next blank or operator (empty when one is next).
    fn word(&mut self) -> Result<Word, ParseError> {
        let start = self.pos;
        let mut value = String::new();
        let mut opaque = false;
        let mut open_bracket = false;
        let mut open_brace = false;
        while let Some(c) = self.peek() {
            let next = self.peek_at(1);
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | ')' => break,
                '<' | '>' if next == Some('(') => {
                    self.pos += 2;
                    self.deeper()?;
                    self.list(End::Paren)?;
                    self.depth -= 1;
                    opaque = true;
                }
                '<' | '>' => break,
                '(' => return Err(ParseError::Unsupported("(".into())),
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        None => value.push('\\'),
                        Some('\n') => self.pos += 1,
                        Some(ch) => {
                            value.push(ch);
                            self.pos += 1;
                        }
                    }
                }
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(ParseError::Unterminated("`'`")),
                            Some('\'') => break,
                            Some(ch) => value.push(ch),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(&mut value, &mut opaque)?;
                }
                '$' => self.dollar(&mut value, &mut opaque, false)?,
                '`' => {
                    self.backquote(false)?;
                    opaque = true;
                }
                _ => {
                    match c {
                        '*' | '?' => opaque = true,
                        '[' => open_bracket = true,
                        ']' if open_bracket => opaque = true,
                        '{' => open_brace = true,
                        '}' if open_brace => opaque = true,
                        '~' if self.pos == start => opaque = true,
                        _ => {}
                    }
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(Word {
            value: (!opaque).then_some(value),
            raw: self.chars[start..self.pos].iter().collect(),
        })
    }

    /// The inside of `"…"`, after the opening quote, through the closing one.
    fn double_quoted(&mut self, value: &mut String, opaque: &mut bool) -> Result<(), ParseError> {
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError::Unterminated("`\"`"));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        None => return Err(ParseError::Unterminated("`\"`")),
                        Some('\n') => self.pos += 1,
                        Some(ch @ ('$' | '`' | '"' | '\\')) => {
                            value.push(ch);
                            self.pos += 1;
                        }
                        Some(ch) => {
                            value.push('\\');
                            value.push(ch);
                            self.pos += 1;
                        }
                    }
                }
                '$' => self.dollar(value, opaque, true)?,
                '`' => {
                    self.backquote(true)?;
                    *opaque = true;
                }
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A `$` expansion at `pos`; a `$` that starts none is a literal `$`.
    fn dollar(
        &mut self,
        value: &mut String,
        opaque: &mut bool,
        quoted: bool,
    ) -> Result<(), ParseError> {
        let next = self.peek_at(1);
        match next {
            Some('(') if self.peek_at(2) == Some('(') => Err(ParseError::Unsupported("$((".into())),
            Some('(') => {
                self.pos += 2;
                self.deeper()?;
                self.list(End::Paren)?;
                self.depth -= 1;
                *opaque = true;
                Ok(())
            }
            Some('{') => {
                let start = self.pos + 2;
                let Some(len) = self.chars[start..].iter().position(|&c| c == '}') else {
                    return Err(ParseError::Unterminated("`${`"));
                };
                let name: String = self.chars[start..start + len].iter().collect();
                if !is_parameter_name(&name) {
                    return Err(ParseError::Unsupported(format!("${{{name}}}")));
                }
                self.pos = start + len + 1;
                *opaque = true;
                Ok(())
            }
            Some('[') => Err(ParseError::Unsupported("$[".into())),
            Some('\'') if !quoted => Err(ParseError::Unsupported("$'…'".into())),
            Some('"') if !quoted => Err(ParseError::Unsupported("$\"…\"".into())),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                *opaque = true;
                Ok(())
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                *opaque = true;
                Ok(())
            }
            _ => {
                value.push('$');
                self.pos += 1;
                Ok(())
            }
        }
    }

    /// `` `…` `` at `pos`: its text, unescaped as bash does, is read as commands of its own.
    fn backquote(&mut self, in_double_quotes: bool) -> Result<(), ParseError> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err(ParseError::Unterminated("`` ` ``")),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        None => return Err(ParseError::Unterminated("`` ` ``")),
                        Some(c @ ('$' | '`' | '\\')) => inner.push(c),
                        Some('"') if in_double_quotes => inner.push('"'),
                        Some(c) => {
                            inner.push('\\');
                            inner.push(c);
                        }
                    }
                    self.pos += 1;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        let mut parser = Parser::new(&inner, self.depth);
        parser.deeper()?;
        parser.list(End::Eof)?;
        self.commands.append(&mut parser.commands);
        Ok(())
    }
}

/// `NAME=…` or `NAME+=…` with an unquoted name: bash's test for an assignment word.
fn is_assignment(raw: &str) -> bool {
    let Some(eq) = raw.find('=') else {
        return false;
    };
    let name = raw[..eq].strip_suffix('+').unwrap_or(&raw[..eq]);
    is_name(name)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What `${…}` may hold: a name, positional digits or one special parameter; no operators.
fn is_parameter_name(name: &str) -> bool {
    is_name(name)
        || (!name.is_empty() && name.chars().all(|c| c.is_ascii_digit()))
        || (name.len() == 1 && "@*#?$!-".contains(name))
}
