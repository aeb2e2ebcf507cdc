//! Little-endian fields of the kernel's ring-buffer records, read where the record has
//! them and 0 where it is too short: the record loop, the build-id reader and the sample
//! hooks all read the same way.

/// The u64 at byte `o` of `b` (0 when `b` is too short).
pub(crate) fn u64_at(b: &[u8], o: usize) -> u64 {
    match b.get(o..o + 8) {
        Some(s) => u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        None => 0,
    }
}

/// The u32 at byte `o` of `b` (0 when `b` is too short).
pub(crate) fn u32_at(b: &[u8], o: usize) -> u32 {
    match b.get(o..o + 4) {
        Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}
