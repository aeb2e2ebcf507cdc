//! Did the huge-page pool lose pages to someone else while a program ran?
//!
//! `kairos run --hugepages=hugetlb` reads /proc/meminfo and the program's /proc files every
//! 50 ms; this decides from those readings.

/// The default-size pool of /proc/meminfo, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolCounts {
    /// `HugePages_Free`: not allocated (reserved pages included).
    pub free: u64,
    /// `HugePages_Rsvd`: promised to a mapping, not allocated yet.
    pub rsvd: u64,
}

impl PoolCounts {
    /// From the text of /proc/meminfo; None without the HugePages_ lines.
    pub fn from_meminfo(text: &str) -> Option<PoolCounts> {
        Some(PoolCounts {
            free: field(text, "HugePages_Free")?,
            rsvd: field(text, "HugePages_Rsvd")?,
        })
    }
}

/// One reading while the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolReading {
    pub pool: PoolCounts,
    /// The program's huge-page mappings of the pool's page size (sum of their sizes, kB).
    pub mapped_kb: u64,
    /// Of those, the pages faulted in (kB; HugetlbPages of /proc/PID/status).
    pub held_kb: u64,
}

/// Huge-page mappings of `page_kb` pages in a /proc/PID/smaps text: (mapped kB, held kB).
/// None when the text lists no mapping at all (the process is exiting or gone).
pub fn smaps_huge(text: &str, page_kb: u64) -> Option<(u64, u64)> {
    let (mut mapped, mut held, mut vmas) = (0u64, 0u64, 0u64);
    let (mut size, mut kps, mut hugetlb) = (0u64, 0u64, 0u64);
    let mut flush = |size: u64, kps: u64, hugetlb: u64| {
        if kps == page_kb {
            mapped += size;
            held += hugetlb;
        }
    };
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let value = || {
            rest.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match key {
            "Size" => {
                // The first field of each mapping's block: close the previous one.
                if vmas > 0 {
                    flush(size, kps, hugetlb);
                }
                vmas += 1;
                (size, kps, hugetlb) = (value(), 0, 0);
            }
            "KernelPageSize" => kps = value(),
            "Private_Hugetlb" | "Shared_Hugetlb" => hugetlb += value(),
            _ => {}
        }
    }
    if vmas == 0 {
        return None;
    }
    flush(size, kps, hugetlb);
    Some((mapped, held))
}

/// Pages the pool lost while the program ran beyond what the program took; 0 when none.
/// `before` is the pool just before the program started; `page_kb` its page size.
///
/// A program takes pool pages when it maps them, not when it touches them: glibc's
/// MAP_HUGETLB mapping reserves its pages at once (HugePages_Rsvd), each fault then turns
/// a reserved page into an allocated one (HugePages_Free and _Rsvd both fall by one). So
/// the pool's loss is what it can no longer promise, Free - Rsvd, and the program's take
/// is the size of its huge-page mappings. Comparing the fall of Free alone with the pages
/// the program holds (HugetlbPages) was wrong twice over: a page leaves Free when its
/// fault starts but counts in HugetlbPages only once zeroed and mapped, so a reading
/// taken in between "lost" a page, and the two peaks came from different readings.
/// Each reading reads the pool first and the program second, so a mapping made between
/// the two reads counts for the program; one unmapped in between makes a single torn
/// reading, which is why a loss must show in two readings in a row.
pub fn lost_to_others(before: PoolCounts, readings: &[PoolReading], page_kb: u64) -> u64 {
    let page_kb = page_kb.max(1);
    let available = |p: &PoolCounts| p.free.saturating_sub(p.rsvd);
    let others: Vec<u64> = readings
        .iter()
        .map(|r| {
            available(&before)
                .saturating_sub(available(&r.pool))
                .saturating_sub(r.mapped_kb.div_ceil(page_kb))
        })
        .collect();
    others.windows(2).map(|w| w[0].min(w[1])).max().unwrap_or(0)
}

fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE_KB: u64 = 2048;

    fn reading(free: u64, rsvd: u64, mapped_pages: u64, held_pages: u64) -> PoolReading {
        PoolReading {
            pool: PoolCounts { free, rsvd },
            mapped_kb: mapped_pages * PAGE_KB,
            held_kb: held_pages * PAGE_KB,
        }
    }

    #[test]
    fn meminfo_and_smaps_are_read() {
        let meminfo = "MemTotal:        8000000 kB\nHugePages_Total:      10\nHugePages_Free:        8\nHugePages_Rsvd:        4\nHugePages_Surp:        0\nHugepagesize:       2048 kB\n";
        assert_eq!(
            PoolCounts::from_meminfo(meminfo),
            Some(PoolCounts { free: 8, rsvd: 4 })
        );
        assert_eq!(PoolCounts::from_meminfo("MemTotal: 1 kB\n"), None);
        // Recorded from `GLIBC_TUNABLES=glibc.malloc.hugetlb=2 hp 5`: a 10 MiB block of
        // which one page was touched, glibc's 2 MiB arena page, and a plain mapping.
        let smaps = "\
7f1a33800000-7f1a34200000 rw-p 00000000 00:11 35410                      /anon_hugepage (deleted)
Size:              10240 kB
KernelPageSize:     2048 kB
MMUPageSize:        2048 kB
Rss:                   0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:    2048 kB
7f1a34200000-7f1a34400000 rw-p 00000000 00:11 35409                      /anon_hugepage (deleted)
Size:               2048 kB
KernelPageSize:     2048 kB
MMUPageSize:        2048 kB
Rss:                   0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:    2048 kB
7ffd2a1c4000-7ffd2a1e5000 rw-p 00000000 00:00 0                          [stack]
Size:                132 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
Rss:                  12 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
";
        assert_eq!(smaps_huge(smaps, PAGE_KB), Some((12288, 4096)));
        assert_eq!(smaps_huge("", PAGE_KB), None);
    }

    /// Recorded every 50 ms (HugePages_Free and _Rsvd, then the program's mappings) while
    /// a program faulted in a 9-page block plus glibc's arena page, from a pool of 10 it
    /// had to itself, and ended right after: at the last reading the tenth page had left
    /// the free count (taken at the start of its fault) but was not mapped yet (counted
    /// once zeroed). It lost nothing to anyone.
    #[test]
    fn a_page_in_the_middle_of_its_fault_is_not_lost_to_others() {
        let before = PoolCounts { free: 10, rsvd: 0 };
        let r = [
            reading(8, 8, 10, 2),
            reading(5, 5, 10, 5),
            reading(2, 2, 10, 8),
            reading(0, 0, 10, 9),
        ];
        assert_eq!(lost_to_others(before, &r, PAGE_KB), 0);
    }

    /// Reserved but not touched: the program holds 5 of its 9 pages; the other 4 are
    /// still promised to it.
    #[test]
    fn reserved_pages_are_the_programs() {
        let before = PoolCounts { free: 9, rsvd: 0 };
        let r = [reading(4, 4, 9, 5), reading(4, 4, 9, 5)];
        assert_eq!(lost_to_others(before, &r, PAGE_KB), 0);
    }

    /// Another process takes 3 pages while the program holds its 10.
    #[test]
    fn pages_taken_by_another_process_are_counted() {
        let before = PoolCounts { free: 13, rsvd: 0 };
        let r = [
            reading(3, 0, 10, 10),
            reading(0, 0, 10, 10),
            reading(0, 0, 10, 10),
        ];
        assert_eq!(lost_to_others(before, &r, PAGE_KB), 3);
    }

    /// The program unmapped its block between the two reads of one reading (meminfo still
    /// counted it, smaps no longer): one reading is not evidence, two in a row are.
    #[test]
    fn one_torn_reading_is_not_a_loss() {
        let before = PoolCounts { free: 10, rsvd: 0 };
        let r = [
            reading(0, 0, 10, 10),
            reading(0, 0, 0, 0),
            reading(10, 0, 0, 0),
        ];
        assert_eq!(lost_to_others(before, &r, PAGE_KB), 0);
    }
}
