//! How many huge pages a program needs, from the allocation events of a
//! memory-consumption result, and the commands that reserve and use them.
//!
//! `ceil(total / 2 MiB)` is too small: each mapping rounds up to whole pages on its own
//! (see README.md). [`plan`] replays the events and keeps the peak of pages held at once.

use std::collections::HashMap;

pub mod pool;

/// What the planner reads of one allocation event. The memory-consumption analysis maps
/// its rows onto it; this crate stays free of that analysis, which presents its plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub time_ns: u64,
    /// Process image the address belongs to.
    pub process: u32,
    pub kind: OpKind,
    /// Block returned; the block freed for free and munmap. 0 for realloc(p, 0).
    pub address: u64,
    pub size: u64,
    /// realloc and mremap: the old block.
    pub old_address: Option<u64>,
    /// mmap: anonymous memory (not a file mapping).
    pub anonymous: Option<bool>,
}

/// The kinds of event that change the pages a program holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// malloc, calloc and the aligned allocators.
    HeapAlloc,
    Free,
    Realloc,
    Mmap,
    Mremap,
    Munmap,
    Other,
}

pub const MIB2: u64 = 2 << 20;
pub const GIB1: u64 = 1 << 30;

/// Pages of one size a program needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub page_size: u64,
    /// Peak pages held by heap blocks of at least one page (each its own MAP_HUGETLB
    /// mapping under glibc.malloc.hugetlb): what glibc really takes from the pool.
    pub pool_pages: u64,
    /// Such blocks live at that peak, and their bytes.
    pub pool_blocks: u64,
    pub pool_bytes: u64,
    /// Peak live bytes of the smaller heap blocks (the heap arena) and that in pages.
    pub arena_peak_bytes: u64,
    pub arena_pages: u64,
    /// The program's own anonymous mmaps: peak pages if each were huge-page backed.
    /// glibc's tunable does not reach them, so they are not in [`Plan::needed`].
    pub direct_mmap_pages: u64,
    pub direct_mmaps: u64,
    /// All heap bytes ever allocated (the recipe's "total allocated bytes").
    pub total_bytes: u64,
}

impl Plan {
    /// Pool size to reserve: the pool blocks plus the arena as headroom.
    pub fn needed(&self) -> u64 {
        self.pool_pages + self.arena_pages
    }
    /// The cookbook's formula, ceil(total / page size).
    pub fn naive(&self) -> u64 {
        self.total_bytes.div_ceil(self.page_size.max(1))
    }
}

/// Bytes glibc maps for a malloc(size) it serves with mmap: the request plus the chunk
/// header, aligned as `request2size` and `sysmalloc_mmap` do on 64-bit, then whole pages.
pub fn pages_for_block(size: u64, page: u64) -> u64 {
    let nb = (size.saturating_add(8 + 15) & !15).max(32);
    nb.saturating_add(8).div_ceil(page.max(1))
}

#[derive(Clone, Copy)]
enum Live {
    Pool { pages: u64, bytes: u64 },
    Arena(u64),
    Direct(u64),
}

#[derive(Default)]
struct Tally {
    pool_pages: u64,
    pool_blocks: u64,
    pool_bytes: u64,
    arena: u64,
    direct_pages: u64,
    direct: u64,
}

impl Tally {
    fn sub(&mut self, v: Live) {
        match v {
            Live::Pool { pages, bytes } => {
                self.pool_pages -= pages;
                self.pool_blocks -= 1;
                self.pool_bytes -= bytes;
            }
            Live::Arena(b) => self.arena -= b,
            Live::Direct(pg) => {
                self.direct_pages -= pg;
                self.direct -= 1;
            }
        }
    }
}

