//! perf 6.1 as the oracle for the data_src decoder and the weight:
//! - the real PEBS load-latency recording of shared/fixtures/mem, against its saved
//!   `perf script` output and against a live `perf script` run;
//! - perf.data files written here with every value of every data_src field (and every
//!   combination of the fields that share a column), read back by perf.
//!
//! A missing fixture or a missing `perf` fails: a comparison that skips proves nothing.
#![allow(clippy::panic, clippy::unwrap_used)]

mod synth;

use std::path::PathBuf;

use kairos_mem_source::data_src::{blk, hops, lvl, lvl_num, op, snoop, tlb};
use kairos_mem_source::{perf_script_column, C2cStats, DataSrc, MemSample};
use kairos_perf_data::{PerfFile, Record, PERF_SAMPLE_WEIGHT, PERF_SAMPLE_WEIGHT_STRUCT};
use synth::{parse, perf_script, PerfRow, Synth};

const FIXTURE: &str = "skx-2s-ldlat64-weight_struct";

fn fixtures() -> PathBuf {
    let dir = std::env::var_os("KAIROS_MEM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/mem")
        });
    assert!(
        dir.join(format!("{FIXTURE}.perf.data")).is_file(),
        "mem fixtures not found in {}: set KAIROS_MEM_FIXTURES",
        dir.display()
    );
    dir
}

/// Our view of every memory sample in a file, in time order as perf script prints them
/// (the fixture was written through a pipe, not in time order).
fn ours(file: &std::path::Path) -> Vec<MemSample> {
    let f = PerfFile::open(file).unwrap();
    let mut out = Vec::new();
    for r in f.records() {
        if let Record::Sample(s) = r.unwrap() {
            let attr = &f.attrs()[s.attr_index].attr;
            out.extend(MemSample::from_sample(&s, attr));
        }
    }
    out.sort_by_key(|s| s.time);
    out
}

/// perf's decoding vs ours, cut where perf cuts its column.
fn ours_words(raw: u64) -> String {
    let col = perf_script_column(raw);
    col[17.min(col.len())..].trim_end().to_string()
}

fn check(rows: &[PerfRow], samples: &[MemSample]) -> usize {
    assert_eq!(
        rows.len(),
        samples.len(),
        "perf printed {} memory samples, we read {}",
        rows.len(),
        samples.len()
    );
    for (i, (p, s)) in rows.iter().zip(samples).enumerate() {
        let w = s.weight.unwrap();
        let ctx = format!("sample {i}, data_src {:#x}", s.data_src_raw);
        assert_eq!(p.data_src, s.data_src_raw, "{ctx}");
        assert_eq!(
            p.words,
            ours_words(s.data_src_raw),
            "{ctx}: perf's words vs ours"
        );
        assert_eq!(
            (p.addr, p.ip, p.weight),
            (s.addr.unwrap(), s.ip.unwrap(), w.latency),
            "{ctx}: addr, ip, weight"
        );
        if let Some(ins) = p.ins_lat {
            assert_eq!(Some(ins), w.ins_lat.map(u64::from), "{ctx}: ins_lat");
        }
        if let Some(phys) = p.phys_addr {
            assert_eq!(Some(phys), s.phys_addr, "{ctx}: phys_addr");
        }
    }
    rows.len()
}

#[test]
fn fixture_agrees_with_saved_and_live_perf_script() {
    let dir = fixtures();
    let file = dir.join(format!("{FIXTURE}.perf.data"));
    let samples = ours(&file);
    assert_eq!(samples.len(), 14);
    let saved = std::fs::read_to_string(dir.join(format!("{FIXTURE}.perf-script.txt"))).unwrap();
    assert_eq!(check(&parse(&saved, true, false), &samples), 14);
    let live = perf_script(&file, "addr,data_src,weight,ins_lat,ip");
    assert_eq!(check(&parse(&live, true, false), &samples), 14);
    c2c_agrees(&file, &samples);
    // The totals the fixture README gives.
    assert_eq!(
        samples
            .iter()
            .map(|s| s.weight.unwrap().latency)
            .sum::<u64>(),
        1725
    );
    assert_eq!(
        samples
            .iter()
            .filter(|s| s.class.locked == Some(true))
            .count(),
        2
    );
    assert_eq!(
        samples
            .iter()
            .filter(|s| s.class.tlb_hit == Some(false))
            .count(),
        1
    );
}

