//! The accuracy table of crates/lab/README.md: every time-assignment method x LBR depth x
//! sampling interval x with/without cycles on the `transitions` and `spikes` traces,
//! each cell run with several seeds (mean ±sd over seeds), as markdown.
//!
//! ```text
//! cargo run --release -p kairos-lab --example lbr_accuracy -- \
//!     [--seconds 2] [--seeds 1,2,3,4,5] [--depths 16,32] [--intervals-us 1000,100,10000] \
//!     [--cycles yes,no,exact] [--methods none,covered,...] [--trace NAME=RESULT_DIR ...]
//! ```
//!
//! Without `--trace` the traces are the synthetic models of the two sample programs
//! (`kairos_lab::synth`; a seed also changes the `spikes` durations), so the table is
//! the same on every machine. `--trace transitions=DIR` scores a real trace from
//! `kairos collect trace` instead (what `bench/lbr_accuracy.sh` does); seeds then only
//! move the sampling phase. `--cycles exact` gives records exact, unsaturated cycles (no
//! real CPU has them): what the methods would make of cycles whose rate is known.

use std::process::ExitCode;

use kairos_lab::accuracy::{markdown, run_cell, Cell, CellRuns, Cycles};
use kairos_lab::synth;
use kairos_model::Profile;
use kairos_time_assignment::Method;

struct Args {
    seconds: f64,
    seeds: Vec<u64>,
    depths: Vec<usize>,
    intervals_us: Vec<u64>,
    cycles: Vec<Cycles>,
    methods: Vec<Method>,
    traces: Vec<(String, String)>,
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>, String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.trim()
                .parse()
                .map_err(|_| format!("{what}: `{x}` is not valid"))
        })
        .collect()
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        seconds: 2.0,
        seeds: vec![1, 2, 3, 4, 5],
        depths: vec![16, 32],
        intervals_us: vec![1000, 100, 10_000],
        cycles: vec![Cycles::Lbr, Cycles::No],
        methods: Method::ALL.to_vec(),
        traces: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--seconds" => {
                a.seconds = v
                    .parse()
                    .map_err(|_| format!("--seconds: `{v}` is not a number"))?
            }
            "--seeds" => a.seeds = list(&v, "--seeds")?,
            "--depths" => a.depths = list(&v, "--depths")?,
            "--intervals-us" => a.intervals_us = list(&v, "--intervals-us")?,
            "--cycles" => {
                a.cycles = v
                    .split(',')
                    .map(|x| match x {
                        "yes" => Ok(Cycles::Lbr),
                        "no" => Ok(Cycles::No),
                        "exact" => Ok(Cycles::Wide),
                        _ => Err(format!("--cycles: `{x}` is not yes, no or exact")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--methods" => a.methods = list(&v, "--methods")?,
            "--trace" => {
                let (n, d) = v.split_once('=').ok_or("--trace takes NAME=RESULT_DIR")?;
                a.traces.push((n.to_string(), d.to_string()));
            }
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if a.seeds.is_empty() || !a.methods.contains(&Method::None) {
        return Err("need at least one seed, and `none` among the methods (the baseline)".into());
    }
    Ok(a)
}

fn read(dir: &str) -> Result<Profile, String> {
    let r = kairos_result::ResultDir::open(dir).map_err(|e| format!("{dir}: {e}"))?;
    kairos_result::read_profile(&r).map_err(|e| format!("{dir}: {e}"))
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lbr_accuracy: {e}");
            return ExitCode::from(2);
        }
    };
    // (name, trace of a seed): a real trace is the same for every seed.
    type Source = Box<dyn Fn(u64) -> Profile>;
    let mut sources: Vec<(String, Source)> = Vec::new();
    if a.traces.is_empty() {
        let secs = a.seconds;
        sources.push((
            "transitions".into(),
            Box::new(move |_| synth::transitions((secs * 1650.0) as u32)),
        ));
        sources.push(("spikes".into(), Box::new(move |s| synth::spikes(secs, s).0)));
    }
    for (name, dir) in &a.traces {
        match read(dir) {
            Ok(p) => sources.push((name.clone(), Box::new(move |_| p.clone()))),
            Err(e) => {
                eprintln!("lbr_accuracy: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let mut cells: Vec<CellRuns> = Vec::new();
    for (name, src) in &sources {
        for &depth in &a.depths {
            for &us in &a.intervals_us {
                for &cycles in &a.cycles {
                    let cell = Cell {
                        depth,
                        interval_ns: us * 1000,
                        cycles,
                    };
                    match run_cell(name, src, cell, &a.seeds, &a.methods) {
                        Ok(c) => cells.push(c),
                        Err(e) => eprintln!("lbr_accuracy: {name} depth {depth} {us} us: {e}"),
                    }
                }
            }
        }
    }
    let seeds: Vec<String> = a.seeds.iter().map(u64::to_string).collect();
    if a.traces.is_empty() {
        println!("Synthetic traces of {} s (`kairos_lab::synth`), `cargo run --release -p kairos-lab --example lbr_accuracy -- --seconds {} --seeds {}`.\n", a.seconds, a.seconds, a.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
    }
    println!(
        "Share error (mean ±sd over seeds {}) = mean total variation distance per 10 ms bucket; spikes cells add the recall of \
         rare_delay calls >= 100 us. Coverage = share of the sampled time the records cover. Last column: the default method \
         (`{}`) against `none`: **worse** when the paired difference exceeds twice its standard error, else none's error over \
         the default's.\n",
        seeds.join(","),
        Method::DEFAULT
    );
    print!("{}", markdown(&cells, &a.methods, Method::DEFAULT));
    ExitCode::SUCCESS
}
