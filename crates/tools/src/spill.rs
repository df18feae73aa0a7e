//! Where `bash` saves output too long to show: a private directory, a file no one else can
//! plant or read, and a size cap that keeps the end of the output.
//!
//! The directory is the host's (the session's, say: [`SpillDir`] can be repointed when the
//! session changes) or, by default, a private temporary directory removed when the process
//! ends. Files are created new (`O_CREAT|O_EXCL|O_NOFOLLOW` on Unix), private, under a random
//! name, so a symlink planted at any name is never followed.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Default size cap of one saved output.
pub const DEFAULT_SPILL_CAP: u64 = 32 * 1024 * 1024;

/// Where `bash` saves long outputs; a cloneable handle the host can repoint (each clone sees
/// the change). [`SpillDir::default`] is a private temporary directory, made on first use and
/// removed when the process ends.
#[derive(Clone, Default, Debug)]
pub struct SpillDir(Arc<Mutex<Option<PathBuf>>>);

impl SpillDir {
    /// Saves into `dir`, created (mode 0700) when first needed.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self(Arc::new(Mutex::new(Some(dir.into()))))
    }

    /// Saves into `dir` from now on, for every clone of this handle.
    pub fn set(&self, dir: impl Into<PathBuf>) {
        *self.lock() = Some(dir.into());
    }

    /// The host's directory; `None` while the private temporary one is used.
    pub fn get(&self) -> Option<PathBuf> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The directory to save into, made if missing.
    pub(crate) fn ensure(&self) -> Result<PathBuf, String> {
        match self.get() {
            Some(dir) => {
                make_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                Ok(dir)
            }
            None => private_temp_dir(),
        }
    }
}

/// Creates `dir` (and its parents) as a private directory; an existing directory is left
/// as it is.
fn make_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match platform::fs::create_private_dirs(dir, dir) {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// The process's private temporary directory, made once (a random name) and removed when
/// the process ends, however it ends where the system allows (`platform::process`).
fn private_temp_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("coding-agent-bash-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?
            .keep();
        platform::fs::restrict_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        platform::process::remove_at_exit(&dir);
        Ok(dir)
    })
    .clone()
}

/// Random file names: `bash-<16 hex digits>.log`.
fn random_names() -> impl Iterator<Item = String> {
    std::iter::repeat_with(|| format!("bash-{}.log", platform::ids::random_hex(16)))
}

/// Creates a new file in `dir` under the first free name of `names`: never following or
/// reusing what is there, private whatever the umask.
fn create_new_file(dir: &Path, names: impl Iterator<Item = String>) -> io::Result<(PathBuf, File)> {
    for name in names.take(32) {
        let path = dir.join(name);
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        let opened = platform::fs::no_follow(platform::fs::private(&mut options)).open(&path);
        match opened {
            Ok(file) => {
                platform::fs::make_private(&file)?;
                return Ok((path, file));
            }
            // Taken, by a file or a planted link: another name.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free file name",
    ))
}

/// One command's saved output, at most `cap` bytes: when it would grow past the cap, its
/// first half is dropped (the end of an output is what matters), cut at a line start.
pub(crate) struct SpillFile {
    pub path: PathBuf,
    file: File,
    len: u64,
    cap: u64,
    /// Bytes of output dropped from the start.
    pub dropped: u64,
}

impl SpillFile {
    /// A new file in `dir` holding `so_far`.
    pub(crate) fn create(dir: &SpillDir, cap: u64, so_far: &[u8]) -> Result<Self, String> {
        let dir = dir.ensure()?;
        let (path, file) =
            create_new_file(&dir, random_names()).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut spill = Self {
            path,
            file,
            len: 0,
            cap: cap.max(2),
            dropped: 0,
        };
        spill.write(so_far).map_err(|e| e.to_string())?;
        Ok(spill)
    }

    pub(crate) fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let half = self.cap / 2;
        if bytes.len() as u64 > half {
            // The chunk alone fills a half: everything before it goes.
            let skip = bytes.len() - half as usize;
            self.dropped += self.len + skip as u64;
            self.file.set_len(0)?;
            self.len = 0;
            bytes = &bytes[skip..];
        } else if self.len + bytes.len() as u64 > self.cap {
            self.keep_last(half)?;
        }
        platform::fs::write_all_at(&self.file, bytes, self.len)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Moves the last `keep` bytes (from the first line start among them, when there is one
    /// near their start) to the front of the file and cuts it there.
    fn keep_last(&mut self, keep: u64) -> io::Result<()> {
        let mut from = self.len.saturating_sub(keep);
        let mut probe = vec![0u8; 64 * 1024];
        let n = platform::fs::read_at(&self.file, &mut probe, from)?;
        if let Some(newline) = probe[..n].iter().position(|&b| b == b'\n') {
            from += newline as u64 + 1;
        }
        let mut buf = vec![0u8; 256 * 1024];
        let (mut read, mut written) = (from, 0u64);
        while read < self.len {
            let want = buf.len().min((self.len - read) as usize);
            let n = platform::fs::read_at(&self.file, &mut buf[..want], read)?;
            if n == 0 {
                break;
            }
            platform::fs::write_all_at(&self.file, &buf[..n], written)?;
            read += n as u64;
            written += n as u64;
        }
        self.file.set_len(written)?;
        self.dropped += from;
        self.len = written;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_followed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "precious").unwrap();
        for name in ["a.log", "b.log"] {
            std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
        }
        // Every name the tool would try first is a planted link.
        let names = ["a.log", "b.log", "c.log"].map(String::from).into_iter();
        let (path, file) = create_new_file(dir.path(), names).unwrap();
        assert_eq!(path, dir.path().join("c.log"));
        platform::fs::write_all_at(&file, b"output", 0).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.mode() & 0o777, 0o600);
        // Only links left: an error, and still nothing written through them.
        let names = ["a.log", "b.log"].map(String::from).into_iter();
        assert!(create_new_file(dir.path(), names).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }

    #[test]
    fn names_are_random() {
        let names: std::collections::HashSet<String> = random_names().take(100).collect();
        assert_eq!(names.len(), 100);
    }

    #[test]
    fn the_cap_keeps_the_tail_from_a_line_start() {
        let dir = tempfile::tempdir().unwrap();
        let spill_dir = SpillDir::new(dir.path().join("spill"));
        let mut spill = SpillFile::create(&spill_dir, 1000, b"").unwrap();
        let mut all = String::new();
        for i in 0..500 {
            let line = format!("line {i}\n");
            all.push_str(&line);
            spill.write(line.as_bytes()).unwrap();
        }
        let saved = std::fs::read_to_string(&spill.path).unwrap();
        assert!(saved.len() <= 1000, "{}", saved.len());
        assert!(saved.ends_with("line 499\n"));
        assert!(saved.starts_with("line "), "starts at a line: {saved:.20}");
        assert!(all.ends_with(&saved));
        assert_eq!(spill.dropped as usize, all.len() - saved.len());
        // A chunk bigger than half the cap keeps its own end.
        spill.write(&[b'z'; 700]).unwrap();
        assert_eq!(std::fs::read(&spill.path).unwrap(), vec![b'z'; 500]);
    }
}
