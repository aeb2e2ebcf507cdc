//! The fixed file header at offset 0 (`struct perf_file_header` in perf's util/header.h):
//! magic, sizes, the attrs/data/event_types sections and the feature bitmap.

use crate::error::PerfDataError;
use crate::reader::Cursor;

/// `PERFILE2` as written by a little-endian machine.
const MAGIC: [u8; 8] = *b"PERFILE2";
/// The first format (perf of 2009-2011): the same layout, endianness told by attr_size.
const MAGIC_V1: [u8; 8] = *b"PERFFILE";
/// The same u64 written by a big-endian machine.
const MAGIC_SWAPPED: [u8; 8] = *b"2ELIFREP";
/// Size of the header we read; later fields (none so far) would be ignored.
pub(crate) const HEADER_SIZE: u64 = 104;
/// The header before the feature bitmap existed: no features.
const HEADER_SIZE_NO_FEATURES: u64 = 72;
/// Pipe-mode files have a header of just magic + size.
const PIPE_HEADER_SIZE: u64 = 16;

/// A `{offset, size}` pair pointing into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileSection {
    /// Offset from the start of the file.
    pub offset: u64,
    /// Length in bytes.
    pub size: u64,
}

impl FileSection {
    pub(crate) fn read(c: &mut Cursor<'_>) -> Option<FileSection> {
        Some(FileSection {
            offset: c.u64().ok()?,
            size: c.u64().ok()?,
        })
    }

    /// The section as a byte range, checked against the file length.
    pub(crate) fn slice<'a>(
        &self,
        file: &'a [u8],
        what: &'static str,
    ) -> Result<&'a [u8], PerfDataError> {
        let end = self.offset.checked_add(self.size);
        let range = end
            .and_then(|end| Some(usize::try_from(self.offset).ok()?..usize::try_from(end).ok()?));
        range
            .and_then(|r| file.get(r))
            .ok_or(PerfDataError::Truncated {
                what,
                start: self.offset,
                end: end.unwrap_or(u64::MAX),
                file_len: file.len() as u64,
            })
    }
}

/// The perf.data file header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// Size of this header as recorded (104 today).
    pub header_size: u64,
    /// Size of one entry of the attrs section: perf_event_attr plus an ids section.
    pub attr_size: u64,
    /// The attrs section.
    pub attrs: FileSection,
    /// The data (records) section. `size == 0` means the recording was not finalised.
    pub data: FileSection,
    /// The legacy event_types section (unused by modern perf).
    pub event_types: FileSection,
    /// Feature bitmap: bit N set means feature N has a section after the data.
    pub adds_features: [u64; 4],
    /// Pipe mode (`perf record -o -`): a 16-byte header, then records only; attrs and
    /// features arrive as records. `data` then covers everything after the header.
    pub pipe: bool,
    /// The first format's magic, `PERFFILE`.
    pub legacy_v1: bool,
}

impl FileHeader {
    /// Whether feature bit `feature` (a `HEADER_*` constant) is set.
    pub fn has_feature(&self, feature: u32) -> bool {
        let word = (feature / 64) as usize;
        self.adds_features
            .get(word)
            .is_some_and(|w| w & (1u64 << (feature % 64)) != 0)
    }

    pub(crate) fn parse(file: &[u8]) -> Result<FileHeader, PerfDataError> {
        let mut magic = [0u8; 8];
        match file.first_chunk::<8>() {
            Some(m) => magic = *m,
            None => {
                for (d, s) in magic.iter_mut().zip(file) {
                    *d = *s;
                }
                if !MAGIC.starts_with(file) {
                    return Err(PerfDataError::BadMagic(magic));
                }
            }
        }
        if magic == MAGIC_SWAPPED {
            return Err(PerfDataError::BigEndian);
        }
        let legacy_v1 = magic == MAGIC_V1;
        if magic != MAGIC && !legacy_v1 {
            return Err(PerfDataError::BadMagic(magic));
        }
        let truncated = |what| PerfDataError::Truncated {
            what,
            start: 0,
            end: HEADER_SIZE,
            file_len: file.len() as u64,
        };
        let mut c = Cursor::new(file);
        c.bytes(8).map_err(|_| truncated("file header"))?;
        let header_size = c.u64().map_err(|_| truncated("file header"))?;
        if header_size == PIPE_HEADER_SIZE {
            let data = FileSection {
                offset: PIPE_HEADER_SIZE,
                size: 0,
            };
            return Ok(FileHeader {
                header_size,
                attr_size: 0,
                attrs: FileSection::default(),
                data,
                event_types: FileSection::default(),
                adds_features: [0; 4],
                pipe: true,
                legacy_v1,
            });
        }
        let (Some(attr_size), Some(attrs), Some(data), Some(event_types)) = (
            c.u64().ok(),
            FileSection::read(&mut c),
            FileSection::read(&mut c),
            FileSection::read(&mut c),
        ) else {
            return Err(truncated("file header"));
        };
        let mut adds_features = [0u64; 4];
        if header_size == HEADER_SIZE_NO_FEATURES {
            // An old header without the bitmap: the data may start right after it.
        } else if header_size < HEADER_SIZE {
            return Err(PerfDataError::InvalidHeader(format!("header size {header_size} is neither {HEADER_SIZE_NO_FEATURES} nor at least {HEADER_SIZE}")));
        } else {
            for w in adds_features.iter_mut() {
                *w = c
                    .u64()
                    .map_err(|_| truncated("file header feature bitmap"))?;
            }
        }
        if legacy_v1 && attr_size.swap_bytes() < attr_size {
            // Version 1 tells endianness only by attr_size: a swapped one is big-endian.
            return Err(PerfDataError::BigEndian);
        }
        Ok(FileHeader {
            header_size,
            attr_size,
            attrs,
            data,
            event_types,
            adds_features,
            pipe: false,
            legacy_v1,
        })
    }
}
