//! Unit tests of the stream forms: compressed records, pipe mode, the first file format,
//! both conventions of the tracing-data record.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::io::Write;

use crate::tests::{all, build, record, small_parts, string_feature, w64, words};
use crate::*;

/// Records as comparable text, FINISHED_ROUND left out (compression adds its own).
fn decoded(f: &PerfFile) -> Vec<String> {
    all(f)
        .into_iter()
        .filter(|r| !matches!(r, Ok(Record::FinishedRound)))
        .map(|r| format!("{r:?}"))
        .collect()
}

fn plain() -> Vec<String> {
    let (attrs, recs) = small_parts();
    decoded(&PerfFile::from_bytes(build(136, &attrs, &recs, true).bytes).unwrap())
}

/// One zstd stream, flushed (not ended) after each chunk, as perf record -z writes it.
fn compress_chunks(chunks: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    let mut out = Vec::new();
    let mut taken = 0;
    for c in chunks {
        enc.write_all(c).unwrap();
        enc.flush().unwrap();
        let all = enc.get_ref();
        out.push(all[taken..].to_vec());
        taken = all.len();
    }
    out
}

fn compressed2(payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    w64(&mut body, payload.len() as u64);
    body.extend_from_slice(payload);
    body.resize(body.len().next_multiple_of(8), 0);
    record(PERF_RECORD_COMPRESSED2, 0, &body)
}

#[test]
fn compressed_records_read_as_the_records_they_hold() {
    let (attrs, recs) = small_parts();
    // COMM in the clear; MMAP2 + first sample in COMPRESSED; the rest split across a record
    // boundary inside COMPRESSED2 chunks (a record cut in two, as perf's chunks may be).
    let tail: Vec<u8> = recs[3..7].concat();
    let cut = 13;
    let z = compress_chunks(&[
        recs[1..3].concat(),
        tail[..cut].to_vec(),
        tail[cut..].to_vec(),
    ]);
    let stream = vec![
        recs[0].clone(),
        record(PERF_RECORD_COMPRESSED, 0, &z[0]),
        record(PERF_RECORD_FINISHED_ROUND, 0, &[]),
        compressed2(&z[1]),
        compressed2(&z[2]),
    ];
    // Unfinished (data size 0), as perf leaves a file it could not close: such a file has no
    // HEADER_COMPRESSED feature to announce compression, so the stream itself is walked.
    let f = PerfFile::from_bytes(build(136, &attrs, &stream, false).bytes).unwrap();
    assert_eq!(f.compressed_records(), 3);
    // An unfinished file reads to its end, past the records into the feature sections.
    let (got, want) = (decoded(&f), plain());
    assert_eq!(got[..want.len().min(got.len())], want[..]);
}

#[test]
fn damaged_compressed_data_keeps_what_came_before() {
    let (attrs, recs) = small_parts();
    let z = compress_chunks(&[recs[1].clone()]);
    let stream = vec![
        recs[0].clone(),
        record(PERF_RECORD_COMPRESSED, 0, &z[0]),
        record(PERF_RECORD_COMPRESSED, 0, &[0x55; 64]),
    ];
    let f = PerfFile::from_bytes(build(136, &attrs, &stream, false).bytes).unwrap();
    let r = all(&f);
    assert_eq!(r.len(), 3, "COMM, MMAP2, then the error: {r:?}");
    assert!(matches!(r[1], Ok(Record::Mmap(_))));
    let e = r[2].as_ref().unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::Decompress(_)), "{e}");
}

#[test]
fn a_decompression_bomb_is_refused_not_followed() {
    let (attrs, recs) = small_parts();
    // 200 MiB of zeros compress to a few KiB: past the ratio bound and the 64 MiB floor.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..200 {
        enc.write_all(&zeros).unwrap();
    }
    let z = enc.finish().unwrap();
    assert!(z.len() < 60_000, "{}", z.len());
    let stream = vec![recs[0].clone(), record(PERF_RECORD_COMPRESSED, 0, &z)];
    let f = PerfFile::from_bytes(build(136, &attrs, &stream, false).bytes).unwrap();
    let r = all(&f);
    assert!(matches!(r[0], Ok(Record::Comm(_))), "{:?}", r[0]);
    let e = r.last().unwrap().as_ref().unwrap_err();
    assert!(e.to_string().contains("exceeds"), "{e}");
}

