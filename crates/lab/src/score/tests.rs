use kairos_time_assignment::{Method, Point};

use super::*;
use crate::testutil::trace;

/// a [100k, 100k+50) and b [100k+50, 100k+100) for k < 10: every 100 ns bucket is half a,
/// half b.
fn halves() -> Profile {
    let mut calls = Vec::new();
    for k in 0..10u64 {
        calls.push((0, 100 * k, 100 * k + 50, 0));
        calls.push((1, 100 * k + 50, 100 * k + 100, 0));
    }
    trace(&["a", "b"], &calls)
}

fn pt(time_ns: u64, frame: Option<u32>, weight_ns: u64) -> Point {
    Point {
        time_ns,
        thread: 0,
        frame,
        weight_ns,
        from_branch: false,
        sample: 0,
        record: None,
    }
}

fn truth(p: &Profile, opts: &ScoreOptions) -> (Truth, FunctionNames) {
    let names = FunctionNames::new(p);
    (Truth::new(p, opts, &names).expect("valid trace"), names)
}

#[test]
fn share_error_is_the_mean_total_variation_distance() {
    let p = halves();
    let (t, n) = truth(&p, &ScoreOptions::new(100));
    assert_eq!(t.buckets.len(), 10);
    // Exact points in every bucket (each stands for the 50 ns before it): no error.
    let exact: Vec<_> = (0..10)
        .flat_map(|k| {
            [
                pt(100 * k + 50, Some(0), 50),
                pt(100 * k + 100, Some(1), 50),
            ]
        })
        .collect();
    assert!(t.share_error(&exact, &n).abs() < 1e-12);
    // One point of a per bucket: |0.5-1| + |0.5-0| over 2 = 0.5.
    let one: Vec<_> = (0..10).map(|k| pt(100 * k + 100, Some(0), 100)).collect();
    assert!((t.share_error(&one, &n) - 0.5).abs() < 1e-12);
    // Nothing in half the buckets: those count 1, the others 0.5.
    let half: Vec<_> = (0..5).map(|k| pt(100 * k + 100, Some(0), 100)).collect();
    assert!((t.share_error(&half, &n) - 0.75).abs() < 1e-12);
    // Weight on a function that never ran there, or outside traced code: disjoint.
    let wrong: Vec<_> = (0..10).map(|k| pt(100 * k + 100, None, 100)).collect();
    assert!((t.share_error(&wrong, &n) - 1.0).abs() < 1e-12);
    // A point's weight is spread over the stretch it stands for: one point of a ending at
    // 1000 and covering everything puts 50% a in every bucket against 50% a: error 0.5,
    // not 1 for nine empty buckets.
    assert!((t.share_error(&[pt(1000, Some(0), 1000)], &n) - 0.5).abs() < 1e-12);
    // Half a bucket of a then half of b, straddling an edge, matches buckets 1-9 exactly
    // where they lie; bucket 0 has no weight and counts 1.
    let straddle: Vec<_> = (1..10)
        .flat_map(|k| {
            [
                pt(100 * k + 50, Some(0), 50),
                pt(100 * k + 100, Some(1), 50),
            ]
        })
        .collect();
    assert!((t.share_error(&straddle, &n) - 0.1).abs() < 1e-12);
}

#[test]
fn plain_sampling_scores_as_computed_by_hand() {
    // Samples at 25, 125, ..., 925 each land in `a` and stand for the 100 ns before them:
    // every bucket is all `a` against half a, half b (error 0.5), except the last, which
    // is compared only up to the last sample (925), where the truth is all `a` too (0).
    let o = crate::EmulateOptions {
        phase_ns: Some(25),
        ..crate::EmulateOptions::new(100, 16)
    };
    let e = crate::emulate_lbr_with(&halves(), &o).expect("emulates");
    let s = score(&e, 100, &[Method::None]).expect("scores");
    let m = s.get(Method::None).expect("none always runs");
    assert!((m.share_error - 0.45).abs() < 1e-9, "{m:?}");
    assert_eq!((s.buckets, s.samples, s.events_total), (10, 10, 0));
    assert_eq!(s.recall(Method::None), Some(100.0));
}

#[test]
fn events_are_found_only_in_an_overlapping_fine_bucket_of_their_thread() {
    // main [0, 10000) with rare_delay [3050, 3250) and a short one [6000, 6050).
    let p = trace(
        &["main", "rare_delay"],
        &[(0, 0, 10_000, 0), (1, 3050, 3250, 1), (1, 6000, 6050, 1)],
    );
    let opts = ScoreOptions {
        event_min_ns: 100,
        event_bucket_ns: 100,
        ..ScoreOptions::new(1000)
    };
    let (t, n) = truth(&p, &opts);
    assert_eq!(t.events, [(0, 3050, 3250)]);
    let found = |pts: &[Point]| t.events_found(pts, &n, n.id_of("rare_delay").expect("known"));
    // The call overlaps the buckets [3000, 3100), [3100, 3200), [3200, 3300).
    // A point stands for the stretch [time - weight, time].
    assert_eq!(found(&[pt(3010, Some(1), 10)]), 1);
    assert_eq!(found(&[pt(3000, Some(1), 10)]), 0);
    assert_eq!(found(&[pt(3299, Some(1), 10)]), 1);
    assert_eq!(found(&[pt(3305, Some(1), 10)]), 1);
    assert_eq!(found(&[pt(3310, Some(1), 10)]), 0);
    assert_eq!(found(&[pt(3320, Some(1), 10)]), 0);
    assert_eq!(found(&[pt(2999, Some(1), 10)]), 0);
    // A long stretch ending after the window still overlaps it.
    assert_eq!(found(&[pt(2000, Some(1), 10), pt(3900, Some(1), 800)]), 1);
    assert_eq!(found(&[pt(3100, Some(0), 10)]), 0);
    assert_eq!(found(&[pt(3100, Some(1), 0)]), 0);
    assert_eq!(
        found(&[Point {
            thread: 1,
            ..pt(3100, Some(1), 10)
        }]),
        0
    );
}

#[test]
fn unavailable_methods_get_a_row_with_the_reason_and_bad_buckets_an_error() {
    let e = crate::emulate_lbr(&halves(), 100, 16, false, 3.0).expect("emulates");
    let s = score(&e, 100, &Method::ALL).expect("scores");
    assert_eq!(s.rows.len(), Method::ALL.len());
    for r in &s.rows {
        assert!(r.result.is_some() || r.note.is_some(), "{r:?}");
    }
    assert!(matches!(score(&e, 0, &Method::ALL), Err(Error::BadBucket)));
    let text = s.to_table().to_text();
    assert!(
        text.contains("none") && text.contains("Share error"),
        "{text}"
    );
}
