//! The `kairos cache` document: capabilities, groups, ways per domain, availability per
//! CPU and the monitoring counters, as a kairos-report [`Document`] (text, CSV, JSON).

use kairos_report::{Cell, Column, Document, Section, Table};

use crate::avail::{self, DomainUse};
use crate::mask;
use crate::monitor;
use crate::topology::CacheTopology;
use crate::{Error, RootKind, Tree};

fn list(v: &[String]) -> Cell {
    if v.is_empty() {
        Cell::text("-")
    } else {
        Cell::text(v.join(", "))
    }
}

fn opt<T: Into<u64>>(v: Option<T>) -> Cell {
    v.map_or(Cell::Empty, |x| Cell::UInt(x.into()))
}

/// Builds the document. `topo` maps CPUs to cache domains (empty: per-CPU table omitted).
pub fn document(tree: &Tree, topo: &CacheTopology) -> Result<Document, Error> {
    let mut doc = Document::new(format!(
        "Cache allocation (resctrl at {})",
        tree.root.display()
    ));
    doc.push_section(summary(tree));
    doc.push_table(allocation_table(tree));
    if let Some(t) = bandwidth_table(tree) {
        doc.push_table(t);
    }
    doc.push_table(groups_table(tree));
    let uses = avail::domains(tree)?;
    doc.push_table(ways_table(&uses));
    push_per_cpu(&mut doc, tree, topo, &uses);
    let t = monitoring_table(tree);
    if !t.rows.is_empty() {
        doc.push_table(t);
    }
    Ok(doc)
}

/// The file system, CDP, classes of service and monitoring.
fn summary(tree: &Tree) -> Section {
    let caps = &tree.caps;
    let mut s = Section::new("resctrl");
    s.push(
        "Root",
        Cell::text(match tree.kind {
            RootKind::Kernel => "kernel file system",
            RootKind::Directory => "a plain directory (a copy of a tree): read as if mounted",
        }),
    );
    s.push(
        "Code/data prioritisation (CDP)",
        Cell::text(if tree.cdp_mounted { "on" } else { "off" }),
    );
    s.push(
        "Classes of service (CLOS)",
        match caps.closid_limit() {
            Some(l) => Cell::text(format!("{} of {l} in use", tree.groups.len())),
            None => Cell::text("no allocation resource"),
        },
    );
    s.push(
        "Monitoring",
        match &caps.mon {
            Some(m) => Cell::text(format!(
                "{} ({} RMIDs)",
                m.features.join(", "),
                m.num_rmids.map_or("?".into(), |n| n.to_string())
            )),
            None => Cell::text("none"),
        },
    );
    if let Some(st) = &tree.last_cmd_status {
        s.push("Last command status", Cell::text(st.clone()));
    }
    s
}

/// The cache allocation resources (L3, L2, their CDP halves).
fn allocation_table(tree: &Tree) -> Table {
    let caps = &tree.caps;
    let mut t = Table::new(vec![
        Column::left("Resource"),
        Column::left("Domains"),
        Column::right("Ways"),
        Column::left("cbm_mask"),
        Column::right("Way size").with_unit("bytes"),
        Column::right("Min ways"),
        Column::right("CLOS"),
        Column::left("I/O ways (shareable_bits)"),
        Column::left("Sparse masks"),
    ])
    .with_title("Cache allocation resources");
    for c in &caps.caches {
        let doms = tree.domains(&c.name);
        t.push_row(vec![
            Cell::text(c.name.clone()),
            Cell::text(mask::format_list(&doms)),
            Cell::UInt(c.ways().into()),
            Cell::text(mask::format_cbm(c.cbm_mask, c.cbm_mask)),
            opt(doms.first().and_then(|d| tree.way_bytes(&c.name, *d))),
            Cell::UInt(c.min_cbm_bits.into()),
            Cell::UInt(c.num_closids.into()),
            Cell::text(if c.shareable_bits == 0 {
                "-".into()
            } else {
                format!(
                    "{} ({:x})",
                    mask::way_list(c.shareable_bits),
                    c.shareable_bits
                )
            }),
            Cell::text(if c.sparse_masks { "yes" } else { "no" }),
        ]);
    }
    if caps.caches.is_empty() {
        t.push_note("no cache allocation resource: ways cannot be given to a program here");
    }
    t
}

/// Memory bandwidth allocation, when the machine has it.
fn bandwidth_table(tree: &Tree) -> Option<Table> {
    if tree.caps.bandwidth.is_empty() {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("Resource"),
        Column::left("Unit"),
        Column::right("Granularity"),
        Column::right("Minimum"),
        Column::left("Linear"),
        Column::right("CLOS"),
        Column::left("Throttle mode"),
    ])
    .with_title("Memory bandwidth allocation");
    for b in &tree.caps.bandwidth {
        let unit = if tree.mba_mbps && b.name == "MB" {
            "MBps (mba_MBps)"
        } else {
            "percent"
        };
        t.push_row(vec![
            Cell::text(b.name.clone()),
            Cell::text(unit),
            opt(b.bandwidth_gran),
            opt(b.min_bandwidth),
            b.delay_linear
                .map_or(Cell::Empty, |l| Cell::text(if l { "yes" } else { "no" })),
            opt(b.num_closids),
            b.thread_throttle_mode
                .clone()
                .map_or(Cell::Empty, Cell::text),
        ]);
    }
    Some(t)
}

