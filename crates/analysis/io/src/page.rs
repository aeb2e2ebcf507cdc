//! `api/io`: an io collection's traffic (`io.json`): every series (device flows, IIO stacks,
//! socket counts) with its total, average and peak, the rate of each per tick, what could
//! not be measured here and why, and the report's findings; 404 with the command for a
//! result that is not an io collection.

use crate::model::IoResult;
use serde_json::{json, Value};

use kairos_view_engine::api::data;
use kairos_view_engine::{Error, Query, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let io =
        match IoResult::load(d.dir.path()) {
            Some(Ok(io)) => io,
            Some(Err(e)) => return Err(Error::NotFound(format!("{e}; collect it again"))),
            None => return Err(Error::NotFound(
                "this result is not an io collection; make one with `kairos collect io -a -d SECS`"
                    .into(),
            )),
        };
    let series: Vec<Value> = io
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({ "scope": s.scope, "name": s.name, "flow": s.flow, "unit": s.unit, "label": s.label,
                    "socket": s.socket, "pci": s.pci, "link_bytes_per_s": s.link_bytes_per_s,
                    "total": io.total(i), "average": io.average(i), "peak": io.peak(i) })
        })
        .collect();
    // Per tick: its start (s) and each series' rate a second.
    let ticks: Vec<Value> = io
        .points
        .iter()
        .map(|p| {
            let rates: Vec<f64> = p.values.iter().map(|v| v / p.secs.max(1e-9)).collect();
            json!({ "t": p.t, "secs": p.secs, "rates": rates })
        })
        .collect();
    Ok(json!({
        "device_use": crate::use_table::answer(d.dir.path()),
        "tick_ms": io.tick_ms, "sources": io.sources, "duration": io.duration(),
        "unmeasured": { "ddio": io.ddio_unmeasured, "pcie": io.pcie_unmeasured, "dram": io.dram_note },
        "series": series, "ticks": ticks,
        "findings": crate::findings::findings(&io), "notes": io.notes,
    }))
}

/// The page module the spec declares.
pub(crate) static PAGE: kairos_view_engine::site::PageModule =
    kairos_view_engine::site::PageModule {
        endpoints: &[("io", get)],
        opened: None,
        fields: None,
        compare: None,
    };
