//! Which events sample memory accesses on this machine, as plain perf_event_attr data for
//! the collector: Intel PEBS load latency and stores (sysfs `mem-loads`/`mem-stores`, else
//! the per-model encodings; Sapphire Rapids' `mem-loads-aux` leader), AMD IBS op, or a
//! [`Refusal`] saying why not (a KVM guest without a vPMU, like ours).

use std::path::Path;

use kairos_perf_data::*;
use serde::Serialize;

use crate::cpu::{intel_group, CpuId, IntelGroup, Vendor};
use crate::sysfs::{list_pmus, read_pmu, Config, Pmu, SysfsError};

/// Where the kernel lists its PMUs.
pub const DEVICES: &str = "/sys/bus/event_source/devices";

/// How often to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Sampling {
    /// Every N events (N a multiple of 16 on IBS).
    Period(u64),
    /// About N samples a second (the kernel adjusts the period).
    Frequency(u64),
}

/// The knobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Options {
    /// Load-latency threshold in cycles (perf's default 30); loads faster than this are
    /// not sampled.
    pub ldlat: u32,
    pub loads: bool,
    pub stores: bool,
    /// Physical addresses: the kernel allows them only where kernel sampling is allowed
    /// (perf_event_paranoid <= 1 or CAP_PERFMON); drop the bit on EACCES.
    pub phys_addr: bool,
    pub callchain: bool,
    pub sampling: Sampling,
}

impl Default for Options {
    fn default() -> Self {
        // perf's defaults: ldlat 30, 4000 samples a second.
        Options {
            ldlat: 30,
            loads: true,
            stores: true,
            phys_addr: true,
            callchain: true,
            sampling: Sampling::Frequency(4000),
        }
    }
}

/// One event to open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttrSpec {
    /// perf's name for it, for humans and the EVENT_DESC header (`cpu/mem-loads,ldlat=30/P`).
    pub name: String,
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub config3: u64,
    /// The highest precise_ip perf's `P` asks for; if the kernel refuses it, retry one lower
    /// down to the minimum (`precise_min`), as perf does.
    pub precise_ip: u8,
    pub precise_min: u8,
    pub sample_type: u64,
    pub sampling: Sampling,
    /// IBS counts no user/kernel split: exclude_user/exclude_kernel must stay 0.
    pub no_exclude: bool,
}

/// An event with its group leader when the hardware needs one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventGroup {
    /// Sapphire Rapids' `mem-loads-aux`: must be in the load event's group, in front of
    /// it (the kernel refuses the load event with ENODATA otherwise; without it the block
    /// fields of data_src are wrong). perf opens both as sampling events with the same
    /// attr (`{aux,loads}:P`); the memory samples are those with the load event's id
    /// (PERF_SAMPLE_IDENTIFIER). Not yet run on SPR hardware here.
    pub leader: Option<AttrSpec>,
    pub event: AttrSpec,
    /// The CPUs its PMU drives (hybrid CPUs), None for all.
    pub cpus: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Source {
    IntelPebs,
    AmdIbs,
}

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub source: Source,
    /// One group per core PMU (hybrid CPUs have `cpu_core` and `cpu_atom`).
    pub loads: Vec<EventGroup>,
    pub stores: Vec<EventGroup>,
    /// Facts the user should know (no store event on Nehalem, no ldlat on IBS, ...).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RefusalKind {
    /// No core PMU in sysfs (a VM without a virtual PMU).
    NoCorePmu,
    /// AMD without the IBS op PMU (hypervisors do not pass IBS through).
    NoIbs,
    /// An Intel core PMU without mem-loads in sysfs, and a model we have no table for.
    UnknownModel,
    UnsupportedVendor,
    /// The knobs do not fit the hardware (ldlat too wide for its field).
    BadOption,
    /// sysfs is there but unreadable or malformed.
    Sysfs,
}

/// Memory sampling is unavailable here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("memory access sampling unavailable: {reason}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub reason: String,
}

