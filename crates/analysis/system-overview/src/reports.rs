//! The reports of a system-overview result. Each returns a kairos-report Document; the
//! CLI renders it as text, CSV or JSON.

use std::collections::{BTreeMap, HashSet};

use kairos_model::{Mode, Profile};
use kairos_report::{Cell, Column, Document, Section, Table};

use crate::kernel_time::{self, PathCost, ThreadKernelTime};
use crate::{Cause, Entry};

/// The first user frame of a stack, leaf first: for a fault, the faulting function; for
/// a syscall or a kernel-mode sample, the user function the kernel was entered from.
pub fn user_function(profile: &Profile, stack: Option<u32>) -> Option<(String, String)> {
    let (_, f) = profile
        .stack_frames(stack)
        .find(|(_, f)| f.mode == Mode::User)?;
    let module = f
        .module
        .and_then(|m| profile.modules.get(m as usize))
        .map(|m| m.path.rsplit('/').next().unwrap_or(&m.path).to_string())
        .unwrap_or_default();
    Some((f.function.clone(), module))
}

fn sample_is_kernel(profile: &Profile, s: &kairos_model::Sample) -> bool {
    profile
        .leaf_frame(s)
        .is_some_and(|f| f.mode == Mode::Kernel)
}

/// First time stamp of the result (samples or entries), the origin of report times.
fn origin(profile: &Profile, entries: &[Entry]) -> u64 {
    let a = profile.samples.first().map(|s| s.time_ns);
    let b = entries.first().map(|e| e.time_ns);
    a.into_iter().chain(b).min().unwrap_or(0)
}

fn end(profile: &Profile, entries: &[Entry]) -> u64 {
    let a = profile.samples.last().map(|s| s.time_ns);
    let b = entries
        .iter()
        .map(|e| e.time_ns + e.duration_ns.unwrap_or(0))
        .max();
    a.into_iter().chain(b).max().unwrap_or(0)
}

/// About 40 buckets over the run, whole milliseconds.
pub fn default_bucket_ns(profile: &Profile, entries: &[Entry]) -> u64 {
    let span = end(profile, entries).saturating_sub(origin(profile, entries));
    ((span / 40).div_ceil(1_000_000)).max(1) * 1_000_000
}

#[derive(Default, Clone, Copy)]
struct Tally {
    user_faults: u64,
    kernel_faults: u64,
    major: u64,
    completed: u64,
    syscalls: u64,
    irqs: u64,
    switches: u64,
    fault_ns: u64,
    sys_ns: u64,
    irq_ns: u64,
    cpu_ns: u64,
    kernel_cpu_ns: u64,
}

impl Tally {
    fn add(&mut self, e: &Entry) {
        let d = e.duration_ns.unwrap_or(0);
        match e.cause {
            Cause::UserFault => self.user_faults += 1,
            Cause::KernelFault => self.kernel_faults += 1,
            Cause::Syscall => self.syscalls += 1,
            Cause::Interrupt => self.irqs += 1,
            Cause::ContextSwitch => self.switches += 1,
        }
        match e.cause {
            Cause::UserFault | Cause::KernelFault => self.fault_ns += d,
            Cause::Syscall => self.sys_ns += d,
            Cause::Interrupt => self.irq_ns += d,
            Cause::ContextSwitch => {}
        }
        self.major += e.major as u64;
        self.completed += e.completed as u64;
    }
}

/// Measured kernel time of all threads inside [from, to).
fn kernel_within(kt: &BTreeMap<u32, ThreadKernelTime>, from: u64, to: u64) -> u64 {
    kt.values().map(|k| k.within(from, to)).sum()
}

fn pct(part: u64, whole: u64) -> Cell {
    if whole == 0 {
        Cell::Empty
    } else {
        Cell::Percent(100.0 * part as f64 / whole as f64)
    }
}

