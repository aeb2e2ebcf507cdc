//! One placement query of one process: its data mappings from /proc/PID/maps, each page's
//! node from move_pages(2) in query mode (nothing is moved), each mapping's memory policy
//! from /proc/PID/numa_maps and its transparent huge pages from /proc/PID/smaps. Reading
//! goes through [`ProcessReader`] so that the tests can answer with recorded text and errors.

use std::collections::{BTreeMap, HashMap};
use std::io;

use kairos_procfs::maps::Mapping;

use super::PAGE;

/// Pages asked per move_pages call: the kernel walks them in small batches anyway, and a
/// bounded call keeps the status array small.
const CHUNK: usize = 1 << 16;

/// How a process is read; [`Live`] reads this machine.
pub trait ProcessReader: Send {
    fn read(&self, pid: i32, file: &str) -> io::Result<String>;
    /// move_pages(2) without target nodes; Err is the call's errno.
    fn nodes_of(&self, pid: i32, pages: &[u64], status: &mut [i32]) -> Result<(), i32>;
}

/// /proc and the move_pages(2) system call.
pub struct Live;

impl ProcessReader for Live {
    fn read(&self, pid: i32, file: &str) -> io::Result<String> {
        std::fs::read_to_string(format!("/proc/{pid}/{file}"))
    }
    fn nodes_of(&self, pid: i32, pages: &[u64], status: &mut [i32]) -> Result<(), i32> {
        kairos_platform::numa::query_nodes(pid, pages, status)
    }
}

/// A mapping as the query saw it: its name as objects name mappings, its policy and THP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vma {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    /// A path, `[heap]`, `[stack]` or `[anon]`.
    pub name: String,
    /// numa_maps' policy (`default`, `interleave:0-1`, `bind:1`, ...), empty when unread.
    pub policy: String,
    /// smaps' AnonHugePages, in KiB.
    pub anon_huge_kb: u64,
}

/// Why a query of a process gave nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The process is gone (its end, not a problem).
    Gone,
    /// move_pages(2) or /proc refused: the sentence says which permission is missing.
    Refused(String),
    /// The kernel has no move_pages(2).
    NoSyscall(String),
}

/// What one query of one process found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Present pages: `(start, end, node)` runs, ascending.
    pub runs: Vec<(u64, u64, u32)>,
    pub vmas: Vec<Vma>,
    /// Present pages per node.
    pub by_node: BTreeMap<u32, u64>,
    /// Pages not present (never touched, or swapped out) and shared-zero-page pages.
    pub absent: u64,
    pub zero: u64,
    /// Every `stride`-th page was asked (1: all) when the mappings exceed the budget.
    pub stride: u64,
    /// Notes that do not stop the query (numa_maps or smaps unreadable).
    pub notes: Vec<String>,
}

/// Mappings whose pages are placed on a node by first touch: anonymous, heap, stack and
/// writable file mappings (program data). Read-only file mappings (code) are shared page
/// cache, not the program's data; the kernel's special mappings hold no placed pages.
pub fn wanted(m: &Mapping) -> bool {
    let special = matches!(
        m.path.as_str(),
        "[vvar]" | "[vdso]" | "[vsyscall]" | "[vvar_vclock]" | "[uprobes]"
    );
    let anon = m.path.is_empty()
        || m.path == "[heap]"
        || m.path.starts_with("[stack")
        || m.path.starts_with("[anon");
    m.read && !special && (anon || m.write)
}

/// A mapping's name as the converter names the mapping of an address.
pub fn vma_name(m: &Mapping) -> String {
    if m.path.is_empty() || m.path.starts_with("//anon") || m.path.starts_with("[anon") {
        "[anon]".into()
    } else if m.path.starts_with("[stack") {
        "[stack]".into()
    } else {
        m.path.clone()
    }
}

