//! Data accesses: the data address of a sample, where the recording has one. Two kinds:
//! - PMU samples (PEBS, IBS: `ADDR` with `DATA_SRC`): the address, data source and
//!   weight as recorded;
//! - address sampling without a PMU: a timer sample with the user registers stopped the
//!   thread before the instruction at its IP ran; that instruction, read from the binary
//!   and decoded, with those registers, gives the address, size and direction.
//!
//! Each access is named by what held it when sampled: a static variable of a mapped
//! binary, else the mapping (heap blocks come from the allocation tracker, later).

use std::collections::BTreeMap;

use kairos_model::{StackIdx, ThreadIdx};
use kairos_perf_data::{
    PerfFile, PERF_SAMPLE_ADDR, PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_REGS_USER,
    PERF_SAMPLE_STACK_USER, PERF_SAMPLE_WEIGHT, PERF_SAMPLE_WEIGHT_STRUCT,
};
use kairos_x86_access::{
    Bitness, Direction, SegmentBases, Site, Unresolved, MAX_INSTRUCTION_BYTES,
};
use rustc_hash::FxHashMap as HashMap;

use crate::code::{CodeReader, EM_386, EM_X86_64};
use crate::data_symbols::{DataSymbols, StaticVar};
use crate::elf_cache::ElfCache;
use crate::processes::ProcessTable;
use crate::side::{object_of, with_stacks, MemoryObject, Stacked};

/// Where an access's address came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessSource {
    /// Decoded from the instruction and the sampled user registers; weight is time.
    Registers,
    /// Recorded by the PMU (PEBS, IBS); weight is latency.
    Pmu,
    /// Recorded by the kernel for a software event (page faults with `perf record -d`):
    /// the address only, no source, direction or latency; weight is the period.
    Event,
}

/// One sampled data access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataAccess {
    /// Index of the sample's attr in the file.
    pub attr: u32,
    pub time_ns: u64,
    pub thread: ThreadIdx,
    pub cpu: u32,
    pub ip: u64,
    pub stack: Option<StackIdx>,
    pub source: AccessSource,
    pub addr: u64,
    /// Bytes; 0 when the recording does not say (PMU).
    pub size: u32,
    /// None for PMU samples: their data source says (see kairos-mem-source).
    pub direction: Option<Direction>,
    /// The sample's period (ns for a timer), divided among the accesses of one instruction.
    pub period: u64,
    pub data_src: Option<u64>,
    /// Latency in cycles: WEIGHT, or the low 32 bits of WEIGHT_STRUCT (`var1_dw`).
    pub latency: Option<u64>,
    pub phys_addr: Option<u64>,
    /// The stack pointer (registers only), to tell the thread's own stack.
    pub sp: Option<u64>,
    /// The static variable holding `addr`, if any.
    pub static_var: Option<StaticVar>,
    /// The mapping holding `addr` when sampled.
    pub mapping: MemoryObject,
}

pub(crate) struct Pending {
    pub a: DataAccess,
    pub raw_stack: Option<u32>,
}

/// Per attr: what kind of accesses its samples give, if any. A timer that samples the
/// user registers without a stack copy (`perf record --user-regs`, `kairos collect
/// memory-access`) is address sampling; with a stack copy it is DWARF unwinding. A
/// timer's ADDR is always 0 (the kernel records no address for it; perf asks for ADDR
/// and DATA_SRC with `--call-graph dwarf` whatever the event), so it gives none there.
/// Whether the accesses make a memory recording is the memory-access analysis's call.
pub(crate) fn access_attrs(file: &PerfFile) -> Vec<Option<AccessSource>> {
    file.attrs()
        .iter()
        .map(|a| access_source(&a.attr))
        .collect()
}

/// What kind of accesses the samples of one attr give (see [`access_attrs`]).
fn access_source(attr: &kairos_perf_data::EventAttr) -> Option<AccessSource> {
    let st = attr.sample_type;
    let timer = crate::is_timer(attr);
    if st & PERF_SAMPLE_ADDR != 0 && st & PERF_SAMPLE_DATA_SRC != 0 && !timer {
        // `perf record -d` asks every event for both; only a PMU's samples fill the
        // source (and the weight with a latency).
        Some(if is_pmu(attr.type_) {
            AccessSource::Pmu
        } else {
            AccessSource::Event
        })
    } else if st & PERF_SAMPLE_REGS_USER != 0 && st & PERF_SAMPLE_STACK_USER == 0 && timer {
        Some(AccessSource::Registers)
    } else {
        None
    }
}

