//! Build ids are read from the mapped file, checked against the mapping's inode, and only
//! for executable file mappings.

use super::*;
use std::os::unix::fs::MetadataExt;

/// An MMAP2 record as the kernel writes it (no sample_id trailer needed here).
fn mmap2(pid: u32, ino: u64, prot: u32, name: &str) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&PERF_RECORD_MMAP2.to_le_bytes());
    r.extend_from_slice(&2u16.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&pid.to_le_bytes());
    r.extend_from_slice(&pid.to_le_bytes());
    for v in [0x1000u64, 0x1000, 0] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&[0u8; 8]);
    r.extend_from_slice(&ino.to_le_bytes());
    r.extend_from_slice(&0u64.to_le_bytes());
    r.extend_from_slice(&prot.to_le_bytes());
    r.extend_from_slice(&0u32.to_le_bytes());
    r.extend_from_slice(name.as_bytes());
    r.push(0);
    r
}

#[test]
fn our_own_binary_gives_its_build_id_once_and_only_for_its_inode() {
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let name = exe.to_str().unwrap();
    let ino = std::fs::metadata(&exe).unwrap().ino();
    let exec = libc::PROT_EXEC as u32 | libc::PROT_READ as u32;
    let mut ids = BuildIds::default();
    ids.offer(&mmap2(std::process::id(), ino + 1, exec, name));
    assert!(
        ids.entries().is_empty(),
        "another inode at the path was taken"
    );

    let mut ids = BuildIds::default();
    ids.offer(&mmap2(
        std::process::id(),
        ino,
        libc::PROT_READ as u32,
        name,
    ));
    assert!(ids.entries().is_empty(), "a data mapping was read");
    ids.offer(&mmap2(std::process::id(), ino, exec, "[vdso]"));
    assert!(ids.entries().is_empty());
    ids.seen.clear();
    ids.offer(&mmap2(std::process::id(), ino, exec, name));
    ids.offer(&mmap2(std::process::id(), ino, exec, name));
    let e = ids.entries();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].1, name);
    // Rust test binaries are linked with a GNU build id note (20 bytes of SHA-1).
    assert_eq!(e[0].0.len(), 20);
}
