//! Statistics, histogram and high-bandwidth intervals on a timeline built from the pcm
//! snapshot's figures (fixtures/uncore/pcm-memory-2s-4ch-snapshot.txt: socket 0 reads
//! 27478.96 MB/s and writes 7225.79 MB/s, socket 1 29624.51 and 7811.36).

use super::*;

const SNAPSHOT: [(u32, Flow, f64); 4] = [
    (0, Flow::Read, 27478.96e6),
    (0, Flow::Write, 7225.79e6),
    (1, Flow::Read, 29624.51e6),
    (1, Flow::Write, 7811.36e6),
];

/// Ten 100 ms ticks: an idle second half-tick pattern, the snapshot's rates scaled by
/// `scale[i]` in tick i.
pub(crate) fn recorded(scale: &[f64], maximum: Option<Maximum>) -> Timeline {
    let mut points = Vec::new();
    for (i, k) in scale.iter().enumerate() {
        for (d, f, v) in SNAPSHOT {
            points.push(Point {
                t_ns: 1_000_000_000 + i as u64 * 100_000_000,
                dur_ns: 100_000_000,
                domain: d,
                flow: f,
                bytes_per_s: v * k,
            });
        }
    }
    Timeline {
        source: "uncore counters".into(),
        tick_ms: 100,
        domain: "socket".into(),
        points,
        maximum,
        ..Timeline::default()
    }
}

fn max_100() -> Maximum {
    Maximum {
        gbs: 100.0,
        per_node: [(0, 50.0), (1, 50.0)].into(),
        how: "test".into(),
    }
}

#[test]
fn averages_and_peaks_per_socket_and_in_all() {
    let t = recorded(&[1.0, 0.5, 0.0, 1.0], Some(max_100()));
    let s = stats(&t);
    let row = |d, f| {
        s.iter()
            .find(|x| x.domain == d && x.flow == f)
            .unwrap_or_else(|| panic!("{d:?} {f:?}: {s:?}"))
    };
    let r0 = row(Some(0), Flow::Read);
    assert!((r0.peak_gbs - 27.47896).abs() < 1e-9);
    assert!((r0.average_gbs - 27.47896 * 2.5 / 4.0).abs() < 1e-9);
    assert_eq!(r0.maximum_gbs, Some(50.0));
    // All sockets: the pcm snapshot's system read throughput, 57103.47 MB/s.
    let all = row(None, Flow::Read);
    assert!((all.peak_gbs - 57.10347).abs() < 1e-9, "{}", all.peak_gbs);
    assert_eq!(all.maximum_gbs, Some(100.0));
    // System memory throughput of the snapshot: 72140.62 MB/s.
    let dram = t.dram_intervals();
    assert!((dram[0].2 / 1e6 - 72140.62).abs() < 0.01, "{}", dram[0].2);
}

#[test]
fn histogram_of_the_maximum_and_of_the_peak() {
    let t = recorded(&[1.0, 0.5, 0.0, 1.0, 1.5], Some(max_100()));
    let h = histogram(&t, 10);
    assert_eq!(h.len(), 10);
    let secs: Vec<f64> = h
        .iter()
        .map(|b| (b.seconds * 10.0).round() / 10.0)
        .collect();
    // 72.1 GB/s twice (bin 7), 36.1 once (bin 3), 0 once (bin 0), 108.2 above the maximum (last bin).
    assert_eq!(secs, [0.1, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.2, 0.0, 0.1]);
    assert_eq!(high_intervals(&t, 0.7).len(), 3);
    // No maximum: bins of the peak (108.2 GB/s), so the peak is in the last bin.
    let t = recorded(&[1.0, 0.5, 0.0, 1.0, 1.5], None);
    assert_eq!(
        t.reference_gbs().map(|r| r.1),
        Some("the peak (no maximum measured)")
    );
    let h = histogram(&t, 10);
    assert!((h[9].to_gbs - 108.21093).abs() < 1e-3, "{}", h[9].to_gbs);
    assert_eq!(h[9].seconds, 0.1);
    assert_eq!(
        high_intervals(&t, 0.7)
            .into_iter()
            .map(|x| x.0)
            .collect::<Vec<_>>(),
        [1_400_000_000]
    );
}

#[test]
fn an_empty_timeline_has_no_reference_and_a_saved_one_reads_back() {
    let t = Timeline::unavailable("no counters".into(), 100);
    assert_eq!(t.reference_gbs(), None);
    assert!(histogram(&t, 10).is_empty() && stats(&t).is_empty());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let t = recorded(&[1.0], Some(max_100()));
    t.save(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(Timeline::load(dir.path()).and_then(Result::ok), Some(t));
    std::fs::write(dir.path().join(FILE), "{").unwrap_or_else(|e| panic!("{e}"));
    assert!(Timeline::load(dir.path()).is_some_and(|r| r.is_err()));
}
