//! Every way perf writes a recording, recorded here and imported, against `perf script` as
//! the oracle: per event, the same number of samples and the same sum of periods.
//! Compressed (`-z`), pipe mode (`-o -`, from a file and from standard input, compressed or
//! not), several events, event groups read with `:S`, fixed periods (`-c N`), frequency
//! mode; and every perf.data of the shared fixtures that this perf reads.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{fixtures, kairos, path_str, sample, tempdir};

/// (samples, sum of periods) by event name.
type Counts = BTreeMap<String, (u64, u64)>;

/// perf's view: `perf script -F period,event` prints "PERIOD EVENT:" per delivered sample.
fn perf_counts(file: &Path) -> Option<Counts> {
    let out = Command::new("perf")
        .args(["script", "-i"])
        .arg(file)
        .args(["-F", "period,event", "--hide-call-graph"])
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let mut c = Counts::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = line.split_whitespace();
        let (Some(period), Some(event), None) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let (Ok(period), Some(event)) = (period.parse::<u64>(), event.strip_suffix(':')) else {
            continue;
        };
        let e = c.entry(event.to_string()).or_default();
        e.0 += 1;
        e.1 += period;
    }
    Some(c)
}

/// Ours: the manifest's events (events without samples left out, as perf script prints none).
fn kairos_counts(result: &Path) -> Counts {
    let dir = kairos_result::ResultDir::open(result).unwrap();
    dir.manifest()
        .events
        .iter()
        .filter(|e| e.samples > 0)
        .map(|e| (e.name.clone(), (e.samples, e.weight)))
        .collect()
}

/// A short run of a bundled program under `perf record ARGS`, written to `out`.
fn record(args: &[&str], out: &Path) {
    let mut cmd = Command::new("perf");
    cmd.arg("record").args(args);
    let to_pipe = args.contains(&"-");
    if !to_pipe {
        cmd.arg("-o").arg(out);
    }
    cmd.arg("--").arg(sample("transitions")).arg("40");
    let file = std::fs::File::create(out).unwrap();
    let status = if to_pipe {
        cmd.stdout(file).stderr(Stdio::null()).status()
    } else {
        cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()
    };
    assert!(status.unwrap().success(), "perf record {args:?} failed");
}

fn import(file: &Path, result: &Path) {
    kairos(&["import", "-q", path_str(file), "-r", path_str(result)]).ok();
}

fn agree(file: &Path, result: &Path) {
    let want = perf_counts(file).expect("perf script reads what perf record wrote");
    assert!(
        !want.is_empty(),
        "perf script printed no samples for {}",
        file.display()
    );
    assert_eq!(
        kairos_counts(result),
        want,
        "{}: (samples, sum of periods) by event, kairos vs perf script",
        file.display()
    );
}

fn case(name: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let t = tempdir();
    let file = t.path().join(format!("{name}.data"));
    record(args, &file);
    let result = t.path().join("r");
    import(&file, &result);
    agree(&file, &result);
    (t, file)
}

#[test]
fn compressed_recording_agrees_with_perf_script() {
    let (t, file) = case("z", &["-z", "-e", "cpu-clock", "-c", "100000", "-g"]);
    // The file really is compressed: otherwise this test proves nothing.
    let f = kairos_perf_data::PerfFile::open(&file).unwrap();
    assert!(
        f.compressed_records() > 0,
        "perf record -z wrote no PERF_RECORD_COMPRESSED"
    );
    drop(t);
}

#[test]
fn pipe_mode_from_a_file_and_from_standard_input() {
    let (t, file) = case(
        "pipe",
        &["-e", "cpu-clock", "-c", "100000", "-g", "-o", "-"],
    );
    assert!(
        kairos_perf_data::PerfFile::open(&file)
            .unwrap()
            .header()
            .pipe
    );
    // The same stream through standard input.
    let result = t.path().join("stdin");
    let run = Command::new(common::kairos_bin())
        .args(["import", "-q", "-", "-r", path_str(&result)])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "kairos import - failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    agree(&file, &result);
}

#[test]
fn compressed_pipe_mode_agrees() {
    case(
        "zpipe",
        &["-z", "-e", "cpu-clock", "-c", "100000", "-o", "-"],
    );
}

