//! Files written by the C runtime `runtime/trace/kairos_trace.c` (format described at the
//! top of that file): `PID-TID.ktr` per thread, `PID.maps` per process.

use std::collections::BTreeMap;
use std::path::Path;

use crate::maps::{self, Mapping};
use crate::TraceError;

const MAGIC: &[u8; 8] = b"KAIROSTR";
const HEADER: usize = 48;
const RECORD: usize = 24;
const EXIT_BIT: u64 = 1 << 63;

/// One entry or exit as the runtime recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeEvent {
    pub time_ns: u64,
    pub exit: bool,
    /// Run-time address of the function.
    pub function: u64,
    /// Run-time address of the call site.
    pub call_site: u64,
}

/// One thread's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadFile {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub events: Vec<RuntimeEvent>,
    /// Bytes at the end that do not form a whole record (a write cut short).
    pub trailing_bytes: usize,
}

/// Everything in a trace directory.
#[derive(Debug, Clone, Default)]
pub struct RuntimeTrace {
    pub threads: Vec<ThreadFile>,
    /// Maps copy of each process, by pid.
    pub maps: BTreeMap<i32, Vec<Mapping>>,
    /// Files that could not be used, with why.
    pub notes: Vec<String>,
}

/// Decodes one `.ktr` file's bytes; `path` only names it in errors.
pub fn parse_thread_file(path: &str, b: &[u8]) -> Result<ThreadFile, TraceError> {
    let bad = |reason: String| TraceError::BadFile {
        path: path.to_string(),
        reason,
    };
    if b.len() < HEADER || &b[..8] != MAGIC {
        return Err(bad("no KAIROSTR header".into()));
    }
    let u32_at = |o: usize| u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let (version, rsize) = (u32_at(8), u32_at(12));
    if version != 1 || rsize as usize != RECORD {
        return Err(bad(format!(
            "format version {version}, record size {rsize}; this Kairos reads version 1, 24"
        )));
    }
    let comm_raw = &b[24..40];
    let comm_len = comm_raw.iter().position(|&c| c == 0).unwrap_or(16);
    let body = &b[HEADER..];
    let u64_at = |r: &[u8], o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&r[o..o + 8]);
        u64::from_ne_bytes(a)
    };
    let events = body
        .chunks_exact(RECORD)
        .map(|r| {
            let t = u64_at(r, 0);
            RuntimeEvent {
                time_ns: t & !EXIT_BIT,
                exit: t & EXIT_BIT != 0,
                function: u64_at(r, 8),
                call_site: u64_at(r, 16),
            }
        })
        .collect();
    Ok(ThreadFile {
        pid: u32_at(16) as i32,
        tid: u32_at(20) as i32,
        comm: String::from_utf8_lossy(&comm_raw[..comm_len]).into_owned(),
        events,
        trailing_bytes: body.len() % RECORD,
    })
}

/// Reads every `.ktr` and `.maps` file of `dir`. Unreadable or foreign files become notes;
/// only an unreadable directory is an error.
pub fn read_dir(dir: &Path) -> Result<RuntimeTrace, TraceError> {
    let io = |source| TraceError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut out = RuntimeTrace::default();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    names.sort();
    for p in names {
        let name = p.display().to_string();
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "ktr" && ext != "maps" {
            continue;
        }
        let bytes = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) => {
                out.notes
                    .push(format!("{name}: unreadable ({e}); its events are missing"));
                continue;
            }
        };
        if ext == "maps" {
            let pid = p
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<i32>().ok());
            match pid {
                Some(pid) => {
                    out.maps
                        .insert(pid, maps::parse(&String::from_utf8_lossy(&bytes)));
                }
                None => out
                    .notes
                    .push(format!("{name}: not named PID.maps; ignored")),
            }
            continue;
        }
        match parse_thread_file(&name, &bytes) {
            Ok(t) => {
                if t.trailing_bytes > 0 {
                    out.notes.push(format!(
                        "{name}: {} bytes at the end are not a whole record (cut short); ignored",
                        t.trailing_bytes
                    ));
                }
                out.threads.push(t);
            }
            Err(e) => out.notes.push(format!("{e}; ignored")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(events: &[(u64, bool, u64)], extra: usize) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        for v in [1u32, 24, 7, 8] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"main");
        b.extend_from_slice(&comm);
        b.extend_from_slice(&[0; 8]);
        for &(t, exit, f) in events {
            b.extend_from_slice(&(t | if exit { EXIT_BIT } else { 0 }).to_ne_bytes());
            b.extend_from_slice(&f.to_ne_bytes());
            b.extend_from_slice(&0u64.to_ne_bytes());
        }
        b.extend(std::iter::repeat_n(0u8, extra));
        b
    }

    #[test]
    fn decodes_records_and_cut_short_tails() {
        let t = parse_thread_file("x", &file(&[(10, false, 0x100), (20, true, 0x100)], 5))
            .expect("valid");
        assert_eq!(
            (t.pid, t.tid, t.comm.as_str(), t.trailing_bytes),
            (7, 8, "main", 5)
        );
        assert_eq!(
            t.events[1],
            RuntimeEvent {
                time_ns: 20,
                exit: true,
                function: 0x100,
                call_site: 0
            }
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_thread_file("x", b"").is_err());
        assert!(parse_thread_file("x", &[0u8; 100]).is_err());
        let mut f = file(&[], 0);
        f[8] = 9;
        assert!(parse_thread_file("x", &f).is_err());
    }
}
