//! `-k numa=auto|on|off` at collection: the page-fault events recorded next to the
//! sampling event (first touch), the placement thread started (pages per node), and the
//! machine's nodes kept. `auto` is on for a launched program or `-p`, off with `-a`
//! (placement follows one process); each fault costs one record with its user stack.

use kairos_analysis_api::Failure;
use kairos_collector::extra::{self, ExtraEvent};
use kairos_collector::{CollectOptions, CollectSummary, Target};

use super::placement::{self, Who};
use super::query::Live;
use super::{Recorded, Topology};

/// The NUMA side of one collection, between its start and its end.
pub(crate) struct Numa {
    watching: Option<placement::Watching>,
    recorded: Recorded,
    /// The fault events asked for, to say which the kernel refused.
    events: Vec<String>,
}

/// Whether `-k numa` applies to `target`; Err for `on` where it cannot.
pub(crate) fn wanted(knob: &str, target: &Target) -> Result<Result<(), String>, Failure> {
    match (knob, target) {
        ("off", _) => Ok(Err("-k numa=off".into())),
        ("on", Target::SystemWide) => Err(Failure::usage(
            "-k numa=on follows one process's pages: launch the program or give -p PID, not -a (or leave numa=auto, which is off with -a)",
        )),
        (_, Target::SystemWide) => Ok(Err("-k numa=auto is off with -a: placement and first touch follow one process (launched or -p)".into())),
        _ => Ok(Ok(())),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    (unsafe { libc::geteuid() }) == 0
}

/// The fault events for first touch: the tracepoints where this user may record their
/// payload (root, or perf_event_paranoid -1), else the software page-fault events.
fn fault_events(notes: &mut Vec<String>) -> Vec<ExtraEvent> {
    let root = is_root();
    let paranoid = kairos_collector::attr::paranoid();
    if root
        || paranoid <= -1
        || perfmon_capable(&std::fs::read_to_string("/proc/self/status").unwrap_or_default())
    {
        match extra::ensure_tracefs() {
            Ok(Some(m)) => notes.push(m),
            Ok(None) => {}
            Err(why) => notes.push(why),
        }
        let tps: Vec<ExtraEvent> = ["page_fault_user", "page_fault_kernel"]
            .iter()
            .filter_map(|ev| ExtraEvent::tracepoint("exceptions", ev, true, true).ok())
            .collect();
        if tps.iter().any(|e| e.name.ends_with("page_fault_user")) {
            return tps;
        }
        notes.push("first touch from the software page-fault events: the exceptions:page_fault_user tracepoint is not here (an x86-only tracepoint, or tracefs unreadable), so a read fault cannot be told from a write".into());
    } else {
        notes.push(format!(
            "first touch from the software page-fault events, without the read/write flag: the exceptions:page_fault_user tracepoint's payload needs root or kernel.perf_event_paranoid -1 (it is {paranoid})"
        ));
    }
    vec![ExtraEvent::minor_faults(), ExtraEvent::major_faults()]
}

/// CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in the effective set: raw tracepoint payloads.
fn perfmon_capable(status: &str) -> bool {
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    eff & (1 << 38 | 1 << 21) != 0
}

/// Said of a result from an emulated machine, where placement is real and timing is not.
pub(crate) const EMULATED: &str = "this machine is emulated (QEMU TCG): its nodes have the same memory latency, so a NUMA fix changes where pages are here but not how long the program runs; compare run times on real sockets";

/// An emulated CPU (QEMU's TCG names itself in the model name).
fn emulated(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .any(|l| l.starts_with("model name") && l.contains("QEMU TCG"))
}

/// Data pages per CPU ring when faults are recorded (4 MiB with 4 KiB pages).
const FAULT_RING_PAGES: usize = 1024;

impl Numa {
    /// Adds the fault events to `opts` and starts the placement thread, or records why not.
    pub(crate) fn start(
        knob: &str,
        target: &Target,
        opts: &mut CollectOptions,
    ) -> Result<Numa, Failure> {
        let mut recorded = Recorded::default();
        if let Err(why) = wanted(knob, target)? {
            recorded.why_not = Some(why);
            return Ok(Numa {
                watching: None,
                recorded,
                events: Vec::new(),
            });
        }
        let topology = Topology::read(std::path::Path::new("/sys"));
        if topology.nodes_with_cpus() > 1
            && emulated(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
        {
            recorded.notes.push(EMULATED.into());
            recorded.emulated = true;
        }
        recorded.topology = Some(topology);
        let events = fault_events(&mut recorded.notes);
        let names = events.iter().map(|e| e.name.clone()).collect();
        opts.extra_events.extend(events);
        // A program's first touch of a large array is a burst of thousands of faults,
        // each a record with its call stack, in a few milliseconds: on a busy machine a
        // 1 MiB ring fills before the reader runs and the lost faults leave their pages
        // without a first touch. Root may lock more (others stay within their limit).
        if is_root() {
            opts.ring_buffer_pages = opts.ring_buffer_pages.max(FAULT_RING_PAGES);
        }
        let who = match target {
            Target::Pid(pid) => Who::Pid(*pid),
            _ => Who::Launched,
        };
        let watching = Some(placement::start(who, Box::new(Live)));
        Ok(Numa {
            watching,
            recorded,
            events: names,
        })
    }

    /// Stops the placement thread and says which fault events the kernel refused.
    pub(crate) fn finish(mut self, summary: Option<&CollectSummary>) -> Recorded {
        if let Some(w) = self.watching.take() {
            self.recorded.placement = Some(w.finish());
        }
        for o in summary.into_iter().flat_map(|s| &s.extra_events) {
            if let (true, Some(why)) = (self.events.contains(&o.name), &o.missing) {
                self.recorded.notes.push(format!("{} was not recorded ({why}): the pages it would have placed have no first touch", o.name));
            }
        }
        self.recorded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knob_follows_the_target() {
        let launch = Target::Launch {
            program: "x".into(),
            args: vec![],
        };
        assert_eq!(wanted("auto", &launch).ok(), Some(Ok(())));
        assert_eq!(wanted("on", &Target::Pid(4)).ok(), Some(Ok(())));
        assert!(matches!(wanted("off", &launch), Ok(Err(w)) if w.contains("numa=off")));
        assert!(matches!(wanted("auto", &Target::SystemWide), Ok(Err(w)) if w.contains("-a")));
        assert!(wanted("on", &Target::SystemWide)
            .is_err_and(|f| f.is_usage() && f.to_string().contains("-p PID")));
    }

    #[test]
    fn capabilities_allow_tracepoint_payloads() {
        assert!(perfmon_capable("CapEff:\t0000004000000000\n"));
        assert!(perfmon_capable("CapEff:\t000001ffffffffff\n"));
        assert!(!perfmon_capable("CapEff:\t0000000000000000\n"));
    }

    #[test]
    fn an_emulated_cpu_is_told_by_its_model_name() {
        assert!(emulated(
            "processor\t: 0\nmodel name\t: QEMU TCG CPU version 2.5+\n"
        ));
        assert!(!emulated("model name\t: AMD EPYC\nflags\t: hypervisor\n"));
    }
}
