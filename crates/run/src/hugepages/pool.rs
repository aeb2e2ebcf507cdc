//! The 2 MiB pool: raised so that the program finds N pages free, and put back to its old
//! size by a guard, whatever path the run takes after that (success, error, a program that
//! cannot start).

use kairos_analysis_hugepages::pool::PoolCounts;
use kairos_analysis_hugepages::{pool_file, MIB2};

use crate::{Error, Notice, Sink};

/// The pool size Kairos changed, restored (and the restoration told) when dropped.
pub(crate) struct PoolGuard {
    file: String,
    old: u64,
    sink: Sink,
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        let notice = match std::fs::write(&self.file, format!("{}\n", self.old)) {
            Ok(()) => Notice::PoolRestored {
                file: self.file.clone(),
                pages: self.old,
            },
            Err(e) => Notice::PoolNotRestored {
                file: self.file.clone(),
                pages: self.old,
                error: e.to_string(),
            },
        };
        (self.sink)(&notice);
    }
}

/// A number from /proc/meminfo.
pub(crate) fn meminfo(key: &str) -> Option<u64> {
    proc_kb("/proc/meminfo", key)
}

/// The pool's free and reserved pages now.
pub(crate) fn pool_now() -> Option<PoolCounts> {
    PoolCounts::from_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A number from a `Key:   1234 kB` line of a /proc file.
pub(crate) fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    kairos_platform::parse::meminfo_field(&s, key)
}

/// Reserves so that `n` 2 MiB pages are free; changes nothing when it cannot.
pub(crate) fn reserve(n: u64, sink: &Sink) -> Result<Option<PoolGuard>, Error> {
    let file = pool_file(MIB2);
    let old = read_u64(&file).ok_or_else(|| Error::NoPool(file.clone()))?;
    // Free pages already promised to another process's mappings (HugePages_Rsvd) are not
    // free for this program.
    let free = pool_now().map_or(0, |p| p.free.saturating_sub(p.rsvd));
    if free >= n {
        sink(&Notice::PoolFreeAlready {
            free,
            nr_hugepages: old,
        });
        return Ok(None);
    }
    let want = old + (n - free);
    if let Err(e) = std::fs::write(&file, format!("{want}\n")) {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
            "reserving huge pages needs root (or write access to that file)".to_string()
        } else {
            e.to_string()
        };
        return Err(Error::CannotReserve {
            pages: n,
            want,
            file,
            why,
        });
    }
    let guard = PoolGuard {
        file: file.clone(),
        old,
        sink: sink.clone(),
    };
    let got = read_u64(&file).unwrap_or(old);
    if got < want {
        let free_memory = meminfo("MemFree")
            .map(|k| format!("{} MiB", k / 1024))
            .unwrap_or_else(|| "unknown".into());
        drop(guard);
        return Err(Error::PoolShort {
            pages: n,
            got: got.saturating_sub(old),
            asked: want - old,
            free_memory,
            old,
        });
    }
    sink(&Notice::PoolRaised {
        from: old,
        to: got,
        reserved: n,
    });
    Ok(Some(guard))
}