fn refuse(kind: RefusalKind, reason: impl Into<String>) -> Refusal {
    Refusal {
        kind,
        reason: reason.into(),
    }
}

impl From<SysfsError> for Refusal {
    fn from(e: SysfsError) -> Self {
        refuse(RefusalKind::Sysfs, e.to_string())
    }
}

fn sample_type(o: &Options) -> u64 {
    let mut st = PERF_SAMPLE_IDENTIFIER
        | PERF_SAMPLE_IP
        | PERF_SAMPLE_TID
        | PERF_SAMPLE_TIME
        | PERF_SAMPLE_ADDR
        | PERF_SAMPLE_CPU
        | PERF_SAMPLE_PERIOD
        | PERF_SAMPLE_DATA_SRC
        | PERF_SAMPLE_WEIGHT_STRUCT;
    if o.phys_addr {
        st |= PERF_SAMPLE_PHYS_ADDR;
    }
    if o.callchain {
        st |= PERF_SAMPLE_CALLCHAIN;
    }
    st
}

fn spec(pmu: &Pmu, name: String, c: Config, o: &Options, precise: (u8, u8)) -> AttrSpec {
    AttrSpec {
        name,
        type_: pmu.type_,
        config: c.config,
        config1: c.config1,
        config2: c.config2,
        config3: c.config3,
        precise_ip: precise.0,
        precise_min: precise.1,
        sample_type: sample_type(o),
        sampling: o.sampling,
        no_exclude: false,
    }
}

/// Chooses the events from the PMUs under `devices` (normally [`DEVICES`]) and the CPU.
pub fn choose(devices: &Path, cpu: Option<&CpuId>, o: &Options) -> Result<Plan, Refusal> {
    let vendor = cpu.map(|c| c.vendor);
    if vendor == Some(Vendor::Amd) || (vendor.is_none() && devices.join("ibs_op").is_dir()) {
        return amd(devices, o);
    }
    if matches!(vendor, Some(Vendor::Other)) {
        return Err(refuse(
            RefusalKind::UnsupportedVendor,
            "only Intel (PEBS) and AMD (IBS) CPUs sample data addresses and sources",
        ));
    }
    let mut cores = Vec::new();
    for name in ["cpu", "cpu_core", "cpu_atom"] {
        if let Some(p) = read_pmu(devices, name)? {
            cores.push(p);
        }
    }
    if cores.is_empty() {
        return Err(refuse(
            RefusalKind::NoCorePmu,
            format!(
                "no core PMU in {} (present: {}); a virtual machine without a virtual PMU exposes none, so there is no PEBS load-latency sampling",
                devices.display(),
                list_pmus(devices).join(" ")
            ),
        ));
    }
    let mut plan = Plan {
        source: Source::IntelPebs,
        loads: Vec::new(),
        stores: Vec::new(),
        notes: Vec::new(),
    };
    for p in &cores {
        intel_pmu(p, cpu, o, &mut plan)?;
    }
    Ok(plan)
}

/// Per-model encodings (Linux arch/x86/events/intel/core.c), used when sysfs lacks them.
fn table(g: IntelGroup) -> (&'static str, Option<&'static str>, Option<&'static str>) {
    const LOADS: &str = "event=0xcd,umask=0x1,ldlat=3";
    match g {
        IntelGroup::Nehalem => ("event=0x0b,umask=0x10,ldlat=3", None, None),
        IntelGroup::SandyBridge => (LOADS, Some("event=0xcd,umask=0x2"), None),
        IntelGroup::Haswell => (LOADS, Some("event=0xd0,umask=0x82"), None),
        IntelGroup::SapphireRapids => (
            LOADS,
            Some("event=0xcd,umask=0x2"),
            Some("event=0x03,umask=0x82"),
        ),
    }
}

