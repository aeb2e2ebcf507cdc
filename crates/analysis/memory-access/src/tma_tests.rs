//! The memory-bound figures of a profile built by hand with Sapphire Rapids' metric file
//! (the shipped data/perfmon): the counts are made-up inputs, the expected values are
//! worked out from the formulas (see kairos-mem-source's tests/tma.rs, sapphire_rapids_by_hand).

use std::collections::HashMap;
use std::path::PathBuf;

use kairos_mem_source::tma::{plan, recording_name, CYCLES};
use kairos_mem_source::CpuId;
use kairos_metrics::PerfmonMetric;
use kairos_model::{EventDef, Frame, Mode, Profile, Sample, Stack, Thread};

use super::*;

fn spr() -> (Vec<PerfmonMetric>, Vec<String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../data/perfmon");
    let cpu = CpuId::from_perf_cpuid("GenuineIntel,6,143,8").unwrap_or_else(|| panic!("cpuid"));
    let f =
        kairos_mem_source::perfmon_dir::load_for(&cpu, &[dir]).unwrap_or_else(|e| panic!("{e}"));
    let groups = plan(&f.metrics, &f.events, 4).unwrap_or_else(|e| panic!("{e}"));
    // The recording's event names, as the collection writes them: group by group.
    let names = groups
        .iter()
        .enumerate()
        .flat_map(|(g, gr)| {
            std::iter::once(&gr.leader)
                .chain(&gr.members)
                .map(move |e| recording_name(g, &e.name))
        })
        .collect();
    (f.metrics, names)
}

fn frame(function: &str) -> Frame {
    Frame {
        address: 0,
        module: None,
        module_offset: 0,
        function: function.into(),
        file: None,
        line: None,
        inline_depth: 0,
        mode: Mode::User,
    }
}

/// The counts of the SPR hand example (memory bound 30%, L1 10, L2 8, L3 5, DRAM 7, store
/// 5), every group having run `share` of the time.
fn hand_counts(share: &HashMap<usize, f64>, name: &str, group: usize) -> u64 {
    let v = match name {
        "PERF_METRICS.MEMORY_BOUND" => 30.0e6,
        "PERF_METRICS.FRONTEND_BOUND" => 20.0e6,
        "PERF_METRICS.BAD_SPECULATION" => 10.0e6,
        "PERF_METRICS.RETIRING" => 40.0e6,
        "PERF_METRICS.BACKEND_BOUND" => 30.0e6,
        "TOPDOWN.SLOTS:perf_metrics" => 100.0e6,
        n if n == CYCLES => 1e9,
        "EXE_ACTIVITY.BOUND_ON_LOADS" => 300e6,
        "EXE_ACTIVITY.BOUND_ON_STORES" => 50e6,
        "MEMORY_ACTIVITY.STALLS_L1D_MISS" => 200e6,
        "MEMORY_ACTIVITY.STALLS_L2_MISS" => 120e6,
        "MEMORY_ACTIVITY.STALLS_L3_MISS" => 70e6,
        other => panic!("unexpected event {other}"),
    };
    (v * share[&group]) as u64
}

