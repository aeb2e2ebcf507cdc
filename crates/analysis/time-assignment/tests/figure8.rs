//! The paper's figure 8 example for every method, and a handcrafted cycles example.

#![allow(clippy::unwrap_used)]

mod common;

use common::{figure8, B, MS};
use kairos_model::BranchKind;
use kairos_time_assignment::{assign, Error, Method};

/// (time, frame, weight) of the points of the last interval (9 ms, 10 ms].
fn last_interval(m: Method) -> Vec<(u64, Option<u32>, u64)> {
    let (p, _) = figure8();
    let a = assign(&p, m).expect("assign");
    a.points
        .iter()
        .filter(|pt| pt.time_ns > 9 * MS)
        .map(|pt| (pt.time_ns, pt.frame, pt.weight_ns))
        .collect()
}

#[test]
fn none_sees_only_the_sampled_function() {
    let (_, f) = figure8();
    assert_eq!(last_interval(Method::None), [(10 * MS, Some(f[2]), MS)]);
}

#[test]
fn equal_gives_a_third_each() {
    let (_, f) = figure8();
    assert_eq!(
        last_interval(Method::Equal),
        [
            (9 * MS + 333_333, Some(f[0]), 333_333),
            (9 * MS + 666_667, Some(f[1]), 333_334),
            (10 * MS, Some(f[2]), 333_333)
        ]
    );
}

#[test]
fn ratio_inflates_the_sampled_function() {
    let (_, f) = figure8();
    assert_eq!(
        last_interval(Method::Ratio),
        [
            (9 * MS + 100_000, Some(f[0]), 100_000),
            (9 * MS + 400_000, Some(f[1]), 300_000),
            (10 * MS, Some(f[2]), 600_000)
        ]
    );
}

#[test]
fn proportional_gives_the_run_shares_normalised() {
    let (_, f) = figure8();
    assert_eq!(
        last_interval(Method::Proportional),
        [
            (9 * MS + 200_000, Some(f[0]), 200_000),
            (9 * MS + 800_000, Some(f[1]), 600_000),
            (10 * MS, Some(f[2]), 200_000)
        ]
    );
}

#[test]
fn segments_sizes_each_segment_by_duration_per_visit() {
    // F1: 1 ms sampled / 1 visit, F2: 3 ms / 1, F3: 1 ms / 1 (never ended by a record);
    // the head (F1) and the tail (F3) are partial segments, counted half: 0.5 : 3 : 0.5.
    let (_, f) = figure8();
    assert_eq!(
        last_interval(Method::Segments),
        [
            (9 * MS + 125_000, Some(f[0]), 125_000),
            (9 * MS + 875_000, Some(f[1]), 750_000),
            (10 * MS, Some(f[2]), 125_000)
        ]
    );
}

#[test]
fn nesting_keeps_order_and_sums_to_the_interval() {
    let (_, f) = figure8();
    let pts = last_interval(Method::Nesting);
    assert_eq!(
        pts.iter().map(|p| p.1).collect::<Vec<_>>(),
        [Some(f[0]), Some(f[1]), Some(f[2])]
    );
    assert_eq!(pts.iter().map(|p| p.2).sum::<u64>(), MS);
    assert!(pts[1].2 > pts[0].2 && pts[1].2 > pts[2].2, "{pts:?}");
}

#[test]
fn resolution_gained() {
    let (p, _) = figure8();
    assert_eq!(assign(&p, Method::None).unwrap().points_per_sample, 1.0);
    assert_eq!(assign(&p, Method::Equal).unwrap().points_per_sample, 1.2);
}

#[test]
fn cycles_unavailable_without_cycles() {
    let (p, _) = figure8();
    assert!(matches!(
        assign(&p, Method::Cycles),
        Err(Error::MethodUnavailable {
            method: Method::Cycles,
            ..
        })
    ));
}

