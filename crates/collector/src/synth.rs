//! Side-band records for what existed before recording started.
//!
//! The kernel only reports mappings and thread names as they change. A process we attach
//! to (or every process, system-wide) has mapped its executable and libraries long
//! before, so, as perf does, we write PERF_RECORD_COMM and PERF_RECORD_MMAP2 records
//! read from /proc, plus one PERF_RECORD_MMAP for the kernel image, so that every sampled
//! address can be symbolised later.
//!
//! Each record ends with the sample_id trailer that sample_id_all promises for our
//! sample_type (TID, TIME, CPU, IDENTIFIER: u32 pid, u32 tid, u64 time, u32 cpu, u32 res,
//! u64 id); readers parse every non-sample record with that trailer.

use std::path::Path;

const PERF_RECORD_MMAP: u32 = 1;
const PERF_RECORD_COMM: u32 = 3;
const PERF_RECORD_MMAP2: u32 = 10;
/// perf's own record type marking the end of a flush round (ordering hint for readers).
pub const PERF_RECORD_FINISHED_ROUND: u32 = 68;
const MISC_KERNEL: u16 = 1;
const MISC_USER: u16 = 2;
const MISC_MMAP_DATA: u16 = 0x2000;

/// What goes into every synthesised record's sample_id trailer.
#[derive(Debug, Clone, Copy)]
pub struct IdTrailer {
    pub time: u64,
    pub id: u64,
}

fn header(out: &mut Vec<u8>, ty: u32, misc: u16) -> usize {
    let start = out.len();
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    start
}

fn put_cstr_padded(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
    while out.len() & 7 != 0 {
        out.push(0);
    }
}

fn trailer_and_size(out: &mut Vec<u8>, start: usize, pid: u32, tid: u32, t: IdTrailer) {
    out.extend_from_slice(&pid.to_le_bytes());
    out.extend_from_slice(&tid.to_le_bytes());
    out.extend_from_slice(&t.time.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // cpu: unknown, 0 as perf writes
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&t.id.to_le_bytes());
    let size = (out.len() - start) as u16;
    out[start + 6..start + 8].copy_from_slice(&size.to_le_bytes());
}

pub fn comm_record(pid: i32, tid: i32, comm: &[u8], t: IdTrailer) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let start = header(&mut out, PERF_RECORD_COMM, 0);
    out.extend_from_slice(&(pid as u32).to_le_bytes());
    out.extend_from_slice(&(tid as u32).to_le_bytes());
    // The kernel's comm is at most 15 bytes + NUL.
    put_cstr_padded(&mut out, &comm[..comm.len().min(15)]);
    trailer_and_size(&mut out, start, pid as u32, tid as u32, t);
    out
}

/// One line of /proc/PID/maps, parsed (the shared parser's).
pub use kairos_procfs::maps::{parse_line as parse_maps_line, Mapping as MapLine};

pub fn mmap2_record(pid: i32, m: &MapLine, t: IdTrailer) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let misc = if m.executable {
        MISC_USER
    } else {
        MISC_USER | MISC_MMAP_DATA
    };
    let start = header(&mut out, PERF_RECORD_MMAP2, misc);
    out.extend_from_slice(&(pid as u32).to_le_bytes());
    out.extend_from_slice(&(pid as u32).to_le_bytes());
    out.extend_from_slice(&m.start.to_le_bytes());
    out.extend_from_slice(&(m.end - m.start).to_le_bytes());
    out.extend_from_slice(&m.offset.to_le_bytes());
    out.extend_from_slice(&m.major.to_le_bytes());
    out.extend_from_slice(&m.minor.to_le_bytes());
    out.extend_from_slice(&m.inode.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // ino_generation: not in /proc
    out.extend_from_slice(&m.prot().to_le_bytes());
    let flags = if m.shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    out.extend_from_slice(&flags.to_le_bytes());
    // Anonymous executable memory (JITs) is named "//anon", as the kernel names it.
    let name = if m.path.is_empty() {
        "//anon"
    } else {
        m.path.as_str()
    };
    // The kernel caps names at PATH_MAX; keep the record under u16 size.
    let name = &name.as_bytes()[..name.len().min(4000)];
    put_cstr_padded(&mut out, name);
    trailer_and_size(&mut out, start, pid as u32, pid as u32, t);
    out
}