/// Replays `rows` (any order) for pages of `page_size` bytes.
pub fn plan(rows: &[Op], page_size: u64) -> Plan {
    let mut order: Vec<&Op> = rows.iter().collect();
    order.sort_by_key(|r| r.time_ns);
    let mut live: HashMap<(u32, u64), Live> = HashMap::new();
    let mut now = Tally::default();
    let mut p = Plan {
        page_size,
        ..Default::default()
    };
    let release = |live: &mut HashMap<(u32, u64), Live>, now: &mut Tally, key| {
        if let Some(v) = live.remove(&key) {
            now.sub(v);
        }
    };
    for r in order {
        let heap_block = |live: &mut HashMap<(u32, u64), Live>, now: &mut Tally, p: &mut Plan| {
            if r.address == 0 {
                return;
            }
            p.total_bytes += r.size;
            let v = if r.size >= page_size {
                let pages = pages_for_block(r.size, page_size);
                now.pool_pages += pages;
                now.pool_blocks += 1;
                now.pool_bytes += r.size;
                Live::Pool {
                    pages,
                    bytes: r.size,
                }
            } else {
                now.arena += r.size;
                Live::Arena(r.size)
            };
            // A stale entry at the same address (a free the tracker missed) is replaced.
            if let Some(old) = live.insert((r.process, r.address), v) {
                now.sub(old);
            }
        };
        match r.kind {
            OpKind::HeapAlloc => heap_block(&mut live, &mut now, &mut p),
            OpKind::Free => release(&mut live, &mut now, (r.process, r.address)),
            OpKind::Realloc => {
                if let Some(old) = r.old_address.filter(|&a| a != 0) {
                    release(&mut live, &mut now, (r.process, old));
                }
                if r.size > 0 {
                    heap_block(&mut live, &mut now, &mut p);
                }
            }
            OpKind::Mmap | OpKind::Mremap if r.anonymous != Some(false) => {
                if let Some(old) = r.old_address {
                    release(&mut live, &mut now, (r.process, old));
                }
                if r.kind == OpKind::Mmap && r.anonymous != Some(true) {
                    continue;
                }
                let pages = r.size.div_ceil(page_size.max(1));
                now.direct_pages += pages;
                now.direct += 1;
                if let Some(old) = live.insert((r.process, r.address), Live::Direct(pages)) {
                    now.sub(old);
                }
            }
            // Partial unmaps are rare for anonymous memory; an unmap of the start releases it.
            OpKind::Munmap => release(&mut live, &mut now, (r.process, r.address)),
            _ => {}
        }
        if now.pool_pages > p.pool_pages {
            p.pool_pages = now.pool_pages;
            p.pool_blocks = now.pool_blocks;
            p.pool_bytes = now.pool_bytes;
        }
        p.arena_peak_bytes = p.arena_peak_bytes.max(now.arena);
        if now.direct_pages > p.direct_mmap_pages {
            p.direct_mmap_pages = now.direct_pages;
            p.direct_mmaps = now.direct;
        }
    }
    p.arena_pages = p.arena_peak_bytes.div_ceil(page_size.max(1));
    p
}

