//! Which of the target's threads moved data through which device, and on which CPU
//! (`device_use.json`): kairos-collector's device tracepoints, aggregated while the
//! collection runs. The topology check uses it to judge each device against the threads
//! that really read from it, instead of against every sample.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use kairos_collector::device_io::{DeviceEvent, DeviceTracer, Task};
use serde::{Deserialize, Serialize};

/// The file in the result folder.
pub const FILE: &str = "device_use.json";

/// Words for what was traced.
pub const SOURCE: &str = "tracepoints block:block_bio_queue (bios by submitting thread), net:netif_receive_skb + skb:skb_copy_datagram_iovec (received data by reading thread), net:net_dev_queue (packets by queueing thread)";

/// Data one thread moved through one device on one CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// The platform's name: `net:eth0`, `block:nvme0n1`.
    pub device: String,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub cpu: u32,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// What the collection traced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceUse {
    pub source: String,
    /// Why nothing was traced (no tracefs, not root, ...).
    pub unavailable: Option<String>,
    /// A system-wide collection: every process is the target.
    pub whole_machine: bool,
    /// Records the kernel dropped (full rings): the figures are short by about that many.
    pub lost: u64,
    pub notes: Vec<String>,
    /// The target's flows, per (device, thread, CPU).
    pub flows: Vec<Flow>,
    /// Bytes other processes moved, per device: (read, write).
    pub others: BTreeMap<String, (u64, u64)>,
}

