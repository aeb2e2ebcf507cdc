//! The converter: decoded perf records in, a symbolised [`Profile`] out.
//!
//! This is the one path for data: `kairos collect` writes a perf.data file and converts it
//! with this crate exactly as `kairos import` converts a file recorded by perf.
//!
//! Records are replayed in file order: COMM, FORK, EXIT and MMAP records keep a table of
//! processes and their mappings, and each sample's call chain is resolved against that
//! table at the moment it was taken. Symbolisation runs once per module at the end, over
//! the unique addresses only.

mod access;
mod background;
mod branches;
mod callchain;
mod chains;
mod classify;
mod code;
mod conversion;
mod data_symbols;
mod elf_cache;
mod finish;
mod frames;
mod ordered;
mod overlap;
mod processes;
mod read_values;
mod resolve;
pub mod side;
mod time_order;
mod tree;
mod unwind;

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use kairos_model::{BranchKind, LossCounts, Mode, Profile, Sample, Thread, ThreadIdx};
use kairos_perf_data::{
    Next, PerfFile, Record, PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_BRANCH_TYPE_SAVE,
};
use kairos_symbolize::SymbolizerOptions;

pub use access::{AccessSource, DataAccess};
use background::Part;
pub use background::{snapshot_kallsyms, Background, LastingSymbolizer};
use branches::{PendingBranch, SampleBranches};
pub use callchain::ChainEntry;
use classify::Classifier;
pub use conversion::Conversion;
pub use data_symbols::StaticVar;
use elf_cache::ElfCache;
use frames::RawStacks;
pub use overlap::{overlap, Overlap};
use processes::{Mapping, ProcessTable};
use resolve::{is_anonymous, PerfMaps};
pub use side::SideSample;

/// What the converter needs besides the file.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    pub symbolizer: SymbolizerOptions,
    /// False when no kallsyms matches the recording's kernel (an import from another
    /// machine): kernel frames then stay unnamed rather than wrongly named.
    pub kernel_symbols: bool,
    /// Keep each side sample's tracepoint payload (`SideSample::raw`), for analyses that
    /// read more than its first field (the scheduler's switch and wake-up events).
    pub keep_raw: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            symbolizer: SymbolizerOptions::default(),
            kernel_symbols: true,
            keep_raw: false,
        }
    }
}

/// The converted profile with what the user should know about how it was made.
#[derive(Debug)]
pub struct Converted {
    pub profile: Profile,
    /// Where decoding stopped early, with the file offset; what came before is kept.
    pub decode_error: Option<String>,
    /// Symbolisation and unwinding remarks (missing binaries, hidden kernel symbols...).
    pub notes: Vec<String>,
    /// Event names of the recording, in attr order.
    pub events: Vec<String>,
    /// Occurrences of the events that are not time samples (page faults, tracepoints)
    /// when the first event is a timer: see [`side::is_side_attr`]. Sorted by time.
    /// They are also in the profile's samples, under their own event.
    pub side_samples: Vec<SideSample>,
    /// Data accesses of samples that have a data address (PMU) or the user registers
    /// without a stack copy (address sampling), sorted by time; see [`access`].
    pub data_accesses: Vec<DataAccess>,
    /// Samples of those events that gave no address, by reason.
    pub unresolved_accesses: std::collections::BTreeMap<String, u64>,
    /// Samples of the file that are not in the profile (guest mode, unknown event); the
    /// notes say why.
    pub left_out: u64,
}

/// Progress of a conversion: bytes of the data section done and in all.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;
const PERF_RECORD_MISC_USER: u16 = 2;
const PERF_RECORD_MISC_HYPERVISOR: u16 = 3;
const PERF_RECORD_MISC_GUEST_KERNEL: u16 = 4;
const PERF_RECORD_MISC_GUEST_USER: u16 = 5;
const PROT_EXEC: u32 = 4;

fn mode_of(misc: u16) -> Mode {
    match misc & PERF_RECORD_MISC_CPUMODE_MASK {
        PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_GUEST_KERNEL => Mode::Kernel,
        PERF_RECORD_MISC_USER | PERF_RECORD_MISC_GUEST_USER => Mode::User,
        PERF_RECORD_MISC_HYPERVISOR => Mode::Hypervisor,
        _ => Mode::Unknown,
    }
}

