//! Unit tests over handcrafted perf.data buffers.
#![allow(clippy::panic, clippy::unwrap_used)]

use crate::*;

pub(crate) fn w64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}
pub(crate) fn w32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub(crate) fn record(ty: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, ty);
    v.extend_from_slice(&misc.to_le_bytes());
    v.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    v.extend_from_slice(body);
    v
}

pub(crate) fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An attr of `size` bytes (the kernel's fields at their offsets, zeros beyond).
fn attr_bytes(
    size: usize,
    sample_type: u64,
    flags: u64,
    branch_sample_type: u64,
    regs_user: u64,
) -> Vec<u8> {
    let mut a = vec![0u8; size.max(136)];
    a[4..8].copy_from_slice(&(size as u32).to_le_bytes());
    a[8..16].copy_from_slice(&0u64.to_le_bytes()); // cycles
    a[16..24].copy_from_slice(&4000u64.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    a[32..40].copy_from_slice(&(PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED).to_le_bytes());
    a[40..48].copy_from_slice(&flags.to_le_bytes());
    a[72..80].copy_from_slice(&branch_sample_type.to_le_bytes());
    a[80..88].copy_from_slice(&regs_user.to_le_bytes());
    a.truncate(size);
    a
}

pub(crate) fn string_feature(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    while !b.len().is_multiple_of(8) {
        b.push(0);
    }
    w32(&mut v, b.len() as u32);
    v.extend_from_slice(&b);
    v
}

pub(crate) struct Built {
    pub(crate) bytes: Vec<u8>,
    pub(crate) data_offset: usize,
}

/// A file with `attrs` (bytes of each attr, ids), records, and a few features.
pub(crate) fn build(
    attr_size: usize,
    attrs: &[(Vec<u8>, Vec<u64>)],
    records: &[Vec<u8>],
    finalised: bool,
) -> Built {
    let attr_entry = attr_size + 16;
    let attrs_off = 104;
    let ids_off = attrs_off + attr_entry * attrs.len();
    let ids_len: usize = attrs.iter().map(|a| a.1.len() * 8).sum();
    let data_off = ids_off + ids_len;
    let data: Vec<u8> = records.concat();
    let mut f = Vec::new();
    f.extend_from_slice(b"PERFILE2");
    w64(&mut f, 104);
    w64(&mut f, attr_entry as u64);
    w64(&mut f, attrs_off as u64);
    w64(&mut f, (attr_entry * attrs.len()) as u64);
    w64(&mut f, data_off as u64);
    w64(&mut f, if finalised { data.len() as u64 } else { 0 });
    w64(&mut f, 0);
    w64(&mut f, 0);
    let feats = [
        HEADER_BUILD_ID,
        HEADER_HOSTNAME,
        HEADER_NRCPUS,
        HEADER_CMDLINE,
        HEADER_EVENT_DESC,
        200,
    ];
    let mut bitmap = [0u64; 4];
    for b in feats {
        bitmap[(b / 64) as usize] |= 1 << (b % 64);
    }
    for b in bitmap {
        w64(&mut f, b);
    }
    let mut ids_at = ids_off;
    for (a, ids) in attrs {
        let mut e = a.clone();
        e.resize(attr_size, 0);
        f.extend_from_slice(&e);
        w64(&mut f, ids_at as u64);
        w64(&mut f, (ids.len() * 8) as u64);
        ids_at += ids.len() * 8;
    }
    for (_, ids) in attrs {
        f.extend_from_slice(&words(ids));
    }
    assert_eq!(f.len(), data_off);
    f.extend_from_slice(&data);
    // Feature bodies.
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    let mut bid = Vec::new();
    let mut rec = Vec::new();
    rec.extend_from_slice(&(-1i32).to_le_bytes());
    let mut id = [0u8; 24];
    id[..4].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    id[20] = 4;
    rec.extend_from_slice(&id);
    rec.extend_from_slice(b"/bin/true\0\0\0");
    bid.extend(record(
        67,
        PERF_RECORD_MISC_USER | PERF_RECORD_MISC_BUILD_ID_SIZE,
        &rec,
    ));
    bodies.push(bid);
    bodies.push(string_feature("testhost"));
    bodies.push(words(&[(8u64 << 32) | 16]));
    let mut cmd = Vec::new();
    w32(&mut cmd, 2);
    cmd.extend(string_feature("perf"));
    cmd.extend(string_feature("record"));
    bodies.push(cmd);
    let mut ed = Vec::new();
    w32(&mut ed, attrs.len() as u32);
    w32(&mut ed, attr_size as u32);
    for (i, (a, ids)) in attrs.iter().enumerate() {
        let mut e = a.clone();
        e.resize(attr_size, 0);
        ed.extend(e);
        w32(&mut ed, ids.len() as u32);
        ed.extend(string_feature(&format!("event{i}")));
        ed.extend(words(ids));
    }
    bodies.push(ed);
    bodies.push(vec![1, 2, 3]); // unknown feature 200: ignored
    let mut at = f.len() + 16 * bodies.len();
    let mut table = Vec::new();
    for b in &bodies {
        w64(&mut table, at as u64);
        w64(&mut table, b.len() as u64);
        at += b.len();
    }
    f.extend(table);
    for b in bodies {
        f.extend(b);
    }
    Built {
        bytes: f,
        data_offset: data_off,
    }
}

const ST: u64 = PERF_SAMPLE_IDENTIFIER
    | PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_PERIOD
    | PERF_SAMPLE_BRANCH_STACK;
const SAMPLE_ID_ALL: u64 = 1 << 18;

/// Two events (ids 11, 12 and 21), IDENTIFIER, sample_id_all, a mix of records.
fn small_file(finalised: bool) -> Built {
    let (attrs, recs) = small_parts();
    build(136, &attrs, &recs, finalised)
}

/// The attrs (136 bytes, ids) and records of [`small_file`].
#[allow(clippy::type_complexity)] // (attr bytes, ids) pairs and record bytes, as written
pub(crate) fn small_parts() -> (Vec<(Vec<u8>, Vec<u64>)>, Vec<Vec<u8>>) {
    let a0 = attr_bytes(
        136,
        ST,
        SAMPLE_ID_ALL,
        PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX,
        0,
    );
    let a1 = attr_bytes(
        136,
        ST | PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
        SAMPLE_ID_ALL,
        0,
        0b1011,
    );
    // sample_id trailer for ST: tid, time, cpu, identifier
    let trailer = |id: u64| words(&[(7u64 << 32) | 7, 999, 3, id]);
    let mut comm = Vec::new();
    comm.extend(words(&[(7u64 << 32) | 7]));
    comm.extend_from_slice(b"prog\0\0\0\0");
    comm.extend(trailer(11));
    let mut mmap2 = words(&[(7u64 << 32) | 7, 0x400000, 0x1000, 0]);
    mmap2.extend(words(&[(0x08u64 << 32) | 0x01, 42, 1])); // maj 1 min 8 ino 42 gen 1
    mmap2.extend(words(&[(2u64 << 32) | 5]));
    mmap2.extend_from_slice(b"/bin/prog\0\0\0\0\0\0\0");
    mmap2.extend(trailer(21));
    let s0 = words(&[
        11,
        0x401000,
        (7u64 << 32) | 7,
        1000,
        3,
        4000,
        2,
        5,
        0x401010,
        0x401020,
        1 | (12 << 4) | (4 << 20),
        0x401030,
        0x401040,
        2,
    ]);
    let mut s1 = words(&[21, 0x402000, (7u64 << 32) | 7, 2000, 1, 100, 555, 1, 21, 0]); // read: value, enabled, id; branch nr=0
    s1.extend(words(&[2, 10, 20, 30])); // regs: abi 2, three regs (mask 0b1011)
    s1.extend(words(&[16, 0xaaaa, 0xbbbb, 9])); // stack: size 16, data, dyn_size 9
    let mut fork = words(&[(7u64 << 32) | 8, (7u64 << 32) | 7, 5]);
    fork.extend(trailer(12));
    let mut aux = words(&[16, 0, 0, 0, 0]);
    aux.truncate(40);
    let mut auxrec = record(PERF_RECORD_AUXTRACE, 0, &aux);
    auxrec.extend_from_slice(&[0xee; 16]); // payload outside header.size
    let mut lost = words(&[11, 3]);
    lost.extend(trailer(11));
    let recs = vec![
        record(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, &comm),
        record(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, &mmap2),
        record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, &s0),
        record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, &s1),
        record(PERF_RECORD_FORK, 0, &fork),
        auxrec,
        record(PERF_RECORD_LOST, 0, &lost),
        record(PERF_RECORD_FINISHED_ROUND, 0, &[]),
    ];
    (vec![(a0, vec![11, 12]), (a1, vec![21])], recs)
}

