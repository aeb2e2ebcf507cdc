//! Pairing side samples into kernel entries with durations.

use rustc_hash::FxHashMap as HashMap;

use kairos_convert::SideSample;

use crate::{Cause, Entry};

/// What each attr of the recording is, from its event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    MinorFault,
    MajorFault,
    FaultUserEntry,
    FaultKernelEntry,
    SysEnter,
    SysExit,
    IrqEntry,
    IrqExit,
    TimerEntry,
    TimerExit,
    Switch,
    Other,
}

/// The kind of each attr, by index.
#[derive(Debug, Clone)]
pub struct EventNames(Vec<Kind>);

impl EventNames {
    pub fn new(names: &[String]) -> EventNames {
        EventNames(
            names
                .iter()
                .map(|n| match n.split(':').collect::<Vec<_>>().as_slice() {
                    // perf appends modifiers (":u", ":k") to software events' names.
                    ["minor-faults", ..] => Kind::MinorFault,
                    ["major-faults", ..] => Kind::MajorFault,
                    ["exceptions", "page_fault_user", ..] => Kind::FaultUserEntry,
                    ["exceptions", "page_fault_kernel", ..] => Kind::FaultKernelEntry,
                    ["raw_syscalls", "sys_enter", ..] => Kind::SysEnter,
                    ["raw_syscalls", "sys_exit", ..] => Kind::SysExit,
                    ["irq", "irq_handler_entry", ..] => Kind::IrqEntry,
                    ["irq", "irq_handler_exit", ..] => Kind::IrqExit,
                    ["irq_vectors", "local_timer_entry", ..] => Kind::TimerEntry,
                    ["irq_vectors", "local_timer_exit", ..] => Kind::TimerExit,
                    ["sched", "sched_switch", ..] => Kind::Switch,
                    _ => Kind::Other,
                })
                .collect(),
        )
    }

    fn kind(&self, attr: u32) -> Kind {
        self.0.get(attr as usize).copied().unwrap_or(Kind::Other)
    }

    /// Whether the recording has the fault-entry tracepoints (else the software fault
    /// events alone make the entries, untimed).
    fn has_fault_tracepoints(&self) -> bool {
        self.0
            .iter()
            .any(|k| matches!(k, Kind::FaultUserEntry | Kind::FaultKernelEntry))
    }
}

fn kernel_address(a: u64) -> bool {
    // x86_64 and aarch64 kernels live in the upper half of the address space.
    (a as i64) < 0
}

/// Fault-handler entries that the recording itself caused: page faults taken while a
/// sample's call chain or user stack was being read (the kernel's walk reads a frame
/// pointer that leads nowhere at the end of every chain), written inside that sample
/// (`SideSample::nested`). [`build`] leaves them out; this counts them.
pub fn recording_faults(side: &[SideSample], names: &EventNames) -> u64 {
    side.iter()
        .filter(|s| {
            s.nested
                && matches!(
                    names.kind(s.attr),
                    Kind::FaultUserEntry | Kind::FaultKernelEntry
                )
        })
        .count() as u64
}

