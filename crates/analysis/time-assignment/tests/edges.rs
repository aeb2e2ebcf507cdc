//! Edge cases: no branches, first sample, old records, T = 0, unknown frames, threads.

#![allow(clippy::unwrap_used)]

mod common;

use common::{B, MS};
use kairos_model::BranchKind;
use kairos_time_assignment::{assign, derive, derive_over, to_profile, Method};

const OURS_AND_PAPER: [Method; 6] = [
    Method::None,
    Method::Equal,
    Method::Ratio,
    Method::Proportional,
    Method::Segments,
    Method::Nesting,
];

#[test]
fn without_branches_every_method_is_plain_sampling() {
    let mut b = B::new(16, false);
    let (m, f) = (b.frame("main"), b.frame("f"));
    for i in 1..=5 {
        b.sample(i * MS, 0, Some(if i % 2 == 0 { m } else { f }), MS, &[]);
    }
    let none = assign(&b.p, Method::None).unwrap();
    assert_eq!(none.points_per_sample, 1.0);
    for meth in OURS_AND_PAPER {
        let a = assign(&b.p, meth).unwrap();
        assert_eq!(a.points, none.points, "{meth}");
        assert_eq!(a.points_per_sample, 1.0);
    }
}

#[test]
fn first_sample_of_a_thread_stands_for_its_weight() {
    let mut b = B::new(16, false);
    let (m, f) = (b.frame("main"), b.frame("f"));
    b.sample(
        5 * MS,
        0,
        Some(m),
        400_000,
        &[(Some(f), Some(m), BranchKind::Return, None, true)],
    );
    let a = assign(&b.p, Method::Equal).unwrap();
    let got: Vec<_> = a.points.iter().map(|p| (p.time_ns, p.weight_ns)).collect();
    assert_eq!(got, [(5 * MS - 200_000, 200_000), (5 * MS, 200_000)]);
}

#[test]
fn old_records_are_ignored() {
    let mut b = B::new(4, false);
    let (m, f, g) = (b.frame("main"), b.frame("f"), b.frame("g"));
    b.sample(
        MS,
        0,
        Some(m),
        MS,
        &[(Some(f), Some(m), BranchKind::Return, None, true)],
    );
    b.sample(
        2 * MS,
        0,
        Some(m),
        MS,
        &[
            (Some(f), Some(m), BranchKind::Return, None, false),
            (Some(g), Some(m), BranchKind::Return, None, true),
        ],
    );
    for meth in OURS_AND_PAPER.into_iter().skip(1) {
        let a = assign(&b.p, meth).unwrap();
        assert_eq!(a.points.len(), 4, "{meth}");
        // Ratio gives g (never sampled) weight 0, so its point sits at 1 ms: skip by count.
        let second: Vec<_> = a.points.iter().skip(2).map(|p| p.frame).collect();
        assert_eq!(second, [Some(g), Some(m)], "{meth}");
    }
}

#[test]
fn zero_length_intervals_and_unknown_frames_do_not_panic() {
    let mut b = B::new(2, true);
    let m = b.frame("main");
    let r = |from, new| (from, None, BranchKind::Unknown, Some(0), new);
    b.sample(0, 0, None, 0, &[r(None, true), r(Some(999), true)]);
    b.sample(0, 0, Some(m), 0, &[r(Some(m), true)]);
    b.sample(MS, 0, Some(999), MS, &[r(Some(m), false), r(None, true)]);
    for meth in Method::ALL {
        match assign(&b.p, meth) {
            Ok(a) => {
                // `covered` draws a head it leaves to the sampled function as one more point.
                let expect = match meth {
                    Method::None => 3,
                    Method::Covered => 8,
                    _ => 7,
                };
                assert_eq!(a.points.len(), expect, "{meth}");
                assert_eq!(
                    a.points.iter().filter(|p| p.record.is_some()).count(),
                    if meth == Method::None { 0 } else { 4 },
                    "{meth}"
                );
                assert_eq!(
                    a.points.iter().map(|p| p.weight_ns).sum::<u64>(),
                    MS,
                    "{meth}"
                );
                let d = to_profile(&b.p, &a);
                assert_eq!(d.samples.len(), a.points.len());
            }
            Err(e) => assert_eq!(meth, Method::Cycles, "{e}"), // cycles 0 = not measured
        }
    }
}