#[test]
fn several_events_keep_their_own_weights() {
    let (t, _) = case(
        "multi",
        &["-e", "cpu-clock/period=100000/,page-faults/period=5/"],
    );
    let r = t.path().join("r");
    // Reports show one event at a time; --event picks it.
    let text = kairos(&["report", "summary", "-r", path_str(&r)])
        .ok()
        .stdout;
    assert!(
        text.contains("Events:") && text.contains("cpu-clock") && text.contains("page-faults"),
        "{text}"
    );
    // Named as perf names it, or without its modifiers.
    let hs = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--event",
        "page-faults",
        "--format",
        "csv",
    ])
    .ok()
    .stdout;
    assert!(
        hs.lines().next().unwrap().contains("page-faults"),
        "weights labelled by the chosen event: {hs}"
    );
    let total: u64 = hs
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    let want = kairos_counts(&r)
        .into_iter()
        .find(|(k, _)| k.starts_with("page-faults"))
        .unwrap()
        .1
         .1;
    assert_eq!(
        total, want,
        "self page faults add up to the event's total: {hs}"
    );
    let bad = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--event",
        "cycles",
    ]);
    assert!(
        bad.stderr.contains("no event \"cycles\"") && bad.stderr.contains("page-faults"),
        "{}",
        bad.stderr
    );
}

#[test]
fn event_group_read_with_s_gives_each_member_its_samples() {
    case(
        "group",
        &["-e", "{cpu-clock,page-faults}:S", "-c", "100000"],
    );
}

#[test]
fn fixed_period_weighs_each_sample_by_the_period() {
    case("fixed", &["-e", "cpu-clock", "-c", "250000"]);
}

#[test]
fn frequency_mode_keeps_each_sample_period() {
    case("freq", &["-e", "cpu-clock", "-F", "999", "-g"]);
}

/// Samples taken in guest mode (cpumode GUEST_USER) are left out, as perf script does,
/// and the summary says how many.
#[test]
fn guest_mode_samples_are_left_out_and_counted() {
    let (t, file) = case("host", &["-e", "cpu-clock", "-c", "250000"]);
    let mut b = std::fs::read(&file).unwrap();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (word(&b, 40) as usize, word(&b, 48) as usize);
    let (mut at, mut n, mut guest) = (start, 0, 0);
    while at < start + size {
        let (ty, size) = (
            u32::from_le_bytes(b[at..at + 4].try_into().unwrap()),
            u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize,
        );
        if ty == 9 {
            n += 1;
            if n % 3 == 0 {
                b[at + 4] = (b[at + 4] & !7) | 5; // PERF_RECORD_MISC_GUEST_USER
                guest += 1;
            }
        }
        at += size;
    }
    assert!(
        guest > 10,
        "only {guest} samples to turn into guest samples"
    );
    let patched = t.path().join("guest.data");
    std::fs::write(&patched, b).unwrap();
    let result = t.path().join("rg");
    let run = kairos(&["import", "-q", path_str(&patched), "-r", path_str(&result)]).ok();
    assert!(
        run.stderr.contains(&format!(
            "{guest} samples of the recording are not in the result"
        )),
        "{}",
        run.stderr
    );
    agree(&patched, &result);
    let text = kairos(&["report", "summary", "-r", path_str(&result)])
        .ok()
        .stdout;
    assert!(
        text.contains(&format!(
            "{guest} samples were taken while a virtual machine's guest ran"
        )),
        "{text}"
    );
}

/// Every perf.data in the shared fixtures that this perf can read.
#[test]
fn every_fixture_agrees_with_perf_script() {
    let mut files = Vec::new();
    let all = fixtures().parent().unwrap().to_path_buf();
    for dir in std::fs::read_dir(&all).unwrap().flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().to_string_lossy().ends_with(".perf.data") {
                files.push(f.path());
            }
        }
    }
    assert!(
        files.len() >= 8,
        "the fixtures hold at least 8 perf.data files, found {files:?}"
    );
    let t = tempdir();
    let mut compared = 0;
    for (i, file) in files.iter().enumerate() {
        let result = t.path().join(format!("r{i}"));
        import(file, &result);
        // perf 6.1 refuses the 152-byte attrs of newer perf; those are read by the other tests.
        let Some(want) = perf_counts(file) else {
            continue;
        };
        assert_eq!(kairos_counts(&result), want, "{}", file.display());
        compared += 1;
    }
    assert!(
        compared >= files.len() - 1,
        "perf script read only {compared} of {} fixtures",
        files.len()
    );
}