/// Turns time-sorted side samples into kernel entries (sorted by time). Records written
/// while a sample was being taken (the recording's own faults, [`recording_faults`]) are
/// left out.
pub fn build(side: &[SideSample], names: &EventNames) -> Vec<Entry> {
    let mut p = Pairing {
        out: Vec::new(),
        open_fault: HashMap::default(),
        open_sys: HashMap::default(),
        open_irq: HashMap::default(),
        with_tracepoints: names.has_fault_tracepoints(),
    };
    for s in side.iter().filter(|s| !s.nested) {
        match names.kind(s.attr) {
            k @ (Kind::FaultUserEntry | Kind::FaultKernelEntry) => {
                let cause = if k == Kind::FaultUserEntry {
                    Cause::UserFault
                } else {
                    Cause::KernelFault
                };
                let mut e = entry(s, cause);
                // The tracepoint's first field is the faulting address.
                e.addr = s.payload.map(|a| a as u64);
                e.detail = None;
                p.open_fault.entry(s.thread).or_default().push(p.out.len());
                p.out.push(e);
            }
            k @ (Kind::MinorFault | Kind::MajorFault) => p.fault_done(s, k == Kind::MajorFault),
            Kind::SysEnter => {
                p.open_sys.insert(s.thread, p.out.len());
                p.out.push(entry(s, Cause::Syscall));
            }
            Kind::SysExit => {
                if let Some(e) = p.open_sys.remove(&s.thread).and_then(|i| p.out.get_mut(i)) {
                    e.duration_ns = Some(s.time_ns.saturating_sub(e.time_ns));
                }
            }
            k @ (Kind::IrqEntry | Kind::TimerEntry) => {
                p.open_irq
                    .insert((s.cpu, k == Kind::TimerEntry), p.out.len());
                let mut e = entry(s, Cause::Interrupt);
                if k == Kind::TimerEntry {
                    // Vectors and IRQ numbers overlap; the timer is told apart by sign.
                    e.detail = Some(-1);
                }
                p.out.push(e);
            }
            k @ (Kind::IrqExit | Kind::TimerExit) => {
                if let Some(e) = p
                    .open_irq
                    .remove(&(s.cpu, k == Kind::TimerExit))
                    .and_then(|i| p.out.get_mut(i))
                {
                    e.duration_ns = Some(s.time_ns.saturating_sub(e.time_ns));
                }
            }
            Kind::Switch => {
                let mut e = entry(s, Cause::ContextSwitch);
                e.detail = None;
                p.out.push(e);
            }
            Kind::Other => {}
        }
    }
    p.out
}

/// The entry a side sample opens (or is, when nothing closes it).
fn entry(s: &SideSample, cause: Cause) -> Entry {
    Entry {
        time_ns: s.time_ns,
        duration_ns: None,
        cause,
        major: false,
        completed: false,
        thread: s.thread,
        cpu: s.cpu,
        ip: if kernel_address(s.ip) { 0 } else { s.ip },
        stack: s.stack,
        addr: None,
        object: None,
        object_start: 0,
        object_end: 0,
        detail: s.payload,
    }
}

/// The entries so far, and those still open.
struct Pairing {
    out: Vec<Entry>,
    /// Fault entries nest: the cpu-clock sample's walk of the user stack, in the timer
    /// interrupt, can fault (in kernel mode) while a user fault is being handled, and such
    /// a fault never completes. So the open faults of a thread are a stack, and a closing
    /// fault event closes the innermost open fault of its own mode (a user IP closes a
    /// user-mode fault, a kernel IP a kernel-mode one); faults opened inside it that never
    /// completed are dropped from the stack. One slot per thread made the nested entry
    /// take the close and left the user fault untimed.
    open_fault: HashMap<u32, Vec<usize>>,
    open_sys: HashMap<u32, usize>,
    /// Interrupts nest with nothing of their own kind on one CPU, so one open entry per
    /// (CPU, kind) pairs them.
    open_irq: HashMap<(u32, bool), usize>,
    with_tracepoints: bool,
}

