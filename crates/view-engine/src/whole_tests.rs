//! Answers from the whole-run totals and from the chosen threads' lanes against the plain
//! scan over the samples, on awkward data (threads sharing a TID, a thread index past the
//! table, a CPU past the dense table, samples without a stack), and the samples table read
//! straight into columns against the model's reader.

use std::sync::Arc;

use crate::agg::{aggregate, aggregate_in, group_of, pids, Group, ThreadMask};
use crate::fast_path_tests::profile;
use crate::ids::NONE;
use crate::index::{Functions, Index};
use crate::query::Sel;
use crate::totals::Totals;

fn index(p: &kairos_model::Profile) -> Index {
    Index::new(p.clone(), Arc::new(Functions::new(p)))
}

/// Both kinds of totals: with per-thread sums, and with the sums of all threads only (as
/// a result of many threads and stacks has them).
fn indexes(p: &kairos_model::Profile) -> [Index; 2] {
    let mut plain = index(p);
    plain.totals = Totals::of_cells(&plain.samples, p.threads.len(), p.stacks.len(), 0);
    [index(p), plain]
}

fn sels(ix: &Index) -> Vec<(u64, u64)> {
    let t = ix.times();
    let (a, b) = (t[0], t[t.len() - 1]);
    vec![
        (a, b + 1),
        (0, u64::MAX),
        (a + (b - a) / 4, b - (b - a) / 3),
    ]
}

const TIDS: [Option<&[i32]>; 5] = [
    None,
    Some(&[7]),
    Some(&[3, 9]),
    Some(&[-1]),
    Some(&[3, 7, 9, 1]),
];

/// Tree aggregates from the totals or the lanes equal the scan's, for every filter.
#[test]
fn whole_and_lane_aggregates_equal_the_scan() {
    for (n, seed) in [(3000usize, 1u64), (20_000, 4)] {
        for ix in indexes(&profile(n, seed)) {
            let mut onlys = vec![
                None,
                Some((Group::Module, 0)),
                Some((Group::Module, NONE)),
                Some((Group::Cpu, 1)),
            ];
            onlys.extend((0..7).map(|t| Some((Group::Thread, t))));
            onlys.extend((0..4).map(|k| Some((Group::Process, k))));
            for (from, to) in sels(&ix) {
                for tids in TIDS {
                    let sel = Sel {
                        from,
                        to,
                        tids: tids.map(|t| t.to_vec()),
                    };
                    for &only in &onlys {
                        let got = aggregate(&ix, &sel, only);
                        let want = aggregate_in(&ix, &sel, only, Some(1));
                        assert_eq!(
                            (
                                &got.self_w,
                                &got.self_c,
                                &got.total_w,
                                &got.total_c,
                                got.weight,
                                got.count
                            ),
                            (
                                &want.self_w,
                                &want.self_c,
                                &want.total_w,
                                &want.total_c,
                                want.weight,
                                want.count
                            ),
                            "n {n} {tids:?} {only:?} {from}-{to}"
                        );
                    }
                }
            }
        }
    }
}

/// Group sums of the whole run from the totals equal a pass with `group_of`.
#[test]
fn whole_groups_equal_the_scan() {
    for (n, seed, cpu_big) in [(5000usize, 2u64, true), (5000, 6, false)] {
        let mut p = profile(n, seed);
        if !cpu_big {
            // Without CPU 70,000 the CPU sums are kept in the dense table.
            p.samples.iter_mut().for_each(|s| s.cpu %= 64);
        }
        for ix in indexes(&p) {
            assert_eq!(ix.totals.cpu.is_some(), !cpu_big);
            let pids = pids(&ix.profile);
            for tids in TIDS {
                let mask = ThreadMask::new(&ix.profile, &tids.map(|t| t.to_vec()));
                for (g, slots) in [
                    (Group::Thread, ix.profile.threads.len() + 1),
                    (Group::Process, pids.len() + 1),
                    (Group::Cpu, 65),
                    (Group::Module, ix.funcs.modules.len() + 1),
                ] {
                    let (mut w, mut c, mut st) =
                        (vec![0u64; slots], vec![0u64; slots], vec![false; slots]);
                    for i in 0..ix.samples.len() {
                        if !mask.admits(ix.samples.thread(i)) {
                            continue;
                        }
                        let id = group_of(&ix, &pids, g, i) as usize;
                        let k = if id < slots - 1 { id } else { slots - 1 };
                        w[k] += ix.samples.weight(i);
                        c[k] += 1;
                        st[k] |= ix.samples.stack(i).is_some();
                    }
                    match crate::whole::groups(&ix, &mask, g, slots) {
                        Some(got) => assert_eq!(got, (w, c, st), "{g:?} {tids:?}"),
                        // Only CPU sums with a filter or a CPU past the dense table are missing.
                        None => assert!(
                            g == Group::Cpu && (cpu_big || tids.is_some()) || tids.is_some(),
                            "{g:?} {tids:?}"
                        ),
                    }
                }
            }
        }
    }
}