#[test]
fn pipe_mode_carries_attrs_names_and_features_as_records() {
    let (attrs, recs) = small_parts();
    let mut s = b"PERFILE2".to_vec();
    w64(&mut s, 16);
    for (a, ids) in &attrs {
        let mut body = a.clone();
        body.extend(words(ids));
        s.extend(record(PERF_RECORD_HEADER_ATTR, 0, &body));
    }
    let mut name = words(&[3, 21]);
    name.extend_from_slice(b"instructions:u\0\0");
    s.extend(record(PERF_RECORD_EVENT_UPDATE, 0, &name));
    let mut host = words(&[u64::from(HEADER_HOSTNAME)]);
    host.extend(string_feature("pipehost"));
    s.extend(record(PERF_RECORD_HEADER_FEATURE, 0, &host));
    for r in &recs {
        s.extend_from_slice(r);
    }
    let f = PerfFile::from_bytes(s).unwrap();
    assert!(f.header().pipe);
    assert_eq!(f.attrs().len(), 2);
    assert_eq!(f.attrs()[0].ids, vec![11, 12]);
    assert_eq!(f.attrs()[1].name.as_deref(), Some("instructions:u"));
    assert_eq!(f.features().hostname.as_deref(), Some("pipehost"));
    let pipe: Vec<String> = decoded(&f)
        .into_iter()
        .filter(|r| {
            !r.contains("record_type: 64")
                && !r.contains("record_type: 78")
                && !r.contains("record_type: 80")
        })
        .collect();
    assert_eq!(pipe, plain());
    // A stream cut before its attrs cannot be read: a sentence, not a panic.
    let mut cut = b"PERFILE2".to_vec();
    w64(&mut cut, 16);
    assert!(matches!(
        PerfFile::from_bytes(cut),
        Err(PerfDataError::PipeWithoutAttrs)
    ));
}

#[test]
fn the_first_format_perffile_reads_like_perfile2() {
    let (attrs, recs) = small_parts();
    let mut b = build(136, &attrs, &recs, true).bytes;
    b[..8].copy_from_slice(b"PERFFILE");
    let f = PerfFile::from_bytes(b).unwrap();
    assert!(f.header().legacy_v1);
    assert_eq!(decoded(&f), plain());
    // The header before the feature bitmap (72 bytes) has no features.
    let mut old = build(136, &attrs, &recs, true).bytes;
    old[8..16].copy_from_slice(&72u64.to_le_bytes());
    let f = PerfFile::from_bytes(old).unwrap();
    assert!(f.features().present.is_empty());
    assert_eq!(decoded(&f), plain());
}

#[test]
fn tracing_data_inside_or_after_the_record() {
    let (attrs, recs) = small_parts();
    let payload = [0x42u8; 20];
    // perf: a 16-byte record, then the payload padded to 8, outside header.size.
    let mut perf_style = words(&[payload.len() as u64]);
    let mut after = payload.to_vec();
    after.resize(24, 0);
    let mut perf_rec = record(PERF_RECORD_HEADER_TRACING_DATA, 0, &perf_style);
    perf_rec.extend_from_slice(&after);
    // simpleperf: the payload counted inside the record.
    perf_style.truncate(4);
    perf_style.extend_from_slice(&payload);
    perf_style.resize(perf_style.len().next_multiple_of(8), 0);
    let simple_rec = record(PERF_RECORD_HEADER_TRACING_DATA, 0, &perf_style);
    for tracing in [perf_rec, simple_rec] {
        let mut stream = vec![tracing];
        stream.extend(recs.iter().cloned());
        let f = PerfFile::from_bytes(build(136, &attrs, &stream, true).bytes).unwrap();
        let got: Vec<String> = decoded(&f).into_iter().skip(1).collect();
        assert_eq!(
            got,
            plain(),
            "the records after the tracing data are all read"
        );
    }
}