/// `summary`: kernel entries by cause and kernel-time share, overall and per thread.
/// `cost` is the per-entry time of the kernel's entry and exit paths measured at
/// collection (zero when unknown).
pub fn summary<K: AsRef<str>, V: AsRef<str>>(
    profile: &Profile,
    entries: &[Entry],
    cost: &PathCost,
    recording_faults: u64,
    meta: &[(K, V)],
) -> Document {
    let mut doc = Document::new("System overview");
    if !meta.is_empty() {
        let mut s = Section::new("Collection");
        for (k, v) in meta {
            s.push(k.as_ref(), Cell::text(v.as_ref()));
        }
        doc.push_section(s);
    }
    let (by_thread, all) = tally_by_thread(profile, entries);
    let ktime = kernel_time::per_thread(profile, entries, cost);
    let mut run = Section::new("Kernel entries");
    run.push(
        "Elapsed",
        Cell::ns(end(profile, entries).saturating_sub(origin(profile, entries))),
    );
    run.push("Page faults", Cell::UInt(all.completed));
    run.push(
        "Fault-handler entries from user mode",
        Cell::UInt(all.user_faults),
    );
    run.push(
        "Fault-handler entries from kernel mode",
        Cell::UInt(all.kernel_faults),
    );
    run.push("Major page faults", Cell::UInt(all.major));
    run.push(
        "Left out: faults of the recording's own stack walks",
        Cell::UInt(recording_faults),
    );
    run.push("System calls", Cell::UInt(all.syscalls));
    run.push("Interrupts", Cell::UInt(all.irqs));
    run.push("Context switches", Cell::UInt(all.switches));
    doc.push_section(run);
    doc.push_section(kernel_time_section(&all, cost, &ktime));
    doc.push_table(threads_table(profile, by_thread, &ktime));
    doc
}

/// Entries and CPU time (all, and in kernel mode) per thread and over all threads.
fn tally_by_thread(profile: &Profile, entries: &[Entry]) -> (BTreeMap<u32, Tally>, Tally) {
    let mut by_thread: BTreeMap<u32, Tally> = BTreeMap::new();
    let mut all = Tally::default();
    for e in entries {
        by_thread.entry(e.thread).or_default().add(e);
        all.add(e);
    }
    for s in &profile.samples {
        let k = sample_is_kernel(profile, s);
        for t in [by_thread.entry(s.thread).or_default(), &mut all] {
            t.cpu_ns += s.weight;
            if k {
                t.kernel_cpu_ns += s.weight;
            }
        }
    }
    (by_thread, all)
}

/// CPU time, the kernel's share sampled and measured, and what the measurement adds up.
fn kernel_time_section(
    all: &Tally,
    cost: &PathCost,
    ktime: &BTreeMap<u32, ThreadKernelTime>,
) -> Section {
    let all_measured: u64 = ktime.values().map(ThreadKernelTime::total_ns).sum();
    let all_paths: u64 = ktime.values().map(|k| k.paths_ns).sum();
    let mut kt = Section::new("Kernel time");
    kt.push("CPU time (cpu-clock samples)", Cell::ns(all.cpu_ns));
    kt.push(
        "Kernel share (samples in kernel mode)",
        pct(all.kernel_cpu_ns, all.cpu_ns),
    );
    kt.push("Page-fault handling (measured)", Cell::ns(all.fault_ns));
    kt.push("System calls (measured)", Cell::ns(all.sys_ns));
    kt.push("Interrupts (measured)", Cell::ns(all.irq_ns));
    let held: u64 = ktime.values().map(|k| k.paths.held_samples).sum();
    let sampled = ktime.values().any(|k| k.paths.sampled_ns.is_some());
    if cost.syscall_ns == 0 && cost.fault_ns == 0 && !sampled {
        kt.push("Entry and exit paths", Cell::text("not measured"));
    } else {
        kt.push("Entry and exit paths (estimated)", Cell::ns(all_paths));
        if cost.syscall_ns > 0 || cost.fault_ns > 0 {
            kt.push("  calibrated per system call", Cell::ns(cost.syscall_ns));
            kt.push("  calibrated per page fault", Cell::ns(cost.fault_ns));
        }
        if sampled {
            kt.push("  samples held back to the return", Cell::UInt(held));
        }
    }
    kt.push(
        "Kernel share (measured, of CPU time)",
        pct(all_measured, all.cpu_ns),
    );
    kt
}