fn intel_pmu(p: &Pmu, cpu: Option<&CpuId>, o: &Options, plan: &mut Plan) -> Result<(), Refusal> {
    let group = cpu.and_then(intel_group);
    let (loads, stores, aux) = match (p.event("mem-loads"), group) {
        (Some(l), _) => (l, p.event("mem-stores"), p.event("mem-loads-aux")),
        // Our model table describes P-cores; E-cores without sysfs events are skipped.
        (None, _) if p.name == "cpu_atom" => {
            plan.notes
                .push("cpu_atom: no mem-loads in sysfs, E-cores not sampled".into());
            return Ok(());
        }
        (None, Some(g)) => {
            let (l, s, a) = table(g);
            plan.notes.push(format!(
                "{}: no mem-loads in sysfs; using the {g:?} encodings",
                p.name
            ));
            (l.to_string(), s.map(String::from), a.map(String::from))
        }
        (None, None) => {
            return Err(refuse(
                RefusalKind::UnknownModel,
                format!(
                    "{} has no mem-loads event in sysfs and the CPU model {} is not in our table",
                    p.name,
                    cpu.map_or("unknown".into(), |c| c.mapfile_key())
                ),
            ))
        }
    };
    let precise = (3, 1);
    if o.loads {
        let mut c = Config::default();
        p.encode(&loads, &mut c)?;
        p.set("ldlat", o.ldlat.into(), &mut c)
            .map_err(|e| refuse(RefusalKind::BadOption, e.to_string()))?;
        let name = format!("{}/mem-loads,ldlat={}/P", p.name, o.ldlat);
        let leader = match aux {
            Some(a) => {
                let mut lc = Config::default();
                p.encode(&a, &mut lc)?;
                Some(spec(
                    p,
                    format!("{}/mem-loads-aux/", p.name),
                    lc,
                    o,
                    precise,
                ))
            }
            None => None,
        };
        plan.loads.push(EventGroup {
            leader,
            event: spec(p, name, c, o, precise),
            cpus: p.cpus.clone(),
        });
    }
    if o.stores {
        match stores {
            Some(s) => {
                let mut c = Config::default();
                p.encode(&s, &mut c)?;
                plan.stores.push(EventGroup {
                    leader: None,
                    event: spec(p, format!("{}/mem-stores/P", p.name), c, o, precise),
                    cpus: p.cpus.clone(),
                });
            }
            None => plan
                .notes
                .push(format!("{}: no store sampling event on this CPU", p.name)),
        }
    }
    Ok(())
}

fn amd(devices: &Path, o: &Options) -> Result<Plan, Refusal> {
    let Some(p) = read_pmu(devices, "ibs_op")? else {
        return Err(refuse(
            RefusalKind::NoIbs,
            format!(
                "AMD CPU without the IBS op PMU in {} (present: {}); hypervisors do not pass IBS through",
                devices.display(),
                list_pmus(devices).join(" ")
            ),
        ));
    };
    let mut notes = vec![
        "IBS op samples loads and stores with one event; data_src tells them apart".to_string(),
        "IBS fills data_src and weight from Linux 6.1 on; older kernels leave them 0".to_string(),
    ];
    let mut c = Config::default();
    if p.formats.contains_key("ldlat") {
        p.set("ldlat", o.ldlat.into(), &mut c)
            .map_err(|e| refuse(RefusalKind::BadOption, e.to_string()))?;
    } else {
        notes.push(
            "this IBS has no load-latency filter: ldlat is ignored, every sampled op is kept"
                .into(),
        );
    }
    let sampling = match o.sampling {
        Sampling::Period(n) if n % 16 != 0 => {
            notes.push(format!("IBS periods are multiples of 16: {n} rounded up"));
            Sampling::Period(n.div_ceil(16) * 16)
        }
        s => s,
    };
    let o2 = Options {
        sampling,
        ..o.clone()
    };
    let mut event = spec(&p, "ibs_op//".into(), c, &o2, (0, 0));
    event.no_exclude = true;
    let loads = if o.loads || o.stores {
        vec![EventGroup {
            leader: None,
            event,
            cpus: None,
        }]
    } else {
        Vec::new()
    };
    Ok(Plan {
        source: Source::AmdIbs,
        loads,
        stores: Vec::new(),
        notes,
    })
}
