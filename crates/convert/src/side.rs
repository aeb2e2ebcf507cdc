//! Side samples: occurrences of events that are counted one by one (page faults,
//! tracepoints) recorded next to a timer's time samples. They are kept apart from the
//! profile's samples, whose weights are nanoseconds of CPU time, so hotspots stay right;
//! each keeps its attr, so analyses know which event it is.

use kairos_model::{StackIdx, ThreadIdx};
use kairos_perf_data::PerfFile;

use crate::processes::ProcessTable;

/// One occurrence of a side event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideSample {
    /// Index of its attr in the file (see `Converted::events` for the name).
    pub attr: u32,
    pub time_ns: u64,
    pub thread: ThreadIdx,
    pub cpu: u32,
    /// The sampled instruction address (for a user page fault, the faulting instruction).
    pub ip: u64,
    /// The call stack into `Profile::stacks` (user part only for tracepoints).
    pub stack: Option<StackIdx>,
    /// PERF_SAMPLE_ADDR: the faulting data address.
    pub addr: Option<u64>,
    /// The memory object containing `addr`, at the time of the fault.
    pub object: Option<MemoryObject>,
    /// The first field of a tracepoint's payload (syscall number, IRQ number, vector).
    pub payload: Option<i64>,
    /// Written while another sample of the same thread was being taken: the kernel's
    /// own work for the recording, not the program's (see [`Nesting`]).
    pub nested: bool,
    /// The whole tracepoint payload (common header included), when the conversion was
    /// asked to keep it (`ConvertOptions::keep_raw`).
    pub raw: Option<Box<[u8]>>,
}

/// A mapping as the recording knew it when the fault happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryObject {
    /// File path, or `[heap]`, `[stack]`, `[anon]`, `[unmapped]`.
    pub name: String,
    pub start: u64,
    pub end: u64,
}

pub(crate) struct PendingSide {
    s: SideSample,
    /// The chain number of the sample's stack.
    raw_stack: Option<u32>,
}

impl PendingSide {
    pub(crate) fn new(
        s: &kairos_perf_data::Sample<'_>,
        thread: ThreadIdx,
        raw_stack: Option<u32>,
        object: Option<MemoryObject>,
        nested: bool,
    ) -> Self {
        // Tracepoint payloads start with the 8-byte common header (type, flags,
        // preempt_count, pid); the event's first field follows. The first field of
        // raw_syscalls:sys_enter is the syscall number (long), of irq_handler_entry the IRQ
        // (int), of the irq_vectors events the vector (int): read as i32 when 4 bytes remain.
        let payload = s.raw.and_then(|r| match r.get(8..16) {
            Some(b) => Some(i64::from_le_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ])),
            None => r
                .get(8..12)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64),
        });
        PendingSide {
            s: SideSample {
                attr: s.attr_index as u32,
                time_ns: s.time.unwrap_or(0),
                thread,
                cpu: s.cpu.unwrap_or(0),
                ip: s.ip.unwrap_or(0),
                stack: None,
                addr: s.addr,
                object,
                payload,
                nested,
                raw: None,
            },
            raw_stack,
        }
    }

    pub(crate) fn keep_raw(&mut self, s: &kairos_perf_data::Sample<'_>) {
        self.s.raw = s.raw.map(Box::from);
    }
}

/// Records written while another record of the same thread was being prepared. A sample
/// takes its time stamp first, then its call chain and user stack, and only then is
/// written to the ring: a page fault of that walk (the kernel reading a frame pointer
/// that leads nowhere, once per sample at the end of the chain) fires its own events
/// in between, so they are written before the sample but stamped after it. Replayed in
/// time order, a record whose file position is below that of a record of the same CPU
/// and thread replayed before it is such a nested one: the recording's footprint, not
/// the program's behaviour.
#[derive(Default)]
pub(crate) struct Nesting {
    /// Per CPU: the thread of the last record and the highest file position since it
    /// took the CPU.
    last: Vec<Option<(i32, usize)>>,
}

impl Nesting {
    /// Whether the record at file position `pos` of thread `tid` on `cpu`, replayed now,
    /// was written inside another's preparation.
    pub(crate) fn nested(&mut self, cpu: u32, tid: i32, pos: usize) -> bool {
        let i = cpu as usize;
        if i >= self.last.len() {
            if i > 1 << 16 {
                return false;
            }
            self.last.resize(i + 1, None);
        }
        let slot = &mut self.last[i];
        match slot {
            Some((t, highest)) if *t == tid => {
                let nested = pos < *highest;
                *highest = (*highest).max(pos);
                nested
            }
            _ => {
                *slot = Some((tid, pos));
                false
            }
        }
    }
}