#[test]
fn threads_interleaved_have_their_own_intervals() {
    let mut b = B::new(16, false);
    let (m, f, w) = (b.frame("main"), b.frame("f"), b.frame("work"));
    b.sample(MS, 0, Some(m), MS, &[]);
    b.sample(MS + 100, 1, Some(w), MS, &[]);
    b.sample(
        2 * MS,
        0,
        Some(m),
        MS,
        &[(Some(f), Some(m), BranchKind::Return, None, true)],
    );
    b.sample(
        3 * MS + 100,
        1,
        Some(w),
        MS,
        &[(Some(f), Some(w), BranchKind::Return, None, true)],
    );
    let a = assign(&b.p, Method::Equal).unwrap();
    let t1: Vec<_> = a
        .points
        .iter()
        .filter(|p| p.thread == 1)
        .map(|p| (p.time_ns, p.weight_ns))
        .collect();
    assert_eq!(t1, [(MS + 100, MS), (2 * MS + 100, MS), (3 * MS + 100, MS)]);
    let t0: Vec<_> = a
        .points
        .iter()
        .filter(|p| p.thread == 0)
        .map(|p| (p.time_ns, p.weight_ns))
        .collect();
    assert_eq!(t0, [(MS, MS), (MS + MS / 2, MS / 2), (2 * MS, MS / 2)]);
    assert!(a.points.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
}

#[test]
fn derived_profile_keeps_sample_stacks_and_adds_one_frame_stacks() {
    let mut b = B::new(16, false);
    let (m, f) = (b.frame("main"), b.frame("f"));
    b.sample(
        MS,
        0,
        Some(m),
        MS,
        &[(Some(f), Some(m), BranchKind::Return, None, true)],
    );
    let a = assign(&b.p, Method::Equal).unwrap();
    let d = to_profile(&b.p, &a);
    assert_eq!(d.samples.len(), 2);
    assert!(d.branches.is_empty());
    let leaves: Vec<_> = d
        .samples
        .iter()
        .map(|s| d.leaf_frame(s).map(|fr| fr.function.clone()))
        .collect();
    assert_eq!(leaves, [Some("f".to_string()), Some("main".to_string())]);
    assert_eq!(d.samples.iter().map(|s| s.weight).sum::<u64>(), MS);
}

/// Weights that are event counts (1 per sample) give derived weights in ns, far wider
/// than any sample's: the derived columns widen as they go, and every method's derived
/// profile, from samples as a vector or as columns, is the one `to_profile` gives.
#[test]
fn derived_columns_widen_and_match_to_profile_from_vector_or_columns() {
    let mut b = B::new(16, false);
    let (m, f) = (b.frame("main"), b.frame("f"));
    for i in 1..=6u64 {
        b.sample(
            i * 3 * MS,
            (i % 2) as u32,
            Some(m),
            1,
            &[(Some(f), Some(m), BranchKind::Return, None, true)],
        );
    }
    b.p.weight_event = Some("instructions".into());
    let mut cols = kairos_model::SampleColumns::with_capacity(0, 0, 0, 0);
    b.p.samples.iter().for_each(|&s| cols.push(s));
    for meth in Method::ALL {
        let Ok(a) = assign(&b.p, meth) else {
            continue;
        };
        let want = to_profile(&b.p, &a);
        let d = derive(&b.p, meth).unwrap();
        let widest = (0..d.samples.len()).map(|i| d.samples.weight(i)).max();
        assert!(widest > Some(255), "{meth}: {:?}", d.samples.weight);
        assert_eq!(d.to_profile(), want, "{meth}");
        let from_cols = derive_over(&b.p, &cols, meth).unwrap();
        assert_eq!(from_cols.to_profile(), want, "{meth} from columns");
        for pt in a.points.iter().filter(|p| p.record.is_some()) {
            let r = pt.record.unwrap() as usize;
            assert_eq!(d.record_time(r), Some(pt.time_ns), "{meth}");
        }
    }
}
