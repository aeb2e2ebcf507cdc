//! The fallback search against scripted kernel answers (no PMU needed).
#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;

/// What the fake kernel saw of each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call {
    config: u64,
    precise: u8,
    phys: bool,
    exclude_kernel: bool,
    group_fd: RawFd,
    fd: RawFd,
}

/// Answers with `rule` (Err(errno) to refuse); accepted calls get a real fd on /dev/null.
struct Fake<F: FnMut(&Call) -> Result<(), i32>> {
    rule: F,
    calls: Vec<Call>,
}

impl<F: FnMut(&Call) -> Result<(), i32>> Opener for Fake<F> {
    fn open(
        &mut self,
        a: &mut b::perf_event_attr,
        _pid: i32,
        _cpu: i32,
        group_fd: RawFd,
    ) -> Result<OwnedFd, i32> {
        let mut c = Call {
            config: a.config,
            precise: a.precise_ip() as u8,
            phys: a.sample_type & b::PERF_SAMPLE_PHYS_ADDR as u64 != 0,
            exclude_kernel: a.exclude_kernel() == 1,
            group_fd,
            fd: -1,
        };
        let r = (self.rule)(&c);
        let fd = r.map(|()| OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null")));
        if let Ok(f) = &fd {
            c.fd = f.as_raw_fd();
        }
        self.calls.push(c);
        fd
    }
}

fn ev(config: u64, phys: bool) -> PmuEvent {
    let mut st = (b::PERF_SAMPLE_ADDR | b::PERF_SAMPLE_DATA_SRC) as u64;
    if phys {
        st |= b::PERF_SAMPLE_PHYS_ADDR as u64;
    }
    PmuEvent {
        name: format!("cpu/event={config:#x}/P"),
        type_: b::PERF_TYPE_RAW,
        config,
        config1: 0,
        config2: 0,
        config3: 0,
        precise_ip: 3,
        precise_min: 1,
        sample_type: st,
        sampling: PmuSampling::Period(1000),
        no_exclude: false,
    }
}

const ROLE: Role = Role {
    member: false,
    inherit: true,
    enable_on_exec: true,
    read_group: false,
};

/// The settled settings and notes, or the error.
type Outcome = Result<(Try, Vec<Vec<String>>), CollectError>;

fn run<F: FnMut(&Call) -> Result<(), i32>>(
    g: &PmuGroup,
    kernel: &[bool],
    rule: F,
) -> (Outcome, Vec<Call>) {
    let mut fake = Fake {
        rule,
        calls: Vec::new(),
    };
    let r = settle(g, kernel, ROLE, None, (1234, 0), &mut fake).map(|s| (s.t, s.notes));
    (r, fake.calls)
}

#[test]
fn precise_ip_is_lowered_on_eopnotsupp_down_to_what_is_accepted() {
    let g = PmuGroup::single(ev(0x1cd, false));
    let (r, calls) = run(&g, &[true], |c| {
        if c.precise > 1 {
            Err(libc::EOPNOTSUPP)
        } else {
            Ok(())
        }
    });
    let (t, notes) = r.expect("settles");
    assert_eq!(
        calls.iter().map(|c| c.precise).collect::<Vec<_>>(),
        vec![3, 2, 1]
    );
    assert_eq!(t.precise_drop, 2);
    assert!(
        notes[0].iter().any(|n| n.contains("precise_ip 1")),
        "{notes:?}"
    );
}

#[test]
fn precise_ip_never_goes_below_the_minimum() {
    let g = PmuGroup::single(ev(0x1cd, false));
    let (r, calls) = run(&g, &[true], |_| Err(libc::EINVAL));
    assert_eq!(calls.len(), 3, "3, 2, 1 and not 0");
    match r {
        Err(CollectError::Pmu(PmuError::Refused { errno, why, .. })) => {
            assert_eq!(errno, libc::EINVAL);
            assert!(
                why.contains("rejected its settings") && why.contains("down to 1"),
                "{why}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn physical_addresses_are_dropped_before_precision() {
    let g = PmuGroup::single(ev(0x1cd, true));
    let (r, calls) = run(&g, &[false], |c| {
        if c.phys {
            Err(libc::EACCES)
        } else {
            Ok(())
        }
    });
    let (t, notes) = r.expect("settles without phys");
    assert!(!t.phys_addr);
    assert_eq!(t.precise_drop, 0, "precise 3 kept");
    assert_eq!(calls.last().map(|c| (c.precise, c.phys)), Some((3, false)));
    assert!(
        notes[0]
            .iter()
            .any(|n| n.contains("physical addresses dropped") && n.contains("EACCES")),
        "{notes:?}"
    );
    assert!(calls.iter().all(|c| c.exclude_kernel));
}

#[test]
fn kernel_is_excluded_when_refused_with_it() {
    let g = PmuGroup::single(ev(0x1cd, false));
    let (r, calls) = run(&g, &[true, false], |c| {
        if c.exclude_kernel {
            Ok(())
        } else {
            Err(libc::EACCES)
        }
    });
    let (t, notes) = r.expect("settles");
    assert!(!t.include_kernel);
    assert_eq!(
        calls.len(),
        4,
        "3 precise levels with the kernel, then the first without"
    );
    assert!(
        notes[0]
            .iter()
            .any(|n| n.contains("kernel samples excluded")),
        "{notes:?}"
    );
}

#[test]
fn no_pmu_stops_at_once_with_a_sentence() {
    let g = PmuGroup::single(ev(0x1cd, true));
    let (r, calls) = run(&g, &[true, false], |_| Err(libc::ENOENT));
    assert_eq!(calls.len(), 1, "ENOENT is not retried");
    let e = r.map(|_| ()).unwrap_err();
    assert!(
        matches!(
            e,
            CollectError::Pmu(PmuError::Refused {
                errno: libc::ENOENT,
                ..
            })
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("the CPU's PMU refused event cpu/event=0x1cd/P (ENOENT): "),
        "{msg}"
    );
}

#[test]
fn permission_is_the_answer_only_when_alone() {
    let g = PmuGroup::single(ev(0x1cd, false));
    let (r, _) = run(&g, &[true, false], |c| {
        if c.exclude_kernel {
            Err(libc::EINVAL)
        } else {
            Err(libc::EACCES)
        }
    });
    assert!(matches!(
        r,
        Err(CollectError::Pmu(PmuError::Refused {
            errno: libc::EINVAL,
            ..
        }))
    ));
    let (r, _) = run(&g, &[false], |_| Err(libc::EACCES));
    let e = r.map(|_| ()).unwrap_err().to_string();
    assert!(
        e.contains("(EACCES)") && e.contains("perf_event_paranoid"),
        "{e}"
    );
}

#[test]
fn member_is_opened_with_the_leaders_fd() {
    // Sapphire Rapids: the load event is refused (ENODATA) unless its aux leader is its
    // group leader.
    let g = PmuGroup {
        leader: Some(ev(0x8203, false)),
        ..PmuGroup::single(ev(0x1cd, false))
    };
    let (r, calls) = run(&g, &[true], |c| {
        if c.config == 0x1cd && c.group_fd < 0 {
            Err(libc::ENODATA)
        } else {
            Ok(())
        }
    });
    r.expect("settles");
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].config, calls[0].group_fd), (0x8203, -1));
    assert_eq!(calls[1].config, 0x1cd);
    assert_eq!(
        calls[1].group_fd, calls[0].fd,
        "member opened in the leader's group"
    );
    assert!(calls[1].group_fd >= 0);
}

#[test]
fn bad_spec_is_not_sent_to_the_kernel() {
    let mut e = ev(0x1cd, false);
    e.sampling = PmuSampling::Frequency(0);
    let (r, calls) = run(&PmuGroup::single(e), &[true], |_| Ok(()));
    assert!(calls.is_empty());
    assert!(matches!(
        r,
        Err(CollectError::Pmu(PmuError::BadSpec { .. }))
    ));
}

#[test]
fn a_hybrid_pmu_is_opened_only_on_its_own_cpus() {
    let atom: &[u32] = &[16, 17];
    assert!(on_pmu_cpu(16, Some(atom)) && !on_pmu_cpu(3, Some(atom)));
    // Per-task events (any CPU) and PMUs that drive every CPU.
    assert!(on_pmu_cpu(-1, Some(atom)) && on_pmu_cpu(3, None));
}
