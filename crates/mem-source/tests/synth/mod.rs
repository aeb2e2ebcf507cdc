//! Writes perf.data files of memory samples (with kairos_perf_data::write) for perf to read,
//! and parses `perf script` output of the memory fields.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use kairos_perf_data::write::PerfDataWriter;
use kairos_perf_data::*;

/// One synthetic memory sample.
#[derive(Debug, Clone, Copy)]
pub struct Synth {
    pub ip: u64,
    pub addr: u64,
    pub weight: u64,
    pub data_src: u64,
    pub phys_addr: u64,
}

/// The sample_type of the files we write: what `perf c2c record` asks for, without
/// call chains (the weight bit is added per file).
pub const SAMPLE_TYPE: u64 = PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_ADDR
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_PERIOD
    | PERF_SAMPLE_DATA_SRC
    | PERF_SAMPLE_PHYS_ADDR;

/// A 128-byte perf_event_attr of a raw event (load latency on Intel: event 0xcd umask 1,
/// ldlat 30) with precise_ip 2 and sample_id_all.
fn attr(sample_type: u64) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[0..4].copy_from_slice(&PERF_TYPE_RAW.to_le_bytes());
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8..16].copy_from_slice(&0x1cdu64.to_le_bytes());
    a[16..24].copy_from_slice(&1000u64.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    let flags: u64 = (2 << 15) | (1 << 18);
    a[40..48].copy_from_slice(&flags.to_le_bytes());
    a[56..64].copy_from_slice(&30u64.to_le_bytes());
    a
}

fn sample_record(i: usize, s: &Synth) -> Vec<u8> {
    let mut body = Vec::new();
    let mut w = |x: u64| body.extend_from_slice(&x.to_le_bytes());
    w(s.ip);
    w(0x1000_1000); // pid 4096 / tid 4096
    w(1_000_000 + i as u64 * 1000);
    w(s.addr);
    w(u64::from(i as u32 % 2)); // cpu, reserved
    w(1000);
    w(s.weight);
    w(s.data_src);
    w(s.phys_addr);
    let mut rec = Vec::new();
    rec.extend_from_slice(&9u32.to_le_bytes()); // PERF_RECORD_SAMPLE
    rec.extend_from_slice(&2u16.to_le_bytes()); // PERF_RECORD_MISC_USER
    rec.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    rec.extend_from_slice(&body);
    rec
}

/// NUMA_TOPOLOGY: u32 nodes; per node u32 id, u64 total and free memory (kB), string cpus.
fn numa_one_node() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&(1u64 << 20).to_le_bytes());
    b.extend_from_slice(&(1u64 << 19).to_le_bytes());
    let cpus = b"0-1\0";
    let padded = 64;
    b.extend_from_slice(&(padded as u32).to_le_bytes());
    b.extend_from_slice(cpus);
    b.resize(b.len() + padded - cpus.len(), 0);
    b
}

/// Writes `samples` to `path`; `weight_bit` is PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT.
pub fn write(path: &Path, samples: &[Synth], weight_bit: u64) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .expect("create");
    let mut w = PerfDataWriter::create(file).expect("writer");
    w.add_attr(
        attr(SAMPLE_TYPE | weight_bit),
        vec![1],
        "cpu/mem-loads,ldlat=30/P".into(),
    );
    // perf c2c needs the CPU count and the NUMA nodes: one node, CPUs 0-1.
    w.set_nr_cpus(2, 2);
    w.set_feature_raw(
        kairos_perf_data::write::feature::NUMA_TOPOLOGY,
        numa_one_node(),
    );
    for (i, s) in samples.iter().enumerate() {
        w.write_record(&sample_record(i, s)).expect("record");
    }
    w.finish().expect("finish");
}

/// One line of `perf script -F ip,addr,data_src,weight,phys_addr[,ins_lat]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfRow {
    pub addr: u64,
    pub data_src: u64,
    /// The decoding perf printed after the hex word, trailing padding removed.
    pub words: String,
    pub weight: u64,
    pub ins_lat: Option<u64>,
    pub ip: u64,
    pub phys_addr: Option<u64>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("not hex: {s}"))
}

/// Parses perf's lines: `ADDR DATA_SRC |OP ...|BLK ...  WEIGHT [INS_LAT] IP [PHYS]`.
/// perf prints addr, data_src and phys_addr as `%16x` with no separator, and pads the
/// decoding to the longest seen so far, so fields are cut by width from the ends.
pub fn parse(stdout: &str, ins_lat: bool, phys: bool) -> Vec<PerfRow> {
    let mut rows = Vec::new();
    for line in stdout.lines().filter(|l| l.contains("|OP ")) {
        let (left, right) = line
            .split_once('|')
            .unwrap_or_else(|| panic!("no '|' in {line}"));
        let left = left.trim_end();
        let (a, d) = left.split_at(left.len().saturating_sub(16));
        let a = &a[a.len().saturating_sub(16)..];
        let (addr, data_src) = (hex(a.trim()), hex(d.trim()));
        let mut rest = right.trim_end();
        let mut phys_addr = None;
        if phys {
            let (r, p) = rest.split_at(rest.len().saturating_sub(16));
            phys_addr = Some(hex(p.trim()));
            rest = r.trim_end();
        }
        let mut last = || {
            let start = rest.rfind(' ').map_or(0, |p| p + 1);
            let tok = &rest[start..];
            rest = rest[..start].trim_end();
            tok.to_string()
        };
        let ip = hex(&last());
        let ins = if ins_lat {
            Some(
                last()
                    .parse()
                    .unwrap_or_else(|_| panic!("ins_lat in {line}")),
            )
        } else {
            None
        };
        // The weight may touch the padded decoding when it has more than 16 digits.
        let digits = rest.len() - rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (words, w) = rest.split_at(rest.len() - digits);
        let weight = w.parse().unwrap_or_else(|_| panic!("weight in {line}"));
        rows.push(PerfRow {
            addr,
            data_src,
            words: format!("|{}", words.trim_end()),
            weight,
            ins_lat: ins,
            ip,
            phys_addr,
        });
    }
    rows
}

/// Runs `perf script -F FIELDS -i FILE` and returns its standard output.
pub fn perf_script(file: &Path, fields: &str) -> String {
    let out = Command::new("perf")
        .args(["script", "-F", fields, "-i"])
        .arg(file)
        .output()
        .expect("perf is installed (it is the oracle)");
    assert!(
        out.status.success(),
        "perf script failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