/// A profile where function `mem` has the hand counts and `alu` has no memory stalls,
/// split over `reads` reads per group, half in each half of the run.
fn profile(names: &[String], share: &HashMap<usize, f64>, reads: u64) -> Profile {
    let mut p = Profile {
        threads: vec![Thread {
            pid: 1,
            tid: 1,
            name: "t".into(),
            process_name: "t".into(),
        }],
        frames: vec![frame("mem"), frame("alu")],
        stacks: vec![
            Stack {
                parent: None,
                frame: 0,
            },
            Stack {
                parent: None,
                frame: 1,
            },
        ],
        events: names
            .iter()
            .map(|n| EventDef {
                name: n.clone(),
                time: false,
            })
            .collect(),
        ..Profile::default()
    };
    let mut t = 0;
    for stack in [0u32, 1] {
        for r in 0..reads {
            for (i, n) in names.iter().enumerate() {
                let (g, ev) = kairos_mem_source::tma::parse_recording_name(n)
                    .unwrap_or_else(|| panic!("{n}"));
                let mut w = hand_counts(share, ev, g) / reads;
                if stack == 1
                    && (ev.contains("STALLS")
                        || ev.contains("BOUND_ON")
                        || ev == "PERF_METRICS.MEMORY_BOUND")
                {
                    w = 0;
                }
                t += 1000;
                // `alu`'s samples come second: the timeline's halves tell them apart.
                let _ = r;
                p.samples.push(Sample {
                    time_ns: t,
                    thread: 0,
                    cpu: 0,
                    stack: Some(stack),
                    weight: w,
                });
                p.sample_events.push(i as u16);
            }
        }
    }
    p
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn per_function_and_over_time_with_groups_counted_in_turn() {
    let (metrics, names) = spr();
    let groups = names
        .iter()
        .filter_map(|n| kairos_mem_source::tma::parse_recording_name(n))
        .map(|(g, _)| g + 1)
        .max()
        .unwrap_or(0);
    assert_eq!(
        groups, 3,
        "SPR: topdown group and two of general-purpose counters: {names:?}"
    );
    // The groups ran 50%, 25% and 25% of the time: scaling must undo it.
    let share = HashMap::from([(0, 0.5), (1, 0.25), (2, 0.25)]);
    let p = profile(&names, &share, 10);
    let r = analyse(&p, &metrics, &HashMap::new(), 2)
        .unwrap_or_else(|| panic!("has TMA events"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.groups, 3);
    let mem = r
        .functions
        .iter()
        .find(|f| f.function == "mem")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!(close(mem.figures.memory_bound, 30.0), "{mem:?}");
    let want = [
        ("L1_Bound", 10.0),
        ("L2_Bound", 8.0),
        ("L3_Bound", 5.0),
        ("L3_Miss_Bound", 7.0),
        ("Store_Bound", 5.0),
    ];
    for (m, v) in want {
        let got = mem.figures.split.iter().find(|(n, _)| n == m).map(|x| x.1);
        assert!(got.is_some_and(|g| close(g, v)), "{m}: {got:?}");
    }
    assert!(close(mem.cycles_share, 50.0), "{mem:?}");
    let alu = r
        .functions
        .iter()
        .find(|f| f.function == "alu")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!(close(alu.figures.memory_bound, 0.0), "{alu:?}");
    // Overall: the two functions' counts added: memory bound 30e6 / 200e6 slots = 15%.
    assert!(close(r.overall.memory_bound, 15.0), "{:?}", r.overall);
    // Over time: `mem` ran first, `alu` second.
    assert_eq!(r.timeline.len(), 2);
    let first = r.timeline[0].figures.as_ref().map(|f| f.memory_bound);
    let second = r.timeline[1].figures.as_ref().map(|f| f.memory_bound);
    assert!(
        first.is_some_and(|v| close(v, 30.0)) && second.is_some_and(|v| close(v, 0.0)),
        "{:?}",
        r.timeline
    );
}

#[test]
fn too_few_samples_give_no_figure_and_no_tma_events_give_none() {
    let (metrics, names) = spr();
    let share = HashMap::from([(0, 1.0), (1, 1.0), (2, 1.0)]);
    let p = profile(&names, &share, 10);
    // Many slices: each holds less than a few leader samples of some group.
    let r = analyse(&p, &metrics, &HashMap::new(), 200)
        .unwrap_or_else(|| panic!("has TMA events"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.timeline.iter().any(|i| i.figures.is_none()),
        "short slices have no figure"
    );
    let mut plain = p.clone();
    plain.events = vec![EventDef {
        name: "cpu-clock".into(),
        time: true,
    }];
    plain.sample_events.clear();
    assert!(analyse(&plain, &metrics, &HashMap::new(), 10).is_none());
    // A group without cycles: an error sentence, not a panic.
    let mut broken = p;
    for (i, n) in names.iter().enumerate() {
        if n.ends_with(CYCLES) {
            for (s, e) in broken.samples.iter_mut().zip(&broken.sample_events) {
                if *e as usize == i {
                    s.weight = 0;
                }
            }
        }
    }
    let e = analyse(&broken, &metrics, &HashMap::new(), 1)
        .unwrap_or_else(|| panic!("has TMA events"))
        .expect_err("no cycles");
    assert!(e.contains("no cycles"), "{e}");
}