/// Queries `pid`, asking at most `max_pages` pages (every k-th page beyond that).
pub fn snapshot(r: &dyn ProcessReader, pid: i32, max_pages: u64) -> Result<Snapshot, QueryError> {
    let maps = r
        .read(pid, "maps")
        .map_err(|e| read_error(&e, pid, "maps"))?;
    let maps: Vec<Mapping> = kairos_procfs::maps::parse(&maps)
        .into_iter()
        .filter(wanted)
        .collect();
    let total: u64 = maps
        .iter()
        .map(|m| m.end.saturating_sub(m.start) / PAGE)
        .sum();
    let stride = total.div_ceil(max_pages.max(1)).max(1);
    let mut s = Snapshot {
        stride,
        ..Snapshot::default()
    };
    let policies = match r.read(pid, "numa_maps") {
        Ok(t) => parse_numa_maps(&t),
        Err(e) => {
            s.notes
                .push(format!("/proc/{pid}/numa_maps: {}", read_error_text(&e)));
            HashMap::new()
        }
    };
    let huge = match r.read(pid, "smaps") {
        Ok(t) => parse_smaps_huge(&t),
        Err(e) => {
            s.notes
                .push(format!("/proc/{pid}/smaps: {}", read_error_text(&e)));
            HashMap::new()
        }
    };
    let mut pages: Vec<u64> = Vec::with_capacity(CHUNK);
    let mut status = vec![0i32; CHUNK];
    let mut open: Option<(u64, u64, u32)> = None;
    for m in &maps {
        s.vmas.push(Vma {
            pid: pid as u32,
            start: m.start,
            end: m.end,
            name: vma_name(m),
            policy: policies.get(&m.start).cloned().unwrap_or_default(),
            anon_huge_kb: huge.get(&m.start).copied().unwrap_or(0),
        });
        let mut a = m.start;
        while a < m.end {
            pages.clear();
            while a < m.end && pages.len() < CHUNK {
                pages.push(a);
                a = a.saturating_add(stride * PAGE);
            }
            let st = &mut status[..pages.len()];
            r.nodes_of(pid, &pages, st)
                .map_err(|e| call_error(e, pid))?;
            for (&p, &node) in pages.iter().zip(st.iter()) {
                let next = p.saturating_add(stride * PAGE).min(m.end);
                if node >= 0 {
                    let node = node as u32;
                    *s.by_node.entry(node).or_default() += stride;
                    match &mut open {
                        Some((_, end, n)) if *end == p && *n == node => *end = next,
                        _ => {
                            s.runs.extend(open.take());
                            open = Some((p, next, node));
                        }
                    }
                    continue;
                }
                s.runs.extend(open.take());
                if node == -libc::EFAULT {
                    s.zero += stride;
                } else {
                    s.absent += stride;
                }
            }
        }
        // A run never crosses two mappings: the end of one may touch the start of the next.
        s.runs.extend(open.take());
    }
    Ok(s)
}

fn call_error(errno: i32, pid: i32) -> QueryError {
    let sentence = kairos_platform::numa::query_error_sentence(errno, pid);
    match errno {
        libc::ESRCH => QueryError::Gone,
        libc::ENOSYS => QueryError::NoSyscall(sentence),
        _ => QueryError::Refused(sentence),
    }
}

fn read_error_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            "not readable (EACCES): it needs ptrace read access to the process (the same user and a dumpable process, or CAP_SYS_PTRACE)".into()
        }
        io::ErrorKind::NotFound => "missing (a kernel without NUMA support has no numa_maps)".into(),
        _ => e.to_string(),
    }
}

fn read_error(e: &io::Error, pid: i32, file: &str) -> QueryError {
    match e.kind() {
        // The process ended between the listing and the read.
        io::ErrorKind::NotFound => QueryError::Gone,
        _ => QueryError::Refused(format!("/proc/{pid}/{file}: {}", read_error_text(e))),
    }
}

/// numa_maps: mapping start -> its policy (`7f12a000 interleave:0-1 anon=2 N0=1 N1=1`).
pub fn parse_numa_maps(text: &str) -> HashMap<u64, String> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let start = u64::from_str_radix(w.next()?, 16).ok()?;
            Some((start, w.next()?.to_string()))
        })
        .collect()
}

