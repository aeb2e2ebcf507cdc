use kairos_model::BranchKind::{Call as C, Return as R};

use super::*;
use crate::testutil::trace;

/// main [0, 10000) alternates a [100i+10, 100i+40) and b [100i+50, 100i+90), i < 100.
fn alternating() -> Profile {
    let mut calls = vec![(0, 0, 10_000, 0)];
    for i in 0..100u64 {
        calls.push((1, 100 * i + 10, 100 * i + 40, 1));
        calls.push((2, 100 * i + 50, 100 * i + 90, 1));
    }
    trace(&["main", "a", "b"], &calls)
}

fn opts(interval_ns: u64, depth: usize) -> EmulateOptions {
    EmulateOptions {
        phase_ns: Some(0),
        ..EmulateOptions::new(interval_ns, depth)
    }
}

fn records(p: &Profile, sample: u32) -> Vec<&BranchRecord> {
    p.branches.iter().filter(|b| b.sample == sample).collect()
}

fn leaf(p: &Profile, sample: usize) -> Option<&str> {
    p.samples
        .get(sample)
        .and_then(|s| p.leaf_frame(s))
        .map(|f| f.function.as_str())
}

#[test]
fn records_are_the_last_events_newest_first_with_overlap_marked() {
    let p = emulate_lbr_with(&alternating(), &opts(30, 8)).expect("emulates");
    // Samples at 0, 30, 60, ... up to the last event (10000).
    assert_eq!(p.samples.len(), 334);
    assert_eq!(p.samples[1].time_ns, 30);
    assert_eq!(leaf(&p, 0), Some("main"));
    assert_eq!(leaf(&p, 1), Some("a"));
    assert_eq!(leaf(&p, 2), Some("b"));
    let stack: Vec<_> = p
        .stack_frames(p.samples[2].stack)
        .map(|(_, f)| f.function.as_str())
        .collect();
    assert_eq!(stack, ["b", "main"]);
    // Sample 2 at 60 ns: call main (0), call a (10), return a (40), call b (50).
    let r = records(&p, 2);
    let seq: Vec<_> = r
        .iter()
        .map(|b| (b.position, b.kind, b.from_frame, b.to_frame, b.is_new))
        .collect();
    assert_eq!(
        seq,
        [
            (0, C, Some(0), Some(2), true),
            (1, R, Some(1), Some(0), true),
            (2, C, Some(0), Some(1), false),
            (3, C, None, Some(0), false),
        ]
    );
    // Addresses are the frames' addresses, 0 outside traced code.
    assert_eq!((r[0].from_address, r[0].to_address), (0x1000, 0x3000));
    assert_eq!(r[3].from_address, 0);
    assert!(r.iter().all(|b| b.cycles.is_none()));
    let info = p.branch_info.as_ref().expect("branch info");
    assert!(info.emulated && !info.has_cycles);
    assert_eq!((info.depth, info.filter.as_str()), (8, FILTER));
    // Every 30 ns at most 2 events happen: the 8-deep ring never overflows.
    assert_eq!(info.overflowed_snapshots, 0);
    // The truth travels with the emulation.
    assert_eq!(p.calls, alternating().calls);
    assert_eq!(p.frames, alternating().frames);
}

