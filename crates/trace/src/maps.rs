//! `/proc/PID/maps` lines: which file (and offset in it) a run-time address comes from.

/// One mapping of a file-backed or anonymous region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    pub executable: bool,
    /// Path, `[vdso]`-style name, or empty for anonymous memory.
    pub path: String,
}

/// Parses a maps file; malformed lines are skipped (a later copy may be cut short).
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mapping> {
    // "start-end perms offset dev inode   path" -- the path may contain spaces.
    let mut it = line.splitn(6, ' ');
    let (range, perms, offset) = (it.next()?, it.next()?, it.next()?);
    let (_dev, _inode) = (it.next()?, it.next()?);
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        path,
    })
}

/// The mapping holding `addr`.
pub fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    maps.iter().find(|m| addr >= m.start && addr < m.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_finds() {
        let text = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123  /tmp/a b\n\
                    55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 123  /tmp/a b\n\
                    7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n\
                    garbage\n";
        let m = parse(text);
        assert_eq!(m.len(), 3);
        let x = find(&m, 0x55d0c0a01234).expect("found");
        assert!(x.executable);
        assert_eq!((x.path.as_str(), x.offset), ("/tmp/a b", 0x1000));
        assert!(find(&m, 5).is_none());
        assert_eq!(m[2].path, "");
    }
}
