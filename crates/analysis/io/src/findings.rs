//! One sentence per finding, each from a measured figure only.

use crate::ddio::per_socket;
use crate::model::{IoResult, Scope};

/// Miss shares above this are worth a sentence.
const MISS_WORTH_SAYING: f64 = 20.0;
/// Link use above this at peak is worth a sentence.
const LINK_BUSY: f64 = 70.0;

pub fn findings(r: &IoResult) -> Vec<String> {
    let mut out = Vec::new();
    for s in per_socket(r, &r.points) {
        let stacks: Vec<String> = r
            .series
            .iter()
            .enumerate()
            .filter(|(i, x)| {
                x.scope == Scope::Stack
                    && x.socket == Some(s.socket)
                    && x.flow.starts_with("inbound")
                    && r.total(*i) > 0.0
            })
            .map(|(_, x)| format!("{} ({})", x.name, x.label))
            .collect();
        let from = if stacks.is_empty() {
            String::new()
        } else {
            format!(" (traffic from {})", dedup(stacks).join(", "))
        };
        if let Some(miss) = s
            .metrics
            .get("io_full_write_l3_miss")
            .filter(|m| **m > MISS_WORTH_SAYING)
        {
            out.push(format!("inbound full-line writes on socket {}{from} miss the L3 {miss:.0}% of the time: DDIO could not allocate them in the socket's L3 (ways taken, or data evicted before the cores read it); if the consuming threads run on another socket, pin them to this socket's CPUs (see `kairos report topology`)", s.socket));
        }
        if let Some(miss) = s
            .metrics
            .get("io_read_l3_miss")
            .filter(|m| **m > MISS_WORTH_SAYING)
        {
            out.push(format!("inbound reads (device reads of memory) on socket {}{from} miss the L3 {miss:.0}% of the time: the data the device sends was not in this socket's L3, e.g. written by cores of another socket", s.socket));
        }
        if let Some(hit) = s.hit_rate.filter(|h| 100.0 - h > MISS_WORTH_SAYING) {
            out.push(format!("{:.0}% of the IO requests on socket {}{from} miss the L3 (DDIO hit rate {hit:.0}%)", 100.0 - hit, s.socket));
        }
        if let Some(ns) = s.read_latency_ns {
            out.push(format!(
                "average inbound read latency on socket {}: {ns:.0} ns in the CHA",
                s.socket
            ));
        }
        if let Some(ns) = s.write_latency_ns {
            out.push(format!(
                "average inbound full-line write (ItoM) on socket {}: {ns:.0} ns in the CHA before the data goes into the L3",
                s.socket
            ));
        }
    }
    for (i, x) in r.series.iter().enumerate() {
        let (Some(link), true) = (x.link_bytes_per_s, x.unit == "bytes") else {
            continue;
        };
        let peak = r.peak(i);
        if 100.0 * peak / link > LINK_BUSY {
            out.push(format!("{} ({}) {} peaks at {:.0}% of its PCIe link's payload bandwidth ({:.0} MB/s of {:.0} MB/s)", x.name, x.pci.as_deref().unwrap_or("?"), x.flow, 100.0 * peak / link, peak / 1e6, link / 1e6));
        }
    }
    // The busiest device, as a fact.
    let busiest = (0..r.series.len())
        .filter(|&i| r.series[i].scope == Scope::Device)
        .map(|i| (i, r.total(i)))
        .filter(|(_, t)| *t > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((i, total)) = busiest {
        let x = &r.series[i];
        let node = x
            .socket
            .map_or("no NUMA node".to_string(), |n| format!("node {n}"));
        out.push(format!("the busiest device was {} ({}, {node}): {:.3} MB {} over {:.1} s, {:.3} MB/s on average, {:.3} MB/s at peak", x.name, x.label, total / 1e6, x.flow, r.duration(), r.average(i) / 1e6, r.peak(i) / 1e6));
    } else if !r.series.is_empty() {
        out.push("no device moved any data during the collection".into());
    }
    out
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|x| seen.insert(x.clone()));
    v
}
