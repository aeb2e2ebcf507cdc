//! Discovery against the Skylake-SP recording's PMU list (fixtures/mem) and a sysfs tree
//! made from it, event encodings against the perfmon uncore files (fixtures/perfmon), and
//! the formula against pcm-memory's own totals (fixtures/uncore).

use std::path::PathBuf;

use super::*;

fn shared() -> PathBuf {
    std::env::var_os("KAIROS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// The `pmu mappings` of the Skylake-SP recording, read with perf (the oracle).
fn skx_mappings() -> Vec<(String, u32)> {
    let file = shared().join("fixtures/mem/skx-2s-ldlat64-weight_struct.perf.data");
    let out = std::process::Command::new("perf")
        .args(["report", "--header-only", "-i"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("perf: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("# pmu mappings:"))
        .unwrap_or_else(|| panic!("no pmu mappings in {}", file.display()));
    line.trim_start_matches("# pmu mappings:")
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn uncore_file(cpu: &str) -> String {
    let f = match cpu {
        "SKX" => "SKX/events/skylakex_uncore.json",
        "ICX" => "ICX/events/icelakex_uncore.json",
        _ => "SPR/events/sapphirerapids_uncore.json",
    };
    std::fs::read_to_string(shared().join("fixtures/perfmon").join(f))
        .unwrap_or_else(|e| panic!("{f}: {e}"))
}

#[test]
fn skylake_sp_counters_from_its_recorded_pmus() {
    let pmus = from_mappings(&skx_mappings());
    let plan = plan(&pmus, &uncore_file("SKX")).unwrap_or_else(|e| panic!("{e}"));
    let imc: Vec<&Counter> = plan.iter().filter(|c| c.flow == Flow::DramRead).collect();
    // Six channels (uncore_imc_0..5 = types 13..18), CAS_COUNT.RD = event 0x04 umask 0x03.
    assert_eq!(
        imc.iter().map(|c| c.type_).collect::<Vec<_>>(),
        vec![13, 14, 15, 16, 17, 18]
    );
    assert!(imc
        .iter()
        .all(|c| c.config == 0x0304 && c.bytes_per_count == 64.0));
    assert!(plan
        .iter()
        .filter(|c| c.flow == Flow::DramWrite)
        .all(|c| c.config == 0x0c04));
    let upi: Vec<&Counter> = plan.iter().filter(|c| c.flow == Flow::LinkTx).collect();
    assert_eq!(
        upi.iter().map(|c| c.pmu.as_str()).collect::<Vec<_>>(),
        ["uncore_upi_0", "uncore_upi_1", "uncore_upi_2"]
    );
    assert!(upi
        .iter()
        .all(|c| c.config == 0x0f02 && (c.bytes_per_count - 64.0 / 9.0).abs() < 1e-12));
}

#[test]
fn encodings_of_the_three_cpus_and_a_sysfs_tree() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (name, t, mask) in [
        ("uncore_imc_0", 13, "0,28"),
        ("uncore_imc_1", 14, "0,28"),
        ("cpu", 4, "0-55"),
        ("uncore_upi_0", 19, "0,28"),
    ] {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("type"), format!("{t}\n")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("cpumask"), format!("{mask}\n")).unwrap_or_else(|e| panic!("{e}"));
    }
    let pmus = discover(dir.path());
    assert_eq!(pmus.len(), 3, "cpu is not uncore: {pmus:?}");
    assert_eq!(pmus[0].cpus, vec![0, 28]);
    // The fixture README's oracle: ICX RD 0x04/0x0f, WR 0x04/0x30; SPR RD 0x05/0xcf, WR 0x05/0xf0.
    for (cpu, rd, wr) in [("ICX", 0x0f04, 0x3004), ("SPR", 0xcf05, 0xf005)] {
        let plan = plan(&pmus, &uncore_file(cpu)).unwrap_or_else(|e| panic!("{e}"));
        let cfg = |f| plan.iter().find(|c| c.flow == f).map(|c| c.config);
        assert_eq!(
            (cfg(Flow::DramRead), cfg(Flow::DramWrite)),
            (Some(rd), Some(wr)),
            "{cpu}"
        );
    }
}

#[test]
fn no_counters_here_or_in_a_vm_is_a_reason() {
    let e = plan(&[], "{}").expect_err("none");
    assert!(e.contains("no uncore PMUs"), "{e}");
    let e = plan(
        &[UncorePmu {
            name: "uncore_cha_0".into(),
            type_: 26,
            cpus: vec![],
        }],
        "{}",
    )
    .expect_err("no imc");
    assert!(e.contains("no uncore_imc PMU among uncore_cha_0"), "{e}");
    let pmus = [UncorePmu {
        name: "uncore_imc_0".into(),
        type_: 13,
        cpus: vec![],
    }];
    assert!(plan(&pmus, "not json")
        .expect_err("bad file")
        .contains("not perfmon JSON"));
    assert!(plan(&pmus, r#"{"Events": []}"#)
        .expect_err("no event")
        .contains("no UNC_M_CAS_COUNT.RD"));
}

/// pcm-memory's snapshot: per-channel MB/s turned back into one second of CAS counts, then
/// through our formula and per-socket sums: pcm's node and system totals come out.
#[test]
fn the_formula_gives_pcms_totals() {
    let text =
        std::fs::read_to_string(shared().join("fixtures/uncore/pcm-memory-2s-4ch-snapshot.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
    let mut counters = Vec::new();
    let mut deltas = Vec::new();
    let mut channel = [0u32; 2];
    for line in text.lines() {
        // Two sockets side by side: "|  Mem Ch 0: Reads (MB/s): 6870.81  |  Mem Ch 0: ... |".
        for (socket, cell) in line.split('|').filter(|c| !c.trim().is_empty()).enumerate() {
            let flow = if cell.contains("Reads (MB/s):") {
                Flow::DramRead
            } else if cell.contains("Writes(MB/s):") {
                Flow::DramWrite
            } else {
                continue;
            };
            let mbs: f64 = cell
                .rsplit(':')
                .next()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("{cell}"));
            // A write line belongs to the channel named on the read line above it.
            if let Some(n) = cell
                .split("Mem Ch")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.trim().parse().ok())
            {
                channel[socket.min(1)] = n;
            }
            let ch = channel[socket.min(1)];
            counters.push(Counter {
                pmu: format!("uncore_imc_{ch}"),
                type_: 0,
                config: 0,
                event: String::new(),
                flow,
                bytes_per_count: 64.0,
            });
            deltas.push((
                counters.len() - 1,
                socket as u32,
                (mbs * 1e6 / 64.0).round() as u64,
            ));
        }
    }
    assert_eq!(counters.len(), 16, "4 channels x read/write x 2 sockets");
    let r = rates(&counters, &deltas, 1.0);
    let mb = |s, f| r[&(s, f)] / 1e6;
    let close = |a: f64, b: f64| (a - b).abs() < 0.02;
    assert!(
        close(mb(0, Flow::DramRead), 27478.96) && close(mb(0, Flow::DramWrite), 7225.79),
        "{r:?}"
    );
    assert!(
        close(mb(1, Flow::DramRead), 29624.51) && close(mb(1, Flow::DramWrite), 7811.36),
        "{r:?}"
    );
    let system: f64 = r.values().sum::<f64>() / 1e6;
    assert!(close(system, 72140.62), "{system}");
    // Per channel: pcm's own lines come back (socket 0 channel 0 reads 6870.81 MB/s).
    let per = channel_rates(&counters, &deltas, 1.0);
    assert_eq!(per.len(), 16, "{per:?}");
    assert!(
        close(per[&(0, 0, Flow::DramRead)] / 1e6, 6870.81),
        "{per:?}"
    );
    let socket0: f64 = per
        .iter()
        .filter(|(k, _)| k.0 == 0 && k.2 == Flow::DramRead)
        .map(|(_, v)| v)
        .sum::<f64>()
        / 1e6;
    assert!(close(socket0, 27478.96), "{socket0}");
}
