//! The vendored TLB formulas on recorded (made-up, hand-checked) counter values.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use kairos_metrics::{evaluate, events, load, parse, tlb_metrics, Error, SKX_TLB_JSON};

fn counts() -> HashMap<String, f64> {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../data/skx-tlb-example-counts.json")).unwrap();
    v.as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect()
}

#[test]
fn tlb_metrics_by_hand() {
    let m = load(SKX_TLB_JSON).unwrap();
    let c = counts();
    // min(7 * 6e6 + 20e6, max(300e6 - 200e6, 0)) / 1e9 = min(62e6, 100e6) / 1e9 = 0.062
    let dtlb = evaluate("tma_dtlb_load", &m, &c).unwrap();
    assert!((dtlb - 0.062).abs() < 1e-12, "{dtlb}");
    // 20e6 / 1e9 = 0.02; hit = 0.062 - 0.02 = 0.042
    assert!((evaluate("tma_load_stlb_miss", &m, &c).unwrap() - 0.02).abs() < 1e-12);
    assert!((evaluate("tma_load_stlb_hit", &m, &c).unwrap() - 0.042).abs() < 1e-12);
    assert_eq!(tlb_metrics().len(), 3);
    let ev = events("tma_load_stlb_hit", &m);
    assert!(
        ev.contains(&"cpu@DTLB_LOAD_MISSES.STLB_HIT,cmask=1@".to_string())
            && ev.contains(&"CPU_CLK_UNHALTED.THREAD".to_string()),
        "{ev:?}"
    );
}

#[test]
fn the_grammar() {
    let c: HashMap<String, f64> = [("A".to_string(), 4.0), ("B:c1".to_string(), 2.0)].into();
    let ev = |s: &str| {
        let ms = vec![kairos_metrics::Metric {
            name: "x".into(),
            expr: s.into(),
            brief: String::new(),
            scale_unit: String::new(),
        }];
        evaluate("x", &ms, &c)
    };
    assert_eq!(ev("(A + B:c1) * 2 - -1").unwrap(), 13.0);
    assert_eq!(ev("max(A, B:c1, 7) / 2").unwrap(), 3.5);
    assert_eq!(ev("A if B:c1 > 1 else 0").unwrap(), 4.0);
    assert_eq!(ev("A if B:c1 > 3 else min(A, 1)").unwrap(), 1.0);
    assert_eq!(ev("A / 0").unwrap(), 0.0);
    assert_eq!(ev("C"), Err(Error::MissingEvent("C".into())));
    for bad in ["(A", "A +", "min(A", "cpu@X", "A if A", ""] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    let cyc = vec![kairos_metrics::Metric {
        name: "x".into(),
        expr: "x + 1".into(),
        brief: String::new(),
        scale_unit: String::new(),
    }];
    assert_eq!(
        evaluate("x", &cyc, &HashMap::new()),
        Err(Error::Cycle("x".into()))
    );
}
