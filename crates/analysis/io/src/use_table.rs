//! The target's own I/O per device and thread (`device_use.json`, traced beside io.json):
//! which threads read from and wrote to which device, and on which CPUs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use kairos_report::{Cell, Column, Table};
use kairos_session::device_use::DeviceUse;
use serde::Serialize;

const MB: f64 = 1e6;

/// One device and thread: what it moved and on which CPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UseRow {
    /// `net:eth0`, `block:vda`.
    pub device: String,
    pub tid: u32,
    pub comm: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub cpus: Vec<u32>,
}

/// The flows summed per (device, thread), busiest first.
pub fn rows(u: &DeviceUse) -> Vec<UseRow> {
    let mut by: BTreeMap<(&str, u32), UseRow> = BTreeMap::new();
    let mut cpus: BTreeMap<(&str, u32), BTreeSet<u32>> = BTreeMap::new();
    for f in &u.flows {
        let k = (f.device.as_str(), f.tid);
        let r = by.entry(k).or_insert_with(|| UseRow {
            device: f.device.clone(),
            tid: f.tid,
            comm: f.comm.clone(),
            read_bytes: 0,
            write_bytes: 0,
            cpus: Vec::new(),
        });
        r.read_bytes += f.read_bytes;
        r.write_bytes += f.write_bytes;
        cpus.entry(k).or_default().insert(f.cpu);
    }
    let mut out: Vec<UseRow> = by
        .into_iter()
        .map(|(k, mut r)| {
            r.cpus = cpus.remove(&k).unwrap_or_default().into_iter().collect();
            r
        })
        .collect();
    out.sort_by(|a, b| {
        (b.read_bytes + b.write_bytes)
            .cmp(&(a.read_bytes + a.write_bytes))
            .then((&a.device, a.tid).cmp(&(&b.device, b.tid)))
    });
    out
}

/// The page's answer: whether every process counts, why not traced, records lost, rows;
/// null when the result did not trace device use.
pub fn answer(dir: &Path) -> serde_json::Value {
    match DeviceUse::load(dir) {
        None => serde_json::Value::Null,
        Some(u) => {
            serde_json::json!({ "whole_machine": u.whole_machine, "unavailable": u.unavailable,
            "lost": u.lost, "rows": rows(&u) })
        }
    }
}

/// One row per (device, thread), busiest first.
pub fn table(u: &DeviceUse) -> Table {
    let mut t = Table::new(vec![
        Column::left("device"),
        Column::right("thread"),
        Column::left("name"),
        Column::right("read").with_unit("MB"),
        Column::right("written").with_unit("MB"),
        Column::left("CPUs"),
    ])
    .with_title(if u.whole_machine {
        "Device use by thread (every process)"
    } else {
        "Device use by the target's threads"
    });
    if let Some(why) = &u.unavailable {
        t.push_note(format!("not traced: {why}"));
        return t;
    }
    for r in rows(u) {
        let device = r
            .device
            .split_once(':')
            .map_or(r.device.as_str(), |(_, n)| n);
        t.push_row(vec![
            Cell::text(device),
            Cell::UInt(u64::from(r.tid)),
            Cell::text(r.comm.clone()),
            Cell::float(r.read_bytes as f64 / MB, 3),
            Cell::float(r.write_bytes as f64 / MB, 3),
            Cell::text(kairos_platform::numa::format_cpulist(&r.cpus)),
        ]);
    }
    if u.flows.is_empty() {
        t.push_note("the target moved no data through any traced device");
    }
    for (device, (r, w)) in &u.others {
        if r + w > 0 {
            t.push_note(format!(
                "{device}: other processes read {:.3} MB and wrote {:.3} MB",
                *r as f64 / MB,
                *w as f64 / MB
            ));
        }
    }
    if u.lost > 0 {
        t.push_note(format!(
            "{} trace records were lost (the rings filled): the figures are short",
            u.lost
        ));
    }
    t.push_note("Reads of a network device are the received data each thread copied out of its sockets; writes are packets queued in the thread's context; block I/O is the bios each thread submitted.");
    t
}
