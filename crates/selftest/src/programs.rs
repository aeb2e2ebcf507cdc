//! The sample programs' own account of what they did (samples/README.md): the addresses
//! of their arrays, the shares of time they measured, their threads' counters, the faults
//! they made. Where perf has no equivalent, this is the truth kairos is held against; where
//! it has, it says which addresses belong to which object.

/// A named address range of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub name: String,
    pub start: u64,
    pub len: u64,
}

impl Range {
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr - self.start < self.len
    }
}

/// The range holding `addr`, by index.
pub fn range_of(ranges: &[Range], addr: u64) -> Option<usize> {
    ranges.iter().position(|r| r.contains(addr))
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// The words after `prefix` on its first line.
fn words_after<'a>(out: &'a str, prefix: &str) -> Option<Vec<&'a str>> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .map(|rest| rest.split_whitespace().collect())
}

/// The value following `key` among `words`.
fn after<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == key)
        .and_then(|i| words.get(i + 1).copied())
}

/// `three_arrays: heap_array 0x.. bss_array 0x.. data_array 0x.. bytes 8192`.
pub fn three_arrays_ranges(out: &str) -> Option<Vec<Range>> {
    let w = words_after(out, "three_arrays: heap_array")?;
    // w: [heap, "bss_array", bss, "data_array", data, "bytes", n]
    let len: u64 = after(&w, "bytes")?.parse().ok()?;
    let heap = hex(w.first()?)?;
    Some(vec![
        Range {
            name: "heap_array".into(),
            start: heap,
            len,
        },
        Range {
            name: "bss_array".into(),
            start: hex(after(&w, "bss_array")?)?,
            len,
        },
        Range {
            name: "data_array".into(),
            start: hex(after(&w, "data_array")?)?,
            len,
        },
    ])
}

/// `three_arrays: rounds R share heap_array A bss_array B data_array C`: each array's
/// measured share of the thread's CPU time, percent.
pub fn three_arrays_shares(out: &str) -> Option<Vec<(String, f64)>> {
    let w = words_after(out, "three_arrays: rounds")?;
    ["heap_array", "bss_array", "data_array"]
        .iter()
        .map(|n| Some((n.to_string(), after(&w, n)?.parse().ok()?)))
        .collect()
}

/// `matrix: 3 matrices of N bytes each, ...` and `matrix: a=0x.. b=0x.. c=0x..`.
pub fn matrix_ranges(out: &str) -> Option<Vec<Range>> {
    let sizes = words_after(out, "matrix: 3 matrices of")?;
    let len: u64 = sizes.first()?.parse().ok()?;
    let addrs = words_after(out, "matrix: a=")?;
    let a = hex(addrs.first()?)?;
    let named = |w: &str, p: &str| w.strip_prefix(p).and_then(hex);
    let b = addrs.iter().find_map(|w| named(w, "b="))?;
    let c = addrs.iter().find_map(|w| named(w, "c="))?;
    Some(vec![
        Range {
            name: "a".into(),
            start: a,
            len,
        },
        Range {
            name: "b".into(),
            start: b,
            len,
        },
        Range {
            name: "c".into(),
            start: c,
            len,
        },
    ])
}

/// One worker of `false_sharing`: `false_sharing: thread K tid T offset O`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worker {
    pub tid: u64,
    /// Byte offset of its counter in the object.
    pub offset: u64,
}

/// The workers, and the mode line's `mode` (`unpadded`, `padded`, `shared`).
pub fn false_sharing(out: &str) -> Option<(Vec<Worker>, String)> {
    let workers: Vec<Worker> = out
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l
                .trim()
                .strip_prefix("false_sharing: thread")?
                .split_whitespace()
                .collect();
            Some(Worker {
                tid: after(&w, "tid")?.parse().ok()?,
                offset: after(&w, "offset")?.parse().ok()?,
            })
        })
        .collect();
    let mode = words_after(out, "false_sharing: mode")?
        .first()?
        .to_string();
    (!workers.is_empty()).then_some((workers, mode))
}

/// `kfaults: kernel K efault E user U`: the program's own kernel-mode and user-mode faults.
pub fn kfaults(out: &str) -> Option<(u64, u64)> {
    let w = words_after(out, "kfaults: kernel")?;
    Some((w.first()?.parse().ok()?, after(&w, "user")?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_arrays_lines() {
        let out = "three_arrays: heap_array 0x55e289a602a0 bss_array 0x55e24bf5d0e0 data_array 0x55e24bf5b080 bytes 8192\n\
                   three_arrays: rounds 639 share heap_array 49.8 bss_array 30.1 data_array 20.0\n";
        let r = three_arrays_ranges(out).unwrap_or_default();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[1],
            Range {
                name: "bss_array".into(),
                start: 0x55e24bf5d0e0,
                len: 8192
            }
        );
        assert_eq!(range_of(&r, 0x55e289a602a0 + 8191), Some(0));
        assert_eq!(range_of(&r, 0x55e289a602a0 + 8192), None);
        let s = three_arrays_shares(out).unwrap_or_default();
        assert_eq!(s[2], ("data_array".to_string(), 20.0));
        assert!(three_arrays_ranges("three_arrays: heap_array nonsense").is_none());
    }

    #[test]
    fn matrix_lines() {
        let out = "matrix: pid 10699 NUM 512 variant naive\n\
                   matrix: 3 matrices of 2097152 bytes each, 6291456 bytes in total (malloc)\n\
                   matrix: a=0x7f77d7f63010 b=0x7f77d7d62010 c=0x7f77d7b61010\n";
        let r = matrix_ranges(out).unwrap_or_default();
        assert_eq!(
            r.iter().map(|r| r.start).collect::<Vec<_>>(),
            [0x7f77d7f63010, 0x7f77d7d62010, 0x7f77d7b61010]
        );
        assert_eq!(r[2].len, 2097152);
        assert!(matrix_ranges("matrix: pid 1\n").is_none());
    }

    #[test]
    fn false_sharing_and_kfaults_lines() {
        let out = "false_sharing: thread 0 tid 9228 offset 0\nfalse_sharing: thread 1 tid 9229 offset 8\n\
                   false_sharing: mode unpadded threads 2 iterations 300000000 object 0x560d8855c2a0 size 512 elapsed_s 1.176 total 600000000\n";
        let (w, mode) = false_sharing(out).unwrap_or_default();
        assert_eq!(
            w,
            [
                Worker {
                    tid: 9228,
                    offset: 0
                },
                Worker {
                    tid: 9229,
                    offset: 8
                }
            ]
        );
        assert_eq!(mode, "unpadded");
        assert!(false_sharing("nothing\n").is_none());
        assert_eq!(
            kfaults("kfaults: kernel 20000 efault 20000 user 2000\n"),
            Some((20000, 2000))
        );
        assert_eq!(kfaults("kfaults: kernel x\n"), None);
    }
}