/// Two 1000 ns intervals; records A(300) B(400) then C(600) D(700) cycles: the run's
/// rate is 2000 ns / 2000 cycles = 1 ns per cycle.
#[test]
fn cycles_handcrafted() {
    let mut b = B::new(4, true);
    let [a, bb, c, d, s] = ["A", "B", "C", "D", "S"].map(|n| b.frame(n));
    let call = BranchKind::Call;
    b.sample(
        1000,
        0,
        Some(s),
        1000,
        &[
            (Some(a), Some(bb), call, Some(300), true),
            (Some(bb), Some(s), call, Some(400), true),
        ],
    );
    b.sample(
        2000,
        0,
        Some(s),
        1000,
        &[
            (Some(a), Some(bb), call, Some(300), false),
            (Some(bb), Some(s), call, Some(400), false),
            (Some(c), Some(d), call, Some(600), true),
            (Some(d), Some(s), call, Some(700), true),
        ],
    );
    let a_ = assign(&b.p, Method::Cycles).expect("cycles");
    let got: Vec<_> = a_
        .points
        .iter()
        .map(|p| (p.time_ns, p.frame, p.weight_ns))
        .collect();
    // Interval 1: B measured 400, A gets the rest of the records' share (300), the tail
    // (B's return to S until the sample) is 1000 - 700 = 300. Interval 2: the tail
    // carried over is 300 + 1000 - 1300 = 0; D measured 700, C the remaining 300 (its
    // other 300 cycles were interval 1's tail).
    assert_eq!(
        got,
        [
            (300, Some(a), 300),
            (700, Some(bb), 400),
            (1000, Some(s), 300),
            (1300, Some(c), 300),
            (2000, Some(d), 700),
            (2000, Some(s), 0)
        ]
    );
}

#[test]
fn visits_shrinks_an_overfull_interval_like_segments() {
    // The expected lengths (F1 head 0.5 ms, F2 a full 3 ms visit, F3 tail 0.5 ms)
    // overfill the 1 ms interval, so all shrink together: 0.5 : 3 : 0.5.
    let (_, f) = figure8();
    assert_eq!(
        last_interval(Method::Visits),
        [
            (9 * MS + 125_000, Some(f[0]), 125_000),
            (9 * MS + 875_000, Some(f[1]), 750_000),
            (10 * MS, Some(f[2]), 125_000)
        ]
    );
}

#[test]
fn visits_gives_the_slack_to_the_partial_head_and_tail() {
    // Figure 8's F1, F2, F3, sampled for 1, 1 and 2 ms (the last sample is in F3 too),
    // visited 4, 10 and 4 times: d = 0.25, 0.1, 0.5 ms. The last interval (F1 head, F2
    // full, F3 tail) expects 0.125 + 0.1 + 0.25 ms; the 0.525 ms of slack goes by variance
    // (d^2 for the partial head and tail, (0.3 d)^2 for the full visit): F2 keeps about
    // its 0.1 ms, F1 and F3 share the rest 1 : 4.
    let mut b = B::new(32, false);
    let main = b.frame("main");
    let f = [b.frame("F1"), b.frame("F2"), b.frame("F3")];
    let ret = |x| (Some(x), Some(main), BranchKind::Return, None, true);
    for (i, &l) in f.iter().enumerate() {
        b.sample((i as u64 + 1) * MS, 0, Some(l), MS, &[]);
    }
    let earlier: Vec<_> = [(f[0], 3), (f[2], 4), (f[1], 9)]
        .iter()
        .flat_map(|&(x, n)| std::iter::repeat_n(ret(x), n))
        .collect();
    b.sample(4 * MS, 0, Some(main), MS, &earlier);
    b.sample(5 * MS, 0, Some(f[2]), MS, &[ret(f[0]), ret(f[1])]);
    let a = assign(&b.p, Method::Visits).unwrap();
    let got: Vec<_> = a
        .points
        .iter()
        .filter(|p| p.time_ns > 4 * MS)
        .map(|p| (p.frame, p.weight_ns))
        .collect();
    assert_eq!(
        got.iter().map(|g| g.0).collect::<Vec<_>>(),
        [Some(f[0]), Some(f[1]), Some(f[2])]
    );
    assert_eq!(got.iter().map(|g| g.1).sum::<u64>(), MS);
    // v = 0.0625, 0.0009, 0.25 ms^2: F2 0.1 + 0.0009 / 0.3134 x 0.525 = 101.5 us, F1
    // 0.125 + 0.0625 / 0.3134 x 0.525 = 229.7 us, F3 the rest.
    assert_eq!(
        got.iter().map(|g| g.1 / 100).collect::<Vec<_>>(),
        [2296, 1015, 6687],
        "{got:?}"
    );
}
