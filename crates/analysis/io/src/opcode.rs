//! Skylake-SP (and Cascade Lake) files name an inbound request's opcode only through the
//! CHA's FILTER1 value: `UNC_CHA_TOR_INSERTS.IO_HIT` comes with FILTER_VALUE 0, which
//! matches no request (the file's own opcode events all set the local, remote, near- and
//! far-memory bits 0x33), while `IO_MISS_RDCUR`, `IO_MISS_ITOM` and `IO_MISS_RFO` carry the
//! opcode (PCIRdCur 0x21E, ItoM 0x248, RFO 0x200 in FILTER1 bits 9-18). From those values
//! this module builds the per-opcode events that Ice Lake and later files list by name:
//! hits (the IO_HIT umask with the opcode's filter), all requests (the IO umask) and their
//! TOR occupancy, so one plan serves every generation. pcm programs the same filters.

use std::collections::BTreeMap;

use crate::encode::Event;

/// The miss events' opcode suffixes and the names later files give the same requests.
const OPCODES: [(&str, &str); 3] = [("RDCUR", "PCIRDCUR"), ("ITOM", "ITOM"), ("RFO", "RFO")];

const INSERTS: &str = "UNC_CHA_TOR_INSERTS";
const OCCUPANCY: &str = "UNC_CHA_TOR_OCCUPANCY";

/// An event whose file asks for a FILTER1 value and gives 0: it would count nothing.
pub fn unfiltered(e: &Event) -> bool {
    needs_filter1(e) && e.filter_bits() == 0
}

fn needs_filter1(e: &Event) -> bool {
    e.filter
        .as_deref()
        .is_some_and(|f| f.to_ascii_lowercase().contains("filter1"))
}

/// `base` with the opcode filter `value`, under `name`.
fn with_filter(base: &Event, name: String, value: u64, what: &str) -> Event {
    Event {
        event_name: name,
        filter: Some("Filter1".into()),
        filter_value: Some(format!("{value:#x}")),
        brief_description: format!(
            "{} ({what}; opcode filter of the file's miss event)",
            base.brief_description
        ),
        ..base.clone()
    }
}

/// Series name to the events summed into it, built from the filters; empty for files
/// that name the opcodes themselves (Ice Lake and later) or lack the base events.
pub fn derived(by_name: &BTreeMap<&str, &Event>) -> BTreeMap<String, Vec<Event>> {
    let mut out: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    let hit = by_name.get(format!("{INSERTS}.IO_HIT").as_str());
    // Only where the plain hit event needs a filter it does not give.
    let Some(hit) = hit.filter(|e| unfiltered(e)) else {
        return out;
    };
    let all_inserts = by_name.get(format!("{INSERTS}.IO").as_str());
    let all_occupancy = by_name.get(format!("{OCCUPANCY}.IO").as_str());
    for (suffix, name) in OPCODES {
        let Some(miss) = by_name.get(format!("{INSERTS}.IO_MISS_{suffix}").as_str()) else {
            continue;
        };
        let value = miss.filter_bits();
        if value == 0 || !needs_filter1(miss) {
            continue;
        }
        out.entry(format!("{INSERTS}.IO_HIT"))
            .or_default()
            .push(with_filter(
                hit,
                format!("{INSERTS}.IO_HIT_{name}"),
                value,
                "hits",
            ));
        out.entry(format!("{INSERTS}.IO_MISS"))
            .or_default()
            .push((*miss).clone());
        if let Some(e) = all_inserts {
            let n = format!("{INSERTS}.IO_{name}");
            out.entry(n.clone())
                .or_default()
                .push(with_filter(e, n, value, "all"));
        }
        if let Some(e) = all_occupancy {
            let n = format!("{OCCUPANCY}.IO_{name}");
            out.entry(n.clone())
                .or_default()
                .push(with_filter(e, n, value, "all"));
        }
    }
    out
}
