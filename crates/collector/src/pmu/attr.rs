//! The perf_event_attr of a PMU event for one set of fallback settings.

use perf_event_open_sys::bindings as b;

use super::{PmuError, PmuEvent, PmuSampling};
use crate::attr::ATTR_SIZE;

/// Bits every PMU sample gets: IDENTIFIER first so readers find the event of any record
/// whatever its layout; IP, TID, TIME because the collector reads the time at a fixed
/// place; CPU so the trailer of side-band records matches the tracking event's.
pub const REQUIRED_SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_IDENTIFIER
    | b::PERF_SAMPLE_IP
    | b::PERF_SAMPLE_TID
    | b::PERF_SAMPLE_TIME
    | b::PERF_SAMPLE_CPU) as u64;

/// ID and STREAM_ID would change the sample_id trailer, which all attrs of one file share.
const TRAILER_BREAKERS: u64 = (b::PERF_SAMPLE_ID | b::PERF_SAMPLE_STREAM_ID) as u64;

/// One combination of the settings the open loop falls back over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Try {
    /// How far below each event's precise_ip (never below its precise_min).
    pub precise_drop: u8,
    /// Keep PERF_SAMPLE_PHYS_ADDR when asked for.
    pub phys_addr: bool,
    pub include_kernel: bool,
}

/// Where the event sits: group member or not, and how the target is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Role {
    /// A member is enabled and disabled with its leader: it starts enabled (counting only
    /// when the leader is) and has no enable_on_exec of its own.
    pub member: bool,
    pub inherit: bool,
    pub enable_on_exec: bool,
    /// In a group whose members are read at each sample.
    pub read_group: bool,
}

/// The precise_ip of `ev` under `t`.
pub(crate) fn precise_of(ev: &PmuEvent, t: &Try) -> u8 {
    let floor = ev.precise_min.min(ev.precise_ip);
    ev.precise_ip.saturating_sub(t.precise_drop).max(floor)
}

