//! The reader of the request markers (`runtime/requests/kairos_requests.h`): finds the
//! ring a program keeps in its section `kairos_requests`, sets its `attached` word (from
//! then on every `kairos_request_begin`/`_end` writes a time-stamped record), and copies
//! the records out with process_vm_readv as they come, into `requests.markers` in the
//! result directory, so an interrupted collection keeps what was read. The program makes
//! no system call for it; a reader that falls behind loses the oldest records, counted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::elf_probes::MARKER_SECTION;

/// Set in a launched program's environment: it records from its start.
pub const ENV: (&str, &str) = ("KAIROS_REQUESTS", "attach");
/// The records file in the result directory: 32-byte records as the program wrote them.
pub const FILE: &str = "requests.markers";
const MAGIC: &[u8; 16] = b"kairos-requests\0";
const HEADER: usize = 64;
const RECORD: usize = 32;
const ATTACHED: u64 = 28;
const READ: u64 = 48;
/// Records read at a time.
const BATCH: u64 = 4096;

/// One marker record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub time_ns: u64,
    pub id: u64,
    pub tid: u32,
    pub begin: bool,
}

/// What the reader did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkerOutcome {
    /// The ring was found (and in which file).
    pub found_in: Option<String>,
    pub records: u64,
    /// Records overwritten before they were read.
    pub lost: u64,
    /// Why nothing could be read, when so.
    pub problem: Option<String>,
}

/// The running reader.
pub struct MarkerReader {
    stop: Arc<AtomicBool>,
    pid: Arc<AtomicI32>,
    /// The file to write to from now on, when the caller changes it (a flight recorder's
    /// next window).
    next: Arc<std::sync::Mutex<Option<PathBuf>>>,
    handle: std::thread::JoinHandle<MarkerOutcome>,
}

impl MarkerReader {
    /// Starts reading the process whose pid is set in `pid` (0 until known: a launched
    /// program's pid arrives with its start).
    pub fn start(pid: Arc<AtomicI32>, out: PathBuf) -> MarkerReader {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(std::sync::Mutex::new(None));
        let (s, p, n) = (Arc::clone(&stop), Arc::clone(&pid), Arc::clone(&next));
        let handle = std::thread::spawn(move || read_loop(&p, &s, &n, &out));
        MarkerReader {
            stop,
            pid,
            next,
            handle,
        }
    }

    /// Writes the records read from now on to `path` (the current file is closed).
    pub fn switch_to(&self, path: PathBuf) {
        if let Ok(mut n) = self.next.lock() {
            *n = Some(path);
        }
    }

    /// The pid slot, to fill in once the program has started.
    pub fn pid(&self) -> Arc<AtomicI32> {
        Arc::clone(&self.pid)
    }

    /// Reads what is left, detaches and says what was read.
    pub fn finish(self) -> MarkerOutcome {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap_or_else(|_| MarkerOutcome {
            problem: Some("the marker reader stopped unexpectedly".into()),
            ..MarkerOutcome::default()
        })
    }
}

/// Where the ring is in the process: the header's address, its capacity and records.
struct Ring {
    header: u64,
    records: u64,
    capacity: u64,
}