/// The totals summed while reading equal those of the columns, and the columns the
/// model's samples, across row groups read on two threads.
#[test]
fn samples_read_into_columns_equal_the_models() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 600,000 samples: three row groups, so each thread reads some; thread indices and
    // stacks within their tables (a result with others cannot be written).
    let mut p = profile(600_000, 11);
    p.samples.iter_mut().for_each(|s| s.thread %= 5);
    let path = dir.path().join("r");
    let mut rd = kairos_result::ResultDir::create(&path).expect("create");
    *rd.manifest_mut() = kairos_result::Manifest::new("hotspots");
    kairos_result::write_profile(&mut rd, &p).expect("write");
    let rd = kairos_result::ResultDir::open(&path).expect("open");
    let read = crate::load::read(&rd)
        .expect("columns apply")
        .expect("read");
    let model = kairos_result::read_profile_of_event(&rd, None).expect("model");
    assert_eq!(read.samples.to_vec(), model.samples);
    let mut rest = model.clone();
    rest.samples.clear();
    assert_eq!(read.profile, rest);
    assert_eq!(
        read.totals,
        Totals::of(&read.samples, p.threads.len(), p.stacks.len())
    );
    assert_blocks(&read, &p);
    // Dense CPU numbers (per-CPU sums kept) and one weight: the same blocks as a pass.
    let mut d = p.clone();
    for s in &mut d.samples {
        s.cpu = s.cpu.min(4);
        s.weight = 3;
    }
    let path = dir.path().join("d");
    let mut rd = kairos_result::ResultDir::create(&path).expect("create");
    *rd.manifest_mut() = kairos_result::Manifest::new("hotspots");
    kairos_result::write_profile(&mut rd, &d).expect("write");
    let rd = kairos_result::ResultDir::open(&path).expect("open");
    let read = crate::load::read(&rd)
        .expect("columns apply")
        .expect("read");
    assert_blocks(&read, &d);
    // A result with branch records is read through the model.
    let mut b = p.clone();
    b.samples.truncate(10);
    b.branches = (0..3)
        .map(|k| kairos_model::BranchRecord {
            sample: k,
            position: 0,
            from_address: 1,
            to_address: 2,
            from_frame: None,
            to_frame: None,
            kind: kairos_model::BranchKind::Call,
            cycles: None,
            mispredicted: false,
            is_new: true,
        })
        .collect();
    let path = dir.path().join("b");
    let mut rd = kairos_result::ResultDir::create(&path).expect("create");
    *rd.manifest_mut() = kairos_result::Manifest::new("hotspots");
    kairos_result::write_profile(&mut rd, &b).expect("write");
    assert!(crate::load::read(&kairos_result::ResultDir::open(&path).expect("open")).is_none());
}

/// The sums at block edges taken while reading equal a pass over the columns.
fn assert_blocks(read: &crate::load::Read, p: &kairos_model::Profile) {
    let got = read.blocks.as_ref().expect("blocks at 600,000 samples");
    let cpus = read.totals.cpu.as_ref().map(|c| c.c.len());
    let want = crate::blocks::Blocks::with_size(
        &read.samples,
        p.stacks.len(),
        p.threads.len(),
        cpus,
        got.size(),
    );
    assert_eq!(got, &want);
}
