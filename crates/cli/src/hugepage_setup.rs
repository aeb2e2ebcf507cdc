//! Running a target with malloc's huge pages switched on, for `kairos run --hugepages` and
//! `kairos collect ANALYSIS --hugepages`: the mode and pool size given on the command line,
//! glibc's tunable set in the target's environment only, the 2 MiB pool raised for it and
//! restored after, and a watch of /proc that says whether the target really got huge
//! pages (glibc falls back to 4 KiB pages silently).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kairos_analysis_hugepages::pool::{self, PoolCounts, PoolReading};
use kairos_analysis_hugepages::{parse_glibc, pool_file, MIB2};
use kairos_platform::Prober;

use crate::error::{CliResult, UserError};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    None,
    Hugetlb,
    Thp,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, UserError> {
        match s {
            "hugetlb" => Ok(Mode::Hugetlb),
            "thp" => Ok(Mode::Thp),
            "none" => Ok(Mode::None),
            other => Err(UserError::usage(format!("--hugepages '{other}' is not a mode; give hugetlb (the 2 MiB pool), thp (transparent huge pages) or none"))),
        }
    }

    /// glibc's tunable for the mode (None: leave malloc as it is).
    pub fn tunable(self) -> Option<&'static str> {
        match self {
            Mode::Hugetlb => Some("glibc.malloc.hugetlb=2"),
            Mode::Thp => Some("glibc.malloc.hugetlb=1"),
            Mode::None => None,
        }
    }
}

/// `--reserve N`: a number of 2 MiB pages, for hugetlb only.
pub fn parse_reserve(reserve: Option<&str>, mode: Mode) -> Result<Option<u64>, UserError> {
    let n = match reserve {
        None => return Ok(None),
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 && n <= 1 << 24 => n,
            _ => return Err(UserError::usage(format!("--reserve '{s}' must be a number of 2 MiB pages from 1 to 16777216, e.g. --reserve 52 (see `kairos report hugepages`)"))),
        },
    };
    if mode != Mode::Hugetlb {
        return Err(UserError::usage(
            "--reserve applies to --hugepages=hugetlb only: transparent huge pages need no pool",
        ));
    }
    Ok(Some(n))
}

/// Refuses a mode this glibc cannot apply (the tunable came with 2.35).
pub fn require_glibc(mode: Mode) -> CliResult {
    if mode == Mode::None {
        return Ok(());
    }
    let glibc_text = kairos_platform::LiveProber.glibc_version();
    if matches!(glibc_text.as_deref().and_then(parse_glibc), Some((2, m)) if m >= 35) {
        return Ok(());
    }
    Err(UserError::failed(format!(
        "glibc {} has no glibc.malloc.hugetlb tunable (it needs 2.35 or newer; libhugetlbfs's HUGETLB_MORECORE does nothing \
         since 2.34), so Kairos cannot switch malloc to huge pages here; see `kairos report hugepages` for what works",
        glibc_text.as_deref().unwrap_or("(not found)")
    )))
}

/// GLIBC_TUNABLES for the target: the user's own (as Kairos was started with them, see
/// [`crate::own_env`]) with the mode's tunable last, so that it wins.
pub fn tunables_for_target(mode: Mode) -> Option<String> {
    let t = mode.tunable()?;
    Some(match std::env::var("GLIBC_TUNABLES") {
        Ok(old) if !old.is_empty() => format!("{old}:{t}"),
        _ => t.to_string(),
    })
}

/// The pool size Kairos changed, restored when dropped: on success, on error returns,
/// and when the target could not start.
pub struct PoolGuard {
    file: String,
    old: u64,
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        match std::fs::write(&self.file, format!("{}\n", self.old)) {
            Ok(()) => eprintln!(
                "kairos: huge-page pool restored to {} pages ({})",
                self.old, self.file
            ),
            Err(e) => eprintln!(
                "kairos: could not restore {} to {} ({e}); do it by hand: echo {} > {}",
                self.file, self.old, self.old, self.file
            ),
        }
    }
}

pub fn meminfo(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    kairos_platform::parse::meminfo_field(&s, key)
}

pub fn pool_now() -> Option<PoolCounts> {
    PoolCounts::from_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A number from a `Key:   1234 kB` line of a /proc file.
pub fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    kairos_platform::parse::meminfo_field(&s, key)
}

