//! The spool's promises: order, the bound (oldest dropped and counted, never the window
//! being sent nor the newest), survival across a restart, and no half windows.

use super::*;

#[test]
fn order_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Spool::open(dir.path(), 1 << 20).unwrap();
    for i in 0..3 {
        s.push(100 + i, 110 + i, b"payload").unwrap();
    }
    fs::write(dir.path().join("000000000009-1-2.win.part"), b"half").unwrap();
    drop(s);
    let mut s = Spool::open(dir.path(), 1 << 20).unwrap();
    let seqs: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2]);
    assert!(!dir.path().join("000000000009-1-2.win.part").exists());
    assert_eq!(s.push(200, 210, b"x").unwrap().seq, 3, "numbers continue");
    let e = s.take_oldest().unwrap().unwrap();
    assert_eq!((e.seq, e.from_s, e.until_s), (0, 100, 110));
    s.done(&e);
    assert_eq!(s.take_oldest().unwrap().unwrap().seq, 1);
}

#[test]
fn bound_drops_the_oldest_but_not_the_one_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Spool::open(dir.path(), 25).unwrap();
    s.push(0, 1, &[0; 10]).unwrap();
    s.push(1, 2, &[0; 10]).unwrap();
    let sending = s.take_oldest().unwrap().unwrap();
    assert_eq!(sending.seq, 0);
    // 30 bytes > 25: the oldest not being sent (1) goes.
    let p = s.push(2, 3, &[0; 10]).unwrap();
    assert_eq!(p.dropped, 1);
    assert_eq!(p.waiting, 2, "the one being sent and the new one");
    let seqs: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 2]);
    assert_eq!(s.dropped(), 1);
    // The newest is kept even when it alone passes the bound.
    s.keep();
    let p = s.push(3, 4, &[0; 40]).unwrap();
    assert_eq!(p.dropped, 2);
    let seqs: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [3]);
    assert_eq!(s.dropped(), 3);
    // Reported in part, then in full.
    s.reported(2).unwrap();
    assert_eq!(s.dropped(), 1);
    drop(s);
    let mut s = Spool::open(dir.path(), 25).unwrap();
    assert_eq!(s.dropped(), 1, "the count survives a restart");
    s.reported(1).unwrap();
    assert_eq!(s.dropped(), 0);
}