pub(crate) fn all(f: &PerfFile) -> Vec<Result<Record<'_>, DecodeError>> {
    f.records().collect()
}

#[test]
fn decodes_every_record_of_a_small_file() {
    let f = PerfFile::from_bytes(small_file(true).bytes).expect("opens");
    assert_eq!(f.attrs().len(), 2);
    assert_eq!(f.attrs()[0].ids, vec![11, 12]);
    assert_eq!(f.attrs()[1].name.as_deref(), Some("event1"));
    assert!(f.attrs()[0].attr.sample_id_all() && f.attrs()[0].attr.sample_period() == Some(4000));
    let feat = f.features();
    assert_eq!(feat.hostname.as_deref(), Some("testhost"));
    assert_eq!(feat.nr_cpus, Some((16, 8)));
    assert_eq!(
        feat.cmdline.as_deref(),
        Some(&["perf".to_string(), "record".to_string()][..])
    );
    assert_eq!(feat.build_ids[0].build_id, vec![0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(feat.build_ids[0].filename, "/bin/true");
    assert!(feat.present.contains(&200) && feat.malformed.is_empty());

    let recs: Vec<Record<'_>> = all(&f).into_iter().map(|r| r.expect("no error")).collect();
    assert_eq!(recs.len(), 8);
    let Record::Comm(c) = &recs[0] else {
        panic!("{:?}", recs[0])
    };
    assert_eq!((c.pid, c.comm.as_str(), c.exec), (7, "prog", true));
    assert_eq!(
        c.sample_id.map(|s| (s.attr_index, s.time, s.cpu)),
        Some((Some(0), Some(999), Some(3)))
    );
    let Record::Mmap(m) = &recs[1] else { panic!() };
    assert_eq!(
        (m.start, m.len, m.filename.as_str(), m.prot, m.flags),
        (0x400000, 0x1000, "/bin/prog", Some(5), Some(2))
    );
    assert_eq!(m.inode.map(|i| (i.maj, i.min, i.ino)), Some((1, 8, 42)));
    assert_eq!(m.sample_id.and_then(|s| s.attr_index), Some(1));
    assert!(!m.is_kernel());
    let Record::Sample(s) = &recs[2] else {
        panic!()
    };
    assert_eq!(
        (s.attr_index, s.ip, s.pid, s.time, s.cpu, s.period),
        (0, Some(0x401000), Some(7), Some(1000), Some(3), Some(4000))
    );
    let bs = s.branch_stack.as_ref().expect("branches");
    assert_eq!(bs.hw_idx, Some(5));
    assert_eq!(bs.entries.len(), 2);
    assert_eq!((bs.entries[0].from, bs.entries[0].to), (0x401010, 0x401020));
    assert!(bs.entries[0].flags.mispred() && bs.entries[0].flags.cycles() == 12);
    assert_eq!(bs.entries[0].flags.branch_type(), BranchType::Call);
    assert!(bs.entries[1].flags.predicted());
    let Record::Sample(s) = &recs[3] else {
        panic!()
    };
    assert_eq!(s.attr_index, 1);
    let rv = s.read.as_ref().expect("read");
    assert_eq!(
        (rv.time_enabled, rv.values[0].value, rv.values[0].id),
        (Some(1), 555, Some(21))
    );
    assert!(s.branch_stack.as_ref().expect("nr 0").entries.is_empty());
    let regs = s.regs_user.as_ref().expect("regs");
    assert_eq!(
        (regs.get(0), regs.get(1), regs.get(2), regs.get(3)),
        (Some(10), Some(20), None, Some(30))
    );
    assert_eq!(s.stack_user.map(<[u8]>::len), Some(16));
    assert_eq!(s.stack_user_dyn_size, Some(9));
    let Record::Fork(fk) = &recs[4] else { panic!() };
    assert_eq!((fk.pid, fk.ppid, fk.tid, fk.time), (8, 7, 7, 5));
    assert!(matches!(
        recs[5],
        Record::Other {
            record_type: PERF_RECORD_AUXTRACE,
            ..
        }
    ));
    assert!(matches!(recs[6], Record::Lost(Lost { lost: 3, .. })));
    assert_eq!(recs[7], Record::FinishedRound);
}

#[test]
fn unfinished_recording_reads_to_end_of_file() {
    let mut bytes = small_file(false).bytes;
    let f = PerfFile::from_bytes(bytes.clone()).expect("opens");
    assert!(f.features().hostname.is_none());
    // Records decode; the feature bytes after them are garbage to the reader and end in an error.
    let recs = all(&f);
    assert!(recs.iter().filter(|r| r.is_ok()).count() >= 8);
    // Cut exactly after the records: clean end.
    let full = PerfFile::from_bytes(small_file(true).bytes).expect("opens");
    let end = (full.header().data.offset + full.header().data.size) as usize;
    bytes.truncate(end);
    let f = PerfFile::from_bytes(bytes).expect("opens");
    assert_eq!(all(&f).iter().filter(|r| r.is_ok()).count(), 8);
    assert!(all(&f).iter().all(Result::is_ok));
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let bytes = small_file(true).bytes;
    let data_end = {
        let f = PerfFile::from_bytes(bytes.clone()).expect("opens");
        (f.header().data.offset + f.header().data.size) as usize
    };
    for cut in 0..bytes.len() {
        let Ok(f) = PerfFile::from_bytes(bytes[..cut].to_vec()) else {
            continue;
        };
        let recs = all(&f);
        let errors = recs.iter().filter(|r| r.is_err()).count();
        assert!(errors <= 1, "cut {cut}: {errors} errors");
        if errors == 1 {
            assert!(
                recs.last().is_some_and(Result::is_err),
                "cut {cut}: error not last"
            );
            let e = recs.last().and_then(|r| r.as_ref().err()).expect("err");
            assert!(
                e.offset <= cut as u64,
                "cut {cut}: offset {} beyond the cut",
                e.offset
            );
        }
        if cut < data_end {
            assert_eq!(errors, 1, "cut {cut} inside data must report an error");
        }
    }
}

#[test]
fn random_corruption_never_panics() {
    let bytes = small_file(true).bytes;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..4000 {
        let mut b = bytes.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed as usize) % b.len();
            b[i] = (seed >> 32) as u8;
        }
        if let Ok(f) = PerfFile::from_bytes(b) {
            let n = f.records().take(1000).count();
            assert!(n <= 1000);
            let _ = f.features();
        }
    }
}

