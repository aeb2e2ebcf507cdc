//! The bounded spool on disk: each window's payload for one destination is a file here
//! until the backend has it, so a backend that is down loses nothing within the bound, and
//! windows are sent later in the order they were recorded (file names are sequence
//! numbers). Past the bound the oldest windows are dropped and counted; the count is kept
//! in a file, so it survives a restart, until a request that carries it is accepted.
//! A window is written next to its name and renamed, so a crash leaves no half window.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The file that counts the windows dropped and not yet reported.
const DROPPED_FILE: &str = "dropped";
const ENTRY_EXT: &str = "win";

/// One spooled window: its sequence number and the Unix times it covers (seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub from_s: u64,
    pub until_s: u64,
    pub path: PathBuf,
    pub bytes: u64,
}

/// What happened when a window was added.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pushed {
    pub seq: u64,
    /// Older windows dropped to stay within the bound.
    pub dropped: u64,
    /// Windows waiting now, this one included.
    pub waiting: usize,
}

pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    next: u64,
    /// The window being sent, which the bound must not remove under the sender.
    in_flight: Option<u64>,
}

impl Spool {
    /// Opens (creating) the spool in `dir`; windows already there are kept and sent first.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            next: 0,
            in_flight: None,
        };
        for e in fs::read_dir(dir)?.flatten() {
            // A window whose writing was cut short is not a window.
            if e.file_name().to_string_lossy().ends_with(".part") {
                let _ = fs::remove_file(e.path());
            }
        }
        spool.next = spool.entries()?.last().map_or(0, |e| e.seq + 1);
        Ok(spool)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Windows waiting, oldest first.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for e in fs::read_dir(&self.dir)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(&format!(".{ENTRY_EXT}")) else {
                continue;
            };
            let parts: Vec<u64> = stem.split('-').filter_map(|p| p.parse().ok()).collect();
            if let [seq, from_s, until_s] = parts[..] {
                out.push(Entry {
                    seq,
                    from_s,
                    until_s,
                    path: e.path(),
                    bytes: e.metadata().map_or(0, |m| m.len()),
                });
            }
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    /// Adds a window; then drops the oldest others while the spool is over its bound. A
    /// window alone larger than the bound is still kept (the newest is never dropped).
    pub fn push(&mut self, from_s: u64, until_s: u64, payload: &[u8]) -> io::Result<Pushed> {
        let seq = self.next;
        let name = format!("{seq:012}-{from_s}-{until_s}.{ENTRY_EXT}");
        let part = self.dir.join(format!("{name}.part"));
        if let Err(e) = fs::write(&part, payload) {
            let _ = fs::remove_file(&part);
            return Err(e);
        }
        fs::rename(&part, self.dir.join(&name))?;
        self.next += 1;
        let mut entries = self.entries()?;
        let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
        let mut dropped = 0;
        let listed = entries.len();
        entries.retain(|e| e.seq != seq && Some(e.seq) != self.in_flight);
        for e in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&e.path).is_ok() {
                total = total.saturating_sub(e.bytes);
                dropped += 1;
            }
        }
        if dropped > 0 {
            self.add_dropped(dropped)?;
        }
        Ok(Pushed {
            seq,
            dropped,
            waiting: listed - dropped as usize,
        })
    }

    /// The oldest window, marked as being sent.
    pub fn take_oldest(&mut self) -> io::Result<Option<Entry>> {
        let e = self.entries()?.into_iter().next();
        self.in_flight = e.as_ref().map(|e| e.seq);
        Ok(e)
    }

    /// The window is with the backend (or refused for good): it leaves the spool.
    pub fn done(&mut self, e: &Entry) {
        let _ = fs::remove_file(&e.path);
        self.in_flight = None;
    }

    /// The window stays for a later attempt.
    pub fn keep(&mut self) {
        self.in_flight = None;
    }

    /// Windows dropped and not yet reported to the backend.
    pub fn dropped(&self) -> u64 {
        fs::read_to_string(self.dir.join(DROPPED_FILE))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn add_dropped(&mut self, n: u64) -> io::Result<()> {
        let total = self.dropped().saturating_add(n);
        fs::write(self.dir.join(DROPPED_FILE), format!("{total}\n"))
    }

    /// `reported` of the dropped windows reached the backend (more may have been dropped
    /// meanwhile).
    pub fn reported(&mut self, reported: u64) -> io::Result<()> {
        let left = self.dropped().saturating_sub(reported);
        if left == 0 {
            match fs::remove_file(self.dir.join(DROPPED_FILE)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            fs::write(self.dir.join(DROPPED_FILE), format!("{left}\n"))
        }
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;
