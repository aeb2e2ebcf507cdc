//! Times writing and reading back a generated profile:
//! `cargo run --release -p kairos-result --example roundtrip_bench [SAMPLES]`.
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use kairos_result::{read_profile, write_profile, ResultDir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let p = common::generated_profile(n, 7);
    let tmp = std::env::temp_dir().join(format!("kairos-bench-{}", std::process::id()));
    let mut best = (f64::MAX, f64::MAX);
    for round in 0..5 {
        let path = tmp.join(format!("r{round:03}hs"));
        let mut dir = ResultDir::create(&path)?;
        let t0 = Instant::now();
        let infos = write_profile(&mut dir, &p)?;
        let t1 = Instant::now();
        let back = read_profile(&ResultDir::open(&path)?)?;
        let t2 = Instant::now();
        assert!(back == p, "round trip differs");
        let (w, r) = ((t1 - t0).as_secs_f64() * 1e3, (t2 - t1).as_secs_f64() * 1e3);
        best = (best.0.min(w), best.1.min(r));
        let samples = infos
            .iter()
            .find(|t| t.name == "samples")
            .map_or(0, |t| t.bytes);
        println!("round {round}: write {w:.1} ms, read {r:.1} ms, samples.parquet {samples} bytes");
    }
    println!(
        "{n} samples: best write {:.1} ms, best read {:.1} ms",
        best.0, best.1
    );
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
