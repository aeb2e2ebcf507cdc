//! NUMA topology and page placement: the nodes and their CPUs from sysfs
//! (`devices/system/node/nodeN/cpulist`, `distance`, `meminfo`), and the placement query
//! of move_pages(2) without target nodes, which moves nothing and answers each page's node.
//! Used by the memory-access analysis (placement, CPU to node) and by `kairos info`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::probe_outcome::ProbeOutcome;
use crate::{cap, names, read_trim, Capability};

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: u32,
    pub cpus: Vec<u32>,
    /// `MemTotal` of the node's meminfo, when readable.
    pub mem_total_kb: Option<u64>,
    /// Distance to each node, in the order of the `distance` file (node ids ascending).
    pub distances: Vec<u32>,
}

/// The machine's nodes, ascending by id, and how they were learnt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub nodes: Vec<Node>,
    /// Where the nodes come from, in words (sysfs, or why there is one node only).
    pub source: String,
}

impl Topology {
    /// Reads `<sys_dir>/devices/system/node`. A kernel without NUMA support has no such
    /// directory: then the machine is one node 0 holding every online CPU.
    pub fn read(sys_dir: &Path) -> Topology {
        let dir = sys_dir.join("devices/system/node");
        let mut nodes: Vec<Node> = Vec::new();
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(id) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let p = e.path();
                let cpus = read_trim(&p.join("cpulist"))
                    .and_then(|s| parse_cpulist(&s))
                    .unwrap_or_default();
                let distances = read_trim(&p.join("distance"))
                    .map(|s| {
                        s.split_whitespace()
                            .filter_map(|d| d.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default();
                let mem_total_kb = std::fs::read_to_string(p.join("meminfo"))
                    .ok()
                    .and_then(|m| mem_total(&m));
                nodes.push(Node {
                    id,
                    cpus,
                    mem_total_kb,
                    distances,
                });
            }
        }
        nodes.sort_by_key(|n| n.id);
        if !nodes.is_empty() {
            return Topology {
                nodes,
                source: format!("{}", dir.display()),
            };
        }
        let online = sys_dir.join("devices/system/cpu/online");
        let cpus = read_trim(&online)
            .and_then(|s| parse_cpulist(&s))
            .unwrap_or_default();
        Topology {
            nodes: vec![Node {
                id: 0,
                cpus,
                mem_total_kb: None,
                distances: vec![10],
            }],
            source: format!(
                "{} is missing (a kernel without NUMA support): one node holding every online CPU",
                dir.display()
            ),
        }
    }

    /// The node whose cpulist holds `cpu`.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    /// Node ids that have CPUs (memory-only nodes have none).
    pub fn nodes_with_cpus(&self) -> usize {
        self.nodes.iter().filter(|n| !n.cpus.is_empty()).count()
    }

    /// `node0: CPUs 0-7, node1: CPUs 8-15`.
    pub fn describe(&self) -> String {
        self.nodes
            .iter()
            .map(|n| match n.cpus.is_empty() {
                true => format!("node{}: no CPUs", n.id),
                false => format!("node{}: CPUs {}", n.id, format_cpulist(&n.cpus)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn mem_total(meminfo: &str) -> Option<u64> {
    // "Node 0 MemTotal:       16747124 kB"
    let line = meminfo.lines().find(|l| l.contains("MemTotal:"))?;
    line.split_whitespace().rev().nth(1)?.parse().ok()
}

/// `0-7,16-23` (a kernel cpulist) as CPU numbers; None when malformed. Empty text is no CPU.
pub fn parse_cpulist(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                // A range longer than any machine's CPU count is a damaged file, not a list.
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// CPU numbers as a cpulist: `0-3,8`.
pub fn format_cpulist(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// move_pages(2) in query mode: `status[i]` gets the node of the page at `pages[i]` of
/// process `pid` (0: this process), or a negative errno for that page (-ENOENT: not
/// present, -EFAULT: not mapped or the shared zero page). Err is the call's errno:
/// ENOSYS (a kernel without NUMA or page migration), EPERM (no ptrace read access to
/// `pid`), ESRCH (no such process).
pub fn query_nodes(pid: i32, pages: &[u64], status: &mut [i32]) -> Result<(), i32> {
    if pages.len() != status.len() {
        return Err(libc::EINVAL);
    }
    if pages.is_empty() {
        return Ok(());
    }
    // The kernel reads an array of pointers: addresses only, never dereferenced here.
    let ptrs: Vec<*const libc::c_void> = pages
        .iter()
        .map(|&p| p as usize as *const libc::c_void)
        .collect();
    // SAFETY: `ptrs` and `status` are valid arrays of `pages.len()` elements; nodes is
    // NULL, so nothing is moved and the kernel only writes `status`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            ptrs.len() as libc::c_ulong,
            ptrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    Ok(())
}

/// What a failed move_pages query means, for the user.
pub fn query_error_sentence(errno: i32, pid: i32) -> String {
    match errno {
        libc::ENOSYS => "this kernel has no move_pages(2) (ENOSYS: built without CONFIG_NUMA or CONFIG_MIGRATION), so page placement cannot be queried".into(),
        libc::EPERM | libc::EACCES => format!(
            "move_pages(2) on process {pid} was refused ({}): reading another process's page placement needs ptrace read access to it (PTRACE_MODE_READ_REALCREDS: the same user and a dumpable process, or CAP_SYS_PTRACE)",
            crate::probe_outcome::errno_name(errno)
        ),
        libc::ESRCH => format!("process {pid} is gone (ESRCH)"),
        e => format!("move_pages(2) on process {pid} failed: {}", std::io::Error::from_raw_os_error(e)),
    }
}

/// The live answer for `kairos info`: a query of one page of this process's stack.
pub fn probe_query() -> ProbeOutcome {
    let here = 0u64;
    let page = (&here as *const u64 as u64) & !4095;
    let mut status = [0i32];
    match query_nodes(0, &[page], &mut status) {
        Ok(()) => ProbeOutcome::Opened,
        Err(errno) => ProbeOutcome::Failed { errno },
    }
}

/// `numa_placement`: the nodes, whether move_pages answers, and what placement needs.
pub(crate) fn placement_cap(
    t: &Topology,
    query: &ProbeOutcome,
    first_touch: &Capability,
) -> Capability {
    let n = t.nodes.len();
    let mut detail = format!(
        "{n} node{} ({})",
        if n == 1 { "" } else { "s" },
        t.describe()
    );
    let needs = "placement needs move_pages(2) (CONFIG_NUMA, CONFIG_MIGRATION) and ptrace read access to the target (the same user and a dumpable process, or CAP_SYS_PTRACE); first touch needs the exceptions:page_fault_user tracepoint (root or CAP_PERFMON, tracefs) for the read/write flag, else the software page-fault event";
    let ft = if first_touch.available {
        "first touch from exceptions:page_fault_user"
    } else {
        "first touch from the software page-fault event (no read/write flag)"
    };
    match query {
        ProbeOutcome::Opened => {
            detail.push_str(&format!("; move_pages(2) query answers; {ft}"));
            let mut why = needs.to_string();
            if n == 1 {
                why = format!("one node: every access is local (no remote access is possible); placement and first touch are still shown. {needs}");
            }
            cap(names::NUMA_PLACEMENT, true, detail, Some(why))
        }
        ProbeOutcome::Failed { errno } => cap(
            names::NUMA_PLACEMENT,
            false,
            detail,
            Some(format!("{}; {needs}", query_error_sentence(*errno, 0))),
        ),
        ProbeOutcome::NotTried(why) => cap(
            names::NUMA_PLACEMENT,
            false,
            detail,
            Some(format!("not tried: {why}; {needs}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_round_trip() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("x"), None);
        assert_eq!(parse_cpulist("0-4294967295"), None);
        assert_eq!(format_cpulist(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
    }

    #[test]
    fn this_process_pages_are_on_a_node_of_this_machine() {
        let t = Topology::read(Path::new("/sys"));
        let v = vec![1u8; 4096 * 4];
        let pages: Vec<u64> = (0..4)
            .map(|i| (v.as_ptr() as u64 + i * 4096) & !4095)
            .collect();
        let mut status = vec![0; 4];
        match query_nodes(0, &pages, &mut status) {
            Ok(()) => {
                for s in status {
                    assert!(
                        s >= 0 && t.nodes.iter().any(|n| n.id == s as u32),
                        "page on node {s}, nodes {t:?}"
                    );
                }
            }
            Err(e) => assert_eq!(
                e,
                libc::ENOSYS,
                "only a kernel without move_pages may refuse a query of our own pages"
            ),
        }
        // An address nothing maps: a per-page status, not a failed call.
        let mut status = vec![0];
        if query_nodes(0, &[0x1000], &mut status).is_ok() {
            assert_eq!(status[0], -libc::EFAULT);
        }
        assert_eq!(query_nodes(0, &[0], &mut []), Err(libc::EINVAL));
    }

    #[test]
    fn errors_say_what_is_needed() {
        assert!(query_error_sentence(libc::ENOSYS, 7).contains("CONFIG_NUMA"));
        let s = query_error_sentence(libc::EPERM, 7);
        assert!(
            s.contains("process 7") && s.contains("CAP_SYS_PTRACE") && s.contains("EPERM"),
            "{s}"
        );
    }

    #[test]
    fn a_kernel_without_nodes_is_one_node() {
        let d = std::env::temp_dir().join(format!("kairos-numa-{}", std::process::id()));
        std::fs::create_dir_all(d.join("devices/system/cpu")).unwrap_or_default();
        std::fs::write(d.join("devices/system/cpu/online"), "0-3\n").unwrap_or_default();
        let t = Topology::read(&d);
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(t.nodes.len(), 1);
        assert_eq!(t.nodes[0].cpus, vec![0, 1, 2, 3]);
        assert!(t.source.contains("without NUMA"), "{}", t.source);
        assert_eq!(t.node_of_cpu(2), Some(0));
        assert_eq!(t.node_of_cpu(9), None);
    }
}
