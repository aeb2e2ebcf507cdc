//! Which imported recordings are memory recordings. A perf.data with samples is always a
//! sampled profile; the memory-access analysis adds its reports only when the recording
//! was made to sample memory accesses: by its events (`perf mem` and `perf c2c`'s
//! `mem-loads`/`mem-stores`, load latency `ldlat`, AMD `ibs_op`, ARM `arm_spe`, page
//! faults with their addresses), by data sources that name a real level, or by address
//! sampling (a timer with the user registers and no stack copy). A data address field in
//! the samples alone decides nothing: perf asks every event for ADDR and DATA_SRC with
//! `--call-graph dwarf`, and a cycles or timer sample leaves them empty. This is the one
//! place that decides; `kairos import` asks it once, through the spec's
//! [`claim_import`].

use kairos_convert::{AccessSource, DataAccess};
use kairos_mem_source::data_src::{lvl, lvl_num};
use kairos_mem_source::DataSrc;
use kairos_model::{event_base_name, EventDef};

use kairos_analysis_api::{Claimed, Failure};
use kairos_convert::Conversion;
use kairos_model::Profile;
use kairos_perf_data::Features;
use kairos_result::ResultDir;

use crate::Source;

/// The spec's claim on a recording being imported: [`claim`] on its events and accesses.
pub(crate) fn claim_import(p: &Profile, accesses: &[DataAccess]) -> Option<Box<dyn Claimed>> {
    claim(&p.events, accesses).map(|c| Box::new(c) as Box<dyn Claimed>)
}

impl Claimed for Claim {
    fn finish(
        self: Box<Self>,
        dir: &mut ResultDir,
        c: &mut Conversion,
        header: &Features,
    ) -> Result<(), Failure> {
        crate::finish_import(dir, c, header, &self)
    }
}

/// An imported recording the memory-access analysis claims: which of its events' data
/// accesses are memory accesses, and where their addresses come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Per attr (file order): whether its accesses belong to the memory analysis.
    attrs: Vec<bool>,
    pub source: Source,
    pub reason: &'static str,
}

impl Claim {
    /// Keeps the accesses of the claimed events only (a cycles event recorded beside
    /// `mem-loads` brings empty addresses that are no memory access).
    pub fn keep_own(&self, accesses: &mut Vec<DataAccess>) {
        accesses.retain(|a| self.attrs.get(a.attr as usize).copied().unwrap_or(false));
    }
}

/// Names of the events that sample memory accesses, as perf spells them (matched
/// anywhere in the name, without regard to case): `cpu/mem-loads,ldlat=30/P`,
/// `cpu_core/mem-stores/P`, `ibs_op//`, `arm_spe_0//`,
/// `MEM_TRANS_RETIRED.LOAD_LATENCY:ldlat=64`.
const MEMORY_EVENTS: [&str; 6] = [
    "mem-loads",
    "mem-stores",
    "ldlat",
    "load_latency",
    "ibs_op",
    "arm_spe",
];

/// Software events whose samples carry the faulting data address (`perf record -d`).
const FAULT_EVENTS: [&str; 4] = ["page-faults", "faults", "minor-faults", "major-faults"];

/// Whether an event of this name samples memory accesses.
pub fn is_memory_event(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    MEMORY_EVENTS.iter().any(|m| lower.contains(m))
}

/// Whether a sample's data source names the level that served the access (L1, LFB, L2,
/// L3, DRAM, ...), not just "not available" as perf fills it for events without one.
pub fn has_real_level(data_src: u64) -> bool {
    let d = DataSrc::from_raw(data_src);
    let named_levels = d.lvl & !(lvl::NA | lvl::HIT | lvl::MISS);
    named_levels != 0 || (d.lvl_num != 0 && d.lvl_num != lvl_num::NA)
}

/// What the converter found per attr.
#[derive(Default, Clone, Copy)]
struct Seen {
    registers: bool,
    pmu: bool,
    event: bool,
    real_level: bool,
    nonzero_address: bool,
}