/// glibc version as (major, minor), from "2.36" and the like.
pub fn parse_glibc(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The file the kernel reads the pool size of this page size from.
pub fn pool_file(page_size: u64) -> String {
    if page_size == MIB2 {
        "/proc/sys/vm/nr_hugepages".into()
    } else {
        format!(
            "/sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
            page_size / 1024
        )
    }
}

/// Shell commands to reserve `pages` pages and run `program` with them, for this glibc.
/// Each line is a command or a `#` comment saying why.
pub fn commands(plan: &Plan, glibc: Option<(u32, u32)>, program: &str) -> Vec<String> {
    let n = plan.needed();
    let mut v = vec![format!("echo {n} > {}", pool_file(plan.page_size))];
    if plan.page_size == MIB2 {
        v.push(format!("# or: sysctl -w vm.nr_hugepages={n}"));
    } else {
        v.push(format!(
            "# 1 GiB pages are often only available at boot: hugepagesz=1G hugepages={n}"
        ));
    }
    v.push(format!(
        "grep -i hugepages_ /proc/meminfo   # check that the kernel gave all {n} pages"
    ));
    let tunable = if plan.page_size == MIB2 {
        "2".to_string()
    } else {
        plan.page_size.to_string()
    };
    match glibc {
        Some((2, m)) if m >= 35 => {
            v.push(format!("GLIBC_TUNABLES=glibc.malloc.hugetlb={tunable} {program}   # pool pages (MAP_HUGETLB)"));
            v.push(format!("GLIBC_TUNABLES=glibc.malloc.hugetlb=1 {program}   # or transparent huge pages, no pool needed"));
            if plan.page_size == MIB2 {
                v.push(format!("kairos run --hugepages=hugetlb --reserve {n} -- {program}   # all of the above, checked, pool restored"));
            }
        }
        Some((2, m)) if m < 34 => {
            v.push(format!("hugeadm --pool-pages-min {}:{n}", if plan.page_size == MIB2 { "2MB" } else { "1GB" }));
            v.push(format!("LD_PRELOAD=libhugetlbfs.so HUGETLB_MORECORE=yes {program}"));
            v.push("# libhugetlbfs's HUGETLB_MORECORE silently does nothing on glibc 2.34 and newer (morecore was removed)".into());
        }
        Some((2, 34)) => {
            v.push("# glibc 2.34: morecore is gone (libhugetlbfs HUGETLB_MORECORE does nothing) and glibc.malloc.hugetlb".into());
            v.push("# arrives in 2.35: use THP (echo always > /sys/kernel/mm/transparent_hugepage/enabled) or upgrade glibc".into());
        }
        _ => v.push("# glibc not found or not recognised: the glibc.malloc.hugetlb tunable needs glibc 2.35 or newer".into()),
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, kind: OpKind, addr: u64, size: u64) -> Op {
        Op {
            time_ns: t,
            process: 0,
            kind,
            address: addr,
            size,
            old_address: None,
            anonymous: (kind == OpKind::Mmap).then_some(true),
        }
    }

    #[test]
    fn matrix_2100_needs_more_than_the_formula() {
        let b = 2100 * 2100 * 8;
        let rows = vec![
            row(0, OpKind::HeapAlloc, 0x10, 1024),
            row(1, OpKind::HeapAlloc, 0x1000, b),
            row(2, OpKind::HeapAlloc, 0x2000, b),
            row(3, OpKind::HeapAlloc, 0x3000, b),
        ];
        let p = plan(&rows, MIB2);
        assert_eq!(p.pool_pages, 51);
        assert_eq!(p.arena_pages, 1);
        assert_eq!(p.needed(), 52);
        assert_eq!(p.naive(), 51);
        // No block reaches 1 GiB: glibc would map none of them with 1 GiB pages.
        assert_eq!(plan(&rows, GIB1).pool_pages, 0);
    }

    #[test]
    fn freed_blocks_return_their_pages_and_exact_pages_round_up() {
        let rows = vec![
            row(0, OpKind::HeapAlloc, 0x1000, MIB2),
            row(1, OpKind::Free, 0x1000, 0),
            row(2, OpKind::HeapAlloc, 0x2000, MIB2),
        ];
        let p = plan(&rows, MIB2);
        // 2 MiB + header does not fit in one page.
        assert_eq!(p.pool_pages, 2);
        assert_eq!(p.total_bytes, 2 * MIB2);
    }

    #[test]
    fn direct_mmaps_are_apart_and_commands_follow_glibc() {
        let rows = vec![
            row(0, OpKind::Mmap, 0x1000, 5 << 20),
            row(1, OpKind::Munmap, 0x1000, 5 << 20),
        ];
        let p = plan(&rows, MIB2);
        assert_eq!((p.direct_mmap_pages, p.needed()), (3, 0));
        let new = commands(&p, Some((2, 36)), "./a").join("\n");
        assert!(new.contains("glibc.malloc.hugetlb=2 ./a") && !new.contains("libhugetlbfs"));
        let old = commands(&p, Some((2, 31)), "./a").join("\n");
        assert!(old.contains("HUGETLB_MORECORE=yes") && old.contains("does nothing on glibc 2.34"));
        assert!(commands(&plan(&rows, GIB1), Some((2, 36)), "./a")
            .join("\n")
            .contains("hugetlb=1073741824"));
    }
}