/// smaps: mapping start -> AnonHugePages in KiB.
pub fn parse_smaps_huge(text: &str) -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    let mut current: Option<u64> = None;
    for l in text.lines() {
        if let Some(m) = kairos_procfs::maps::parse_line(l) {
            current = Some(m.start);
        } else if let (Some(start), Some(v)) = (current, l.strip_prefix("AnonHugePages:")) {
            if let Some(kb) = v
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                out.insert(start, kb);
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    /// Answers from text, with a page-to-node rule.
    pub(crate) struct Recorded {
        pub maps: String,
        pub numa_maps: io::Result<String>,
        pub node: fn(u64) -> i32,
        pub refuse: Option<i32>,
    }

    impl ProcessReader for Recorded {
        fn read(&self, _: i32, file: &str) -> io::Result<String> {
            match file {
                "maps" => Ok(self.maps.clone()),
                "numa_maps" => self
                    .numa_maps
                    .as_ref()
                    .map(Clone::clone)
                    .map_err(|e| io::Error::new(e.kind(), e.to_string())),
                _ => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        }
        fn nodes_of(&self, _: i32, pages: &[u64], status: &mut [i32]) -> Result<(), i32> {
            if let Some(e) = self.refuse {
                return Err(e);
            }
            for (p, s) in pages.iter().zip(status.iter_mut()) {
                *s = (self.node)(*p);
            }
            Ok(())
        }
    }

    const MAPS: &str = "00400000-00401000 r-xp 00000000 08:01 12 /bin/prog\n\
                        00600000-00608000 rw-p 00000000 08:01 12 /bin/prog\n\
                        7f0000000000-7f0000010000 rw-p 00000000 00:00 0 \n\
                        7ffc00000000-7ffc00002000 rw-p 00000000 00:00 0 [stack]\n\
                        ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

    fn two_nodes(p: u64) -> i32 {
        match p {
            // .data: half touched, one zero page.
            0x600000..=0x603fff => 0,
            0x604000 => -libc::EFAULT,
            0x605000..=0x607fff => -libc::ENOENT,
            // The anonymous mapping: first half node 0, second half node 1.
            p if p < 0x7f0000008000 => 0,
            p if p < 0x7f0000010000 => 1,
            _ => 0,
        }
    }

    #[test]
    fn data_mappings_are_queried_in_runs_by_node() {
        let r = Recorded {
            maps: MAPS.into(),
            numa_maps: Ok(
                "7f0000000000 interleave:0-1 anon=16 dirty=16 N0=8 N1=8 kernelpagesize_kB=4\n"
                    .into(),
            ),
            node: two_nodes,
            refuse: None,
        };
        let s = snapshot(&r, 42, 1 << 20).unwrap();
        assert_eq!(s.stride, 1);
        // Code and [vsyscall] are left out.
        assert_eq!(
            s.vmas.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            vec!["/bin/prog", "[anon]", "[stack]"]
        );
        assert_eq!(s.vmas[1].policy, "interleave:0-1");
        assert_eq!(
            s.runs,
            vec![
                (0x600000, 0x604000, 0),
                (0x7f0000000000, 0x7f0000008000, 0),
                (0x7f0000008000, 0x7f0000010000, 1),
                (0x7ffc00000000, 0x7ffc00002000, 0)
            ]
        );
        assert_eq!(s.by_node, BTreeMap::from([(0, 4 + 8 + 2), (1, 8)]));
        assert_eq!((s.zero, s.absent), (1, 3));
        // smaps unreadable here: said, and the query goes on.
        assert!(s.notes.iter().any(|n| n.contains("smaps")), "{:?}", s.notes);
    }

    #[test]
    fn a_budget_asks_every_kth_page() {
        let r = Recorded {
            maps: MAPS.into(),
            numa_maps: Ok(String::new()),
            node: two_nodes,
            refuse: None,
        };
        let s = snapshot(&r, 42, 13).unwrap();
        // 8 + 16 + 2 pages over a budget of 13: every 2nd page, each standing for 2.
        assert_eq!(s.stride, 2);
        assert_eq!(s.by_node.values().sum::<u64>() + s.zero + s.absent, 26);
    }

    #[test]
    fn refusals_say_which_permission_and_enosys_says_so() {
        let mut r = Recorded {
            maps: MAPS.into(),
            numa_maps: Ok(String::new()),
            node: two_nodes,
            refuse: Some(libc::EPERM),
        };
        match snapshot(&r, 42, 100) {
            Err(QueryError::Refused(s)) => assert!(
                s.contains("EPERM") && s.contains("ptrace read access") && s.contains("42"),
                "{s}"
            ),
            other => panic!("{other:?}"),
        }
        r.refuse = Some(libc::ENOSYS);
        assert!(
            matches!(snapshot(&r, 42, 100), Err(QueryError::NoSyscall(s)) if s.contains("ENOSYS"))
        );
        r.refuse = Some(libc::ESRCH);
        assert_eq!(snapshot(&r, 42, 100), Err(QueryError::Gone));
        r.refuse = None;
        r.numa_maps = Err(io::Error::from(io::ErrorKind::PermissionDenied));
        let s = snapshot(&r, 42, 100).unwrap();
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("numa_maps") && n.contains("EACCES")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn smaps_gives_huge_pages_per_mapping() {
        let t = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nSize:  4096 kB\nAnonHugePages:  2048 kB\n\
                 7f0000400000-7f0000401000 rw-p 00000000 00:00 0 \nAnonHugePages:  0 kB\n";
        let h = parse_smaps_huge(t);
        assert_eq!(h.get(&0x7f0000000000), Some(&2048));
        assert_eq!(h.get(&0x7f0000400000), Some(&0));
    }

    #[test]
    fn this_process_is_queried_for_real() {
        let v = vec![7u8; 64 << 10];
        let s = snapshot(&Live, std::process::id() as i32, 1 << 22);
        match s {
            Ok(s) => {
                let addr = v.as_ptr() as u64;
                assert!(
                    s.runs.iter().any(|&(a, b, _)| (a..b).contains(&addr)),
                    "our own touched buffer is placed: {:?}",
                    s.runs.len()
                );
                let nodes = kairos_platform::numa::Topology::read(std::path::Path::new("/sys"));
                assert!(s
                    .by_node
                    .keys()
                    .all(|n| nodes.nodes.iter().any(|x| x.id == *n)));
            }
            Err(QueryError::NoSyscall(_)) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
}