/// The control groups, with a note for each group a killed Kairos left.
fn groups_table(tree: &Tree) -> Table {
    let mut t = Table::new(vec![
        Column::left("Group"),
        Column::left("Mode"),
        Column::right("Tasks"),
        Column::left("CPUs"),
        Column::left("Schemata"),
    ])
    .with_title("Control groups");
    for g in &tree.groups {
        t.push_row(vec![
            Cell::text(g.label()),
            g.mode.clone().map_or(Cell::Empty, Cell::text),
            Cell::UInt(g.tasks.len() as u64),
            Cell::text(if g.cpus.is_empty() {
                "-".into()
            } else {
                mask::format_list(&g.cpus)
            }),
            Cell::text(
                g.schemata
                    .lines
                    .iter()
                    .map(|l| l.render())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ]);
    }
    // A Kairos killed with SIGKILL cannot undo its group: point at what it left.
    for g in &tree.groups {
        if let Some(pid) = g
            .name
            .strip_prefix("kairos-")
            .and_then(|p| p.parse::<u32>().ok())
        {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                t.push_note(format!(
                    "group {} was left by a Kairos that no longer runs (pid {pid}); remove it with rmdir {} and check the default group's schemata",
                    g.name,
                    g.path.display()
                ));
            }
        }
    }
    t
}

/// Which ways each CPU's tasks of the default group may fill, or why not shown.
fn push_per_cpu(doc: &mut Document, tree: &Tree, topo: &CacheTopology, uses: &[DomainUse]) {
    match avail::per_cpu(tree, topo, uses) {
        Some(rows) => {
            let mut t = Table::new(vec![
                Column::left("CPUs"),
                Column::left("Resource"),
                Column::right("Domain"),
                Column::left("Group"),
                Column::left("May fill"),
                Column::right("Exclusive ways"),
                Column::left("Shared with"),
            ])
            .with_title("Cache availability per CPU (tasks of the default group running there)");
            for r in rows {
                let width = uses
                    .iter()
                    .find(|u| u.resource == r.resource)
                    .map_or(0, |u| u.width);
                t.push_row(vec![
                    Cell::text(mask::format_list(&r.cpus)),
                    Cell::text(r.resource),
                    Cell::UInt(r.domain.into()),
                    Cell::text(r.group),
                    Cell::text(avail::describe(r.mask, width)),
                    Cell::UInt(mask::ways(r.exclusive).into()),
                    list(&r.shared_with),
                ]);
            }
            t.push_note(
                "tasks moved into a group fill that group's ways on whichever CPU they run",
            );
            doc.push_table(t);
        }
        None if !uses.is_empty() => {
            let mut s = Section::new("Cache availability per CPU");
            s.push("Not shown", Cell::text("which cache instance each CPU uses is unknown (no cpuN/cache/indexK/id for this tree); the table above is per domain"));
            doc.push_section(s);
        }
        None => {}
    }
}

/// The monitoring counters of every group that has them (no rows: none readable).
fn monitoring_table(tree: &Tree) -> Table {
    let mut t = Table::new(vec![
        Column::left("Group"),
        Column::right("Domain"),
        Column::right("LLC occupancy").with_unit("bytes"),
        Column::right("MBM total").with_unit("bytes"),
        Column::right("MBM local").with_unit("bytes"),
    ])
    .with_title("Monitoring counters now (occupancy; bandwidth counters are cumulative)");
    for g in tree.groups.iter().filter(|g| g.has_mon_data) {
        let Ok(rs) = monitor::read(&g.path) else {
            continue;
        };
        for r in rs {
            let c = |v: Option<u64>| v.map_or(Cell::text("Unavailable"), Cell::UInt);
            t.push_row(vec![
                Cell::text(g.label()),
                Cell::UInt(r.domain.into()),
                c(r.llc_occupancy),
                c(r.mbm_total_bytes),
                c(r.mbm_local_bytes),
            ]);
        }
    }
    t
}

/// One row per group and run of domains whose ways look the same.
fn ways_table(uses: &[DomainUse]) -> Table {
    let mut t = Table::new(vec![
        Column::left("Resource"),
        Column::left("Domains"),
        Column::left("Group"),
        Column::left("Ways (highest first)"),
        Column::left("Mask"),
        Column::right("Ways"),
        Column::right("Exclusive"),
        Column::left("Shared with"),
    ])
    .with_title("Ways per domain (# = may fill; I/O = ways DDIO or other hardware fills too)");
    let mut i = 0;
    while i < uses.len() {
        let u = &uses[i];
        let same = |v: &DomainUse| v.resource == u.resource && v.io == u.io && v.groups == u.groups;
        let mut doms = vec![u.domain];
        while i + 1 < uses.len() && same(&uses[i + 1]) {
            i += 1;
            doms.push(uses[i].domain);
        }
        let full = mask::run(0, u.width);
        if u.io != 0 {
            t.push_row(vec![
                Cell::text(u.resource.clone()),
                Cell::text(mask::format_list(&doms)),
                Cell::text(avail::IO),
                Cell::text(mask::picture(u.io, u.width)),
                Cell::text(mask::format_cbm(u.io, full)),
                Cell::UInt(mask::ways(u.io).into()),
                Cell::Empty,
                Cell::Empty,
            ]);
        }
        for g in &u.groups {
            t.push_row(vec![
                Cell::text(u.resource.clone()),
                Cell::text(mask::format_list(&doms)),
                Cell::text(g.group.clone()),
                Cell::text(mask::picture(g.mask, u.width)),
                Cell::text(mask::format_cbm(g.mask, full)),
                Cell::UInt(mask::ways(g.mask).into()),
                Cell::UInt(mask::ways(g.exclusive).into()),
                list(&g.shared_with),
            ]);
        }
        i += 1;
    }
    t
}