impl Pairing {
    /// A minor or major fault event: closes (and completes) the innermost open fault of
    /// its mode, or, without the tracepoints, is a fault entry of its own.
    fn fault_done(&mut self, s: &SideSample, major: bool) {
        let want = if kernel_address(s.ip) {
            Cause::KernelFault
        } else {
            Cause::UserFault
        };
        let out = &mut self.out;
        let opened = self.open_fault.get_mut(&s.thread).and_then(|stack| {
            let at = stack
                .iter()
                .rposition(|&i| out.get(i).is_some_and(|e| e.cause == want))
                .or_else(|| stack.len().checked_sub(1))?;
            let i = stack.get(at).copied();
            stack.truncate(at);
            i
        });
        let i = match opened {
            Some(i) => i,
            // Without the tracepoints every software fault event is an entry; with them,
            // a fault event without an open entry is one whose entry came before recording
            // started: counted by the tracepoint side only.
            None if self.with_tracepoints => return,
            None => {
                let cause = if kernel_address(s.ip) {
                    Cause::KernelFault
                } else {
                    Cause::UserFault
                };
                out.push(entry(s, cause));
                out.len() - 1
            }
        };
        let Some(e) = out.get_mut(i) else { return };
        if opened.is_some() {
            e.duration_ns = Some(s.time_ns.saturating_sub(e.time_ns));
        }
        e.major = major;
        e.completed = true;
        if !kernel_address(s.ip) {
            e.ip = s.ip;
        }
        e.stack = s.stack.or(e.stack);
        e.addr = s.addr.or(e.addr);
        if let Some(o) = &s.object {
            e.object = Some(o.name.clone());
            e.object_start = o.start;
            e.object_end = o.end;
        }
        e.detail = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(attr: u32, t: u64, thread: u32, ip: u64) -> SideSample {
        SideSample {
            attr,
            time_ns: t,
            thread,
            cpu: 0,
            ip,
            stack: None,
            addr: None,
            object: None,
            payload: None,
            nested: false,
            raw: None,
        }
    }

    #[test]
    fn faults_and_syscalls_pair_per_thread() {
        let names = EventNames::new(&[
            "cpu-clock".into(),
            "minor-faults".into(),
            "exceptions:page_fault_user".into(),
            "raw_syscalls:sys_enter".into(),
            "raw_syscalls:sys_exit".into(),
        ]);
        let mut f = side(1, 150, 1, 0x401000);
        f.addr = Some(0x7000);
        let v = vec![
            side(2, 100, 1, 0xffff_ffff_8100_0000),
            side(3, 110, 2, 0xffff_ffff_8100_0000),
            f,
            side(4, 400, 2, 0xffff_ffff_8100_0000),
        ];
        let e = build(&v, &names);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].cause, e[0].duration_ns, e[0].ip, e[0].addr),
            (Cause::UserFault, Some(50), 0x401000, Some(0x7000))
        );
        assert_eq!((e[1].cause, e[1].duration_ns), (Cause::Syscall, Some(290)));
    }

    /// A user fault interrupted by the timer, whose sample's user-stack walk faults in
    /// kernel mode and never completes: the fault event (user IP) closes the user fault.
    #[test]
    fn a_fault_nested_in_an_interrupt_does_not_take_the_outer_close() {
        let names = EventNames::new(&[
            "cpu-clock".into(),
            "minor-faults".into(),
            "exceptions:page_fault_user".into(),
            "exceptions:page_fault_kernel".into(),
        ]);
        let k = 0xffff_ffff_8100_0000;
        let v = vec![
            side(2, 100, 1, k),
            side(3, 120, 1, k),
            side(1, 150, 1, 0x401000),
        ];
        let e = build(&v, &names);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].cause, e[0].duration_ns, e[0].completed),
            (Cause::UserFault, Some(50), true)
        );
        assert_eq!(
            (e[1].cause, e[1].duration_ns, e[1].completed),
            (Cause::KernelFault, None, false)
        );
        // The same fault written inside the sample being taken is the recording's own.
        let mut own = side(3, 120, 1, k);
        own.nested = true;
        let v2 = vec![side(2, 100, 1, k), own, side(1, 150, 1, 0x401000)];
        assert_eq!(build(&v2, &names).len(), 1);
        assert_eq!(recording_faults(&v2, &names), 1);
        assert_eq!(recording_faults(&v, &names), 0);
        // A kernel-mode fault that completes (copy_to_user in a system call) still pairs.
        let v = vec![side(3, 100, 1, k), side(1, 130, 1, k)];
        assert_eq!(build(&v, &names)[0].duration_ns, Some(30));
    }
}
