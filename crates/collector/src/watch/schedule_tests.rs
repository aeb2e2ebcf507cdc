#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;

const MS: u64 = 1_000_000;

/// Runs the schedule against sets hit at fixed rates (hits/s while armed, capped by the
/// trap cost: a thread that always traps cannot trap more often), polling every `tick`
/// as the driver does. Returns the schedule at `end`.
fn simulate(rates: &[f64], cfg: DutyConfig, end: u64, tick: u64) -> Schedule {
    let mut s = Schedule::new(rates.len(), cfg, 0);
    let cap = 1e9 / cfg.trap_cost_ns as f64;
    let mut now = 0u64;
    while now < end {
        match s.next(now) {
            Step::Pause { until_ns } => now = until_ns.max(now + 1),
            Step::Arm { set, until_ns } => {
                let start = now;
                let r = rates[set].min(cap);
                loop {
                    now = (now + tick).min(until_ns);
                    let hits = (r * (now - start) as f64 / 1e9) as u64;
                    if now >= until_ns || s.should_cut(start, now, hits) {
                        s.window_done(set, start, now, hits);
                        break;
                    }
                }
            }
        }
    }
    s
}

#[test]
fn hot_loop_stays_within_budget() {
    let cfg = DutyConfig::default();
    let s = simulate(&[1e6], cfg, 10_000 * MS, MS);
    let slow = s.estimated_slowdown();
    // The last window may end just before `end`, before its pause: one window of slack.
    assert!(slow <= cfg.budget * 1.1, "estimated slowdown {slow}");
    assert!(
        slow >= cfg.budget * 0.5,
        "the budget should be used, got {slow}"
    );
    // Trapping all the time while armed, so armed ≈ budget / (1 + budget) of the time.
    let f = s.armed_fraction();
    assert!(f < 0.06 && f > 0.02, "armed fraction {f}");
}

#[test]
fn quiet_sets_are_armed_all_the_time_in_long_windows() {
    let cfg = DutyConfig::default();
    let s = simulate(&[10.0, 50.0], cfg, 10_000 * MS, MS);
    assert!(s.armed_fraction() > 0.99, "{}", s.armed_fraction());
    assert!(s.estimated_slowdown() < 0.01);
    for set in s.sets() {
        // After the probe, windows are the maximum length.
        assert!(set.windows >= 90 && set.windows <= 110, "{set:?}");
    }
}

#[test]
fn mixed_rates_rotate_and_share_the_budget() {
    let cfg = DutyConfig::default();
    let s = simulate(&[200_000.0, 1_000.0, 20_000.0], cfg, 20_000 * MS, MS);
    assert!(
        s.estimated_slowdown() <= cfg.budget * 1.1,
        "{}",
        s.estimated_slowdown()
    );
    let w: Vec<u64> = s.sets().iter().map(|x| x.windows).collect();
    // Round robin: every set gets the same number of windows, give or take one.
    assert!(
        w.iter().max().unwrap() - w.iter().min().unwrap() <= 1,
        "{w:?}"
    );
    // Each set collected its hits: the window lengths adapt to the rates.
    for set in s.sets() {
        assert!(set.hits >= set.windows * 10, "{set:?}");
    }
}

#[test]
fn first_window_is_a_short_probe_then_a_pause() {
    let cfg = DutyConfig::default();
    let mut s = Schedule::new(1, cfg, 1000);
    assert_eq!(
        s.next(1000),
        Step::Arm {
            set: 0,
            until_ns: 1000 + cfg.min_window_ns
        }
    );
    // The probe trapped all the time: 1 ms worth of traps.
    s.window_done(0, 1000, 1000 + MS, MS / cfg.trap_cost_ns);
    match s.next(1000 + MS) {
        Step::Pause { until_ns } => {
            let pause = until_ns - (1000 + MS);
            // ~1 ms charged at 4 % needs ~26 ms in total.
            assert!(pause > 20 * MS && pause < 26 * MS, "{pause}");
        }
        other => panic!("expected a pause, got {other:?}"),
    }
}

#[test]
fn cut_when_enough_hits_or_too_costly() {
    let cfg = DutyConfig::default();
    let s = Schedule::new(1, cfg, 0);
    assert!(!s.should_cut(0, MS, 10));
    assert!(s.should_cut(0, MS, cfg.hits_per_window));
    let cfg2 = DutyConfig {
        hits_per_window: u64::MAX,
        ..cfg
    };
    let s2 = Schedule::new(1, cfg2, 0);
    // 4 % of 50 ms = 2 ms of traps = 166 hits at 12 us.
    assert!(!s2.should_cut(0, MS, 160));
    assert!(s2.should_cut(0, MS, 170));
}

#[test]
fn no_sets_and_odd_settings_do_not_panic() {
    let mut s = Schedule::new(
        0,
        DutyConfig {
            budget: 0.0,
            min_window_ns: 0,
            ..DutyConfig::default()
        },
        5,
    );
    assert!(matches!(s.next(5), Step::Pause { .. }));
    assert_eq!(s.estimated_slowdown(), 0.0);
    s.window_done(7, 5, 10, 3); // unknown set: charged, no panic
    assert!(s.charged_ns() > 0);
}
