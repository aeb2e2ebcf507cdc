//! The converter: decoded perf records in, a symbolised [`Profile`] out.
//!
//! This is the one path for data: `kairos collect` writes a perf.data file and converts it
//! with this crate exactly as `kairos import` converts a file recorded by perf.
//!
//! Records are replayed in file order: COMM, FORK, EXIT and MMAP records keep a table of
//! processes and their mappings, and each sample's call chain is resolved against that
//! table at the moment it was taken. Symbolisation runs once per module at the end, over
//! the unique addresses only.

mod branches;
mod callchain;
mod classify;
mod frames;
mod overlap;
mod processes;
mod read_values;
pub mod side;
mod stack_cache;
mod elf_cache;
mod unwind;

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use kairos_model::{BranchKind, LossCounts, Mode, Profile, Sample, Thread, ThreadIdx};
use kairos_perf_data::{PerfFile, Record, PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_BRANCH_TYPE_SAVE};
use kairos_symbolize::{ModuleKey, Symbolizer, SymbolizerOptions};

pub use callchain::ChainEntry;
pub use overlap::{overlap, Overlap};
use branches::{PendingBranch, SampleBranches};
use classify::Classifier;
use elf_cache::ElfCache;
use frames::{RawFrame, RawStacks};
use processes::{Mapping, ProcessTable};
pub use side::SideSample;

/// What the converter needs besides the file.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    pub symbolizer: SymbolizerOptions,
    /// False when no kallsyms matches the recording's kernel (an import from another
    /// machine): kernel frames then stay unnamed rather than wrongly named.
    pub kernel_symbols: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions { symbolizer: SymbolizerOptions::default(), kernel_symbols: true }
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
pub fn convert(file: &PerfFile, opts: &ConvertOptions, on_progress: &mut dyn FnMut(Progress)) -> Converted {
    let mut state = State::new(opts, file);
    let total = file.data_size();
    let mut decode_error = None;
    let mut records = file.records();
    let mut n: u64 = 0;
    while let Some(record) = records.next() {
        match record {
            Ok(r) => state.record(r),
            Err(e) => {
                decode_error = Some(e.to_string());
                break;
            }
        }
        n += 1;
        if n % 65536 == 0 {
            on_progress(Progress { done: records.offset(), total });
        }
    }
    on_progress(Progress { done: total, total });
    state.finish(decode_error, file)
}

struct PendingSample {
    time_ns: u64,
    thread: ThreadIdx,
    cpu: u32,
    /// Raw stack node, resolved to a profile stack at the end.
    stack: Option<u32>,
    weight: u64,
    /// Index of the sample's event (its attr).
    event: u16,
    /// The branch stack, when the sample has one (possibly empty: nr = 0).
    branches: Option<Vec<PendingBranch>>,
}

