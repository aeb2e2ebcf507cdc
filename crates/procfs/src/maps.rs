//! `/proc/PID/maps`: `start-end perms offset major:minor inode   path`, one line per mapping.

/// One mapping of a file-backed or anonymous region.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub read: bool,
    pub write: bool,
    pub executable: bool,
    /// `s` (shared) rather than `p` (private).
    pub shared: bool,
    /// File offset of `start`.
    pub offset: u64,
    pub major: u32,
    pub minor: u32,
    pub inode: u64,
    /// Path (which may contain spaces), `[vdso]`-style name, or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    /// The permissions as `PROT_*` bits (PROT_READ 1, PROT_WRITE 2, PROT_EXEC 4).
    pub fn prot(&self) -> u32 {
        u32::from(self.read) | u32::from(self.write) << 1 | u32::from(self.executable) << 2
    }
}

/// Parses a maps file; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

/// One line, or `None` when it is not a maps line.
pub fn parse_line(line: &str) -> Option<Mapping> {
    let mut it = line.splitn(6, ' ');
    let (range, perms, offset, dev, inode) = (
        it.next()?,
        it.next()?.as_bytes(),
        it.next()?,
        it.next()?,
        it.next()?,
    );
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    let [r, w, x, s_or_p, ..] = *perms else {
        return None;
    };
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        read: r == b'r',
        write: w == b'w',
        executable: x == b'x',
        shared: s_or_p == b's',
        offset: u64::from_str_radix(offset, 16).ok()?,
        major: u32::from_str_radix(major, 16).ok()?,
        minor: u32::from_str_radix(minor, 16).ok()?,
        inode: inode.trim().parse().ok()?,
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
    fn parses_every_field_and_finds() {
        let text = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123  /tmp/a b\n\
                    55d0c0a01000-55d0c0a02000 r-xs 00001000 fd:01 1234567  /tmp/a b\n\
                    7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n\
                    garbage\n\
                    1000-2000 rw 0 00:00 0\n";
        let m = parse(text);
        assert_eq!(m.len(), 3, "the garbage and the short perms are skipped");
        let x = find(&m, 0x55d0c0a01234).expect("found");
        assert!(x.executable && x.read && !x.write && x.shared);
        assert_eq!(
            (x.path.as_str(), x.offset, x.major, x.minor, x.inode),
            ("/tmp/a b", 0x1000, 0xfd, 1, 1234567)
        );
        assert_eq!(x.prot(), 5);
        assert_eq!(m[2].prot(), 3);
        assert!(find(&m, 5).is_none());
        assert_eq!(m[2].path, "");
    }
}