/// Entries and kernel time per thread, the threads with the most entries first.
fn threads_table(
    profile: &Profile,
    by_thread: BTreeMap<u32, Tally>,
    ktime: &BTreeMap<u32, ThreadKernelTime>,
) -> Table {
    let measured = |t: Option<&ThreadKernelTime>| t.map_or(0, ThreadKernelTime::total_ns);
    let mut t = Table::new(vec![
        Column::left("Process"),
        Column::right("PID"),
        Column::right("TID"),
        Column::left("Thread"),
        Column::right("User faults"),
        Column::right("Kernel faults"),
        Column::right("Syscalls"),
        Column::right("Interrupts"),
        Column::right("Switches"),
        Column::right("Fault time"),
        Column::right("Syscall time"),
        Column::right("IRQ time"),
        Column::right("CPU time"),
        Column::right("Kernel sampled"),
        Column::right("Kernel measured"),
    ])
    .with_title("By process and thread");
    let mut rows: Vec<(u32, Tally)> = by_thread.into_iter().collect();
    rows.sort_by_key(|(_, t)| {
        std::cmp::Reverse(t.user_faults + t.kernel_faults + t.syscalls + t.irqs)
    });
    for (ti, x) in rows {
        let th = profile.threads.get(ti as usize);
        let k = measured(ktime.get(&ti));
        t.push_row(vec![
            Cell::text(th.map_or("?", |t| t.process_name.as_str())),
            th.map_or(Cell::Empty, |t| Cell::Int(t.pid as i64)),
            th.map_or(Cell::Empty, |t| Cell::Int(t.tid as i64)),
            Cell::text(th.map_or("?", |t| t.name.as_str())),
            Cell::UInt(x.user_faults),
            Cell::UInt(x.kernel_faults),
            Cell::UInt(x.syscalls),
            Cell::UInt(x.irqs),
            Cell::UInt(x.switches),
            Cell::ns(x.fault_ns),
            Cell::ns(x.sys_ns),
            Cell::ns(x.irq_ns),
            Cell::ns(x.cpu_ns),
            pct(x.kernel_cpu_ns, x.cpu_ns),
            pct(k, x.cpu_ns),
        ]);
    }
    t.push_note("Page faults: faults handle_mm_fault completed (minor-faults + major-faults), what `perf stat -e page-faults` counts; fault-handler entries (exceptions tracepoints) also include faults on kernel addresses and faults that end in an error.");
    t.push_note("Kernel sampled: share of cpu-clock samples taken in kernel mode. Kernel measured: page-fault, system-call and interrupt time, each measured from its entry to its exit event (overlaps counted once, time switched out left out), plus the kernel's way in and out around each fault and system call that no event times, estimated from the cost per entry calibrated at collection and from where the thread's own samples landed (a sample taken in user mode right where the kernel returned to was held back by the way out: kernel time), the two weighted by their uncertainty (a way out that ended in a preemption counted whole), as a share of the thread's CPU time.");
    t
}

/// `kernel-entries`: entries by cause per time bucket.
pub fn kernel_entries(
    profile: &Profile,
    entries: &[Entry],
    cost: &PathCost,
    bucket_ns: u64,
) -> Table {
    let t0 = origin(profile, entries);
    let bucket_ns = bucket_ns.max(1);
    let kt = kernel_time::per_thread(profile, entries, cost);
    let mut buckets: BTreeMap<u64, Tally> = BTreeMap::new();
    for e in entries {
        buckets
            .entry((e.time_ns.saturating_sub(t0)) / bucket_ns)
            .or_default()
            .add(e);
    }
    let mut t = Table::new(vec![
        Column::right("Start").with_unit("s"),
        Column::right("User faults"),
        Column::right("Kernel faults"),
        Column::right("Syscalls"),
        Column::right("Interrupts"),
        Column::right("Switches"),
        Column::right("Total"),
        Column::right("Time in kernel"),
    ])
    .with_title("Kernel entries by cause");
    for (b, x) in buckets {
        t.push_row(vec![
            Cell::float((b * bucket_ns) as f64 / 1e9, 3),
            Cell::UInt(x.user_faults),
            Cell::UInt(x.kernel_faults),
            Cell::UInt(x.syscalls),
            Cell::UInt(x.irqs),
            Cell::UInt(x.switches),
            Cell::UInt(x.user_faults + x.kernel_faults + x.syscalls + x.irqs),
            Cell::ns(kernel_within(
                &kt,
                t0 + b * bucket_ns,
                t0 + (b + 1) * bucket_ns,
            )),
        ]);
    }
    t
}

/// Faults of one function or one memory object.
#[derive(Default)]
struct FaultAcc {
    faults: u64,
    major: u64,
    ns: u64,
    pages: HashSet<u64>,
}