struct State {
    table: ProcessTable,
    raw: RawStacks,
    elves: ElfCache,
    symbolizer: Symbolizer,
    threads: Vec<Thread>,
    thread_index: HashMap<(i32, i32), ThreadIdx>,
    samples: Vec<PendingSample>,
    losses: LossCounts,
    unwinder: unwind::DwarfUnwinder,
    notes: Vec<String>,
    kernel_module: Option<u32>,
    kernel_symbols: bool,
    stack_cache: stack_cache::StackCache,
    perf_maps: PerfMaps,
    classifier: Classifier,
    /// branch_sample_type of each attr, by attr index.
    branch_sample_types: Vec<u64>,
    /// Whether each attr's samples are also side samples (kernel entries of a timer profile).
    side_attrs: Vec<bool>,
    side: Vec<side::PendingSide>,
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
            table: ProcessTable::default(),
            raw: RawStacks::default(),
            elves: ElfCache::new(opts.symbolizer.symfs.clone()),
            symbolizer: Symbolizer::new(opts.symbolizer.clone()),
            threads: Vec::new(),
            thread_index: HashMap::default(),
            samples: Vec::new(),
            losses: LossCounts::default(),
            unwinder: unwind::DwarfUnwinder::new(file.features().arch.as_deref()),
            notes: Vec::new(),
            kernel_module: None,
            kernel_symbols: opts.kernel_symbols,
            stack_cache: stack_cache::StackCache::default(),
            perf_maps: PerfMaps::new(opts.symbolizer.perf_map_dirs.clone()),
            classifier: Classifier::default(),
            branch_sample_types: file.attrs().iter().map(|a| a.attr.branch_sample_type).collect(),
            side_attrs: side::side_attrs(file),
            side: Vec::new(),
            fixed_periods: file.attrs().iter().map(|a| a.attr.sample_period().filter(|&p| p > 0)).collect(),
            guest_samples: 0,
            unattributed_samples: 0,
            read_deltas: read_values::ReadDeltas::new(file),
        }
    }

    fn record(&mut self, record: Record<'_>) {
        // Mappings may change: cached chain -> stack conversions are no longer safe.
        if matches!(record, Record::Mmap(_) | Record::Fork(_) | Record::Comm(_)) {
            self.stack_cache.clear();
        }
        match record {
            Record::Sample(s) => self.sample(&s),
            Record::Comm(c) => {
                if c.exec {
                    self.unwinder.exec(c.pid);
                }
                self.table.comm(c.pid, c.tid, &c.comm, c.exec)
            }
            Record::Fork(f) => {
                self.unwinder.fork(f.pid, f.ppid);
                self.table.fork(f.pid, f.tid, f.ppid, f.ptid)
            }
            Record::Mmap(m) => {
                let kernel = m.misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
                let mapping = Mapping {
                    start: m.start,
                    end: m.start.saturating_add(m.len),
                    pgoff: m.pgoff,
                    path: m.filename.clone(),
                    build_id: m.build_id.as_ref().map(|b| hex(b)),
                };
                if !kernel {
                    // MMAP2 says PROT_EXEC; plain MMAP only flags non-code maps (mmap_data).
                    let executable = m.prot.map_or(!m.is_data(), |p| p & PROT_EXEC != 0);
                    self.unwinder.mmap(m.pid, executable, &mapping, &mut self.elves);
                }
                self.table.mmap(m.pid, kernel, mapping);
            }
            Record::Lost(l) => self.losses.lost_records += l.lost,
            Record::LostSamples(l) => self.losses.lost_samples += l.lost,
            Record::Throttle(_) => self.losses.throttled += 1,
            Record::Other { record_type: kairos_perf_data::PERF_RECORD_SAMPLE, .. } => self.unattributed_samples += 1,
            _ => {}
        }
    }

    fn thread(&mut self, pid: i32, tid: i32) -> ThreadIdx {
        if let Some(&i) = self.thread_index.get(&(pid, tid)) {
            return i;
        }
        let i = self.threads.len() as ThreadIdx;
        self.threads.push(Thread { pid, tid, name: String::new(), process_name: String::new() });
        self.thread_index.insert((pid, tid), i);
        i
    }

    fn sample(&mut self, s: &kairos_perf_data::Sample<'_>) {
        if matches!(s.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_GUEST_KERNEL | PERF_RECORD_MISC_GUEST_USER) {
            // The guest's processes and binaries are not in this recording.
            self.guest_samples += 1;
            return;
        }
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        let mut chain = callchain::split(s.callchain.as_deref().unwrap_or(&[]), s.ip.unwrap_or(0), mode_of(s.misc));
        if let (Some(regs), Some(stack)) = (s.regs_user.as_ref(), s.stack_user) {
            // Only the first dyn_size bytes were copied; the rest of the buffer is padding.
            let valid = s.stack_user_dyn_size.map_or(stack.len(), |n| usize::try_from(n).unwrap_or(usize::MAX).min(stack.len()));
            self.unwinder.unwind(pid, regs, &stack[..valid], &mut chain);
        }
        let stack = match self.stack_cache.get(pid, &chain) {
            Some(node) => node,
            None => {
                let ids: Vec<u32> = chain.iter().rev().map(|e| self.raw_frame(pid, e)).collect();
                let node = self.raw.stack(ids);
                self.stack_cache.insert_last(node);
                node
            }
        };
        let thread = self.thread(pid, tid);
        if self.side_attrs.get(s.attr_index).copied().unwrap_or(false) {
            let object = s.addr.map(|a| side::object_of(&self.table, pid, a));
            self.side.push(side::PendingSide::new(s, thread, stack, object));
        }
        // Without PERIOD in the sample (`-c N`), every sample stands for the attr's period.
        let fixed = self.fixed_periods.get(s.attr_index).copied().flatten();
        let mut branches = s.branch_stack.as_ref().map(|bs| {
            let bst = self.branch_sample_types.get(s.attr_index).copied().unwrap_or(0);
            bs.entries.iter().map(|e| self.branch(pid, bst, e)).collect()
        });
        let weights = match self.read_deltas.split(s) {
            read_values::Split::Plain => vec![(s.attr_index, s.period.or(fixed).unwrap_or(1))],
            read_values::Split::Values { values, unknown } => {
                self.unattributed_samples += unknown;
                values
            }
        };
        for (attr, weight) in weights {
            self.samples.push(PendingSample {
                time_ns: s.time.unwrap_or(0),
                thread,
                cpu: s.cpu.unwrap_or(0),
                stack,
                weight,
                event: u16::try_from(attr).unwrap_or(u16::MAX),
                // The branch stack belongs to the event that took the sample.
                branches: if attr == s.attr_index { branches.take() } else { None },
            });
        }
    }

    /// One branch entry: its FROM and TO resolved like stack addresses (they are
    /// instruction addresses, not return addresses), and its kind from the saved type or
    /// from the instruction at FROM.
    fn branch(&mut self, pid: i32, bst: u64, e: &kairos_perf_data::BranchEntry) -> PendingBranch {
        let saved = if bst & PERF_SAMPLE_BRANCH_TYPE_SAVE != 0 { classify::from_type(e.flags.branch_type()) } else { None };
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
        let mode = if (address as i64) < 0 { Mode::Kernel } else { Mode::User };
        let id = self.raw_frame(pid, &ChainEntry { address, mode, is_return_address: false });
        self.raw.has_module(id).then_some(id)
    }

    fn decode_kind_at(&mut self, pid: i32, address: u64) -> BranchKind {
        if (address as i64) < 0 {
            return BranchKind::Unknown; // kernel code: no binary to read
        }
        let Some(map) = self.table.find(pid, false, address) else { return BranchKind::Unknown };
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

    fn raw_frame(&mut self, pid: i32, e: &ChainEntry) -> u32 {
        let kernel = e.mode == Mode::Kernel;
        let mut f = RawFrame {
            module: None,
            module_offset: e.address,
            address: e.address,
            mode: e.mode,
            is_return_address: e.is_return_address,
        };
        if kernel {
            let key = if self.kernel_symbols { ModuleKey::Kernel } else { ModuleKey::Anonymous };
            let m = *self.kernel_module.get_or_insert_with(|| self.raw.module("[kernel.kallsyms]", None, key));
            f.module = Some(m);
        } else if let Some(map) = self.table.find(pid, false, e.address) {
            let (module, offset) = resolve_user(&mut self.raw, &mut self.elves, &mut self.perf_maps, pid, map, e.address);
            f.module = Some(module);
            f.module_offset = offset;
        }
        self.raw.frame(f)
    }

    fn finish(mut self, decode_error: Option<String>, file: &PerfFile) -> Converted {
        let mut profile = Profile::default();
        let leaves: Vec<u32> = self
            .samples
            .iter()
            .flat_map(|p| p.branches.iter().flatten())
            .flat_map(|b| [b.from_raw, b.to_raw])
            .flatten()
            .collect();
        let (mapped, leaf_frames) = std::mem::take(&mut self.raw).finish(&mut self.symbolizer, &mut profile, &leaves);
        for t in &mut self.threads {
            t.name = self.table.thread_name(t.tid).unwrap_or("").to_string();
            t.process_name = self.table.thread_name(t.pid).unwrap_or(&t.name).to_string();
            if t.name.is_empty() {
                // pid/tid 0 is the idle task, which never gets a COMM record.
                t.name = if t.tid == 0 { "swapper".into() } else { format!("[tid {}]", t.tid) };
            }
            if t.pid == 0 && t.process_name.is_empty() {
                t.process_name = "swapper".into();
            }
            if t.process_name.is_empty() {
                t.process_name = format!("[pid {}]", t.pid);
            }
        }
        profile.threads = self.threads;
        // Records of different CPUs interleave; analyses want time order (stable, so
        // samples of equal time keep file order).
        let mut pending = self.samples;
        pending.sort_by_key(|p| p.time_ns);
        let mut sample_branches = Vec::new();
        if pending.iter().any(|p| p.event != 0) {
            profile.sample_events = pending.iter().map(|p| p.event).collect();
        }
        profile.samples = pending
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                if let Some(entries) = p.branches {
                    sample_branches.push((i as u32, SampleBranches { thread: p.thread, entries }));
                }
                Sample {
                    time_ns: p.time_ns,
                    thread: p.thread,
                    cpu: p.cpu,
                    stack: p.stack.and_then(|s| mapped.get(s as usize).copied()),
                    weight: p.weight,
                }
            })
            .collect();
        profile.losses = self.losses;
        let side_samples = side::finish(std::mem::take(&mut self.side), &mapped);
        let mut notes = self.notes;
        let branch_attr = file.attrs().iter().find(|a| a.attr.sample_type & PERF_SAMPLE_BRANCH_STACK != 0);
        if let Some(a) = branch_attr {
            let (records, info) =
                branches::assemble(sample_branches.into_iter(), &leaf_frames, branches::describe_filter(a.attr.branch_sample_type));
            if info.unclassified > 0 {
                notes.push(format!(
                    "{} of {} branch records could not be classified as call, return or other: the recording did not save branch types and the instruction at FROM could not be read (binary not at hand)",
                    info.unclassified,
                    records.len()
                ));
            }
            if info.overflowed_snapshots > 0 {
                notes.push(format!(
                    "{} branch snapshots share nothing with the previous one of their thread although the LBR was full: more branches happened between those samples than the LBR holds, so records were lost there",
                    info.overflowed_snapshots
                ));
            }
            profile.branches = records;
            profile.branch_info = Some(info);
        }
        notes.extend(self.symbolizer.notes());
        notes.extend(self.unwinder.notes());
        if self.guest_samples > 0 {
            notes.push(format!(
                "{} samples were taken while a virtual machine's guest ran; they are left out because the guest's programs are not in this recording (perf script leaves them out too; perf report counts them in its header total but lists no function for them)",
                self.guest_samples
            ));
        }
        if self.unattributed_samples > 0 {
            notes.push(format!(
                "{} samples carry a sample id that belongs to no event of the file and were left out (the file's attrs or id index are incomplete)",
                self.unattributed_samples
            ));
        }
        let events: Vec<String> = file.attrs().iter().map(|a| a.name.clone().unwrap_or_else(|| a.attr.event_name())).collect();
        profile.events = file.attrs().iter().zip(&events).map(|(a, name)| kairos_model::EventDef { name: name.clone(), time: is_timer(&a.attr) }).collect();
        let default = profile.default_event() as usize;
        profile.weight_event = profile.events.get(default).filter(|e| !e.time).map(|e| e.name.clone());
        let left_out = self.guest_samples + self.unattributed_samples;
        Converted { profile, decode_error, notes, events, side_samples, left_out }
    }
}