/// A record kept apart from the profile's samples until the stacks are known.
pub(crate) trait Stacked {
    fn set_stack(&mut self, stack: Option<StackIdx>);
    fn time_ns(&self) -> u64;
}

impl Stacked for SideSample {
    fn set_stack(&mut self, stack: Option<StackIdx>) {
        self.stack = stack;
    }
    fn time_ns(&self) -> u64 {
        self.time_ns
    }
}

/// Resolves raw stacks (chain numbers) to the profile's and sorts by time.
/// `stacks`: the profile stack of each chain number.
pub(crate) fn with_stacks<T: Stacked>(
    pending: impl Iterator<Item = (T, Option<u32>)>,
    stacks: &[Option<StackIdx>],
) -> Vec<T> {
    let mut out: Vec<T> = pending
        .map(|(mut r, raw)| {
            r.set_stack(raw.and_then(|c| stacks.get(c as usize).copied().flatten()));
            r
        })
        .collect();
    out.sort_by_key(|r| r.time_ns());
    out
}

pub(crate) fn finish(pending: Vec<PendingSide>, stacks: &[Option<StackIdx>]) -> Vec<SideSample> {
    with_stacks(pending.into_iter().map(|p| (p.s, p.raw_stack)), stacks)
}

/// Which attrs give side samples: when a file holds several events and the first is a
/// timer (cpu-clock, task-clock), every other event's samples count occurrences, not
/// time, and would corrupt the time profile if mixed into it. A file of one event, or
/// whose first event is not a timer, keeps every sample in the profile as before.
pub(crate) fn side_attrs(file: &PerfFile) -> Vec<bool> {
    let attrs = file.attrs();
    let timer_first = attrs.first().is_some_and(|a| crate::is_timer(&a.attr));
    attrs
        .iter()
        .enumerate()
        .map(|(i, _)| timer_first && attrs.len() > 1 && i > 0)
        .collect()
}

/// The memory object holding `addr` in process `pid`. The heap grown by brk and the
/// stack grown by faults get no MMAP record, so an address outside every recorded mapping
/// is named by where it lies: between the program's mappings and the libraries it is the
/// brk heap, above every mapping the stack.
pub(crate) fn object_of(table: &ProcessTable, pid: i32, addr: u64) -> MemoryObject {
    if let Some(m) = table.find(pid, false, addr) {
        let name =
            if m.path.is_empty() || m.path.starts_with("//anon") || m.path.starts_with("[anon") {
                "[anon]".to_string()
            } else {
                m.path.clone()
            };
        return MemoryObject {
            name,
            start: m.start,
            end: m.end,
        };
    }
    let (below, above) = table.neighbours(pid, addr);
    let name = match (below, above) {
        (Some(_), None) => "[stack]",
        (Some(b), Some(_))
            if !b.path.is_empty() && !b.path.starts_with('[') && !b.path.starts_with("//") =>
        {
            "[heap]"
        }
        _ => "[unmapped]",
    };
    MemoryObject {
        name: name.into(),
        start: below.map_or(0, |b| b.end),
        end: above.map_or(u64::MAX, |a| a.start),
    }
}

#[cfg(test)]
mod nesting_tests {
    use super::Nesting;

    /// In time order: a sample written at position 10, then a fault of its stack walk
    /// stamped later but written before it (8), a second one (9), then the thread's next
    /// records written after (11, 12); another thread on the CPU starts afresh.
    #[test]
    fn records_written_before_an_earlier_sample_are_nested() {
        let mut n = Nesting::default();
        assert!(!n.nested(1, 7, 10));
        assert!(n.nested(1, 7, 8));
        assert!(n.nested(1, 7, 9));
        assert!(!n.nested(1, 7, 11));
        assert!(!n.nested(1, 7, 12));
        // Other CPUs and threads do not nest in it.
        assert!(!n.nested(0, 7, 5));
        assert!(!n.nested(1, 8, 3));
        assert!(!n.nested(1, 8, 4));
        // A CPU number from a damaged file is not a reason to allocate.
        assert!(!n.nested(u32::MAX, 7, 1));
    }
}