/// Whether events of this perf type come from a hardware PMU: all but the software,
/// tracepoint and breakpoint types (dynamic PMU types such as ibs_op are numbered after).
fn is_pmu(type_: u32) -> bool {
    use kairos_perf_data::{PERF_TYPE_BREAKPOINT, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
    !matches!(
        type_,
        PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT | PERF_TYPE_BREAKPOINT
    )
}

/// Decodes the accesses of samples, caching each decoded instruction.
pub(crate) struct Accesses {
    pub pending: Vec<Pending>,
    /// Per attr: the weight is a WEIGHT_STRUCT (latency in its low 32 bits).
    weight_struct: Vec<bool>,
    /// Samples that gave no address, by reason.
    pub unresolved: BTreeMap<String, u64>,
    code: CodeReader,
    statics: DataSymbols,
    instructions: HashMap<(String, u64), Result<Site, String>>,
}

/// The fields of a sample [`Accesses::sample`] needs, besides the perf sample itself.
pub(crate) struct Context<'a> {
    pub table: &'a ProcessTable,
    pub elves: &'a mut ElfCache,
    pub pid: i32,
    pub thread: ThreadIdx,
    pub raw_stack: Option<u32>,
    /// The sample's weight (its period, or the attr's fixed one).
    pub period: u64,
}

impl Accesses {
    pub fn new(file: &PerfFile) -> Self {
        let weight_struct = file
            .attrs()
            .iter()
            .map(|a| {
                a.attr.sample_type & PERF_SAMPLE_WEIGHT_STRUCT != 0
                    && a.attr.sample_type & PERF_SAMPLE_WEIGHT == 0
            })
            .collect();
        Accesses {
            pending: Vec::new(),
            weight_struct,
            unresolved: BTreeMap::new(),
            code: CodeReader::default(),
            statics: DataSymbols::default(),
            instructions: HashMap::default(),
        }
    }

    pub fn sample(
        &mut self,
        s: &kairos_perf_data::Sample<'_>,
        source: AccessSource,
        mut cx: Context<'_>,
    ) {
        let ip = s.ip.unwrap_or(0);
        let found = match source {
            AccessSource::Pmu | AccessSource::Event => s
                .addr
                .map(|a| vec![(a, 0, None)])
                .ok_or_else(|| "no data address in the sample".to_string()),
            AccessSource::Registers => self.decode(s, ip, &mut cx),
        };
        let list = match found {
            Ok(list) => list,
            Err(why) => {
                *self.unresolved.entry(why).or_default() += 1;
                return;
            }
        };
        if list.is_empty() {
            *self
                .unresolved
                .entry("the sampled instruction accesses no memory".into())
                .or_default() += 1;
            return;
        }
        let period = cx.period / list.len() as u64;
        for (addr, size, direction) in list {
            let static_var = self.static_var(&mut cx, addr);
            let a = DataAccess {
                attr: s.attr_index as u32,
                time_ns: s.time.unwrap_or(0),
                thread: cx.thread,
                cpu: s.cpu.unwrap_or(0),
                ip,
                stack: None,
                source,
                addr,
                size,
                direction,
                period,
                data_src: s.data_src,
                latency: s.weight.map(|w| {
                    if self
                        .weight_struct
                        .get(s.attr_index)
                        .copied()
                        .unwrap_or(false)
                    {
                        w & 0xffff_ffff
                    } else {
                        w
                    }
                }),
                phys_addr: s.phys_addr,
                sp: s.regs_user.as_ref().and_then(|r| r.get(7)),
                static_var,
                mapping: object_of(cx.table, cx.pid, addr),
            };
            self.pending.push(Pending {
                a,
                raw_stack: cx.raw_stack,
            });
        }
    }

    fn decode(
        &mut self,
        s: &kairos_perf_data::Sample<'_>,
        ip: u64,
        cx: &mut Context<'_>,
    ) -> Result<Vec<(u64, u32, Option<Direction>)>, String> {
        let regs = s
            .regs_user
            .as_ref()
            .filter(|r| r.abi != 0)
            .ok_or("no user registers (a kernel thread)")?;
        let m = cx
            .table
            .find(cx.pid, false, ip)
            .ok_or("the sampled IP is in no mapping")?;
        // Wrapping, as for code addresses elsewhere: a damaged MMAP can give any pgoff.
        let offset = ip.wrapping_sub(m.start).wrapping_add(m.pgoff);
        let key = (m.path.clone(), offset);
        if !self.instructions.contains_key(&key) {
            let site = self.site(cx, ip, offset);
            self.instructions.insert(key.clone(), site);
        }
        let site = match self.instructions.get(&key) {
            Some(Ok(i)) => i,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err("code not readable".into()),
        };
        let get = |i: u32| regs.get(i);
        let (accesses, _) = site
            .resolve(&get, &SegmentBases::default())
            .map_err(|e: Unresolved| e.to_string())?;
        Ok(accesses
            .into_iter()
            .map(|a| (a.addr, a.size, Some(a.direction)))
            .collect())
    }