/// Every value of every field, and every combination of the fields printed in one column
/// (LVL: mem_lvl x lvl_num x remote x hops; SNP: snoop x snoopx), the other fields at a
/// typical load's values; then pseudo-random words (hops kept to the defined 0-4: perf
/// 6.1 reads past its table for 5-7).
fn combinations() -> Vec<u64> {
    // A typical load: L1 hit, no snoop, TLB hit, not blocked.
    let t = DataSrc {
        op: op::LOAD,
        lvl: lvl::HIT | lvl::L1,
        snoop: snoop::NONE,
        dtlb: tlb::HIT | tlb::L1 | tlb::L2,
        lvl_num: lvl_num::L1,
        blk: blk::NA,
        ..DataSrc::default()
    };
    let mut v = Vec::new();
    v.extend((0..32).map(|o| DataSrc { op: o, ..t }.to_raw()));
    v.extend((0..1u16 << 14).map(|l| {
        DataSrc {
            lvl: l,
            lvl_num: 0,
            ..t
        }
        .to_raw()
    }));
    let some_lvls = [
        0,
        lvl::NA,
        lvl::HIT,
        lvl::MISS,
        lvl::HIT | lvl::L3,
        lvl::MISS | lvl::L1 | lvl::L2,
        lvl::HIT | lvl::MISS | lvl::LOC_RAM | lvl::REM_CCE2,
    ];
    for l in some_lvls {
        for lvl_num in 0..16 {
            for remote in [false, true] {
                for hops in 0..=hops::HOPS_3 {
                    v.push(
                        DataSrc {
                            lvl: l,
                            snoop: snoop::HIT,
                            lvl_num,
                            remote,
                            hops,
                            ..t
                        }
                        .to_raw(),
                    );
                }
            }
        }
    }
    v.extend(
        (0..32).flat_map(|snoop| (0..4).map(move |snoopx| DataSrc { snoop, snoopx, ..t }.to_raw())),
    );
    v.extend((0..128).map(|dtlb| {
        DataSrc {
            op: op::STORE,
            dtlb,
            ..t
        }
        .to_raw()
    }));
    v.extend((0..4).map(|lock| DataSrc { lock, ..t }.to_raw()));
    v.extend((0..8).map(|blk| DataSrc { blk, ..t }.to_raw()));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut d = DataSrc::from_raw(x);
        d.hops %= 5;
        v.push(d.to_raw());
    }
    v
}

#[test]
fn every_data_src_field_agrees_with_perf() {
    let words = combinations();
    let samples: Vec<Synth> = words
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let i = i as u64;
            // var1 latency, var2 ins_lat, var3: each different so a mix-up shows.
            let weight = (i * 7 + 1) | ((i % 65_000) << 32) | (0x5a5a << 48);
            // Every 97th without an address: c2c counts those apart.
            let addr = if i % 97 == 5 {
                0
            } else {
                0x7f00_0000_0000 + i * 64
            };
            Synth {
                ip: 0x40_0000 + i * 4,
                addr,
                weight,
                data_src: d,
                phys_addr: 0x1_0000_0000 + i * 4096,
            }
        })
        .collect();
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("mem.perf.data");
    synth::write(&file, &samples, PERF_SAMPLE_WEIGHT_STRUCT);
    if let Some(keep) = std::env::var_os("KAIROS_KEEP_SYNTH") {
        std::fs::copy(&file, keep).unwrap();
    }
    let ours = ours(&file);
    let rows = parse(
        &perf_script(&file, "ip,addr,data_src,weight,ins_lat,phys_addr"),
        true,
        true,
    );
    let n = check(&rows, &ours);
    assert_eq!(n, words.len());
    eprintln!("{n} data_src words agree with perf script");
    c2c_agrees(&file, &ours);
}