#[test]
fn depth_cuts_the_ring_and_overflows_are_counted() {
    let p = emulate_lbr_with(&alternating(), &opts(300, 8)).expect("emulates");
    // Sample 1 at 300 ns: 13 events since sample 0, only the newest 8 survive.
    let r = records(&p, 1);
    assert_eq!(r.len(), 8);
    let want = [
        (R, 2u32),
        (C, 2),
        (R, 1),
        (C, 1),
        (R, 2),
        (C, 2),
        (R, 1),
        (C, 1),
    ]
    .map(|(k, f)| (k, Some(f)));
    let got: Vec<_> = r
        .iter()
        .map(|b| {
            (
                b.kind,
                if b.kind == C {
                    b.to_frame
                } else {
                    b.from_frame
                },
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(leaf(&p, 1), Some("main"));
    assert!(r.iter().all(|b| b.is_new));
    // 33 snapshots after the first, each after 12 or 13 events: all overflowed.
    let info = p.branch_info.as_ref().expect("branch info");
    assert_eq!(p.samples.len(), 34);
    assert_eq!(info.overflowed_snapshots, 33);
    // With a 16-deep ring nothing is lost at this rate.
    let p16 = emulate_lbr_with(&alternating(), &opts(300, 16)).expect("emulates");
    assert_eq!(
        p16.branch_info.as_ref().map(|i| i.overflowed_snapshots),
        Some(0)
    );
    assert_eq!(records(&p16, 1).len(), 13);
}

#[test]
fn cycles_are_the_time_since_the_previous_record_and_saturate() {
    // main [0, 200000) calls a at 100000 (a gap of 100 us, 300000 cycles at 3 GHz).
    let t = trace(
        &["main", "a"],
        &[(0, 0, 200_000, 0), (1, 100_000, 100_010, 1)],
    );
    let o = EmulateOptions {
        cycles: true,
        ..opts(100_005, 16)
    };
    let p = emulate_lbr_with(&t, &o).expect("emulates");
    let r = records(&p, 1);
    let cyc: Vec<_> = r.iter().map(|b| b.cycles).collect();
    assert_eq!(cyc, [Some(MAX_CYCLES), Some(0)]);
    assert!(p.branch_info.as_ref().is_some_and(|i| i.has_cycles));
    let p = emulate_lbr(&alternating(), 60, 16, true, 3.0).expect("emulates");
    // Whatever the phase, a call of b comes 10 ns after the return of a: 30 cycles.
    let b_calls: Vec<_> = p
        .branches
        .iter()
        .filter(|b| b.kind == C && b.to_frame == Some(2))
        .collect();
    assert!(!b_calls.is_empty());
    assert!(b_calls.iter().all(|b| b.cycles == Some(30)));
}

#[test]
fn the_phase_is_seeded_and_repeatable() {
    let a = emulate_lbr(&alternating(), 300, 16, false, 3.0).expect("emulates");
    let b = emulate_lbr(&alternating(), 300, 16, false, 3.0).expect("emulates");
    assert_eq!(a, b);
    let phases: std::collections::BTreeSet<u64> = (0..20)
        .map(|seed| EmulateOptions {
            seed,
            ..EmulateOptions::new(300, 16)
        })
        .filter_map(|o| emulate_lbr_with(&alternating(), &o).ok())
        .filter_map(|p| p.samples.first().map(|s| s.time_ns))
        .collect();
    assert!(phases.len() > 10, "{phases:?}");
    assert!(phases.iter().all(|&t| t < 300));
}

#[test]
fn bad_options_are_errors() {
    let t = alternating();
    assert!(matches!(
        emulate_lbr(&t, 0, 16, false, 3.0),
        Err(Error::BadInterval)
    ));
    assert!(matches!(
        emulate_lbr(&t, 10, 12, false, 3.0),
        Err(Error::BadDepth(12))
    ));
    assert!(matches!(
        emulate_lbr(&t, 10, 16, true, f64::NAN),
        Err(Error::BadCpuGhz(_))
    ));
    assert!(matches!(
        emulate_lbr(&Profile::default(), 10, 16, false, 3.0),
        Err(Error::NoCalls)
    ));
}

#[test]
fn threads_are_sampled_separately_and_merged_by_time() {
    let mut t = alternating();
    t.threads.push(t.threads[0].clone());
    let extra: Vec<_> = t
        .calls
        .iter()
        .map(|c| kairos_model::Call {
            thread: 1,
            start_ns: c.start_ns + 5,
            end_ns: c.end_ns + 5,
            ..*c
        })
        .collect();
    t.calls.extend(extra);
    let p = emulate_lbr_with(&t, &opts(300, 16)).expect("emulates");
    assert!(p.samples.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(p.samples.iter().any(|s| s.thread == 1));
    // Each record belongs to a sample of its own thread's events.
    for b in &p.branches {
        assert!((b.sample as usize) < p.samples.len());
    }
}