fn read_loop(
    pid: &AtomicI32,
    stop: &AtomicBool,
    next: &std::sync::Mutex<Option<PathBuf>>,
    out: &Path,
) -> MarkerOutcome {
    let mut outcome = MarkerOutcome::default();
    let file = std::fs::File::create(out);
    let mut file = match file {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            outcome.problem = Some(format!("{} cannot be written ({e})", out.display()));
            return outcome;
        }
    };
    let started = Instant::now();
    let mut ring: Option<Ring> = None;
    let mut tail = 0u64;
    let mut last_look = None::<Instant>;
    let mut refused = None;
    let mut without = std::collections::HashSet::new();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let p = pid.load(Ordering::SeqCst);
        if let Some(path) = next.lock().ok().and_then(|mut n| n.take()) {
            if let Some(r) = &ring {
                drain(p, r, &mut tail, &mut file, &mut outcome, false);
            }
            let _ = file.flush();
            match std::fs::File::create(&path) {
                Ok(f) => file = std::io::BufWriter::new(f),
                Err(e) => {
                    outcome.problem = Some(format!("{} cannot be written ({e})", path.display()))
                }
            }
        }
        if p > 0 && ring.is_none() {
            // Look often while the program starts, then now and then (a library that
            // holds the ring may be loaded later).
            let gap = if started.elapsed() < Duration::from_secs(1) {
                2
            } else {
                100
            };
            if last_look.is_none_or(|t| t.elapsed() >= Duration::from_millis(gap)) {
                last_look = Some(Instant::now());
                if let Some((r, path)) = locate(p, &mut refused, &mut without) {
                    // A program launched with KAIROS_REQUESTS=attach has recorded from its
                    // start: read from its first record. Otherwise from now on.
                    let from_start = read_u32(p, r.header + ATTACHED).is_some_and(|a| a != 0);
                    if write_u32(p, r.header + ATTACHED, 1) {
                        outcome.found_in = Some(path);
                        tail = if from_start {
                            0
                        } else {
                            read_u64(p, r.header + 32).unwrap_or(0)
                        };
                        ring = Some(r);
                    }
                }
            }
        }
        if let Some(r) = &ring {
            drain(p, r, &mut tail, &mut file, &mut outcome, stopping);
        }
        if stopping {
            if let Some(r) = &ring {
                write_u32(p, r.header + ATTACHED, 0);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Err(e) = file.flush() {
        outcome.problem = Some(format!("{} cannot be written ({e})", out.display()));
    }
    if outcome.found_in.is_none() && outcome.problem.is_none() {
        outcome.problem = refused;
    }
    if outcome.found_in.is_none() && outcome.problem.is_none() {
        outcome.problem = Some(format!("the program has no request markers (no section {MARKER_SECTION} in it or its libraries): include runtime/requests/kairos_requests.h, or give -k request=FUNCTION, usdt:PROVIDER:BEGIN,END or -k requests-from=FILE"));
    }
    outcome
}

/// Copies the records from `tail` to the ring's head into `file`. The writer zeroes a
/// slot's sequence number before it rewrites the slot and sets it last, so a record whose
/// number is not its slot's is being written (left for the next round, unless this is the
/// last one) or was overwritten (lost).
fn drain(
    pid: i32,
    r: &Ring,
    tail: &mut u64,
    file: &mut impl Write,
    outcome: &mut MarkerOutcome,
    last: bool,
) {
    let Some(head) = read_u64(pid, r.header + 32) else {
        return;
    };
    if head.saturating_sub(*tail) > r.capacity {
        outcome.lost += head - *tail - r.capacity;
        *tail = head - r.capacity;
    }
    let mut buf = vec![0u8; (BATCH as usize) * RECORD];
    while *tail < head {
        let n = (head - *tail).min(BATCH);
        let n = n.min(r.capacity - (*tail % r.capacity));
        let at = r.records + (*tail % r.capacity) * RECORD as u64;
        let bytes = &mut buf[..n as usize * RECORD];
        if !read(pid, at, bytes) {
            return;
        }
        // Slots the writer may have started to rewrite while they were copied: a record
        // older than the ring's last `capacity` is not trusted, whatever its number says.
        let overwritten_below =
            read_u64(pid, r.header + 32).map_or(0, |h| h.saturating_sub(r.capacity));
        for (i, rec) in bytes.chunks_exact(RECORD).enumerate() {
            let idx = *tail + i as u64;
            let seq = u64::from_le_bytes(rec[0..8].try_into().unwrap_or([0; 8]));
            if idx < overwritten_below {
                outcome.lost += 1;
            } else if seq == idx + 1 {
                let _ = file.write_all(rec);
                outcome.records += 1;
            } else if seq > idx + 1 {
                outcome.lost += 1;
            } else if !last {
                *tail = idx;
                return;
            } else {
                outcome.lost += 1;
            }
        }
        *tail += n;
    }
    // Tell the program how far the copy has come: at exit it waits for it.
    write_u64(pid, r.header + READ, *tail);
}

/// The ring of process `pid`: the first mapped file with the section, its header read
/// and checked.
/// `refused`: set when the kernel would not let kairos read the process's memory.
/// `without`: the files already known to have no ring (their ELF is not read again on
/// the next look).
fn locate(
    pid: i32,
    refused: &mut Option<String>,
    without: &mut std::collections::HashSet<String>,
) -> Option<(Ring, String)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let _perms = f.next();
        let offset = u64::from_str_radix(f.next().unwrap_or("0"), 16).ok()?;
        let path = f.nth(2).unwrap_or("");
        if !path.starts_with('/') || without.contains(path) {
            continue;
        }
        let Some((sec, sec_addr)) = crate::elf_probes::marker_section(Path::new(path)) else {
            without.insert(path.to_string());
            continue;
        };
        let (start, end) = range.split_once('-')?;
        let (start, end) = (
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        );
        if sec < offset || sec - offset >= end - start {
            continue;
        }
        let header = start + (sec - offset);
        let mut h = [0u8; HEADER];
        if !read(pid, header, &mut h) {
            let e = std::io::Error::last_os_error();
            if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
                *refused = Some(format!("the request markers of process {pid} cannot be read: the kernel refused to let kairos read its memory ({e}); run kairos as root, give it CAP_SYS_PTRACE, or set kernel.yama.ptrace_scope to 0"));
            }
            continue;
        }
        if &h[0..16] != MAGIC {
            continue;
        }
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap_or([0; 4]));
        let (version, capacity, size) = (u32_at(16), u32_at(20) as u64, u32_at(24) as usize);
        let mut records = u64::from_le_bytes(h[40..48].try_into().unwrap_or([0; 8]));
        // Read before the dynamic loader relocated it, the pointer is still the link-time
        // address: moved by the file's load bias.
        let bias = header.saturating_sub(sec_addr);
        if records < bias {
            records += bias;
        }
        if version != 1 || size != RECORD || !capacity.is_power_of_two() || records == 0 {
            continue;
        }
        return Some((
            Ring {
                header,
                records,
                capacity,
            },
            path.to_string(),
        ));
    }
    None
}

