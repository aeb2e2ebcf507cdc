//! `Records::next_into` (samples decoded into one reused slot) must read exactly what the
//! iterator reads, record for record, on every real recording at hand: the fixtures and
//! the fuzzing seeds (which cover every sample field kairos records).
#![allow(clippy::panic, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use kairos_perf_data::{Next, PerfFile, Record, Sample};

fn files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dirs = [
        root.join("../shared/fixtures/lbr"),
        root.join("../shared/fixtures/mem"),
        root.join("fuzz/seeds"),
    ];
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "data"))
        .collect();
    out.sort();
    out
}

#[test]
fn next_into_reads_what_the_iterator_reads() {
    let files = files();
    assert!(files.len() >= 5, "too few recordings found: {files:?}");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        // Whole, and cut in the middle so that the error path is compared too.
        for cut in [bytes.len(), bytes.len() * 2 / 3] {
            let Ok(file) = PerfFile::from_bytes(bytes[..cut].to_vec()) else {
                continue;
            };
            let want: Vec<_> = file.records().collect();
            let mut got = Vec::new();
            let mut records = file.records();
            let mut slot = Sample::default();
            while let Some(r) = records.next_into(&mut slot) {
                got.push(r.map(|n| match n {
                    Next::Sample => Record::Sample(slot.clone()),
                    Next::Record(r) => *r,
                }));
            }
            assert_eq!(got, want, "{} cut at {cut}", path.display());
        }
    }
}

/// `Records::peek_next` (the first look of the time-ordered replay) must see the records
/// `next_into` decodes, at the same places, with the same time stamps.
#[test]
fn peek_next_sees_each_record_with_its_decoded_time() {
    for path in files() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(file) = PerfFile::from_bytes(bytes) else {
            continue;
        };
        let mut look = file.records();
        let mut records = file.records();
        let mut slot = Sample::default();
        let mut n = 0;
        loop {
            let at = records.record_position();
            let decoded = records.next_into(&mut slot);
            let peek = look.peek_next();
            match (decoded, peek) {
                (Some(Ok(_)), Some(p)) => {
                    assert_eq!(p.position, at, "{} record {n}", path.display());
                    assert_eq!(p.time, records.last_time(), "{} record {n}", path.display());
                    // Read again from its position, the record is the same.
                    let mut again = Sample::default();
                    let mut re = records.at(at);
                    assert!(matches!(re.next_into(&mut again), Some(Ok(_))));
                    assert_eq!(re.record_position(), records.record_position());
                }
                (None, None) => break,
                // An error the decoder finds in a field is not the look's to find.
                (Some(Err(_)), _) => break,
                (d, p) => panic!("{} record {n}: {d:?} but {p:?}", path.display()),
            }
            n += 1;
        }
        assert!(n > 0, "{}", path.display());
    }
}
