//! Finding sessions: all of a working directory's, the latest, or one by path or id prefix.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_core::AgentMessage;

use crate::Home;
use crate::entry::{Entry, EntryBody, SessionHeader, is_message_line};

/// One line of a `--resume` picker.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    /// RFC 3339 UTC.
    pub created: String,
    pub modified: SystemTime,
    /// The first user message, on one line (empty when there is none).
    pub first_prompt: String,
    pub message_count: usize,
    /// How many branches the file holds (rewinds and `/tree` jumps make more than one).
    pub branches: usize,
    pub size: u64,
}

/// The sessions of `cwd`, most recently written first. Unreadable files are left out.
pub fn list_sessions(home: &Home, cwd: &Path) -> Vec<SessionInfo> {
    let mut sessions: Vec<SessionInfo> = session_files(&home.sessions_dir_for(cwd))
        .iter()
        .filter_map(|path| describe(path).ok())
        .collect();
    sessions.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| b.path.cmp(&a.path))
    });
    sessions
}

/// The id of every session file in the home, of every directory (for pruning what belongs to
/// sessions that no longer exist).
pub fn all_session_ids(home: &Home) -> Vec<String> {
    read_dir_sorted(&home.sessions_dir())
        .iter()
        .flat_map(|dir| session_files(dir))
        .filter_map(|path| id_of(&path))
        .collect()
}

/// The most recently written session of `cwd` (`--continue`); `None` when it has none. Unlike
/// [`list_sessions`], a newest file (or a directory) that cannot be read is an error naming it
/// and why, not a reason to say there is no session.
pub fn latest_session(home: &Home, cwd: &Path) -> io::Result<Option<SessionInfo>> {
    match latest_session_path(home, cwd)? {
        Some(path) => describe(&path).map(Some).map_err(|e| named(&path, e)),
        None => Ok(None),
    }
}

/// The file of [`latest_session`], without reading it: `--continue` loads it anyway, and
/// describing a long session is a pass over all of it.
pub fn latest_session_path(home: &Home, cwd: &Path) -> io::Result<Option<PathBuf>> {
    let dir = home.sessions_dir_for(cwd);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(named(&dir, err)),
    };
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    for entry in entries {
        let path = entry.map_err(|e| named(&dir, e))?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let metadata = match std::fs::metadata(&path) {
            Ok(metadata) if metadata.is_file() => metadata,
            // Gone since the listing, or a dangling link: not a session.
            Ok(_) => continue,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(named(&path, err)),
        };
        let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if newest
            .as_ref()
            .is_none_or(|(time, best)| (modified, &path) > (*time, best))
        {
            newest = Some((modified, path));
        }
    }
    Ok(newest.map(|(_, path)| path))
}

/// `err` with the path it is about in front, keeping its kind.
fn named(path: &Path, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

/// A session named by a path to its file or by a prefix of its id (`--session`). Ids are
/// looked up in `cwd`'s sessions first, then in every directory's. A path must name an empty
/// file or one that starts with a session header: a mistyped path to some other file is an
/// error (`InvalidData`), so nothing is ever appended to it.
pub fn find_session(home: &Home, cwd: &Path, query: &str) -> io::Result<PathBuf> {
    let as_path = Path::new(query);
    if as_path.is_file() {
        check_header(as_path)?;
        return Ok(as_path.to_path_buf());
    }
    let query = query.trim();
    if query.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty session id",
        ));
    }
    let own = session_files(&home.sessions_dir_for(cwd));
    let mut matches = matching(&own, query);
    if matches.is_empty() {
        let all: Vec<PathBuf> = read_dir_sorted(&home.sessions_dir())
            .iter()
            .flat_map(|dir| session_files(dir))
            .collect();
        matches = matching(&all, query);
    }
    match matches.len() {
        0 => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no session file or session id starting with `{query}`"),
        )),
        1 => Ok(matches.remove(0)),
        n => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{n} sessions have ids starting with `{query}`; give more of the id"),
        )),
    }
}