    /// The sampled instruction and the one before it, from the function around `ip`
    /// (`offset`: ip's file offset), or the instruction alone where no symbol says where
    /// its function starts.
    fn site(&mut self, cx: &mut Context<'_>, ip: u64, offset: u64) -> Result<Site, String> {
        let m = cx
            .table
            .find(cx.pid, false, ip)
            .ok_or("the sampled IP is in no mapping")?;
        // Functions longer than this are not walked (the instruction alone is used).
        const LONGEST_WALK: u64 = 1 << 16;
        // The function's start as a file offset; a function that does not start inside
        // this mapping's file range (damaged symbols) is not walked.
        let function = self
            .statics
            .function(cx.elves, &mut self.code, m, ip)
            .filter(|f| {
                ip.wrapping_sub(f.start) < LONGEST_WALK && offset >= ip.wrapping_sub(f.start)
            });
        let (from, len) = match function {
            // To the function's end too: an overwritten address register's old value is
            // looked for along the whole function.
            Some(f) => (
                offset - ip.wrapping_sub(f.start),
                (ip.wrapping_sub(f.start) as usize + MAX_INSTRUCTION_BYTES)
                    .max(f.size.min(LONGEST_WALK) as usize),
            ),
            None => (offset, MAX_INSTRUCTION_BYTES),
        };
        let c = self
            .code
            .bytes_at(cx.elves, &m.path, from, len)
            .ok_or("code not readable (JIT, vDSO or missing binary)")?;
        if c.machine != EM_X86_64 && c.machine != EM_386 {
            return Err("not x86 code".into());
        }
        let bitness = if c.class64 {
            Bitness::B64
        } else {
            Bitness::B32
        };
        let site = match function {
            Some(f) => Site::decode(c.bytes, f.start, f.size, ip, bitness),
            None => Site::lone(c.bytes, ip, bitness),
        };
        site.map_err(|e| e.to_string())
    }

    fn static_var(&mut self, cx: &mut Context<'_>, addr: u64) -> Option<StaticVar> {
        // The binary's mapping holding addr, or (for .bss past the file) the one below it.
        let here = cx.table.find(cx.pid, false, addr);
        let below = cx
            .table
            .neighbours(cx.pid, here.map_or(addr, |m| m.start.saturating_sub(1)))
            .0;
        for m in here.into_iter().chain(below) {
            if let Some(v) = self.statics.find(cx.elves, &mut self.code, m, addr) {
                return Some(v);
            }
        }
        None
    }
}

impl Stacked for DataAccess {
    fn set_stack(&mut self, stack: Option<StackIdx>) {
        self.stack = stack;
    }
    fn time_ns(&self) -> u64 {
        self.time_ns
    }
}

/// Resolves raw stacks to the profile's and sorts by time.
pub(crate) fn finish(pending: Vec<Pending>, stacks: &[Option<StackIdx>]) -> Vec<DataAccess> {
    with_stacks(pending.into_iter().map(|p| (p.a, p.raw_stack)), stacks)
}

#[cfg(test)]
mod tests {
    use super::{access_source, is_pmu, AccessSource};
    use kairos_perf_data::{
        EventAttr, PERF_SAMPLE_ADDR, PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_REGS_USER,
        PERF_SAMPLE_STACK_USER, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE,
    };

    fn attr(type_: u32, config: u64, sample_type: u64) -> EventAttr {
        EventAttr {
            type_,
            config,
            sample_type,
            ..Default::default()
        }
    }

    #[test]
    fn a_timer_has_no_data_address_whatever_perf_asked_for() {
        // perf record --call-graph dwarf -e cpu-clock: ADDR and DATA_SRC come with the
        // registers and the stack copy; the kernel leaves ADDR 0 for a timer.
        let dwarf = PERF_SAMPLE_ADDR
            | PERF_SAMPLE_DATA_SRC
            | PERF_SAMPLE_REGS_USER
            | PERF_SAMPLE_STACK_USER;
        assert_eq!(access_source(&attr(PERF_TYPE_SOFTWARE, 0, dwarf)), None);
        // Registers without a stack copy are address sampling, with or without ADDR.
        let regs = PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_REGS_USER;
        assert_eq!(
            access_source(&attr(PERF_TYPE_SOFTWARE, 1, regs)),
            Some(AccessSource::Registers)
        );
        // A fault's address is the kernel's; a hardware event's is the PMU's.
        let d = PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC;
        assert_eq!(
            access_source(&attr(PERF_TYPE_SOFTWARE, 2, d)),
            Some(AccessSource::Event)
        );
        assert_eq!(
            access_source(&attr(PERF_TYPE_HARDWARE, 0, d)),
            Some(AccessSource::Pmu)
        );
        assert_eq!(access_source(&attr(PERF_TYPE_HARDWARE, 0, 0)), None);
    }

    #[test]
    fn only_hardware_types_are_pmus() {
        // hardware, hw-cache, raw and dynamic types (cpu, ibs_op, ...) are PMUs
        for t in [0, 3, 4, 6, 8, 11] {
            assert!(is_pmu(t), "type {t}");
        }
        // software (page-faults), tracepoint, breakpoint are not
        for t in [1, 2, 5] {
            assert!(!is_pmu(t), "type {t}");
        }
    }
}