/// The claim on an imported recording of `events` (by attr, as the profile lists them)
/// whose samples gave `accesses`, or None: a sampled profile only.
pub fn claim(events: &[EventDef], accesses: &[DataAccess]) -> Option<Claim> {
    if accesses.is_empty() {
        return None;
    }
    let n = events.len().max(
        accesses
            .iter()
            .map(|a| a.attr as usize + 1)
            .max()
            .unwrap_or(0),
    );
    let mut seen = vec![Seen::default(); n];
    for a in accesses {
        let Some(s) = seen.get_mut(a.attr as usize) else {
            continue;
        };
        match a.source {
            AccessSource::Registers => s.registers = true,
            AccessSource::Pmu => s.pmu = true,
            AccessSource::Event => s.event = true,
        }
        s.real_level |= a.data_src.is_some_and(has_real_level);
        s.nonzero_address |= a.addr != 0;
    }
    let attrs: Vec<bool> = seen
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let name = events.get(i).map_or("", |e| e.name.as_str());
            let fault = FAULT_EVENTS.contains(&event_base_name(name));
            s.registers
                || s.real_level
                || ((s.pmu || s.event) && is_memory_event(name))
                || (s.event && fault && s.nonzero_address)
        })
        .collect();
    let claimed = |f: fn(&Seen) -> bool| seen.iter().zip(&attrs).any(|(s, &c)| c && f(s));
    let (source, reason) = if claimed(|s| s.pmu) {
        (
            Source::Pmu,
            "imported: the recording's samples carry data addresses and sources (PEBS or IBS)",
        )
    } else if claimed(|s| s.event) {
        (
            Source::Event,
            "imported: a software event's samples carry data addresses (perf record -d): no access direction, level or latency, so each counts as a load",
        )
    } else if claimed(|s| s.registers) {
        (
            Source::Registers,
            "imported: timer samples with user registers and no stack copy, decoded as address samples",
        )
    } else {
        return None;
    };
    Some(Claim {
        attrs,
        source,
        reason,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn event(name: &str, time: bool) -> EventDef {
        EventDef {
            name: name.into(),
            time,
        }
    }

    fn access(attr: u32, source: AccessSource, addr: u64, data_src: Option<u64>) -> DataAccess {
        DataAccess {
            attr,
            time_ns: 0,
            thread: 0,
            cpu: 0,
            ip: 0x401000,
            stack: None,
            source,
            addr,
            size: 0,
            direction: None,
            period: 1,
            data_src,
            latency: None,
            phys_addr: None,
            sp: None,
            static_var: None,
            mapping: kairos_convert::side::MemoryObject {
                name: "[heap]".into(),
                start: 0,
                end: 0,
            },
        }
    }

    /// perf's data source for an event that has none (PERF_MEM_NA, as perf script
    /// prints it for a cycles sample: `1e05080021 |OP N/A|LVL N/A or N/A|...`).
    const NA: u64 = 0x1e_0508_0021;
    /// A load served by L3 (the Skylake-SP fixture's word).
    const L3_HIT: u64 = 0x106_6810_0842;

    #[test]
    fn data_sources_with_levels_are_told_from_not_available() {
        assert!(!has_real_level(NA));
        assert!(!has_real_level(0));
        assert!(has_real_level(L3_HIT));
        // Only the numbered level (newer kernels, AMD): L2.
        assert!(has_real_level(2u64 << 33 | 1 << 5));
        // Hit or miss without a level names none.
        assert!(!has_real_level((lvl::HIT as u64) << 5 | 0xf << 33));
    }

    #[test]
    fn cycles_with_empty_addresses_is_a_profile() {
        // perf record --call-graph dwarf -e cycles: ADDR 0, data source N/A.
        let acc: Vec<_> = (0..100)
            .map(|_| access(0, AccessSource::Pmu, 0, Some(NA)))
            .collect();
        assert_eq!(claim(&[event("cycles", false)], &acc), None);
        assert_eq!(claim(&[event("cpu-clock", true)], &[]), None);
        // Even with addresses: a precise cycles event's address is not a memory access.
        let acc = [access(0, AccessSource::Pmu, 0x7f00_0000, Some(NA))];
        assert_eq!(claim(&[event("cpu_core/cycles/", false)], &acc), None);
    }

    #[test]
    fn memory_events_levels_faults_and_registers_are_claimed() {
        for name in [
            "cpu/mem-loads,ldlat=30/P",
            "cpu_core/mem-stores/P",
            "ibs_op//",
            "arm_spe_0//",
            "MEM_TRANS_RETIRED.LOAD_LATENCY:ldlat=64:precise=2",
        ] {
            let c = claim(
                &[event(name, false)],
                &[access(0, AccessSource::Pmu, 0x1000, Some(NA))],
            );
            assert_eq!(c.map(|c| c.source), Some(Source::Pmu), "{name}");
        }
        // An event Kairos does not know by name, whose data sources name levels.
        let c = claim(
            &[event("r01d1", false)],
            &[access(0, AccessSource::Pmu, 0x1000, Some(L3_HIT))],
        );
        assert_eq!(c.map(|c| c.source), Some(Source::Pmu));
        // perf record -e page-faults -d: the faults' addresses.
        let c = claim(
            &[event("page-faults", false)],
            &[access(0, AccessSource::Event, 0x7f00_1000, Some(NA))],
        );
        assert_eq!(c.map(|c| c.source), Some(Source::Event));
        // A software event other than faults with empty addresses: a profile.
        let c = claim(
            &[event("context-switches", false)],
            &[access(0, AccessSource::Event, 0, Some(NA))],
        );
        assert_eq!(c, None);
        // Address sampling: cpu-clock with the user registers and no stack copy.
        let c = claim(
            &[event("cpu-clock", true)],
            &[access(0, AccessSource::Registers, 0x1000, None)],
        );
        assert_eq!(c.map(|c| c.source), Some(Source::Registers));
    }

    #[test]
    fn only_the_memory_events_accesses_are_kept() {
        let events = [
            event("cycles", false),
            event("cpu/mem-loads,ldlat=30/P", false),
        ];
        let mut acc = vec![
            access(0, AccessSource::Pmu, 0, Some(NA)),
            access(1, AccessSource::Pmu, 0x1000, Some(L3_HIT)),
            access(0, AccessSource::Pmu, 0, Some(NA)),
            // An attr past the events listed is judged by its data sources alone.
            access(7, AccessSource::Pmu, 0x2000, Some(L3_HIT)),
        ];
        let c = claim(&events, &acc).unwrap();
        c.keep_own(&mut acc);
        assert_eq!(acc.iter().map(|a| a.attr).collect::<Vec<_>>(), [1, 7]);
    }
}
