//! Intel's own metric format (Formula over aliases) on a small hand-written file.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use kairos_metrics::{evaluate_perfmon, load_perfmon, perfmon_events, Error};

const FILE: &str = r#"{"Header": {"Version": "test"}, "Metrics": [
 {"MetricName": "Half_Clocks", "Level": 2, "ParentCategory": "Top", "UnitOfMeasure": "percent",
  "Events": [{"Name": "CPU_CLK_UNHALTED.THREAD_ANY", "Alias": "a"}, {"Name": "CPU_CLK_UNHALTED.THREAD", "Alias": "b"},
             {"Name": "L1D_PEND_MISS.FB_FULL:c1", "Alias": "a_a"}],
  "Constants": [{"Name": "HYPERTHREADING_ON", "Alias": "smt_on"}, {"Name": "THREADS_PER_CORE", "Alias": "threads"}],
  "Formula": "100 * ( ( a / 2 ) if smt_on else ( b ) ) / ( a_a * durationtimeinmilliseconds )"}
]}"#;

#[test]
fn aliases_constants_and_free_names() {
    let m = load_perfmon(FILE).unwrap();
    let m = &m[0];
    assert_eq!(
        (m.level, m.parent.as_deref(), m.unit.as_str()),
        (Some(2), Some("Top"), "percent")
    );
    let counts: HashMap<String, f64> = [
        ("CPU_CLK_UNHALTED.THREAD_ANY", 800.0),
        ("CPU_CLK_UNHALTED.THREAD", 500.0),
        ("L1D_PEND_MISS.FB_FULL:c1", 4.0),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into();
    // SMT on: 100 * (800 / 2) / (4 * 10) = 1000. THREADS_PER_CORE is bound but unused.
    let on: HashMap<String, f64> = [
        ("HYPERTHREADING_ON".to_string(), 1.0),
        ("DURATIONTIMEINMILLISECONDS".to_string(), 10.0),
    ]
    .into();
    assert_eq!(evaluate_perfmon(m, &counts, &on).unwrap(), 1000.0);
    // SMT off: 100 * 500 / 40 = 1250.
    let off: HashMap<String, f64> = [
        ("HYPERTHREADING_ON".to_string(), 0.0),
        ("DURATIONTIMEINMILLISECONDS".to_string(), 10.0),
    ]
    .into();
    assert_eq!(evaluate_perfmon(m, &counts, &off).unwrap(), 1250.0);
    // A missing event is named, not its alias.
    let mut less = counts.clone();
    less.remove("L1D_PEND_MISS.FB_FULL:c1");
    assert_eq!(
        evaluate_perfmon(m, &less, &on),
        Err(Error::MissingEvent("L1D_PEND_MISS.FB_FULL:c1".into()))
    );
    assert_eq!(
        evaluate_perfmon(m, &counts, &HashMap::new()),
        Err(Error::MissingEvent("HYPERTHREADING_ON".into()))
    );
    assert_eq!(perfmon_events(m).len(), 3);
    assert!(load_perfmon("{}").is_err());
}