/// Maps a user address to its module and ELF virtual address (or absolute address for
/// code covered by a perf map: JIT code in anonymous memory, and binaries that are gone
/// when a perf-PID.map describes the process instead).
fn resolve_user(raw: &mut RawStacks, elves: &mut ElfCache, perf_maps: &mut PerfMaps, pid: i32, map: &Mapping, addr: u64) -> (u32, u64) {
    let path = map.path.as_str();
    if is_anonymous(path) {
        let name = format!("[perf-{pid}.map]");
        let m = raw.module(&name, None, ModuleKey::PerfMap { pid });
        return (m, addr);
    }
    let file_offset = addr.wrapping_sub(map.start).wrapping_add(map.pgoff);
    let info = elves.get(path);
    if info.is_none() && !path.starts_with('[') && perf_maps.exists(pid) {
        let name = format!("{path} [perf-{pid}.map]");
        return (raw.module(&name, None, ModuleKey::PerfMap { pid }), addr);
    }
    let build_id = map.build_id.clone().or_else(|| info.and_then(|i| i.build_id.clone()));
    let vaddr = info.and_then(|i| kairos_symbolize::file_offset_to_elf_vaddr(i, file_offset)).unwrap_or(file_offset);
    let key = if path.starts_with('[') {
        ModuleKey::Anonymous
    } else {
        ModuleKey::Elf { path: path.to_string(), build_id: build_id.clone() }
    };
    (raw.module(path, build_id.as_deref(), key), vaddr)
}

