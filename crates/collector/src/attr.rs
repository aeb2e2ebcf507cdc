//! Building the `perf_event_attr` of the sampling event, and the facts it depends on
//! (CPU frequency, perf_event_paranoid).

use perf_event_open_sys::bindings as b;

use crate::Unwinding;

/// The attr size we declare: PERF_ATTR_SIZE_VER7 (128 bytes). The bindings' struct is
/// VER8 (136, adds config3) but perf up to 6.2 refuses to read a perf.data whose attrs are
/// larger than its own, and we use nothing past VER7. The kernel accepts any known size.
pub const ATTR_SIZE: u32 = b::PERF_ATTR_SIZE_VER7;

/// Register mask perf uses for DWARF unwinding: every general register the user-space
/// unwinder may need (on x86_64 all of AX..R15 except the segment registers DS, ES, FS, GS,
/// which the kernel refuses to sample).
#[cfg(target_arch = "x86_64")]
pub const DWARF_REGS_MASK: u64 = ((1u64 << 24) - 1) & !(0xf << 12);
/// aarch64: x0..x30, sp, pc.
#[cfg(target_arch = "aarch64")]
pub const DWARF_REGS_MASK: u64 = (1u64 << 33) - 1;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const DWARF_REGS_MASK: u64 = 0;

/// Which counter drives sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// PERF_TYPE_HARDWARE / CPU_CYCLES; period in cycles.
    Cycles,
    /// PERF_TYPE_SOFTWARE / CPU_CLOCK (an hrtimer); period in ns.
    CpuClock,
    /// PERF_TYPE_SOFTWARE / DUMMY: never samples; carries the side-band records and owns
    /// the ring buffers when PMU events replace the timer (see `pmu`).
    Dummy,
}

impl EventKind {
    /// perf's name for the event, with its `:u` modifier when the kernel is excluded, so
    /// that `perf script` prints the same name perf would.
    pub fn name(self, include_kernel: bool) -> String {
        let base = match self {
            EventKind::Cycles => "cycles",
            EventKind::CpuClock => "cpu-clock",
            EventKind::Dummy => "dummy",
        };
        if include_kernel {
            base.to_string()
        } else {
            format!("{base}:u")
        }
    }
}

/// Everything the attr depends on.
#[derive(Debug, Clone, Copy)]
pub struct AttrSpec {
    pub kind: EventKind,
    pub period: u64,
    pub unwinding: Unwinding,
    pub include_kernel: bool,
    /// Follow children and new threads (launch and attach; not system-wide).
    pub inherit: bool,
    /// Armed by the exec of a launched program; otherwise enabled by ioctl.
    pub enable_on_exec: bool,
    /// Ring-buffer fill level (bytes) at which poll() wakes us.
    pub wakeup_bytes: u32,
    /// `branch_sample_type` of the branch stack (LBR) each sample carries; 0 for none.
    pub branch_sample_type: u64,
    /// MMAP records of data mappings too (to name the object of a data address).
    pub mmap_data: bool,
    /// PERF_RECORD_SWITCH records: when each task was switched out and back in.
    pub context_switch: bool,
    /// User registers every sample carries (a `PERF_REG_*` mask; 0 for none) besides those
    /// DWARF unwinding needs: address sampling decodes the sampled instruction with them.
    pub user_regs: u64,
}

/// User-mode calls and returns, the filter the LBR method needs (what
/// `perf record -j any_call,any_ret,u` sets). Cycles are not disabled (no NO_CYCLES), so
/// CPUs that measure them (Skylake and later, Arch LBR) report them.
pub const BRANCH_USER_CALL_RETURN: u64 = (b::PERF_SAMPLE_BRANCH_USER
    | b::PERF_SAMPLE_BRANCH_ANY_CALL
    | b::PERF_SAMPLE_BRANCH_ANY_RETURN) as u64;