impl DeviceUse {
    pub fn load(result_dir: &Path) -> Option<DeviceUse> {
        let text = std::fs::read_to_string(result_dir.join(FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// Per (device, pid, tid, CPU): bytes read and written.
type Key = (String, u32, u32, u32);

#[derive(Default)]
struct Aggregate {
    bytes: HashMap<Key, (u64, u64)>,
    /// Received packets' interfaces by skb address, the latest few receptions with their
    /// time: addresses are reused, and rings are drained one CPU after another.
    skbs: HashMap<u64, Vec<(u64, String)>>,
    forks: Vec<(u32, u32)>,
    disks: HashMap<u32, Option<String>>,
    /// Thread names, read when a thread is first seen (it may be gone at the end).
    comms: HashMap<(u32, u32), String>,
    /// Names given by exec or prctl while tracing, by thread: preferred.
    renamed: HashMap<u32, String>,
    /// Copies waiting one pass: the rings are drained one CPU after another, so the
    /// reception a copy belongs to may sit in a ring drained after it.
    pending: Vec<(Task, u64, u64)>,
}

/// `block:vda` for a kernel dev_t (major << 20 | minor): partitions count for their disk;
/// devices stacked on others (dm, md) are left out, their members see the same bios.
fn disk_name(dev: u32) -> Option<String> {
    let path = format!("/sys/dev/block/{}:{}", dev >> 20, dev & 0xfffff);
    let real = std::fs::canonicalize(path).ok()?;
    let stacked = std::fs::read_dir(real.join("slaves")).is_ok_and(|mut d| d.next().is_some());
    if stacked {
        return None;
    }
    let disk = if real.join("partition").is_file() {
        real.parent()?
    } else {
        &real
    };
    Some(format!("block:{}", disk.file_name()?.to_string_lossy()))
}

impl Aggregate {
    /// After a pass over every ring: the copies of earlier passes (the first `earlier`
    /// pending) are matched with the latest reception of their skb before them; one with
    /// none was received before the trace began, or its record was lost.
    fn settle(&mut self, earlier: usize) {
        let pending = std::mem::take(&mut self.pending);
        for (i, (task, skb, bytes)) in pending.into_iter().enumerate() {
            if i >= earlier {
                self.pending.push((task, skb, bytes));
                continue;
            }
            // The latest reception before the copy; else the first after it (clocks of
            // different CPUs can disagree by a little).
            let name = self
                .skbs
                .get(&skb)
                .and_then(|v| {
                    v.iter()
                        .filter(|(t, _)| *t <= task.time)
                        .max_by_key(|(t, _)| *t)
                        .or_else(|| v.iter().min_by_key(|(t, _)| *t))
                })
                .map_or_else(|| "net:unknown".to_string(), |(_, n)| n.clone());
            self.add(name, task, bytes, 0);
        }
    }

    fn add(&mut self, device: String, t: Task, read: u64, write: u64) {
        self.comms
            .entry((t.pid, t.tid))
            .or_insert_with(|| comm(t.pid, t.tid));
        let e = self.bytes.entry((device, t.pid, t.tid, t.cpu)).or_default();
        e.0 += read;
        e.1 += write;
    }

    fn event(&mut self, e: DeviceEvent) {
        match e {
            DeviceEvent::Block {
                task,
                dev,
                bytes,
                write,
                comm,
            } => {
                if !comm.is_empty() {
                    self.comms.entry((task.pid, task.tid)).or_insert(comm);
                }
                let name = self
                    .disks
                    .entry(dev)
                    .or_insert_with(|| disk_name(dev))
                    .clone();
                if let Some(n) = name {
                    let (r, w) = if write { (0, bytes) } else { (bytes, 0) };
                    self.add(n, task, r, w);
                }
            }
            DeviceEvent::Received { skb, name, time } => {
                // Bounded: packets never read by anyone must not grow this forever.
                if self.skbs.len() > 1 << 20 {
                    self.skbs.clear();
                }
                let v = self.skbs.entry(skb).or_default();
                v.push((time, format!("net:{name}")));
                if v.len() > 4 {
                    v.sort_by_key(|(t, _)| *t);
                    v.remove(0);
                }
            }
            DeviceEvent::Copied { task, skb, bytes } => self.pending.push((task, skb, bytes)),
            DeviceEvent::Queued { task, name, bytes } => {
                self.add(format!("net:{name}"), task, 0, bytes)
            }
            DeviceEvent::Fork { parent, child } => self.forks.push((parent, child)),
            DeviceEvent::Renamed { tid, comm } => {
                self.renamed.insert(tid, comm);
            }
        }
    }
}

/// A running trace.
pub struct Recording {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(Aggregate, u64)>,
    missing: Vec<String>,
}

/// Data pages of each CPU's ring unless `-m` says otherwise.
const RING_PAGES: usize = 128;

/// Starts tracing on every online CPU with `pages` per CPU's ring (None: 128); Err says
/// why it cannot.
pub fn start(pages: Option<usize>) -> Result<Recording, String> {
    kairos_collector::extra::ensure_tracefs()?;
    let tracer = DeviceTracer::open(
        &kairos_collector::online_cpus(),
        pages.unwrap_or(RING_PAGES),
    )?;
    let missing = tracer.missing.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut tracer = tracer;
        let mut agg = Aggregate::default();
        loop {
            let last = flag.load(Ordering::SeqCst);
            // Copies left from the previous pass get one more pass to meet their packet.
            let earlier = agg.pending.len();
            tracer.drain(&mut |e| agg.event(e));
            agg.settle(if last { usize::MAX } else { earlier });
            if last {
                return (agg, tracer.lost);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    Ok(Recording {
        stop,
        thread,
        missing,
    })
}

/// The tasks descending from `root` (itself included), by the traced forks.
fn tree(root: u32, forks: &[(u32, u32)]) -> BTreeSet<u32> {
    let mut set = BTreeSet::from([root]);
    // Forks arrive per CPU, not in global order: repeat until nothing is added.
    loop {
        let before = set.len();
        for &(p, c) in forks {
            if set.contains(&p) {
                set.insert(c);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

fn comm(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Stops the trace and writes `device_use.json`: the flows of `target` (a launched
/// program's pid) and its descendants, or of every process when None.
pub fn finish(
    result_dir: &Path,
    rec: Result<Recording, String>,
    target: Option<u32>,
) -> Option<DeviceUse> {
    let mut u = DeviceUse {
        source: SOURCE.into(),
        whole_machine: target.is_none(),
        ..DeviceUse::default()
    };
    match rec {
        Err(why) => u.unavailable = Some(why),
        Ok(r) => {
            r.stop.store(true, Ordering::SeqCst);
            let (agg, lost) = r.thread.join().unwrap_or_default();
            u.lost = lost;
            u.notes = r
                .missing
                .iter()
                .map(|m| format!("not traced: {m}"))
                .collect();
            let ours = target.map(|t| tree(t, &agg.forks));
            for ((device, pid, tid, cpu), (read, write)) in agg.bytes {
                let mine = ours
                    .as_ref()
                    .is_none_or(|s| s.contains(&pid) || s.contains(&tid));
                if !mine {
                    let o = u.others.entry(device).or_default();
                    o.0 += read;
                    o.1 += write;
                    continue;
                }
                let comm = agg
                    .renamed
                    .get(&tid)
                    .or_else(|| agg.comms.get(&(pid, tid)))
                    .cloned()
                    .unwrap_or_default();
                u.flows.push(Flow {
                    device,
                    pid,
                    tid,
                    comm,
                    cpu,
                    read_bytes: read,
                    write_bytes: write,
                });
            }
            u.flows
                .sort_by(|a, b| (&a.device, a.tid, a.cpu).cmp(&(&b.device, b.tid, b.cpu)));
        }
    }
    let text = serde_json::to_string_pretty(&u).ok()?;
    std::fs::write(result_dir.join(FILE), text).ok()?;
    Some(u)
}

#[cfg(test)]
mod tests {
    use kairos_collector::device_io::{DeviceEvent, Task};

    #[test]
    fn a_copy_takes_the_latest_reception_of_its_address_before_it() {
        let mut a = super::Aggregate::default();
        let task = |time| Task {
            pid: 7,
            tid: 7,
            cpu: 0,
            time,
        };
        // The copies come first (their CPU's ring was drained first), an address reused.
        a.event(DeviceEvent::Copied {
            task: task(25),
            skb: 0xa0,
            bytes: 1000,
        });
        a.event(DeviceEvent::Copied {
            task: task(15),
            skb: 0xa0,
            bytes: 100,
        });
        a.event(DeviceEvent::Copied {
            task: task(5),
            skb: 0xa0,
            bytes: 10,
        });
        a.event(DeviceEvent::Copied {
            task: task(30),
            skb: 0xb0,
            bytes: 1,
        });
        a.settle(0);
        a.event(DeviceEvent::Received {
            skb: 0xa0,
            name: "eth1".into(),
            time: 20,
        });
        a.event(DeviceEvent::Received {
            skb: 0xa0,
            name: "eth0".into(),
            time: 10,
        });
        a.settle(4);
        let got = |dev: &str| a.bytes.get(&(dev.to_string(), 7, 7, 0)).map(|b| b.0);
        assert_eq!(got("net:eth1"), Some(1000));
        // Before every reception of its address (CPU clocks a little apart): the first after.
        assert_eq!(got("net:eth0"), Some(110));
        // Never seen received: before the trace began, or its record was lost.
        assert_eq!(got("net:unknown"), Some(1));
    }

    #[test]
    fn the_tree_follows_forks_in_any_order() {
        // 10 forks 11, 11 forks 12 (seen first), 20 is someone else's.
        let forks = [(11, 12), (10, 11), (20, 21)];
        assert_eq!(
            super::tree(10, &forks).into_iter().collect::<Vec<_>>(),
            [10, 11, 12]
        );
    }
}
