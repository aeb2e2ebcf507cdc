//! Heap blocks with their lifetimes, replayed from the allocation tracker's rows (the
//! memory-consumption analysis records them in the same collection), so that an address
//! is given to the block that held it at the sampled moment, never to a block that
//! reused the address later.

use std::collections::HashMap;

use kairos_analysis_memory_consumption::{AllocRow, Kind, Site};

use crate::objects::HeapBlock;

/// Blocks of `rows` (times relative to `origin_ns`, as the tracker's tables store them),
/// with CLOCK_MONOTONIC times; `sites` names each block by its allocation site.
pub fn heap_blocks(rows: &[AllocRow], sites: &[Site], origin_ns: u64) -> Vec<HeapBlock> {
    let mut out: Vec<HeapBlock> = Vec::new();
    // (pid, address) -> index in `out` of the block still alive there.
    let mut open: HashMap<(u32, u64), usize> = HashMap::new();
    let site_name = |row: &AllocRow| match row.site.and_then(|s| sites.get(s as usize)) {
        Some(s) => s.location(),
        None => format!("[{} without a recorded stack]", row.kind.as_str()),
    };
    let close = |out: &mut Vec<HeapBlock>,
                 open: &mut HashMap<(u32, u64), usize>,
                 pid: u32,
                 addr: u64,
                 t: u64| {
        if let Some(i) = open.remove(&(pid, addr)) {
            out[i].free_ns = Some(t);
        }
    };
    for r in rows {
        let t = origin_ns + r.time_ns;
        let released = origin_ns + r.release_time_ns.unwrap_or(r.time_ns);
        let allocates = match r.kind {
            Kind::Free => {
                close(&mut out, &mut open, r.pid, r.address, t);
                false
            }
            Kind::Munmap => {
                close(&mut out, &mut open, r.pid, r.address, released);
                false
            }
            Kind::Realloc | Kind::Mremap => {
                if let Some(old) = r.old_address {
                    close(&mut out, &mut open, r.pid, old, released);
                }
                r.address != 0
            }
            // A file mapping is a mapping, named by its path, not a heap object.
            Kind::Mmap => r.anonymous != Some(false),
            k => k.is_heap_alloc(),
        };
        if allocates && r.address != 0 {
            // An address handed out again without a free we saw: the old block ended.
            close(&mut out, &mut open, r.pid, r.address, t);
            open.insert((r.pid, r.address), out.len());
            out.push(HeapBlock {
                pid: r.pid,
                addr: r.address,
                size: r.size,
                alloc_ns: t,
                free_ns: None,
                site: site_name(r),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(time_ns: u64, kind: Kind, address: u64, size: u64) -> AllocRow {
        AllocRow {
            time_ns,
            release_time_ns: None,
            process: 0,
            pid: 7,
            tid: 7,
            kind,
            address,
            size,
            old_address: None,
            old_size: None,
            anonymous: None,
            site: Some(0),
        }
    }

    #[test]
    fn lifetimes_follow_free_realloc_and_reuse() {
        let sites = vec![Site {
            id: 0,
            function: "main".into(),
            file: "/src/a.c".into(),
            line: 12,
            ..Default::default()
        }];
        let mut realloc = row(30, Kind::Realloc, 0x2000, 128);
        realloc.old_address = Some(0x1000);
        realloc.release_time_ns = Some(29);
        let rows = vec![
            row(10, Kind::Malloc, 0x1000, 64),
            realloc,
            row(40, Kind::Free, 0x2000, 0),
            row(50, Kind::Malloc, 0x1000, 32),
        ];
        let b = heap_blocks(&rows, &sites, 1000);
        assert_eq!(b.len(), 3);
        assert_eq!(
            (b[0].addr, b[0].alloc_ns, b[0].free_ns, b[0].site.as_str()),
            (0x1000, 1010, Some(1029), "a.c:12")
        );
        assert_eq!(
            (b[1].addr, b[1].size, b[1].alloc_ns, b[1].free_ns),
            (0x2000, 128, 1030, Some(1040))
        );
        assert_eq!((b[2].addr, b[2].free_ns), (0x1000, None));
    }
}