/// Reserves so that `n` 2 MiB pages are free; changes nothing when it cannot.
pub fn reserve(n: u64) -> CliResult<Option<PoolGuard>> {
    let file = pool_file(MIB2);
    let old = read_u64(&file).ok_or_else(|| {
        UserError::failed(format!(
            "cannot read {file}: this kernel has no hugetlbfs pool; nothing was changed"
        ))
    })?;
    // Free pages already promised to another process's mappings (HugePages_Rsvd) are not
    // free for this program.
    let free = pool_now().map_or(0, |p| p.free.saturating_sub(p.rsvd));
    if free >= n {
        println!(
            "Huge-page pool: {free} pages free already (nr_hugepages {old}), nothing to reserve"
        );
        return Ok(None);
    }
    let want = old + (n - free);
    if let Err(e) = std::fs::write(&file, format!("{want}\n")) {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
            "reserving huge pages needs root (or write access to that file)".to_string()
        } else {
            e.to_string()
        };
        return Err(UserError::failed(format!("cannot reserve {n} huge pages: writing {want} to {file} failed ({why}); nothing was changed")));
    }
    let guard = PoolGuard {
        file: file.clone(),
        old,
    };
    let got = read_u64(&file).unwrap_or(old);
    if got < want {
        let mem = meminfo("MemFree")
            .map(|k| format!("{} MiB", k / 1024))
            .unwrap_or_else(|| "unknown".into());
        drop(guard);
        return Err(UserError::failed(format!(
            "cannot reserve {n} huge pages: the kernel gave {} of the {} pages asked for (free memory {mem}, too little \
             or too fragmented for 2 MiB pages; try `echo 3 > /proc/sys/vm/drop_caches` or a smaller N); the pool was put back to {old}",
            got.saturating_sub(old),
            want - old
        )));
    }
    println!("Huge-page pool: nr_hugepages {old} -> {got} ({n} pages free for the program)");
    Ok(Some(guard))
}

/// What the watch of a target's /proc saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Readings taken (every 50 ms while the target lived).
    pub samples: u64,
    pub hugetlb_peak_kb: u64,
    pub thp_peak_kb: u64,
    pub readings: Vec<PoolReading>,
}

/// One reading of `pid`'s huge pages (and the pool's, for [`pool::lost_to_others`]); false
/// once the process is gone.
pub fn read_once(pid: i32, seen: &mut Seen) -> bool {
    let page_kb = meminfo("Hugepagesize").unwrap_or(2048);
    // The pool first, the program second (see pool::lost_to_others).
    let pool_then = pool_now();
    let mapped = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .ok()
        .and_then(|t| pool::smaps_huge(&t, page_kb));
    let (Some(h), t) = (
        proc_kb(&format!("/proc/{pid}/status"), "HugetlbPages"),
        proc_kb(&format!("/proc/{pid}/smaps_rollup"), "AnonHugePages"),
    ) else {
        return false;
    };
    seen.samples += 1;
    seen.hugetlb_peak_kb = seen.hugetlb_peak_kb.max(h);
    seen.thp_peak_kb = seen.thp_peak_kb.max(t.unwrap_or(0));
    // No mapping listed: the program is exiting; its pages are on their way back.
    if let (Some(pool), Some((mapped_kb, held_kb))) = (pool_then, mapped) {
        seen.readings.push(PoolReading {
            pool,
            mapped_kb,
            held_kb,
        });
    }
    true
}

/// A thread reading a launched target's huge pages every 50 ms until it ends.
pub struct Watch {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Watch {
    pub fn new() -> Watch {
        Watch {
            seen: Arc::default(),
            stop: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    /// Starts watching `pid` (the first call only).
    pub fn start(&self, pid: i32) {
        let Ok(mut slot) = self.thread.lock() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let (seen, stop) = (self.seen.clone(), self.stop.clone());
        *slot = std::thread::Builder::new()
            .name("kairos-hugepages".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut s) = seen.lock() else { break };
                    if !read_once(pid, &mut s) && s.samples > 0 {
                        break;
                    }
                    drop(s);
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
            .ok();
    }

    /// Stops the thread and returns what it saw.
    pub fn finish(&self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = h.join();
        }
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// What went wrong with the huge pages, one sentence each (none: they were used as asked).
pub fn warnings(
    mode: Mode,
    pid: Option<i32>,
    seen: &Seen,
    pool_free_before: u64,
    pool_before: PoolCounts,
    elapsed_s: f64,
) -> Vec<String> {
    let pid = pid.map_or_else(|| "PID".to_string(), |p| p.to_string());
    let mut w = Vec::new();
    if mode == Mode::None {
        return w;
    }
    if seen.samples == 0 {
        w.push(format!(
            "the target exited after {:.0} ms, before Kairos could read /proc/{pid} once: whether it used huge pages is not verified",
            elapsed_s * 1e3
        ));
    } else if mode == Mode::Hugetlb && seen.hugetlb_peak_kb == 0 {
        w.push(format!(
            "huge pages were NOT used: /proc/{pid}/status never showed HugetlbPages (pool had {pool_free_before} free pages; \
             malloc uses them only for blocks of 2 MiB or more, and falls back to 4 KiB pages when the pool is short)"
        ));
    } else if mode == Mode::Thp && seen.thp_peak_kb == 0 {
        w.push(
            "transparent huge pages were NOT used: AnonHugePages stayed 0 (check /sys/kernel/mm/transparent_hugepage/enabled is not \
             'never'; malloc advises only blocks of 2 MiB or more)"
                .to_string(),
        );
    } else if mode == Mode::Hugetlb {
        let page_kb = meminfo("Hugepagesize").unwrap_or(2048);
        let lost = pool::lost_to_others(pool_before, &seen.readings, page_kb);
        if lost > 0 {
            w.push(format!(
                "the pool lost {lost} pages while the program ran that the program neither held nor had reserved; another process used the pool"
            ));
        }
    }
    w
}