/// The attr for `ev` with settings `t`; `max_freq` caps a frequency.
pub(crate) fn build(
    ev: &PmuEvent,
    t: &Try,
    role: Role,
    max_freq: Option<u64>,
) -> Result<b::perf_event_attr, PmuError> {
    let bad = |why: String| PmuError::BadSpec {
        event: ev.name.clone(),
        why,
    };
    // SAFETY: perf_event_attr is plain old data; all-zero is its documented default.
    let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
    a.size = ATTR_SIZE;
    a.type_ = ev.type_;
    a.config = ev.config;
    a.__bindgen_anon_3.config1 = ev.config1;
    a.__bindgen_anon_4.config2 = ev.config2;
    if ev.config3 != 0 {
        // config3 sits past the VER7 end: the kernel would not read it from our attrs.
        if ATTR_SIZE < b::PERF_ATTR_SIZE_VER8 {
            return Err(bad(format!(
                "config3 {:#x} needs a {}-byte attr; the collector declares {}-byte attrs (perf up to 6.2 cannot read larger ones)",
                ev.config3,
                b::PERF_ATTR_SIZE_VER8,
                ATTR_SIZE
            )));
        }
        a.config3 = ev.config3;
    }
    a.set_precise_ip(precise_of(ev, t) as u64);
    let mut st = (ev.sample_type | REQUIRED_SAMPLE_TYPE) & !TRAILER_BREAKERS;
    if !t.phys_addr {
        st &= !(b::PERF_SAMPLE_PHYS_ADDR as u64);
    }
    a.sample_type = st;
    if role.read_group {
        a.sample_type |= b::PERF_SAMPLE_READ as u64;
        a.read_format = super::GROUP_READ_FORMAT;
    }
    match ev.sampling {
        PmuSampling::Period(0) | PmuSampling::Frequency(0) => {
            return Err(bad(
                "a zero period or frequency counts without sampling".into()
            ))
        }
        PmuSampling::Count if !role.member => {
            return Err(bad(
                "a counting event must follow a sampling one in its group".into(),
            ))
        }
        PmuSampling::Count => {}
        PmuSampling::Period(n) => a.__bindgen_anon_1.sample_period = n,
        PmuSampling::Frequency(hz) => {
            a.set_freq(1);
            a.__bindgen_anon_1.sample_freq = max_freq.map_or(hz, |m| hz.min(m.max(1)));
        }
    }
    // A leader starts disabled: armed at exec (launch) or by ioctl once every fd is
    // mapped, so nothing is sampled before its buffer exists.
    a.set_disabled((!role.member) as u64);
    a.set_enable_on_exec((role.enable_on_exec && !role.member) as u64);
    a.set_inherit(role.inherit as u64);
    // Side-band records come from the tracking event only; these carry the same
    // trailer and clock so records sort together (SET_OUTPUT also requires one clock).
    a.set_sample_id_all(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    if !t.include_kernel && !ev.no_exclude {
        a.set_exclude_kernel(1);
        a.set_exclude_hv(1);
        if st & b::PERF_SAMPLE_CALLCHAIN as u64 != 0 {
            a.set_exclude_callchain_kernel(1);
        }
    }
    Ok(a)
}

/// The name written to the file: perf's rule when it excludes the kernel itself is `u`
/// after a `/.../` or `:modifier` name, `:u` otherwise.
pub fn file_name(name: &str, kernel_excluded: bool) -> String {
    if !kernel_excluded {
        name.to_string()
    } else if name.contains('/') || name.contains(':') {
        format!("{name}u")
    } else {
        format!("{name}:u")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PmuEvent {
        // Skylake-SP's mem-loads as mem-source encodes it: raw event 0x1cd, ldlat in config1.
        PmuEvent {
            name: "cpu/mem-loads,ldlat=30/P".into(),
            type_: b::PERF_TYPE_RAW,
            config: 0x1cd,
            config1: 30,
            config2: 0x22,
            config3: 0,
            precise_ip: 3,
            precise_min: 1,
            sample_type: (b::PERF_SAMPLE_IDENTIFIER
                | b::PERF_SAMPLE_IP
                | b::PERF_SAMPLE_ADDR
                | b::PERF_SAMPLE_DATA_SRC
                | b::PERF_SAMPLE_WEIGHT_STRUCT
                | b::PERF_SAMPLE_PHYS_ADDR
                | b::PERF_SAMPLE_ID) as u64,
            sampling: PmuSampling::Period(2000),
            no_exclude: false,
        }
    }
    const FULL: Try = Try {
        precise_drop: 0,
        phys_addr: true,
        include_kernel: true,
    };
    const LEADER: Role = Role {
        member: false,
        inherit: true,
        enable_on_exec: true,
        read_group: false,
    };

    #[test]
    fn fields_are_copied_and_completed() {
        let a = build(&spec(), &FULL, LEADER, None).expect("builds");
        assert_eq!((a.type_, a.size, a.config), (b::PERF_TYPE_RAW, 128, 0x1cd));
        // SAFETY (test): reading the union members we wrote.
        let (c1, c2, period) = unsafe {
            (
                a.__bindgen_anon_3.config1,
                a.__bindgen_anon_4.config2,
                a.__bindgen_anon_1.sample_period,
            )
        };
        assert_eq!((c1, c2, period), (30, 0x22, 2000));
        assert_eq!(a.config3, 0);
        assert_eq!((a.precise_ip(), a.freq()), (3, 0));
        let st = a.sample_type;
        assert_eq!(st & REQUIRED_SAMPLE_TYPE, REQUIRED_SAMPLE_TYPE);
        for bit in [
            b::PERF_SAMPLE_ADDR,
            b::PERF_SAMPLE_DATA_SRC,
            b::PERF_SAMPLE_WEIGHT_STRUCT,
            b::PERF_SAMPLE_PHYS_ADDR,
        ] {
            assert_ne!(st & bit as u64, 0, "asked bit {bit:#x} kept");
        }
        assert_eq!(
            st & b::PERF_SAMPLE_ID as u64,
            0,
            "ID would change the trailer layout"
        );
        assert_eq!((a.disabled(), a.enable_on_exec(), a.inherit()), (1, 1, 1));
        assert_eq!(
            (a.sample_id_all(), a.use_clockid(), a.clockid),
            (1, 1, libc::CLOCK_MONOTONIC)
        );
        assert_eq!(
            (a.mmap(), a.comm(), a.task()),
            (0, 0, 0),
            "side band from the tracking event only"
        );
        assert_eq!(a.exclude_kernel(), 0);
    }

    #[test]
    fn fallbacks_lower_precise_drop_phys_and_exclude_kernel() {
        let ev = spec();
        let t = Try {
            precise_drop: 1,
            phys_addr: false,
            include_kernel: false,
        };
        let a = build(&ev, &t, LEADER, None).expect("builds");
        assert_eq!(a.precise_ip(), 2);
        assert_eq!(a.sample_type & b::PERF_SAMPLE_PHYS_ADDR as u64, 0);
        assert_eq!((a.exclude_kernel(), a.exclude_hv()), (1, 1));
        // Never below precise_min.
        let deep = Try {
            precise_drop: 9,
            ..t
        };
        assert_eq!(
            build(&ev, &deep, LEADER, None)
                .expect("builds")
                .precise_ip(),
            1
        );
        // IBS: no exclude bits whatever the permission.
        let ibs = PmuEvent {
            no_exclude: true,
            ..ev
        };
        assert_eq!(
            build(&ibs, &t, LEADER, None)
                .expect("builds")
                .exclude_kernel(),
            0
        );
    }

    #[test]
    fn frequency_is_capped_and_zero_refused() {
        let ev = PmuEvent {
            sampling: PmuSampling::Frequency(100_000),
            ..spec()
        };
        let a = build(&ev, &FULL, LEADER, Some(25_000)).expect("builds");
        // SAFETY (test): reading the union member we wrote.
        assert_eq!(
            (a.freq(), unsafe { a.__bindgen_anon_1.sample_freq }),
            (1, 25_000)
        );
        let zero = PmuEvent {
            sampling: PmuSampling::Period(0),
            ..spec()
        };
        assert!(matches!(
            build(&zero, &FULL, LEADER, None),
            Err(PmuError::BadSpec { .. })
        ));
    }

    #[test]
    fn member_follows_its_leader() {
        let member = Role {
            member: true,
            ..LEADER
        };
        let a = build(&spec(), &FULL, member, None).expect("builds");
        assert_eq!((a.disabled(), a.enable_on_exec(), a.inherit()), (0, 0, 1));
    }

    #[test]
    fn config3_needs_a_larger_attr_than_declared() {
        let ev = PmuEvent {
            config3: 1,
            ..spec()
        };
        let r = build(&ev, &FULL, LEADER, None);
        if ATTR_SIZE < b::PERF_ATTR_SIZE_VER8 {
            let e = r.expect_err("refused").to_string();
            assert!(e.contains("config3") && e.contains("136"), "{e}");
        } else {
            assert_eq!(r.expect("builds").config3, 1);
        }
    }

    #[test]
    fn names_follow_perf() {
        assert_eq!(
            file_name("cpu/mem-loads,ldlat=30/P", true),
            "cpu/mem-loads,ldlat=30/Pu"
        );
        assert_eq!(file_name("page-faults", true), "page-faults:u");
        assert_eq!(file_name("ibs_op//", false), "ibs_op//");
    }
}
