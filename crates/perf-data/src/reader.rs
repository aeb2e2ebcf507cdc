//! A bounds-checked little-endian cursor. Every read of file data goes through here, so
//! that no input can make the decoder index out of bounds or panic.

/// A read that ran past the end of the buffer, at buffer position `at`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Short {
    pub at: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The unread rest, without consuming it.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let short = Short { at: self.pos };
        let end = self.pos.checked_add(n).ok_or(short)?;
        let s = self.buf.get(self.pos..end).ok_or(short)?;
        self.pos = end;
        Ok(s)
    }

    /// `n` bytes given as a u64 count from the file (may be absurdly large).
    pub(crate) fn bytes_u64(&mut self, n: u64) -> Result<&'a [u8], Short> {
        let n = usize::try_from(n).map_err(|_| Short { at: self.pos })?;
        self.bytes(n)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        match self.rest().first_chunk::<N>() {
            Some(a) => {
                self.pos += N;
                Ok(*a)
            }
            None => Err(Short { at: self.pos }),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.array::<1>()?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, Short> {
        self.array().map(u16::from_le_bytes)
    }
    pub(crate) fn u32(&mut self) -> Result<u32, Short> {
        self.array().map(u32::from_le_bytes)
    }
    pub(crate) fn i32(&mut self) -> Result<i32, Short> {
        self.array().map(i32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self) -> Result<u64, Short> {
        self.array().map(u64::from_le_bytes)
    }

    /// `n` u64 values; checks the byte count first so a corrupt `n` cannot make us
    /// allocate gigabytes.
    pub(crate) fn u64s(&mut self, n: u64) -> Result<Vec<u64>, Short> {
        Ok(self.u64_slice(n)?.to_vec())
    }

    /// `n` u64 values left in place.
    pub(crate) fn u64_slice(&mut self, n: u64) -> Result<U64s<'a>, Short> {
        let bytes = n.checked_mul(8).ok_or(Short { at: self.pos })?;
        Ok(U64s {
            bytes: self.bytes_u64(bytes)?,
        })
    }
}

/// Little-endian u64 values read in place from a record (a call chain), so that decoding
/// a sample allocates nothing. Compares, hashes and prints like a list of the values.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct U64s<'a> {
    /// Always a multiple of 8 bytes long.
    bytes: &'a [u8],
}

impl<'a> U64s<'a> {
    /// Number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there are no values.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 8
    }

    /// Value `i`, `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        u64_at(self.bytes, i.checked_mul(8)?)
    }

    /// The values in order.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + 'a {
        // chunks_exact(8) gives 8-byte chunks: each is one load, no bounds checks.
        self.bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
    }

    /// The raw little-endian bytes (a cheap key for caches: equal bytes, equal values).
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The values copied out.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
}

impl std::fmt::Debug for U64s<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Little-endian u64 from the first 8 bytes of `b`, 0 for missing bytes.
#[inline]
pub(crate) fn le_u64(b: &[u8]) -> u64 {
    if let Some(a) = b.first_chunk::<8>() {
        return u64::from_le_bytes(*a);
    }
    let mut a = [0u8; 8];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(a)
}

/// Little-endian u64 at `off`, `None` when out of bounds.
#[inline]
pub(crate) fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    let end = off.checked_add(8)?;
    buf.get(off..end).map(le_u64)
}

/// Text up to the first NUL (perf pads strings with NULs), lossily decoded.
pub(crate) fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or(b)).into_owned()
}
