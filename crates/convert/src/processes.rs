//! What the recording says about processes and threads at each point in time: names
//! (COMM), parentage (FORK), and executable mappings (MMAP/MMAP2), so that every sampled
//! address can be mapped to a file and an offset in it.

use rustc_hash::FxHashMap as HashMap;

/// One executable mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub path: String,
    pub build_id: Option<String>,
    /// PROT_EXEC (code). Data mappings (recorded with mmap_data) name the memory objects
    /// of data addresses; code addresses are never resolved in them.
    pub executable: bool,
}

#[derive(Debug, Default, Clone)]
struct Process {
    /// Sorted by start; later mappings replace overlapping older ones, as mmap does.
    mappings: Vec<Mapping>,
}

/// Thread and process state replayed from the records.
#[derive(Debug, Default)]
pub struct ProcessTable {
    processes: HashMap<i32, Process>,
    /// tid -> (pid, comm)
    threads: HashMap<i32, (i32, String)>,
    kernel: Vec<Mapping>,
}

impl ProcessTable {
    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, exec: bool) {
        self.threads.insert(tid, (pid, name.to_string()));
        if exec {
            // exec replaces the address space: mappings from before name other code.
            self.processes.entry(pid).or_default().mappings.clear();
        }
    }

    pub fn fork(&mut self, pid: i32, tid: i32, ppid: i32, ptid: i32) {
        let name = self
            .threads
            .get(&ptid)
            .map(|(_, n)| n.clone())
            .unwrap_or_default();
        self.threads.insert(tid, (pid, name));
        if pid != ppid {
            // A new process starts with a copy of its parent's address space.
            let parent = self.processes.get(&ppid).cloned().unwrap_or_default();
            self.processes.insert(pid, parent);
        }
    }

    pub fn mmap(&mut self, pid: i32, kernel: bool, m: Mapping) {
        let list = if kernel || pid == -1 {
            &mut self.kernel
        } else {
            &mut self.processes.entry(pid).or_default().mappings
        };
        if m.end <= m.start {
            return;
        }
        // Like mmap(MAP_FIXED): the new mapping replaces only the overlapped part of older
        // ones. ld.so maps a library whole and then maps its data segment over the tail,
        // so dropping whole mappings here would lose the library's code.
        let mut kept = Vec::with_capacity(list.len() + 2);
        for o in list.drain(..) {
            if o.end <= m.start || o.start >= m.end {
                kept.push(o);
                continue;
            }
            if o.start < m.start {
                kept.push(Mapping {
                    end: m.start,
                    ..o.clone()
                });
            }
            if o.end > m.end {
                let pgoff = o.pgoff.saturating_add(m.end - o.start);
                kept.push(Mapping {
                    start: m.end,
                    pgoff,
                    ..o
                });
            }
        }
        *list = kept;
        let at = list.partition_point(|o| o.start < m.start);
        list.insert(at, m);
    }

    /// The mapping containing `addr` in process `pid` (or the kernel's when `kernel`).
    pub fn find(&self, pid: i32, kernel: bool, addr: u64) -> Option<&Mapping> {
        let list = if kernel {
            &self.kernel
        } else {
            &self.processes.get(&pid)?.mappings
        };
        let i = list.partition_point(|m| m.start <= addr);
        let m = list.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// The mappings just below and just above an address no mapping contains.
    pub fn neighbours(&self, pid: i32, addr: u64) -> (Option<&Mapping>, Option<&Mapping>) {
        let Some(p) = self.processes.get(&pid) else {
            return (None, None);
        };
        let i = p.mappings.partition_point(|m| m.start <= addr);
        (
            i.checked_sub(1).and_then(|j| p.mappings.get(j)),
            p.mappings.get(i),
        )
    }

    pub fn thread_name(&self, tid: i32) -> Option<&str> {
        self.threads.get(&tid).map(|(_, n)| n.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(start: u64, end: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            pgoff: 0,
            path: path.into(),
            build_id: None,
            executable: true,
        }
    }

    #[test]
    fn lookup_fork_and_exec() {
        let mut t = ProcessTable::default();
        t.comm(10, 10, "parent", false);
        t.mmap(10, false, map(0x1000, 0x2000, "/bin/a"));
        t.mmap(10, false, map(0x3000, 0x4000, "/lib/b"));
        assert_eq!(
            t.find(10, false, 0x1fff).map(|m| m.path.as_str()),
            Some("/bin/a")
        );
        assert!(t.find(10, false, 0x2000).is_none());
        t.fork(11, 11, 10, 10);
        assert_eq!(
            t.find(11, false, 0x3000).map(|m| m.path.as_str()),
            Some("/lib/b")
        );
        assert_eq!(t.thread_name(11), Some("parent"));
        t.comm(11, 11, "child", true);
        assert!(t.find(11, false, 0x3000).is_none());
        // Overlapping mmap replaces the overlapped part of the old one only.
        t.mmap(10, false, map(0x1800, 0x2800, "/bin/c"));
        assert_eq!(
            t.find(10, false, 0x17ff).map(|m| m.path.as_str()),
            Some("/bin/a")
        );
        assert_eq!(
            t.find(10, false, 0x1900).map(|m| m.path.as_str()),
            Some("/bin/c")
        );
        // A mapping punched into the middle leaves both ends, the right one at its offset.
        t.mmap(
            10,
            false,
            Mapping {
                start: 0x10000,
                end: 0x20000,
                pgoff: 0x1000,
                path: "/lib/d".into(),
                build_id: None,
                executable: true,
            },
        );
        t.mmap(10, false, map(0x14000, 0x15000, "/lib/e"));
        assert_eq!(
            t.find(10, false, 0x13fff).map(|m| (m.start, m.pgoff)),
            Some((0x10000, 0x1000))
        );
        assert_eq!(
            t.find(10, false, 0x15000)
                .map(|m| (m.start, m.pgoff, m.path.as_str())),
            Some((0x15000, 0x6000, "/lib/d"))
        );
    }
}