/// Filters to try, best first; the kernel answers EINVAL/EOPNOTSUPP to what it or the CPU
/// lacks. HW_INDEX (kernel 5.7+) lets readers tell where the ring restarted; TYPE_SAVE
/// (4.14+) saves call/return types so no binary is needed to classify entries. The last
/// one, every user branch without a type filter, is what AMD Zen 3 BRS can do (the kernel
/// also wants its retired-taken-branches event there, which we do not choose yet).
pub const BRANCH_CANDIDATES: [u64; 4] = [
    BRANCH_USER_CALL_RETURN
        | b::PERF_SAMPLE_BRANCH_HW_INDEX as u64
        | b::PERF_SAMPLE_BRANCH_TYPE_SAVE as u64,
    BRANCH_USER_CALL_RETURN | b::PERF_SAMPLE_BRANCH_TYPE_SAVE as u64,
    BRANCH_USER_CALL_RETURN,
    (b::PERF_SAMPLE_BRANCH_USER | b::PERF_SAMPLE_BRANCH_ANY) as u64,
];

/// The fields of every sample, in the order the kernel writes them. IDENTIFIER first so a
/// reader can find the event of any record without knowing the layout.
pub fn sample_type(unwinding: Unwinding) -> u64 {
    let mut t = (b::PERF_SAMPLE_IDENTIFIER
        | b::PERF_SAMPLE_IP
        | b::PERF_SAMPLE_TID
        | b::PERF_SAMPLE_TIME
        | b::PERF_SAMPLE_CPU
        | b::PERF_SAMPLE_PERIOD
        | b::PERF_SAMPLE_CALLCHAIN) as u64;
    if let Unwinding::Dwarf { .. } = unwinding {
        t |= (b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER) as u64;
    }
    t
}

pub fn build(spec: &AttrSpec) -> b::perf_event_attr {
    // SAFETY: perf_event_attr is plain old data; all-zero is its documented default.
    let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
    a.size = ATTR_SIZE;
    match spec.kind {
        EventKind::Cycles => {
            a.type_ = b::PERF_TYPE_HARDWARE;
            a.config = b::PERF_COUNT_HW_CPU_CYCLES as u64;
        }
        EventKind::CpuClock => {
            a.type_ = b::PERF_TYPE_SOFTWARE;
            a.config = b::PERF_COUNT_SW_CPU_CLOCK as u64;
        }
        EventKind::Dummy => {
            a.type_ = b::PERF_TYPE_SOFTWARE;
            a.config = b::PERF_COUNT_SW_DUMMY as u64;
        }
    }
    a.__bindgen_anon_1.sample_period = spec.period.max(1);
    a.sample_type = sample_type(spec.unwinding);
    if spec.branch_sample_type != 0 {
        a.sample_type |= b::PERF_SAMPLE_BRANCH_STACK as u64;
        a.branch_sample_type = spec.branch_sample_type;
    }
    // Disabled at open: launch arms it at exec, attach/system-wide enable it once every
    // fd is open and mapped, so no sample is lost before its buffer exists.
    a.set_disabled(1);
    a.set_enable_on_exec(spec.enable_on_exec as u64);
    a.set_inherit(spec.inherit as u64);
    // Side-band records a symboliser needs: executable mappings (MMAP2 carries device and
    // inode to tell files apart), thread names including at exec, and fork/exit.
    a.set_mmap(1);
    a.set_mmap2(1);
    // Not attr.build_id: build ids are read from the mapped files (build_ids.rs says why).
    a.set_comm(1);
    a.set_comm_exec(1);
    a.set_task(1);
    // Side-band records carry pid/tid/time/cpu/id too, so they sort with the samples.
    a.set_sample_id_all(1);
    // CLOCK_MONOTONIC time stamps can be matched with other tools and with our own
    // synthesised records, unlike the default perf_clock.
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    if !spec.include_kernel {
        a.set_exclude_kernel(1);
        a.set_exclude_hv(1);
        a.set_exclude_callchain_kernel(1);
    }
    if let Unwinding::Dwarf { stack_bytes } = spec.unwinding {
        a.sample_regs_user = DWARF_REGS_MASK;
        // The kernel wants a multiple of 8, below 64 KiB.
        a.sample_stack_user = (stack_bytes.clamp(8, 65528) + 7) & !7;
        // As perf does: the user part of the stack comes from the DWARF unwinder over the
        // copied stack, so the kernel's frame-pointer walk of it is not recorded.
        a.set_exclude_callchain_user(1);
        // Non-executable mappings too: unwinders (perf's libunwind among them) find
        // .eh_frame_hdr through the read-only segment of each ELF file.
        a.set_mmap_data(1);
    }
    if spec.mmap_data {
        a.set_mmap_data(1);
    }
    if spec.user_regs != 0 {
        a.sample_type |= b::PERF_SAMPLE_REGS_USER as u64;
        a.sample_regs_user |= spec.user_regs;
    }
    if spec.context_switch {
        a.set_context_switch(1);
    }
    // Wake the poll loop at a fill level rather than at every sample (the loop also drains
    // on a timer, so this only bounds the latency of a burst).
    if spec.wakeup_bytes > 0 {
        a.set_watermark(1);
        a.__bindgen_anon_2.wakeup_watermark = spec.wakeup_bytes;
    }
    a
}

