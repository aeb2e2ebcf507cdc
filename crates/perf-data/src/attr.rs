//! `struct perf_event_attr` as recorded in the attrs section, read forward-compatibly:
//! each attr says its own size, fields beyond it are 0, bytes beyond what we know are
//! ignored (a newer perf's 136- or 152-byte attr still reads).

use crate::consts::*;
use crate::error::PerfDataError;
use crate::header::{FileHeader, FileSection};
use crate::reader::{le_u64, Cursor};

/// `PERF_ATTR_SIZE_VER0`: the size of the first ABI; `size == 0` in a file means this.
const ATTR_SIZE_VER0: usize = 64;
/// Size of the `{offset, size}` ids section that follows each attr in the attrs section.
const FILE_SECTION_SIZE: u64 = 16;

/// One recorded event: its attr, the sample ids the kernel gave its instances, and
/// its name from the EVENT_DESC feature when present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrEntry {
    /// The event's perf_event_attr.
    pub attr: EventAttr,
    /// The ids (PERF_SAMPLE_ID values) of this event's per-cpu/per-thread instances.
    pub ids: Vec<u64>,
    /// Event name (for example "cycles:u"), from the EVENT_DESC feature.
    pub name: Option<String>,
}

/// A decoded `perf_event_attr`. Fields past the recorded `size` are 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// Major type (`PERF_TYPE_*`).
    pub type_: u32,
    /// Size of the attr as recorded (0 in very old files means 64).
    pub size: u32,
    /// Type-specific event config.
    pub config: u64,
    /// Sample period, or frequency when [`EventAttr::freq`] is set.
    pub sample_period_or_freq: u64,
    /// `PERF_SAMPLE_*` bits: which fields each sample carries.
    pub sample_type: u64,
    /// `PERF_FORMAT_*` bits: layout of READ values.
    pub read_format: u64,
    /// The bit-field word (disabled, inherit, ..., sigtrap); see the accessors.
    pub flags: u64,
    /// wakeup_events or wakeup_watermark (by the `watermark` flag).
    pub wakeup: u32,
    /// Breakpoint type.
    pub bp_type: u32,
    /// bp_addr / kprobe_func / uprobe_path / config1.
    pub config1: u64,
    /// bp_len / kprobe_addr / probe_offset / config2.
    pub config2: u64,
    /// `PERF_SAMPLE_BRANCH_*` bits.
    pub branch_sample_type: u64,
    /// Mask of user registers dumped in REGS_USER.
    pub sample_regs_user: u64,
    /// Bytes of user stack dumped in STACK_USER.
    pub sample_stack_user: u32,
    /// Clock of the time stamps when `use_clockid` is set.
    pub clockid: i32,
    /// Mask of registers dumped in REGS_INTR.
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Maximum call chain depth.
    pub sample_max_stack: u16,
    /// AUX sample size.
    pub aux_sample_size: u32,
    /// Data for SIGTRAP.
    pub sig_data: u64,
    /// Extension of config2 (attr size >= 136).
    pub config3: u64,
}

