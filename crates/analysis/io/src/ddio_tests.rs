//! The perfmon formulas and the DDIO figures on hand-built counts.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use crate::ddio::{evaluate, per_socket};
use crate::model::{IoResult, Point, Scope, Series};
use crate::tests::files;

fn socket_series(flow: &str) -> Series {
    Series {
        scope: Scope::Socket,
        name: "socket 1".into(),
        flow: flow.into(),
        unit: "count".into(),
        socket: Some(1),
        pci: None,
        block: None,
        label: String::new(),
        link_bytes_per_s: None,
    }
}

#[test]
fn the_perfmon_formulas_on_hand_built_counts() {
    let (_, metrics) = files("ICX", "icelakex");
    let all = kairos_metrics::load_perfmon(&metrics).unwrap();
    let metric = |n: &str| {
        let m = all.iter().find(|m| m.name == n).unwrap();
        crate::model::Metric {
            name: m.name.clone(),
            formula: m.formula.clone(),
            events: m
                .events
                .iter()
                .map(|b| (b.alias.clone(), b.name.clone()))
                .collect(),
        }
    };
    let flows = [
        "UNC_CHA_TOR_INSERTS.IO_HIT_PCIRDCUR",
        "UNC_CHA_TOR_INSERTS.IO_MISS_PCIRDCUR",
        "UNC_CHA_TOR_INSERTS.IO_PCIRDCUR",
        "UNC_CHA_TOR_INSERTS.IO_HIT",
        "UNC_CHA_TOR_INSERTS.IO_MISS",
        "UNC_CHA_TOR_OCCUPANCY.IO_PCIRDCUR",
        "UNC_CHA_CLOCKTICKS",
        "UNC_CHA_TOR_INSERTS.IO_ITOM",
        "UNC_CHA_TOR_OCCUPANCY.IO_ITOM",
    ];
    let r = IoResult {
        tick_ms: 500,
        series: flows.iter().map(|f| socket_series(f)).collect(),
        // Two half seconds: 1,000 hits and 3,000 misses of PCIRdCur; 1.2 M TOR occupancy
        // cycles; 2 G CHA cycles.
        points: vec![
            Point {
                t: 0.0,
                secs: 0.5,
                values: vec![
                    600.0, 1400.0, 2000.0, 600.0, 1400.0, 500_000.0, 1e9, 1500.0, 100_000.0,
                ],
            },
            Point {
                t: 0.5,
                secs: 0.5,
                values: vec![
                    400.0, 1600.0, 2000.0, 400.0, 1600.0, 700_000.0, 1e9, 500.0, 300_000.0,
                ],
            },
        ],
        metrics: vec![metric("io_bandwidth_read"), metric("io_read_l3_miss")],
        ..IoResult::default()
    };
    let s = per_socket(&r, &r.points);
    assert_eq!(s.len(), 1);
    // (1,000 + 3,000) x 64 bytes / 1e6 over 1 s = 0.256 MB/s; 3,000 / 4,000 = 75 %.
    assert!(
        (s[0].metrics["io_bandwidth_read"] - 0.256).abs() < 1e-9,
        "{:?}",
        s[0].metrics
    );
    assert!((s[0].metrics["io_read_l3_miss"] - 75.0).abs() < 1e-9);
    assert_eq!(s[0].hit_rate, Some(25.0));
    // 1.2e6 / 4,000 = 300 cycles at 2e9 cycles/s = 150 ns.
    assert!((s[0].read_latency_ns.unwrap() - 150.0).abs() < 1e-9);
    // ItoM: 4e5 / 2,000 = 200 cycles = 100 ns.
    assert!((s[0].write_latency_ns.unwrap() - 100.0).abs() < 1e-9);
    // A division by zero is no value, not an error.
    let zero: HashMap<String, f64> = flows.iter().map(|f| (f.to_string(), 0.0)).collect();
    assert_eq!(evaluate(&metric("io_read_l3_miss"), &zero, 1.0), None);
}