#[test]
fn corrupt_branch_count_names_the_offset() {
    let b = small_file(true);
    let mut bytes = b.bytes;
    // Third record is the first sample; its nr field is the 7th u64 of the body.
    let comm_len = 8 + 8 + 8 + 32;
    let mmap_len = 8 + 32 + 24 + 8 + 16 + 32;
    let nr_at = b.data_offset + comm_len + mmap_len + 8 + 6 * 8;
    assert_eq!(bytes[nr_at], 2);
    bytes[nr_at..nr_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let f = PerfFile::from_bytes(bytes).expect("opens");
    let recs = all(&f);
    assert_eq!(recs.len(), 3);
    let e = recs[2].as_ref().expect_err("breaks");
    assert_eq!(e.offset, (nr_at + 16) as u64);
    assert!(matches!(
        e.kind,
        DecodeErrorKind::FieldTruncated {
            field: "branch_stack.entries",
            ..
        }
    ));
}

#[test]
fn big_endian_and_garbage_are_clear_errors() {
    let mut b = small_file(true).bytes;
    b[..8].copy_from_slice(b"2ELIFREP");
    assert!(matches!(
        PerfFile::from_bytes(b),
        Err(PerfDataError::BigEndian)
    ));
    assert!(matches!(
        PerfFile::from_bytes(b"hello world".to_vec()),
        Err(PerfDataError::BadMagic(_))
    ));
    assert!(PerfDataError::BigEndian.to_string().contains("big-endian"));
}

#[test]
fn longer_attrs_than_known_are_read_by_their_size() {
    // A 152-byte attr (a future perf) and one with ID at a fixed position, no IDENTIFIER.
    let st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ID;
    let a0 = attr_bytes(152, st, 0, 0, 0);
    let a1 = attr_bytes(152, st | PERF_SAMPLE_PERIOD, 0, 0, 0);
    let recs = vec![
        record(PERF_RECORD_SAMPLE, 0, &words(&[0x10, 1, 5])),
        record(PERF_RECORD_SAMPLE, 0, &words(&[0x20, 1, 6, 77])),
        record(PERF_RECORD_SAMPLE, 0, &words(&[0x30, 1, 99])),
    ];
    let f = PerfFile::from_bytes(build(152, &[(a0, vec![5]), (a1, vec![6])], &recs, true).bytes)
        .expect("opens");
    assert_eq!(f.attrs()[1].attr.size, 152);
    let r: Vec<_> = all(&f).into_iter().map(|r| r.expect("ok")).collect();
    assert!(matches!(&r[0], Record::Sample(s) if s.attr_index == 0 && s.period.is_none()));
    assert!(matches!(&r[1], Record::Sample(s) if s.attr_index == 1 && s.period == Some(77)));
    // Unknown id: dropped like perf does, as an undecoded record.
    assert!(matches!(
        &r[2],
        Record::Other {
            record_type: PERF_RECORD_SAMPLE,
            ..
        }
    ));
}
