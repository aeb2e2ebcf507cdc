//! Numeric constants of the perf ABI (values from the kernel's
//! `include/uapi/linux/perf_event.h` and perf's `util/header.h`, `lib/perf/include/perf/event.h`).
//! They are plain `u32`/`u64`/`u16` constants so they can be or-ed and masked directly.

// attr.type
/// perf_event_attr.type: generalised hardware event.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// perf_event_attr.type: software event (cpu-clock, task-clock, ...).
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// perf_event_attr.type: tracepoint.
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// perf_event_attr.type: generalised cache event.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// perf_event_attr.type: raw PMU event.
pub const PERF_TYPE_RAW: u32 = 4;
/// perf_event_attr.type: hardware breakpoint.
pub const PERF_TYPE_BREAKPOINT: u32 = 5;

// attr.sample_type bits, in the order the kernel writes the fields (except IDENTIFIER, first).
/// sample_type: instruction pointer.
pub const PERF_SAMPLE_IP: u64 = 1 << 0;
/// sample_type: pid and tid.
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
/// sample_type: time stamp.
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// sample_type: data address.
pub const PERF_SAMPLE_ADDR: u64 = 1 << 3;
/// sample_type: counter values (see read_format).
pub const PERF_SAMPLE_READ: u64 = 1 << 4;
/// sample_type: call chain.
pub const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// sample_type: event id.
pub const PERF_SAMPLE_ID: u64 = 1 << 6;
/// sample_type: cpu.
pub const PERF_SAMPLE_CPU: u64 = 1 << 7;
/// sample_type: period.
pub const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
/// sample_type: stream id.
pub const PERF_SAMPLE_STREAM_ID: u64 = 1 << 9;
/// sample_type: raw tracepoint/PMU data.
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;
/// sample_type: branch stack (LBR).
pub const PERF_SAMPLE_BRANCH_STACK: u64 = 1 << 11;
/// sample_type: user registers.
pub const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
/// sample_type: user stack dump.
pub const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
/// sample_type: weight.
pub const PERF_SAMPLE_WEIGHT: u64 = 1 << 14;
/// sample_type: data source.
pub const PERF_SAMPLE_DATA_SRC: u64 = 1 << 15;
/// sample_type: id at a fixed position (first in samples, last in sample_id trailers).
pub const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
/// sample_type: transaction flags.
pub const PERF_SAMPLE_TRANSACTION: u64 = 1 << 17;
/// sample_type: registers at interrupt.
pub const PERF_SAMPLE_REGS_INTR: u64 = 1 << 18;
/// sample_type: physical data address.
pub const PERF_SAMPLE_PHYS_ADDR: u64 = 1 << 19;
/// sample_type: AUX area sample.
pub const PERF_SAMPLE_AUX: u64 = 1 << 20;
/// sample_type: cgroup id.
pub const PERF_SAMPLE_CGROUP: u64 = 1 << 21;
/// sample_type: data page size.
pub const PERF_SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
/// sample_type: code page size.
pub const PERF_SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
/// sample_type: structured weight (same slot as WEIGHT).
pub const PERF_SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

// attr.branch_sample_type bits
/// Branch filter: user-mode branches.
pub const PERF_SAMPLE_BRANCH_USER: u64 = 1 << 0;
/// Branch filter: kernel branches.
pub const PERF_SAMPLE_BRANCH_KERNEL: u64 = 1 << 1;
/// Branch filter: hypervisor branches.
pub const PERF_SAMPLE_BRANCH_HV: u64 = 1 << 2;
/// Branch filter: any branch type.
pub const PERF_SAMPLE_BRANCH_ANY: u64 = 1 << 3;
/// Branch filter: any call.
pub const PERF_SAMPLE_BRANCH_ANY_CALL: u64 = 1 << 4;
/// Branch filter: any return.
pub const PERF_SAMPLE_BRANCH_ANY_RETURN: u64 = 1 << 5;
/// Branch filter: indirect calls.
pub const PERF_SAMPLE_BRANCH_IND_CALL: u64 = 1 << 6;
/// Branch filter: transaction aborts.
pub const PERF_SAMPLE_BRANCH_ABORT_TX: u64 = 1 << 7;
/// Branch filter: in transaction.
pub const PERF_SAMPLE_BRANCH_IN_TX: u64 = 1 << 8;
/// Branch filter: not in transaction.
pub const PERF_SAMPLE_BRANCH_NO_TX: u64 = 1 << 9;
/// Branch filter: conditional branches.
pub const PERF_SAMPLE_BRANCH_COND: u64 = 1 << 10;
/// Branch filter: call/return stack mode.
pub const PERF_SAMPLE_BRANCH_CALL_STACK: u64 = 1 << 11;
/// Branch filter: indirect jumps.
pub const PERF_SAMPLE_BRANCH_IND_JUMP: u64 = 1 << 12;
/// Branch filter: direct calls.
pub const PERF_SAMPLE_BRANCH_CALL: u64 = 1 << 13;
/// Branch option: no flags.
pub const PERF_SAMPLE_BRANCH_NO_FLAGS: u64 = 1 << 14;
/// Branch option: no cycle counts.
pub const PERF_SAMPLE_BRANCH_NO_CYCLES: u64 = 1 << 15;
/// Branch option: save branch type.
pub const PERF_SAMPLE_BRANCH_TYPE_SAVE: u64 = 1 << 16;
/// Branch option: a u64 hw_idx precedes the entries in each sample.
pub const PERF_SAMPLE_BRANCH_HW_INDEX: u64 = 1 << 17;
/// Branch option: save privilege level.
pub const PERF_SAMPLE_BRANCH_PRIV_SAVE: u64 = 1 << 18;
/// Branch option: nr u64 event counters follow the entries in each sample.
pub const PERF_SAMPLE_BRANCH_COUNTERS: u64 = 1 << 19;