/// Which processes have a perf map file, asked once per pid.
struct PerfMaps {
    dirs: Vec<std::path::PathBuf>,
    known: HashMap<i32, bool>,
}

impl PerfMaps {
    fn new(dirs: Vec<std::path::PathBuf>) -> Self {
        PerfMaps { dirs, known: HashMap::default() }
    }

    fn exists(&mut self, pid: i32) -> bool {
        let dirs = &self.dirs;
        *self.known.entry(pid).or_insert_with(|| dirs.iter().any(|d| d.join(format!("perf-{pid}.map")).is_file()))
    }
}

/// Timer events (cpu-clock, task-clock) have periods in nanoseconds; any other event's
/// weights are counts of that event.
pub fn is_timer(attr: &kairos_perf_data::EventAttr) -> bool {
    const CPU_CLOCK: u64 = 0;
    const TASK_CLOCK: u64 = 1;
    attr.type_ == kairos_perf_data::PERF_TYPE_SOFTWARE && matches!(attr.config, CPU_CLOCK | TASK_CLOCK)
}

fn is_anonymous(path: &str) -> bool {
    path.is_empty() || path.starts_with("//anon") || path.starts_with("[anon") || path.starts_with("/memfd:") || path == "[heap]" || path == "[stack]"
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads and converts a file in one go.
pub fn convert_path(path: &Path, opts: &ConvertOptions, on_progress: &mut dyn FnMut(Progress)) -> Result<Converted, kairos_perf_data::PerfDataError> {
    let file = PerfFile::open(path)?;
    Ok(convert(&file, opts, on_progress))
}
