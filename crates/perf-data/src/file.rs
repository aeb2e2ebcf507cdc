//! [`PerfFile`]: owns the bytes (memory-mapped or in memory), parses the header, attrs and
//! features eagerly (they are small) and decodes records lazily.

use std::path::Path;

use crate::attr::{parse_attrs, AttrEntry};
use crate::error::PerfDataError;
use crate::features::Features;
use crate::header::FileHeader;
use crate::records::{Attribution, Records};

enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// An opened perf.data file (little-endian, file mode, any perf version).
pub struct PerfFile {
    storage: Storage,
    header: FileHeader,
    attrs: Vec<AttrEntry>,
    features: Features,
    attribution: Attribution,
}

impl std::fmt::Debug for PerfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfFile").field("header", &self.header).field("attrs", &self.attrs).field("features", &self.features).finish_non_exhaustive()
    }
}

impl PerfFile {
    /// Opens and memory-maps `path`. The file must not be truncated while it is open.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfFile, PerfDataError> {
        let path = path.as_ref();
        let io = |source| PerfDataError::Io { path: path.to_path_buf(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let storage = if len == 0 {
            // mmap of an empty file fails on Linux; an empty buffer gives the right error.
            Storage::Owned(Vec::new())
        } else {
            // SAFETY: the map is read-only; perf.data files are not modified while we read
            // them (a concurrent truncation would fault, as with any mmap reader such as perf).
            Storage::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(io)?)
        };
        PerfFile::from_storage(storage)
    }

    /// Parses a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfFile, PerfDataError> {
        PerfFile::from_storage(Storage::Owned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<PerfFile, PerfDataError> {
        let bytes = storage.bytes();
        let header = FileHeader::parse(bytes)?;
        let mut attrs = parse_attrs(bytes, &header)?;
        let features = Features::parse(bytes, &header);
        name_attrs(&mut attrs, &features);
        let attribution = Attribution::new(&attrs);
        Ok(PerfFile { storage, header, attrs, features, attribution })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The recorded events, in file order; samples refer to them by index.
    pub fn attrs(&self) -> &[AttrEntry] {
        &self.attrs
    }

    /// The decoded header features.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// Bytes of record data that [`PerfFile::records`] walks (the data section, or up to
    /// the end of the file for a recording that was never finalised).
    pub fn data_size(&self) -> u64 {
        self.data_range().1 as u64 - self.data_range().0 as u64
    }

    /// The records of the data section in file order. After an error the iterator yields
    /// nothing more; records before it are valid.
    pub fn records(&self) -> Records<'_> {
        let bytes = self.storage.bytes();
        let (start, end) = self.data_range();
        let data = bytes.get(start..end).unwrap_or(&[]);
        let claimed_end = self.header.data.offset.saturating_add(self.header.data.size);
        let claimed = (self.header.data.size != 0 && claimed_end > bytes.len() as u64).then(|| claimed_end - self.header.data.offset.min(claimed_end));
        let claimed = claimed.filter(|&c| c > data.len() as u64);
        Records::new(data, start as u64, claimed, &self.attrs, &self.attribution)
    }

    /// Byte range of the records, clamped to the file.
    fn data_range(&self) -> (usize, usize) {
        let len = self.storage.bytes().len();
        let start = usize::try_from(self.header.data.offset).unwrap_or(usize::MAX).min(len);
        let end = if self.header.data.size == 0 {
            len
        } else {
            usize::try_from(self.header.data.offset.saturating_add(self.header.data.size)).unwrap_or(usize::MAX).min(len)
        };
        (start, end.max(start))
    }
}

/// Gives each attr its EVENT_DESC name, matched by sample id (or by position when the
/// file recorded no ids, which happens with a single event).
fn name_attrs(attrs: &mut [AttrEntry], features: &Features) {
    let by_position = features.event_desc.len() == attrs.len();
    for (i, desc) in features.event_desc.iter().enumerate() {
        let by_id = desc.ids.first().and_then(|id| attrs.iter().position(|a| a.ids.contains(id)));
        let target = by_id.or(by_position.then_some(i));
        if let Some(a) = target.and_then(|t| attrs.get_mut(t)) {
            a.name = Some(desc.name.clone());
        }
    }
}