/// Converts a whole perf.data file.
pub fn convert(
    file: &PerfFile,
    opts: &ConvertOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> Converted {
    convert_with(file, opts, &Background::default(), on_progress)
}

/// New frames are sent to the symbolising thread in batches of about this many.
const BATCH_FRAMES: usize = 2048;

/// [`convert`], with more work for the symbolising thread (see [`Background`]).
pub fn convert_with(
    file: &PerfFile,
    opts: &ConvertOptions,
    background: &Background,
    on_progress: &mut dyn FnMut(Progress),
) -> Converted {
    let mut state = State::new(opts, file);
    if let Some(lasting) = &background.lasting {
        return convert_lasting(state, file, opts, lasting, on_progress);
    }
    let (decode_error, symbols) = std::thread::scope(|scope| {
        let (to_worker, batches) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("kairos-symbolize".into())
            .spawn_scoped(scope, || {
                background::run(opts.symbolizer.clone(), Part::NotKernel, batches)
            });
        // Kernel symbols are read and indexed on a third thread meanwhile, after the copy
        // of /proc/kallsyms (which takes the kernel tens of milliseconds to print).
        let (to_kernel, kernel_batch) = std::sync::mpsc::channel();
        let snapshot = background.kallsyms_snapshot.as_deref();
        let kernel = std::thread::Builder::new()
            .name("kairos-kallsyms".into())
            .spawn_scoped(scope, move || {
                background::kernel(
                    opts.symbolizer.clone(),
                    snapshot,
                    opts.kernel_symbols,
                    kernel_batch,
                )
            });
        let decode_error = state.replay(file, on_progress, &mut |batch| {
            // Without a thread (it could not start, or it died) the batches wait for the end.
            to_worker.send(batch).map_err(|e| e.0)
        });
        let undelivered = to_worker.send(state.raw.take_batch()).is_err();
        drop(to_worker);
        let kernel_undelivered = to_kernel.send(state.raw.all_frames()).is_err();
        state.sort_samples();
        state.raw.build_tree();
        let worker = worker.map(|w| w.join());
        let kernel = kernel.map(|k| k.join());
        let symbols = match (
            worker,
            kernel,
            undelivered || kernel_undelivered || state.batch_lost,
        ) {
            (Ok(Ok(mut symbols)), Ok(Ok(kernel)), false) => {
                symbols.merge(kernel);
                symbols
            }
            // A thread failed: symbolise everything here, as it would have.
            _ => {
                let kallsyms = snapshot
                    .and_then(|dir| snapshot_kallsyms(dir).ok())
                    .or_else(|| opts.symbolizer.kallsyms.clone());
                let mut w = background::Worker::new(
                    SymbolizerOptions {
                        kallsyms,
                        ..opts.symbolizer.clone()
                    },
                    Part::All,
                );
                w.add(state.raw.all_frames());
                w.finish()
            }
        };
        (decode_error, symbols)
    });
    state.finish(decode_error, file, symbols)
}

/// [`convert_with`] on a lasting symboliser: every frame, the kernel's too, goes to its
/// one thread as records are decoded; if it is gone, the frames are symbolised here.
fn convert_lasting(
    mut state: State,
    file: &PerfFile,
    opts: &ConvertOptions,
    lasting: &background::LastingSymbolizer,
    on_progress: &mut dyn FnMut(Progress),
) -> Converted {
    let (to_worker, batches) = std::sync::mpsc::channel();
    let reply = lasting.submit(batches);
    let decode_error = state.replay(file, on_progress, &mut |batch| {
        to_worker.send(batch).map_err(|e| e.0)
    });
    let undelivered = to_worker.send(state.raw.take_batch()).is_err();
    drop(to_worker);
    state.sort_samples();
    state.raw.build_tree();
    let symbols = match reply.map(|r| r.recv()) {
        Some(Ok(symbols)) if !undelivered && !state.batch_lost => symbols,
        _ => {
            let mut w = background::Worker::new(opts.symbolizer.clone(), Part::All);
            w.add(state.raw.all_frames());
            w.finish()
        }
    };
    state.finish(decode_error, file, symbols)
}

/// Kept small (40 bytes): there is one per sample, and they are sorted by time.
#[derive(Clone, Copy)]
struct PendingSample {
    time_ns: u64,
    weight: u64,
    /// Raw stack node, resolved to a profile stack at the end.
    stack: Option<u32>,
    thread: ThreadIdx,
    cpu: u32,
    /// Index into `State::branch_stacks` when the sample has a branch stack (possibly
    /// empty: nr = 0), else `NO_BRANCHES`.
    branches: u32,
    /// Index of the sample's event (its attr).
    event: u16,
}

const NO_BRANCHES: u32 = u32::MAX;
struct State {
    /// A batch could not be sent to the symbolising thread (it failed).
    batch_lost: bool,
    /// Raw frames of branch records (leaves of no stack), in file order.
    leaves: Vec<u32>,
    table: ProcessTable,
    raw: RawStacks,
    elves: ElfCache,
    threads: Vec<Thread>,
    thread_index: HashMap<(i32, i32), ThreadIdx>,
    samples: Vec<PendingSample>,
    losses: LossCounts,
    unwinder: unwind::DwarfUnwinder,
    notes: Vec<String>,
    kernel_module: Option<u32>,
    kernel_symbols: bool,
    chains: chains::ChainCache,
    frame_cache: chains::FrameCache,
    generations: chains::Generations,
    /// Scratch buffers of the chain being converted.
    chain: Vec<ChainEntry>,
    ids: Vec<u32>,
    /// Last thread seen on a few CPUs: consecutive samples of a CPU are mostly of one thread.
    thread_memo: [Option<(i32, i32, ThreadIdx)>; 64],
    branch_stacks: Vec<Vec<PendingBranch>>,
    perf_maps: PerfMaps,
    classifier: Classifier,
    /// branch_sample_type of each attr, by attr index.
    branch_sample_types: Vec<u64>,
    /// Whether each attr's samples are also side samples (kernel entries of a timer profile).
    side_attrs: Vec<bool>,
    side: Vec<side::PendingSide>,
    /// Whether any attr gives side samples, and which of them nest in a sample.
    track_nesting: bool,
    keep_raw: bool,
    nesting: side::Nesting,
    access_attrs: Vec<Option<AccessSource>>,
    accesses: access::Accesses,
    /// The fixed period of each attr (`perf record -c N`), for samples without PERIOD.
    fixed_periods: Vec<Option<u64>>,
    /// Samples taken while a guest ran, left out as perf report does.
    guest_samples: u64,
    /// Samples whose id names no event of the file.
    unattributed_samples: u64,
    read_deltas: read_values::ReadDeltas,
}

impl State {
    fn new(opts: &ConvertOptions, file: &PerfFile) -> Self {
        State {
            batch_lost: false,
            leaves: Vec::new(),
            table: ProcessTable::default(),
            raw: RawStacks::default(),
            elves: ElfCache::new(&opts.symbolizer, Some(file)),
            threads: Vec::new(),
            thread_index: HashMap::default(),
            samples: Vec::new(),
            losses: LossCounts::default(),
            unwinder: unwind::DwarfUnwinder::new(file.features().arch.as_deref()),
            notes: Vec::new(),
            kernel_module: None,
            kernel_symbols: opts.kernel_symbols,
            chains: chains::ChainCache::default(),
            frame_cache: chains::FrameCache::default(),
            generations: chains::Generations::default(),
            chain: Vec::new(),
            ids: Vec::new(),
            thread_memo: [None; 64],
            branch_stacks: Vec::new(),
            perf_maps: PerfMaps::new(opts.symbolizer.perf_map_dirs.clone()),
            classifier: Classifier::default(),
            branch_sample_types: file
                .attrs()
                .iter()
                .map(|a| a.attr.branch_sample_type)
                .collect(),
            side_attrs: side::side_attrs(file),
            side: Vec::new(),
            track_nesting: side::side_attrs(file).iter().any(|&b| b),
            keep_raw: opts.keep_raw,
            nesting: side::Nesting::default(),
            access_attrs: access::access_attrs(file),
            accesses: access::Accesses::new(file),
            fixed_periods: file
                .attrs()
                .iter()
                .map(|a| a.attr.sample_period().filter(|&p| p > 0))
                .collect(),
            guest_samples: 0,
            unattributed_samples: 0,
            read_deltas: read_values::ReadDeltas::new(file),
        }
    }

    /// Replays every record of the file in time order (see [`ordered`]); returns where
    /// decoding stopped early. New frames go to `send` in batches.
    fn replay(
        &mut self,
        file: &PerfFile,
        on_progress: &mut dyn FnMut(Progress),
        send: &mut dyn FnMut(background::Batch) -> Result<(), background::Batch>,
    ) -> Option<String> {
        let total = file.data_size();
        let records = file.records();
        let mut look = records.clone();
        let mut order = ordered::Ordered::default();
        let mut n: u64 = 0;
        // One sample slot for the whole file: samples are decoded in place, not moved.
        let mut sample = kairos_perf_data::Sample::default();
        // Where a record failed to decode: it and everything after it in the file are left.
        let mut failed: Option<(usize, String)> = None;
        let end = loop {
            let ready = match order.next(&mut look) {
                ordered::Look::Ready(r) => r,
                ordered::Look::End { position } => break position,
            };
            for &pos in ready {
                self.replay_one(&records, pos, &mut sample, &mut failed);
            }
            n += 1;
            if n.is_multiple_of(4096) {
                // Pages before the oldest record still waiting may be given back.
                let keep = order.oldest_position().unwrap_or(look.record_position());
                file.reading_at(records.at(keep).offset());
                if n.is_multiple_of(65536) {
                    on_progress(Progress {
                        done: look.consumed(),
                        total,
                    });
                }
            }
            if self.raw.unsent_frames() >= BATCH_FRAMES && send(self.raw.take_batch()).is_err() {
                self.batch_lost = true;
            }
        };
        // The first look stops where records cannot be framed; the decoder says why (or
        // that the data simply ended).
        if let Some(Err(e)) = records.at(end).next_into(&mut sample) {
            if failed.as_ref().is_none_or(|f| end < f.0) {
                failed = Some((end, e.to_string()));
            }
        }
        for &pos in order.rest() {
            self.replay_one(&records, pos, &mut sample, &mut failed);
        }
        on_progress(Progress { done: total, total });
        failed.map(|f| f.1)
    }

    /// Decodes the record at `pos` and replays it, unless it lies at or after a record
    /// that failed; a failure is kept if it is the first in the file.
    fn replay_one<'a>(
        &mut self,
        records: &kairos_perf_data::Records<'a>,
        pos: usize,
        sample: &mut kairos_perf_data::Sample<'a>,
        failed: &mut Option<(usize, String)>,
    ) {
        if failed.as_ref().is_some_and(|f| pos >= f.0) {
            return;
        }
        match records.at(pos).next_into(sample) {
            Some(Ok(Next::Sample)) => self.sample(sample, Some(pos)),
            Some(Ok(Next::Record(r))) => self.record(*r),
            Some(Err(e)) => *failed = Some((pos, e.to_string())),
            None => {}
        }
    }

    fn record(&mut self, record: Record<'_>) {
        // Records that change a process's mappings give it a new generation, so that the
        // cached conversions of its chains and addresses no longer apply (chains.rs).
        match record {
            Record::Sample(s) => self.sample(&s, None),
            Record::Comm(c) => {
                if c.exec {
                    self.generations.bump(c.pid);
                    self.unwinder.exec(c.pid);
                }
                self.table.comm(c.pid, c.tid, &c.comm, c.exec)
            }
            Record::Fork(f) => {
                if f.pid != f.ppid {
                    self.generations.bump(f.pid);
                }
                self.unwinder.fork(f.pid, f.ppid);
                self.table.fork(f.pid, f.tid, f.ppid, f.ptid)
            }
            Record::Mmap(m) => {
                let kernel = m.misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
                // MMAP2 says PROT_EXEC; plain MMAP only flags non-code maps (mmap_data).
                let executable = kernel || m.prot.map_or(!m.is_data(), |p| p & PROT_EXEC != 0);
                let mapping = Mapping {
                    start: m.start,
                    end: m.start.saturating_add(m.len),
                    pgoff: m.pgoff,
                    path: m.filename.clone(),
                    build_id: m.build_id.as_ref().map(|b| hex(b)),
                    executable,
                };
                if !kernel {
                    self.generations.bump(m.pid);
                    self.unwinder
                        .mmap(m.pid, executable, &mapping, &mut self.elves);
                }
                self.table.mmap(m.pid, kernel, mapping);
            }
            // Counts from a damaged file can be anything: saturate rather than overflow.
            Record::Lost(l) => {
                self.losses.lost_records = self.losses.lost_records.saturating_add(l.lost)
            }
            Record::LostSamples(l) => {
                self.losses.lost_samples = self.losses.lost_samples.saturating_add(l.lost)
            }
            Record::Throttle(_) => self.losses.throttled += 1,
            Record::Other {
                record_type: kairos_perf_data::PERF_RECORD_SAMPLE,
                ..
            } => self.unattributed_samples += 1,
            _ => {}
        }
    }

    fn thread(&mut self, pid: i32, tid: i32, cpu: u32) -> ThreadIdx {
        let slot = cpu as usize % self.thread_memo.len();
        if let Some((p, t, i)) = self.thread_memo[slot] {
            if (p, t) == (pid, tid) {
                return i;
            }
        }
        let next = self.threads.len() as ThreadIdx;
        let i = *self.thread_index.entry((pid, tid)).or_insert(next);
        if i == next {
            self.threads.push(Thread {
                pid,
                tid,
                name: String::new(),
                process_name: String::new(),
            });
        }
        self.thread_memo[slot] = Some((pid, tid, i));
        i
    }

    /// `pos`: the record's position in the file, where known (for [`side::Nesting`]).
    fn sample(&mut self, s: &kairos_perf_data::Sample<'_>, pos: Option<usize>) {
        if matches!(
            s.misc & PERF_RECORD_MISC_CPUMODE_MASK,
            PERF_RECORD_MISC_GUEST_KERNEL | PERF_RECORD_MISC_GUEST_USER
        ) {
            // The guest's processes and binaries are not in this recording.
            self.guest_samples += 1;
            return;
        }
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        let stack = self.stack_of(s, pid);
        let cpu = s.cpu.unwrap_or(0);
        let thread = self.thread(pid, tid, cpu);
        // Only a recording with side samples has records that may nest in a sample.
        let nested = match pos {
            Some(pos) if self.track_nesting => self.nesting.nested(cpu, tid, pos),
            _ => false,
        };
        if self.side_attrs.get(s.attr_index).copied().unwrap_or(false) {
            let object = s.addr.map(|a| side::object_of(&self.table, pid, a));
            let mut pending = side::PendingSide::new(s, thread, stack, object, nested);
            if self.keep_raw {
                pending.keep_raw(s);
            }
            self.side.push(pending);
        }
        // Without PERIOD in the sample (`-c N`), every sample stands for the attr's period.
        let fixed = self.fixed_periods.get(s.attr_index).copied().flatten();
        if let Some(source) = self.access_attrs.get(s.attr_index).copied().flatten() {
            let period = s.period.or(fixed).unwrap_or(1);
            let cx = access::Context {
                table: &self.table,
                elves: &mut self.elves,
                pid,
                thread,
                raw_stack: stack,
                period,
            };
            self.accesses.sample(s, source, cx);
        }
        let mut branches = match &s.branch_stack {
            Some(bs) => {
                let bst = self
                    .branch_sample_types
                    .get(s.attr_index)
                    .copied()
                    .unwrap_or(0);
                let entries = bs
                    .entries
                    .iter()
                    .map(|e| self.branch(pid, bst, e))
                    .collect();
                self.branch_stacks.push(entries);
                (self.branch_stacks.len() - 1) as u32
            }
            None => NO_BRANCHES,
        };
        let mut push = |samples: &mut Vec<PendingSample>, attr: usize, weight: u64| {
            samples.push(PendingSample {
                time_ns: s.time.unwrap_or(0),
                thread,
                cpu,
                stack,
                weight,
                event: u16::try_from(attr).unwrap_or(u16::MAX),
                // The branch stack belongs to the event that took the sample.
                branches: if attr == s.attr_index {
                    std::mem::replace(&mut branches, NO_BRANCHES)
                } else {
                    NO_BRANCHES
                },
            });
        };
        match self.read_deltas.split(s) {
            read_values::Split::Plain => push(
                &mut self.samples,
                s.attr_index,
                s.period.or(fixed).unwrap_or(1),
            ),
            read_values::Split::Values { values, unknown } => {
                self.unattributed_samples += unknown;
                for (attr, weight) in values {
                    push(&mut self.samples, attr, weight);
                }
            }
        }
    }

    /// One branch entry: its FROM and TO resolved like stack addresses (they are
    /// instruction addresses, not return addresses), and its kind from the saved type or
    /// from the instruction at FROM.
    fn branch(&mut self, pid: i32, bst: u64, e: &kairos_perf_data::BranchEntry) -> PendingBranch {
        let saved = if bst & PERF_SAMPLE_BRANCH_TYPE_SAVE != 0 {
            classify::from_type(e.flags.branch_type())
        } else {
            None
        };
        let kind = saved.unwrap_or_else(|| self.decode_kind_at(pid, e.from));
        PendingBranch {
            from: e.from,
            to: e.to,
            from_raw: self.branch_frame(pid, e.from),
            to_raw: self.branch_frame(pid, e.to),
            kind,
            cycles: e.flags.cycles(),
            mispredicted: e.flags.mispred(),
        }
    }

    fn branch_frame(&mut self, pid: i32, address: u64) -> Option<u32> {
        if address == 0 {
            return None; // an LBR slot not yet filled
        }
        // x86_64 and aarch64 kernels live in the upper half of the address space.
        let mode = if (address as i64) < 0 {
            Mode::Kernel
        } else {
            Mode::User
        };
        let process = self.generations.key(pid);
        let id = self.frame_id(
            pid,
            process,
            &ChainEntry {
                address,
                mode,
                is_return_address: false,
            },
        );
        self.raw.has_module(id).then_some(id)
    }

    fn decode_kind_at(&mut self, pid: i32, address: u64) -> BranchKind {
        if (address as i64) < 0 {
            return BranchKind::Unknown; // kernel code: no binary to read
        }
        let Some(map) = self
            .table
            .find(pid, false, address)
            .filter(|m| m.executable)
        else {
            return BranchKind::Unknown;
        };
        if is_anonymous(&map.path) || map.path.starts_with('[') {
            return BranchKind::Unknown;
        }
        let offset = address.wrapping_sub(map.start).wrapping_add(map.pgoff);
        let path = map.path.clone();
        // A file on disk that is not the recorded binary (another version of the same
        // library) would give the wrong instruction.
        let recorded_id = map.build_id.clone();
        let on_disk_id = self.elves.get(&path).and_then(|i| i.build_id.clone());
        if matches!((&recorded_id, &on_disk_id), (Some(a), Some(b)) if a != b) {
            return BranchKind::Unknown;
        }
        self.classifier.classify(&mut self.elves, &path, offset)
    }

    /// Puts the samples in time order. Records of different CPUs interleave; analyses
    /// want time order (stable, so samples of equal time keep file order).
    fn sort_samples(&mut self) {
        // Branch addresses in file order, before the samples move.
        self.leaves = self
            .samples
            .iter()
            .filter_map(|p| self.branch_stacks.get(p.branches as usize))
            .flatten()
            .flat_map(|b| [b.from_raw, b.to_raw])
            .flatten()
            .collect();
        time_order::sort_by_time(&mut self.samples, |p| p.time_ns);
    }
}

/// Timer events (cpu-clock, task-clock) have periods in nanoseconds; any other event's
/// weights are counts of that event.
pub fn is_timer(attr: &kairos_perf_data::EventAttr) -> bool {
    const CPU_CLOCK: u64 = 0;
    const TASK_CLOCK: u64 = 1;
    attr.type_ == kairos_perf_data::PERF_TYPE_SOFTWARE
        && matches!(attr.config, CPU_CLOCK | TASK_CLOCK)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads and converts a file in one go.
pub fn convert_path(
    path: &Path,
    opts: &ConvertOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Converted, kairos_perf_data::PerfDataError> {
    let file = PerfFile::open(path)?;
    Ok(convert(&file, opts, on_progress))
}