/// The kernel image as perf describes it: a PERF_RECORD_MMAP of pid -1 named
/// "[kernel.kallsyms]_text", from the address of `_text` to the top of the address space,
/// pgoff = that address (the relocation reference perf checks against kallsyms).
pub fn kernel_mmap_record(text_addr: u64, t: IdTrailer) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    let start = header(&mut out, PERF_RECORD_MMAP, MISC_KERNEL);
    out.extend_from_slice(&u32::MAX.to_le_bytes()); // pid -1: the kernel
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&text_addr.to_le_bytes());
    out.extend_from_slice(&(u64::MAX - text_addr).to_le_bytes());
    out.extend_from_slice(&text_addr.to_le_bytes());
    put_cstr_padded(&mut out, b"[kernel.kallsyms]_text");
    trailer_and_size(&mut out, start, u32::MAX, 0, t);
    out
}

pub fn finished_round_record() -> [u8; 8] {
    let mut r = [0u8; 8];
    r[0..4].copy_from_slice(&PERF_RECORD_FINISHED_ROUND.to_le_bytes());
    r[6..8].copy_from_slice(&8u16.to_le_bytes());
    r
}

/// Address of `_text` (else `_stext`) in /proc/kallsyms; None when hidden (kptr_restrict
/// shows zeros) or unreadable. Read once per process: the kernel does not move after boot,
/// and the kernel takes tens of milliseconds to print the file (an agent that records
/// window after window would pay it every window).
pub fn kernel_text_address() -> Option<u64> {
    static TEXT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *TEXT.get_or_init(read_kernel_text_address)
}

fn read_kernel_text_address() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let mut stext = None;
    for line in s.lines() {
        let mut f = line.split_whitespace();
        let (Some(addr), Some(_ty), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if name == "_text" || name == "_stext" {
            let a = u64::from_str_radix(addr, 16).ok()?;
            if a == 0 {
                return None;
            }
            if name == "_text" {
                return Some(a);
            }
            stext.get_or_insert(a);
        }
    }
    stext
}

/// Records for one process: COMM of each of its threads, MMAP2 of each executable
/// mapping (and, with `data_maps`, of every other mapping too). A process that vanishes meanwhile yields what could be read.
pub fn process_records(pid: i32, data_maps: bool, t: IdTrailer, out: &mut Vec<Vec<u8>>) {
    let base = Path::new("/proc").join(pid.to_string());
    if let Ok(rd) = std::fs::read_dir(base.join("task")) {
        let mut tids: Vec<i32> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        for tid in tids {
            if let Ok(c) = std::fs::read(base.join("task").join(tid.to_string()).join("comm")) {
                let c = c.strip_suffix(b"\n").unwrap_or(&c);
                out.push(comm_record(pid, tid, c, t));
            }
        }
    }
    if let Ok(maps) = std::fs::read_to_string(base.join("maps")) {
        for m in maps.lines().filter_map(parse_maps_line) {
            // With data maps, every mapping: files, anonymous memory, and the brk heap and
            // main stack, which a running process made before we came (a launched one gets
            // no record for them, and readers infer them).
            if m.executable || data_maps {
                out.push(mmap2_record(pid, &m, t));
            }
        }
    }
}

/// Every process in /proc.
pub fn all_pids() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Threads of one process.
pub fn threads_of(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_line_parses() {
        let m = parse_maps_line(
            "7f0e1c000000-7f0e1c021000 r-xp 00002000 fd:01 1234567                    /usr/lib/x.so",
        )
        .expect("parse");
        assert_eq!(m.start, 0x7f0e1c000000);
        assert_eq!(m.offset, 0x2000);
        assert_eq!((m.major, m.minor, m.inode), (0xfd, 1, 1234567));
        assert_eq!(m.path, "/usr/lib/x.so");
        assert_eq!(m.prot(), 5);
        let a = parse_maps_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0").expect("anon");
        assert_eq!(a.path, "");
    }

    #[test]
    fn records_are_aligned_and_sized() {
        let t = IdTrailer { time: 5, id: 9 };
        for r in [
            comm_record(1, 2, b"bash", t),
            kernel_mmap_record(0xffffffff81000000, t),
            mmap2_record(
                3,
                &parse_maps_line("1000-2000 r-xp 0 08:01 7 /bin/x").expect("p"),
                t,
            ),
        ] {
            assert_eq!(r.len() % 8, 0);
            assert_eq!(u16::from_le_bytes([r[6], r[7]]) as usize, r.len());
            // identifier is the last u64
            assert_eq!(r[r.len() - 8], 9);
        }
    }
}