// attr.read_format bits
/// read_format: time enabled.
pub const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// read_format: time running.
pub const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// read_format: id per value.
pub const PERF_FORMAT_ID: u64 = 1 << 2;
/// read_format: whole group.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// read_format: lost count per value.
pub const PERF_FORMAT_LOST: u64 = 1 << 4;

// Record types written by the kernel.
/// Record type: mmap.
pub const PERF_RECORD_MMAP: u32 = 1;
/// Record type: lost records.
pub const PERF_RECORD_LOST: u32 = 2;
/// Record type: comm (thread name).
pub const PERF_RECORD_COMM: u32 = 3;
/// Record type: exit.
pub const PERF_RECORD_EXIT: u32 = 4;
/// Record type: throttle.
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// Record type: unthrottle.
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
/// Record type: fork.
pub const PERF_RECORD_FORK: u32 = 7;
/// Record type: read.
pub const PERF_RECORD_READ: u32 = 8;
/// Record type: sample.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// Record type: mmap with inode or build id.
pub const PERF_RECORD_MMAP2: u32 = 10;
/// Record type: AUX area data available.
pub const PERF_RECORD_AUX: u32 = 11;
/// Record type: instruction trace start.
pub const PERF_RECORD_ITRACE_START: u32 = 12;
/// Record type: lost samples.
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;
/// Record type: context switch.
pub const PERF_RECORD_SWITCH: u32 = 14;
/// Record type: context switch, cpu-wide.
pub const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// Record type: namespaces.
pub const PERF_RECORD_NAMESPACES: u32 = 16;
/// Record type: kernel symbol.
pub const PERF_RECORD_KSYMBOL: u32 = 17;
/// Record type: BPF event.
pub const PERF_RECORD_BPF_EVENT: u32 = 18;
/// Record type: cgroup.
pub const PERF_RECORD_CGROUP: u32 = 19;
/// Record type: text poke.
pub const PERF_RECORD_TEXT_POKE: u32 = 20;
/// Record type: AUX output hardware id.
pub const PERF_RECORD_AUX_OUTPUT_HW_ID: u32 = 21;
// Record types synthesised by the perf tool (>= 64).
/// perf record type: attr (pipe mode).
pub const PERF_RECORD_HEADER_ATTR: u32 = 64;
/// perf record type: event type (pipe mode).
pub const PERF_RECORD_HEADER_EVENT_TYPE: u32 = 65;
/// perf record type: tracing data; a payload follows the record.
pub const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
/// perf record type: build id (pipe mode).
pub const PERF_RECORD_HEADER_BUILD_ID: u32 = 67;
/// perf record type: end of a flush round.
pub const PERF_RECORD_FINISHED_ROUND: u32 = 68;
/// perf record type: id index.
pub const PERF_RECORD_ID_INDEX: u32 = 69;
/// perf record type: auxtrace info.
pub const PERF_RECORD_AUXTRACE_INFO: u32 = 70;
/// perf record type: auxtrace data; a payload of `size` bytes follows the record.
pub const PERF_RECORD_AUXTRACE: u32 = 71;
/// perf record type: auxtrace error.
pub const PERF_RECORD_AUXTRACE_ERROR: u32 = 72;
/// perf record type: thread map.
pub const PERF_RECORD_THREAD_MAP: u32 = 73;
/// perf record type: cpu map.
pub const PERF_RECORD_CPU_MAP: u32 = 74;
/// perf record type: stat config.
pub const PERF_RECORD_STAT_CONFIG: u32 = 75;
/// perf record type: stat.
pub const PERF_RECORD_STAT: u32 = 76;
/// perf record type: stat round.
pub const PERF_RECORD_STAT_ROUND: u32 = 77;
/// perf record type: event update.
pub const PERF_RECORD_EVENT_UPDATE: u32 = 78;
/// perf record type: time conversion.
pub const PERF_RECORD_TIME_CONV: u32 = 79;
/// perf record type: header feature (pipe mode).
pub const PERF_RECORD_HEADER_FEATURE: u32 = 80;
/// perf record type: zstd-compressed records (`perf record -z`).
pub const PERF_RECORD_COMPRESSED: u32 = 81;
/// perf record type: end of synthesised initial records.
pub const PERF_RECORD_FINISHED_INIT: u32 = 82;
/// perf record type: zstd-compressed records, aligned variant.
pub const PERF_RECORD_COMPRESSED2: u32 = 83;