/// The bytes of the attr as the file stores them (its declared size).
pub fn attr_bytes(a: &b::perf_event_attr) -> Vec<u8> {
    let len = (a.size as usize).min(std::mem::size_of::<b::perf_event_attr>());
    // SAFETY: `a` is a valid, fully initialised repr(C) struct of at least `len` bytes.
    let s = unsafe { std::slice::from_raw_parts(a as *const b::perf_event_attr as *const u8, len) };
    s.to_vec()
}

/// kernel.perf_event_paranoid (2 on most distributions when unreadable).
pub fn paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2)
}

/// Whether kernel samples are allowed for us: root, CAP_PERFMON-like privilege is not
/// checked (rare), else paranoid <= 1.
pub fn kernel_permitted() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root || paranoid() <= 1
}

/// The CPU's nominal frequency in MHz, to turn a time interval into a cycle period:
/// the "@ 2.40GHz" of the model name (the nominal, not the current, frequency), else
/// cpufreq's base or maximum frequency, else the "cpu MHz" line.
pub fn nominal_mhz() -> Option<f64> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some(model) = cpuinfo.lines().find(|l| l.starts_with("model name")) {
        if let Some(at) = model.rfind('@') {
            let f = model[at + 1..].trim();
            if let Some(ghz) = f.strip_suffix("GHz") {
                if let Ok(v) = ghz.trim().parse::<f64>() {
                    return Some(v * 1000.0);
                }
            }
        }
    }
    for f in ["base_frequency", "cpuinfo_max_freq"] {
        let p = format!("/sys/devices/system/cpu/cpu0/cpufreq/{f}");
        if let Some(khz) = std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
        {
            return Some(khz / 1000.0);
        }
    }
    cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
}

/// The CPU model name, for the report and the CPUDESC feature.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwarf_mask_matches_perf() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(DWARF_REGS_MASK, 0xff0fff);
    }

    #[test]
    fn attr_is_ver7_sized_with_flags() {
        let a = build(&AttrSpec {
            kind: EventKind::CpuClock,
            period: 1_000_000,
            unwinding: Unwinding::Dwarf { stack_bytes: 8192 },
            include_kernel: false,
            inherit: true,
            enable_on_exec: true,
            wakeup_bytes: 4096,
            branch_sample_type: 0,
            mmap_data: false,
            context_switch: false,
            user_regs: 0,
        });
        assert_eq!(attr_bytes(&a).len(), 128);
        assert_eq!(a.sample_stack_user, 8192);
        assert_eq!(a.exclude_kernel(), 1);
        assert_eq!(a.sample_id_all(), 1);
        assert_eq!(
            a.sample_type & b::PERF_SAMPLE_STACK_USER as u64,
            b::PERF_SAMPLE_STACK_USER as u64
        );
        assert_eq!(a.sample_type & b::PERF_SAMPLE_BRANCH_STACK as u64, 0);
    }

    #[test]
    fn branch_stack_asks_for_user_calls_and_returns() {
        let a = build(&AttrSpec {
            kind: EventKind::Cycles,
            period: 1000,
            unwinding: Unwinding::FramePointers,
            include_kernel: false,
            inherit: true,
            enable_on_exec: true,
            wakeup_bytes: 0,
            branch_sample_type: BRANCH_CANDIDATES[0],
            mmap_data: false,
            context_switch: false,
            user_regs: 0,
        });
        assert_ne!(a.sample_type & b::PERF_SAMPLE_BRANCH_STACK as u64, 0);
        assert_eq!(
            a.branch_sample_type & BRANCH_USER_CALL_RETURN,
            BRANCH_USER_CALL_RETURN
        );
        assert_eq!(
            a.branch_sample_type & b::PERF_SAMPLE_BRANCH_NO_CYCLES as u64,
            0
        );
    }
}
