//! The target's own I/O per device and thread (`device_use.json`, traced beside io.json):
//! which threads read from and wrote to which device, and on which CPUs.

use std::collections::{BTreeMap, BTreeSet};

use kairos_report::{Cell, Column, Table};
use kairos_session::device_use::DeviceUse;

const MB: f64 = 1e6;

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
    type Row<'a> = (u64, u64, BTreeSet<u32>, &'a str);
    let mut rows: BTreeMap<(&str, u32), Row> = BTreeMap::new();
    for f in &u.flows {
        let r = rows.entry((f.device.as_str(), f.tid)).or_insert((0, 0, BTreeSet::new(), f.comm.as_str()));
        r.0 += f.read_bytes;
        r.1 += f.write_bytes;
        r.2.insert(f.cpu);
    }
    let mut rows: Vec<_> = rows.into_iter().collect();
    rows.sort_by(|a, b| (b.1 .0 + b.1 .1).cmp(&(a.1 .0 + a.1 .1)).then(a.0.cmp(&b.0)));
    for ((device, tid), (read, written, cpus, comm)) in rows {
        let cpus: Vec<u32> = cpus.into_iter().collect();
        t.push_row(vec![
            Cell::text(device.split_once(':').map_or(device, |(_, n)| n)),
            Cell::UInt(u64::from(tid)),
            Cell::text(comm),
            Cell::float(read as f64 / MB, 3),
            Cell::float(written as f64 / MB, 3),
            Cell::text(kairos_platform::numa::format_cpulist(&cpus)),
        ]);
    }
    if u.flows.is_empty() {
        t.push_note("the target moved no data through any traced device");
    }
    for (device, (r, w)) in &u.others {
        if r + w > 0 {
            t.push_note(format!("{device}: other processes read {:.3} MB and wrote {:.3} MB", *r as f64 / MB, *w as f64 / MB));
        }
    }
    if u.lost > 0 {
        t.push_note(format!("{} trace records were lost (the rings filled): the figures are short", u.lost));
    }
    t.push_note("Reads of a network device are the received data each thread copied out of its sockets; writes are packets queued in the thread's context; block I/O is the bios each thread submitted.");
    t
}