/// (function, module) of the faulting code.
type FaultFunctions = BTreeMap<(String, String), FaultAcc>;
/// (object, start, end) holding the faulting address.
type FaultObjects = BTreeMap<(String, u64, u64), FaultAcc>;

/// `page-faults`: faults by the function of the faulting code and by memory object.
pub fn page_faults(
    profile: &Profile,
    entries: &[Entry],
    recording_faults: u64,
    limit: Option<usize>,
) -> Document {
    let mut doc = Document::new("Page faults");
    let (by_fn, by_obj) = faults_by(profile, entries);
    let total: u64 = by_fn.values().map(|a| a.faults).sum();
    let n = limit.unwrap_or(usize::MAX);
    doc.push_table(functions_table(by_fn, total, n, recording_faults));
    doc.push_table(objects_table(by_obj, total, n));
    doc
}

/// The faults by function and by memory object.
fn faults_by(profile: &Profile, entries: &[Entry]) -> (FaultFunctions, FaultObjects) {
    let mut by_fn: FaultFunctions = BTreeMap::new();
    let mut by_obj: FaultObjects = BTreeMap::new();
    for e in entries.iter().filter(|e| e.cause.is_fault()) {
        let key =
            user_function(profile, e.stack).unwrap_or_else(|| ("[unknown]".into(), String::new()));
        let add = |a: &mut FaultAcc| {
            a.faults += 1;
            a.major += e.major as u64;
            a.ns += e.duration_ns.unwrap_or(0);
            if let Some(x) = e.addr {
                a.pages.insert(x >> 12);
            }
        };
        add(by_fn.entry(key).or_default());
        let obj = (
            e.object.clone().unwrap_or_else(|| "[unknown]".into()),
            e.object_start,
            e.object_end,
        );
        add(by_obj.entry(obj).or_default());
    }
    (by_fn, by_obj)
}

/// The `n` functions with the most faults.
fn functions_table(by_fn: FaultFunctions, total: u64, n: usize, recording_faults: u64) -> Table {
    let mut t = Table::new(vec![
        Column::left("Function"),
        Column::left("Module"),
        Column::right("Faults"),
        Column::right("Share"),
        Column::right("Major"),
        Column::right("Pages"),
        Column::right("Time"),
        Column::right("Mean"),
    ])
    .with_title("By function (of the faulting code)");
    let mut f: Vec<_> = by_fn.into_iter().collect();
    f.sort_by_key(|(_, a)| std::cmp::Reverse(a.faults));
    for ((func, module), a) in f.into_iter().take(n) {
        t.push_row(vec![
            Cell::text(func),
            Cell::text(module),
            Cell::UInt(a.faults),
            pct(a.faults, total),
            Cell::UInt(a.major),
            Cell::UInt(a.pages.len() as u64),
            Cell::ns(a.ns),
            Cell::ns(a.ns / a.faults.max(1)),
        ]);
    }
    if recording_faults > 0 {
        t.push_note(format!("{recording_faults} page faults taken while kairos read a sample's call stack are the recording's own and left out (the kernel's walk of the user stack ends on a frame pointer that leads nowhere, about once per sample)."));
    }
    t
}

/// The `n` memory objects with the most faults.
fn objects_table(by_obj: FaultObjects, total: u64, n: usize) -> Table {
    let mut t = Table::new(vec![
        Column::left("Object"),
        Column::left("Range"),
        Column::right("Size").with_unit("KiB"),
        Column::right("Faults"),
        Column::right("Share"),
        Column::right("Pages"),
        Column::right("Time"),
    ])
    .with_title("By memory object (the mapping holding the faulting address)");
    let mut o: Vec<_> = by_obj.into_iter().collect();
    o.sort_by_key(|(_, a)| std::cmp::Reverse(a.faults));
    for ((name, start, endv), a) in o.into_iter().take(n) {
        let bounded = endv != u64::MAX && endv > start;
        t.push_row(vec![
            Cell::text(name),
            Cell::text(if bounded {
                format!("{start:#x}-{endv:#x}")
            } else {
                String::new()
            }),
            if bounded {
                Cell::UInt((endv - start) / 1024)
            } else {
                Cell::Empty
            },
            Cell::UInt(a.faults),
            pct(a.faults, total),
            Cell::UInt(a.pages.len() as u64),
            Cell::ns(a.ns),
        ]);
    }
    t.push_note("[anon]: an anonymous mapping (malloc places blocks of 128 KiB and more in their own); [heap]: the brk heap; [stack]: above every mapping. Pages: distinct 4 KiB pages faulted.");
    t
}