// header.misc
/// misc: mask of the cpu mode bits.
pub const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
/// misc cpu mode: unknown.
pub const PERF_RECORD_MISC_CPUMODE_UNKNOWN: u16 = 0;
/// misc cpu mode: kernel.
pub const PERF_RECORD_MISC_KERNEL: u16 = 1;
/// misc cpu mode: user.
pub const PERF_RECORD_MISC_USER: u16 = 2;
/// misc cpu mode: hypervisor.
pub const PERF_RECORD_MISC_HYPERVISOR: u16 = 3;
/// misc cpu mode: guest kernel.
pub const PERF_RECORD_MISC_GUEST_KERNEL: u16 = 4;
/// misc cpu mode: guest user.
pub const PERF_RECORD_MISC_GUEST_USER: u16 = 5;
/// misc (MMAP/MMAP2): a non-executable (data) mapping.
pub const PERF_RECORD_MISC_MMAP_DATA: u16 = 1 << 13;
/// misc (COMM): the name change comes from exec.
pub const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
/// misc (SWITCH): switch out.
pub const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// misc (SAMPLE): the IP is exact (precise event).
pub const PERF_RECORD_MISC_EXACT_IP: u16 = 1 << 14;
/// misc (MMAP2): the record carries a build id instead of inode data.
pub const PERF_RECORD_MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// misc (build id feature entries): the size byte is valid.
pub const PERF_RECORD_MISC_BUILD_ID_SIZE: u16 = 1 << 15;

// Feature bits of the file header (adds_features).
/// Feature: tracing data.
pub const HEADER_TRACING_DATA: u32 = 1;
/// Feature: build ids.
pub const HEADER_BUILD_ID: u32 = 2;
/// Feature: host name.
pub const HEADER_HOSTNAME: u32 = 3;
/// Feature: kernel release.
pub const HEADER_OSRELEASE: u32 = 4;
/// Feature: perf version.
pub const HEADER_VERSION: u32 = 5;
/// Feature: machine architecture.
pub const HEADER_ARCH: u32 = 6;
/// Feature: cpu counts.
pub const HEADER_NRCPUS: u32 = 7;
/// Feature: cpu description.
pub const HEADER_CPUDESC: u32 = 8;
/// Feature: cpuid string.
pub const HEADER_CPUID: u32 = 9;
/// Feature: total memory.
pub const HEADER_TOTAL_MEM: u32 = 10;
/// Feature: perf command line.
pub const HEADER_CMDLINE: u32 = 11;
/// Feature: event descriptions (names).
pub const HEADER_EVENT_DESC: u32 = 12;
/// Feature: cpu topology.
pub const HEADER_CPU_TOPOLOGY: u32 = 13;
/// Feature: NUMA topology.
pub const HEADER_NUMA_TOPOLOGY: u32 = 14;
/// Feature: branch stack present.
pub const HEADER_BRANCH_STACK: u32 = 15;
/// Feature: PMU mappings.
pub const HEADER_PMU_MAPPINGS: u32 = 16;
/// Feature: event groups.
pub const HEADER_GROUP_DESC: u32 = 17;
/// Feature: auxtrace index.
pub const HEADER_AUXTRACE: u32 = 18;
/// Feature: stat.
pub const HEADER_STAT: u32 = 19;
/// Feature: cache topology.
pub const HEADER_CACHE: u32 = 20;
/// Feature: sample time range.
pub const HEADER_SAMPLE_TIME: u32 = 21;
/// Feature: memory topology.
pub const HEADER_MEM_TOPOLOGY: u32 = 22;
/// Feature: clock id resolution.
pub const HEADER_CLOCKID: u32 = 23;
/// Feature: directory format.
pub const HEADER_DIR_FORMAT: u32 = 24;
/// Feature: BPF program info.
pub const HEADER_BPF_PROG_INFO: u32 = 25;
/// Feature: BPF BTF.
pub const HEADER_BPF_BTF: u32 = 26;
/// Feature: compression.
pub const HEADER_COMPRESSED: u32 = 27;
/// Feature: cpu PMU capabilities.
pub const HEADER_CPU_PMU_CAPS: u32 = 28;
/// Feature: clock data.
pub const HEADER_CLOCK_DATA: u32 = 29;
/// Feature: hybrid topology.
pub const HEADER_HYBRID_TOPOLOGY: u32 = 30;
/// Feature: PMU capabilities.
pub const HEADER_PMU_CAPS: u32 = 31;