fn read(pid: i32, addr: u64, buf: &mut [u8]) -> bool {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` covers `buf`, which we own; the remote side is checked by the kernel.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    n == buf.len() as isize
}

fn read_u32(pid: i32, addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    read(pid, addr, &mut b).then(|| u32::from_le_bytes(b))
}

fn read_u64(pid: i32, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read(pid, addr, &mut b).then(|| u64::from_le_bytes(b))
}

fn write(pid: i32, addr: u64, b: &[u8]) -> bool {
    let local = libc::iovec {
        iov_base: b.as_ptr() as *mut libc::c_void,
        iov_len: b.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: b.len(),
    };
    // SAFETY: `local` covers `b`; the remote side is checked by the kernel.
    let n = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
    n == b.len() as isize
}

fn write_u32(pid: i32, addr: u64, v: u32) -> bool {
    write(pid, addr, &v.to_le_bytes())
}

fn write_u64(pid: i32, addr: u64, v: u64) -> bool {
    write(pid, addr, &v.to_le_bytes())
}

/// The records of a `requests.markers` file.
pub fn load(path: &Path) -> std::io::Result<Vec<Mark>> {
    let bytes = std::fs::read(path)?;
    Ok(bytes
        .chunks_exact(RECORD)
        .filter_map(|r| {
            let w = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap_or([0; 8]));
            let tid = u32::from_le_bytes(r[24..28].try_into().unwrap_or([0; 4]));
            let kind = u32::from_le_bytes(r[28..32].try_into().unwrap_or([0; 4]));
            (kind == 1 || kind == 2).then_some(Mark {
                time_ns: w(8),
                id: w(16),
                tid,
                begin: kind == 1,
            })
        })
        .collect())
}