/// `perf c2c report --stats` against [`C2cStats`] on the same samples, line by line.
fn c2c_agrees(file: &std::path::Path, samples: &[MemSample]) {
    let mut s = C2cStats::default();
    for m in samples {
        s.add(&m.data_src, m.addr);
    }
    let out = std::process::Command::new("perf")
        .args(["c2c", "report", "--stats", "-i"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf c2c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let want = [
        ("Total records", s.records),
        ("Locked Load/Store Operations", s.locks),
        ("Load Operations", s.loads),
        ("Loads - uncacheable", s.ld_uncached),
        ("Loads - IO", s.ld_io),
        ("Loads - Miss", s.ld_miss),
        ("Loads - no mapping", s.ld_no_addr),
        ("Load Fill Buffer Hit", s.ld_fb_hit),
        ("Load L1D hit", s.ld_l1_hit),
        ("Load L2D hit", s.ld_l2_hit),
        ("Load LLC hit", s.ld_llc_hit),
        ("Load Local HITM", s.local_hitm),
        ("Load Remote HITM", s.remote_hitm),
        ("Load Remote HIT", s.remote_hit),
        ("Load Local DRAM", s.local_dram),
        ("Load Remote DRAM", s.remote_dram),
        ("Load MESI State Exclusive", s.ld_excl),
        ("Load MESI State Shared", s.ld_shared),
        ("Load LLC Misses", s.llc_misses()),
        ("Load access blocked by data", s.blk_data),
        ("Load access blocked by address", s.blk_addr),
        ("Load HIT Local Peer", s.local_peer),
        ("Load HIT Remote Peer", s.remote_peer),
        ("Store Operations", s.stores),
        ("Store - uncacheable", s.st_uncached),
        ("Store - no mapping", s.st_no_addr),
        ("Store L1D Hit", s.st_l1_hit),
        ("Store L1D Miss", s.st_l1_miss),
        ("Store No available memory level", s.st_na),
        ("Unable to parse data source", s.no_parse),
    ];
    let mut differ = Vec::new();
    for (label, ours) in want {
        let line = text
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == label))
            .unwrap_or_else(|| panic!("perf c2c printed no '{label}'"));
        let perf: u64 = line.rsplit(':').next().unwrap().trim().parse().unwrap();
        if ours != perf {
            differ.push(format!("{label}: ours {ours}, perf {perf}"));
        }
    }
    assert!(differ.is_empty(), "perf c2c --stats differs: {differ:#?}");
    eprintln!("{} perf c2c counts agree", want.len());
}

#[test]
fn plain_weight_is_the_whole_word() {
    let samples: Vec<Synth> = [
        0u64,
        1,
        0xffff_ffff,
        0x1_0000_0000,
        0xdead_beef_0000_0042,
        u64::MAX,
    ]
    .iter()
    .enumerate()
    .map(|(i, &weight)| Synth {
        ip: 0x1000 + i as u64,
        addr: 0x2000 + i as u64,
        weight,
        data_src: 0x106_6810_0842,
        phys_addr: 0,
    })
    .collect();
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("w.perf.data");
    synth::write(&file, &samples, PERF_SAMPLE_WEIGHT);
    let ours = ours(&file);
    assert!(ours.iter().all(|s| s.weight.unwrap().ins_lat.is_none()));
    let rows = parse(&perf_script(&file, "ip,addr,data_src,weight"), false, false);
    assert_eq!(check(&rows, &ours), samples.len());
}