macro_rules! flag_accessors {
    ($($(#[$m:meta])* $name:ident = $bit:expr;)*) => {
        $( $(#[$m])* pub fn $name(&self) -> bool { self.flags & (1u64 << $bit) != 0 } )*
    };
}

impl EventAttr {
    flag_accessors! {
        /// Off by default.
        disabled = 0;
        /// Children inherit it.
        inherit = 1;
        /// Must always be on the PMU.
        pinned = 2;
        /// Only group on the PMU.
        exclusive = 3;
        /// Does not count user mode.
        exclude_user = 4;
        /// Does not count kernel mode.
        exclude_kernel = 5;
        /// Does not count the hypervisor.
        exclude_hv = 6;
        /// Does not count when idle.
        exclude_idle = 7;
        /// Records executable mmaps.
        mmap = 8;
        /// Records comm changes.
        comm = 9;
        /// `sample_period_or_freq` is a frequency.
        freq = 10;
        /// Per-task counts.
        inherit_stat = 11;
        /// Enabled on exec.
        enable_on_exec = 12;
        /// Records fork/exit.
        task = 13;
        /// `wakeup` is a watermark in bytes.
        watermark = 14;
        /// Records data mmaps too.
        mmap_data = 17;
        /// Non-sample records carry a sample_id trailer.
        sample_id_all = 18;
        /// Does not count in the host.
        exclude_host = 19;
        /// Does not count in guests.
        exclude_guest = 20;
        /// No kernel call chains.
        exclude_callchain_kernel = 21;
        /// No user call chains.
        exclude_callchain_user = 22;
        /// Uses MMAP2 records.
        mmap2 = 23;
        /// COMM records flag exec.
        comm_exec = 24;
        /// Time stamps use `clockid`.
        use_clockid = 25;
        /// Records context switches.
        context_switch = 26;
        /// Ring buffer written backwards.
        write_backward = 27;
        /// Records namespaces.
        namespaces = 28;
        /// Records ksymbol events.
        ksymbol = 29;
        /// Records BPF events.
        bpf_event = 30;
        /// AUX output.
        aux_output = 31;
        /// Records cgroup events.
        cgroup = 32;
        /// Records text poke events.
        text_poke = 33;
        /// MMAP2 records carry build ids.
        build_id = 34;
        /// Inherit only to threads.
        inherit_thread = 35;
        /// Removed on exec.
        remove_on_exec = 36;
        /// Sends SIGTRAP.
        sigtrap = 37;
    }

    /// Skid constraint 0..=3 (the `:p` modifiers).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> 15) & 3) as u8
    }

    /// The sample period, or `None` in frequency mode.
    pub fn sample_period(&self) -> Option<u64> {
        (!self.freq()).then_some(self.sample_period_or_freq)
    }

    /// The sample frequency in Hz, or `None` in period mode.
    pub fn sample_freq(&self) -> Option<u64> {
        self.freq().then_some(self.sample_period_or_freq)
    }

    /// On a hybrid CPU (Alder Lake and later, big.LITTLE Arm) a hardware or hardware-cache
    /// event is opened once per core type, its config carrying that core type's PMU type
    /// in the upper 32 bits (the kernel's `PERF_PMU_TYPE_SHIFT`); None for any other
    /// event. PMU_MAPPINGS names the type (`cpu_core`, `cpu_atom`).
    pub fn hybrid_pmu_type(&self) -> Option<u32> {
        const PERF_PMU_TYPE_SHIFT: u32 = 32;
        matches!(self.type_, PERF_TYPE_HARDWARE | PERF_TYPE_HW_CACHE)
            .then_some((self.config >> PERF_PMU_TYPE_SHIFT) as u32)
            .filter(|&t| t != 0)
    }

    /// A perf-like name when the file has no EVENT_DESC (for example "cycles", "raw 0xc4").
    /// A hybrid event's core type is not part of it (see [`PerfFile`](crate::PerfFile)'s
    /// names).
    pub fn event_name(&self) -> String {
        const HW: [&str; 10] = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branches",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        const SW: [&str; 12] = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "dummy",
            "bpf-output",
            "cgroup-switches",
        ];
        let named = match self.type_ {
            PERF_TYPE_HARDWARE => usize::try_from(self.config & 0xffff_ffff)
                .ok()
                .and_then(|i| HW.get(i)),
            PERF_TYPE_SOFTWARE => usize::try_from(self.config).ok().and_then(|i| SW.get(i)),
            _ => None,
        };
        match (named, self.type_) {
            (Some(n), _) => (*n).to_string(),
            (None, PERF_TYPE_RAW) => format!("raw 0x{:x}", self.config),
            (None, PERF_TYPE_TRACEPOINT) => format!("tracepoint {}", self.config),
            (None, t) => format!("event {t}:0x{:x}", self.config),
        }
    }

    /// Decodes an attr from `bytes`, which hold at most the recorded size.
    pub(crate) fn parse(bytes: &[u8]) -> EventAttr {
        // Missing bytes read as 0: that is exactly the kernel's rule for older, shorter attrs.
        let u64_at = |off: usize| bytes.get(off..).map(le_u64).unwrap_or(0);
        let u32_at = |off: usize| u64_at(off) as u32;
        let u16_at = |off: usize| u64_at(off) as u16;
        EventAttr {
            type_: u32_at(0),
            size: u32_at(4),
            config: u64_at(8),
            sample_period_or_freq: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags: u64_at(40),
            wakeup: u32_at(48),
            bp_type: u32_at(52),
            config1: u64_at(56),
            config2: u64_at(64),
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
            aux_watermark: u32_at(104),
            sample_max_stack: u16_at(108),
            aux_sample_size: u32_at(112),
            sig_data: u64_at(120),
            config3: u64_at(128),
        }
    }

    /// Reads one attr at the start of `bytes` (of which at most `limit` belong to it)
    /// following its own size field; returns the attr and the bytes it occupies.
    pub(crate) fn parse_sized(bytes: &[u8], limit: usize) -> (EventAttr, usize) {
        let declared = bytes.get(4..8).map(le_u64).unwrap_or(0) as usize;
        let size = if declared == 0 {
            ATTR_SIZE_VER0
        } else {
            declared
        }
        .min(limit);
        let size = size.min(bytes.len());
        (EventAttr::parse(bytes.get(..size).unwrap_or(bytes)), size)
    }
}

/// Reads the attrs section: `attrs.size / attr_size` entries of `attr_size` bytes, each
/// an attr followed by an ids `{offset, size}` section.
pub(crate) fn parse_attrs(
    file: &[u8],
    header: &FileHeader,
) -> Result<Vec<AttrEntry>, PerfDataError> {
    let section = header.attrs.slice(file, "attrs section")?;
    if header.attr_size <= FILE_SECTION_SIZE || header.attr_size > (1 << 20) {
        return Err(PerfDataError::InvalidHeader(format!(
            "attr_size {} is impossible",
            header.attr_size
        )));
    }
    let stride = header.attr_size as usize;
    let mut out = Vec::new();
    for entry in section.chunks(stride) {
        if entry.len() < stride {
            return Err(PerfDataError::InvalidHeader(format!(
                "attrs section size {} is not a multiple of attr_size {stride}",
                header.attrs.size
            )));
        }
        // The ids section sits at the end of the entry: perf writes attr_size = sizeof(attr) + 16.
        let attr_room = stride - FILE_SECTION_SIZE as usize;
        let (attr, _) = EventAttr::parse_sized(entry, attr_room);
        let mut c = Cursor::new(entry.get(attr_room..).unwrap_or(&[]));
        let ids_section = FileSection::read(&mut c).unwrap_or_default();
        let ids_bytes = ids_section.slice(file, "attr ids")?;
        let ids = ids_bytes.chunks_exact(8).map(le_u64).collect();
        out.push(AttrEntry {
            attr,
            ids,
            name: None,
        });
    }
    if out.is_empty() {
        return Err(PerfDataError::InvalidHeader(
            "the file has no event attrs".into(),
        ));
    }
    Ok(out)
}