fn check_header(path: &Path) -> io::Result<()> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut first = Vec::new();
    reader.read_until(b'\n', &mut first)?;
    if first.is_empty() || serde_json::from_slice::<SessionHeader>(&first).is_ok() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{} is not a session file (its first line is not a session header)",
            path.display()
        ),
    ))
}

fn matching(files: &[PathBuf], prefix: &str) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|path| id_of(path).is_some_and(|id| id.starts_with(prefix)))
        .cloned()
        .collect()
}

/// The id part of `<timestamp>_<id>.jsonl`.
fn id_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy();
    Some(stem.rsplit_once('_')?.1.to_string())
}

fn read_dir_sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    read_dir_sorted(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect()
}

/// Reads what a picker shows, parsing only the header and the first user message: counting
/// the rest of the lines the writer wrote needs no JSON parsing, so even a huge session lists
/// quickly (a line formatted otherwise is parsed whole).
fn describe(path: &Path) -> io::Result<SessionInfo> {
    let metadata = std::fs::metadata(path)?;
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    let header: Option<SessionHeader> = serde_json::from_slice(&line).ok();
    let mut first_prompt = None;
    let mut message_count = 0;
    // Entries and the ones something continues: the rest are branch tips.
    let mut entries = HashSet::new();
    let mut continued = HashSet::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let (ids, message) = match entry_ids(&line) {
            Some(ids) => (Some(ids), is_message_line(&line)),
            None => match reformatted(&line) {
                Some((ids, message)) => (Some(ids), message),
                None => (None, is_message_line(&line)),
            },
        };
        if let Some((id, parent)) = ids {
            entries.insert(id);
            if let Some(parent) = parent {
                continued.insert(parent);
            }
        }
        if !message {
            continue;
        }
        message_count += 1;
        if first_prompt.is_none() {
            let Ok(text) = std::str::from_utf8(&line) else {
                continue;
            };
            if let Ok(Entry {
                body: EntryBody::Message(AgentMessage::User(user)),
                ..
            }) = Entry::from_json(text.trim_end())
            {
                first_prompt = Some(one_line(&user.plain_text()));
            }
        }
    }
    Ok(SessionInfo {
        id: header
            .as_ref()
            .map(|h| h.id.clone())
            .or_else(|| id_of(path))
            .unwrap_or_default(),
        cwd: header.as_ref().map(|h| h.cwd.clone()).unwrap_or_default(),
        created: header.map(|h| h.created).unwrap_or_default(),
        path: path.to_path_buf(),
        modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        first_prompt: first_prompt.unwrap_or_default(),
        message_count,
        branches: entries.difference(&continued).count().max(1),
        size: metadata.len(),
    })
}

/// An entry's id and its parent's.
type EntryIds = (Vec<u8>, Option<Vec<u8>>);

/// An entry's id and parent id, read from the start of its line: the writer puts them first
/// (`{"type":"…","id":"…","parent_id":…`), so no JSON parsing is needed. `None` for a line of
/// another shape (the header, a damaged line).
fn entry_ids(line: &[u8]) -> Option<EntryIds> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let rest = &rest[rest.iter().position(|&b| b == b'"')? + 1..];
    let rest = rest.strip_prefix(br#","id":""#)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let id = rest[..end].to_vec();
    let rest = rest[end + 1..].strip_prefix(br#","parent_id":"#)?;
    if rest.starts_with(b"null") {
        return Some((id, None));
    }
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    Some((id, Some(rest[..end].to_vec())))
}

/// What [`entry_ids`] and [`is_message_line`] read from a line's start (the ids, and whether
/// it is a message), parsed in full from an entry line the writer did not format (spaces after
/// the colons, keys in another order: edited by hand or rewritten by a tool), which loads all
/// the same. `None` when it is no entry.
fn reformatted(line: &[u8]) -> Option<(EntryIds, bool)> {
    #[derive(serde::Deserialize)]
    struct Skeleton {
        #[serde(rename = "type")]
        kind: String,
        id: String,
        parent_id: Option<String>,
    }
    let entry: Skeleton = serde_json::from_slice(line).ok()?;
    let ids = (
        entry.id.into_bytes(),
        entry.parent_id.map(String::into_bytes),
    );
    Some((ids, entry.kind == "message"))
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}