/// `timeline`: rates per bucket and the longest interruptions of the hottest user function.
pub fn timeline(
    profile: &Profile,
    entries: &[Entry],
    cost: &PathCost,
    bucket_ns: u64,
    limit: Option<usize>,
) -> Document {
    let mut doc = Document::new("Timeline");
    let t0 = origin(profile, entries);
    let bucket_ns = bucket_ns.max(1);
    let kt = kernel_time::per_thread(profile, entries, cost);
    let mut buckets: BTreeMap<u64, Tally> = BTreeMap::new();
    for e in entries {
        buckets
            .entry(e.time_ns.saturating_sub(t0) / bucket_ns)
            .or_default()
            .add(e);
    }
    for s in &profile.samples {
        let b = buckets
            .entry(s.time_ns.saturating_sub(t0) / bucket_ns)
            .or_default();
        b.cpu_ns += s.weight;
        if sample_is_kernel(profile, s) {
            b.kernel_cpu_ns += s.weight;
        }
    }
    let per_s = |n: u64| Cell::float(n as f64 * 1e9 / bucket_ns as f64, 0);
    let mut t = Table::new(vec![
        Column::right("Start").with_unit("s"),
        Column::right("Faults/s"),
        Column::right("Syscalls/s"),
        Column::right("IRQs/s"),
        Column::right("Kernel sampled"),
        Column::right("Kernel measured"),
    ])
    .with_title(format!("Per {:.0} ms", bucket_ns as f64 / 1e6));
    for (b, x) in &buckets {
        t.push_row(vec![
            Cell::float((b * bucket_ns) as f64 / 1e9, 3),
            per_s(x.user_faults + x.kernel_faults),
            per_s(x.syscalls),
            per_s(x.irqs),
            pct(x.kernel_cpu_ns, x.cpu_ns),
            pct(
                kernel_within(&kt, t0 + b * bucket_ns, t0 + (b + 1) * bucket_ns),
                x.cpu_ns,
            ),
        ]);
    }
    doc.push_table(t);

    // The hottest user function: most CPU time in samples whose first user frame it is.
    let mut hot: BTreeMap<String, u64> = BTreeMap::new();
    for s in &profile.samples {
        if let Some((f, _)) = user_function(profile, s.stack) {
            *hot.entry(f).or_default() += s.weight;
        }
    }
    let Some((top, top_ns)) = hot.into_iter().max_by_key(|(_, w)| *w) else {
        return doc;
    };
    let mut gaps: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.cause != Cause::ContextSwitch && e.duration_ns.is_some())
        .filter(|e| user_function(profile, e.stack).is_some_and(|(f, _)| f == top))
        .collect();
    let total_gap: u64 = gaps.iter().map(|e| e.duration_ns.unwrap_or(0)).sum();
    gaps.sort_by_key(|e| std::cmp::Reverse(e.duration_ns));
    let mut g = Table::new(vec![
        Column::right("At").with_unit("s"),
        Column::left("Cause"),
        Column::right("Duration"),
        Column::left("Object"),
        Column::left("Address"),
    ])
    .with_title(format!(
        "Longest interruptions of {top} (the hottest user function)"
    ));
    for e in gaps.iter().take(limit.unwrap_or(10)) {
        g.push_row(vec![
            Cell::float(e.time_ns.saturating_sub(t0) as f64 / 1e9, 6),
            Cell::text(e.cause.as_str()),
            Cell::ns(e.duration_ns.unwrap_or(0)),
            Cell::text(e.object.clone().unwrap_or_default()),
            Cell::text(e.addr.map(|a| format!("{a:#x}")).unwrap_or_default()),
        ]);
    }
    g.push_note(format!(
        "{top} ran for {:.3} ms of CPU time and was interrupted {} times by page faults, system calls and interrupts, for {:.3} ms in all.",
        top_ns as f64 / 1e6,
        gaps.len(),
        total_gap as f64 / 1e6
    ));
    doc.push_table(g);
    doc
}
