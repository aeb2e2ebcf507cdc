//! [`PerfFile`]: owns the bytes (memory-mapped or in memory), parses the header, attrs and
//! features eagerly (they are small) and decodes records lazily.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::attr::{parse_attrs, AttrEntry};
use crate::consts::PERF_TYPE_BREAKPOINT;
use crate::error::PerfDataError;
use crate::features::Features;
use crate::header::FileHeader;
use crate::records::{Attribution, Records};
use crate::stream::{self, Expanded};

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

/// An opened perf.data file (little-endian, file or pipe mode, compressed or not, any
/// perf version).
pub struct PerfFile {
    storage: Storage,
    header: FileHeader,
    attrs: Vec<AttrEntry>,
    features: Features,
    attribution: Attribution,
    /// The record stream with compressed records expanded, when the file has any.
    expanded: Option<Expanded>,
    /// Bytes from the start of the map already given back by [`PerfFile::reading_at`].
    released: AtomicUsize,
}

impl std::fmt::Debug for PerfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfFile")
            .field("header", &self.header)
            .field("attrs", &self.attrs)
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

impl PerfFile {
    /// Opens and memory-maps `path`. The file must not be truncated while it is open.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfFile, PerfDataError> {
        let path = path.as_ref();
        let io = |source| PerfDataError::Io {
            path: path.to_path_buf(),
            source,
        };
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

    /// Reads a whole stream (standard input in pipe mode: `perf record -o - | kairos import -`).
    pub fn from_reader(mut reader: impl std::io::Read) -> Result<PerfFile, PerfDataError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| PerfDataError::Io {
                path: "standard input".into(),
                source,
            })?;
        PerfFile::from_bytes(bytes)
    }

    fn from_storage(storage: Storage) -> Result<PerfFile, PerfDataError> {
        let bytes = storage.bytes();
        let header = FileHeader::parse(bytes)?;
        let mut file = PerfFile {
            header,
            attrs: Vec::new(),
            features: Features::default(),
            attribution: Attribution::default(),
            expanded: None,
            storage: Storage::Owned(Vec::new()),
            released: AtomicUsize::new(0),
        };
        let (start, end) = data_range(&file.header, bytes.len());
        let data = bytes.get(start..end).unwrap_or(&[]);
        // A finished file says in its features whether it was compressed; a pipe-mode stream
        // or an unfinished file must be walked to know.
        let may_be_compressed = file.header.pipe
            || file.header.data.size == 0
            || file.header.has_feature(crate::consts::HEADER_COMPRESSED);
        if may_be_compressed {
            file.expanded = stream::expand(data, start as u64);
        }
        let records = file.expanded.as_ref().map_or(data, |e| &e.data[..]);
        if file.header.pipe {
            let (attrs, features, names) = stream::pipe_header(records);
            if attrs.is_empty() {
                return Err(PerfDataError::PipeWithoutAttrs);
            }
            file.attrs = attrs;
            file.features = features;
            for (id, name) in names {
                if let Some(a) = file.attrs.iter_mut().find(|a| a.ids.contains(&id)) {
                    a.name = Some(name);
                }
            }
        } else {
            file.attrs = parse_attrs(bytes, &file.header)?;
            file.features = Features::parse(bytes, &file.header);
        }
        if file.attrs.iter().all(|a| a.name.is_none()) {
            name_attrs(&mut file.attrs, &file.features);
        }
        name_pmus(&mut file.attrs, &file.features);
        file.attribution = Attribution::new(&file.attrs);
        file.storage = storage;
        Ok(file)
    }

    /// Says that records are being read at file offset `offset` (as [`Records::offset`]
    /// gives), from start to end: the pages well behind it are given back, so that a
    /// mapped file does not stay resident as a whole. Should anything given back be read
    /// again, the kernel reads it again from the file, so records handed out earlier
    /// stay valid. Does nothing for a file in memory or one with compressed records
    /// (those are read from their expanded copy). Cheap to call often.
    pub fn reading_at(&self, offset: u64) {
        // A multiple of the page size (the map starts on a page), and far enough behind
        // that no record being decoded is in what is given back.
        const STEP: usize = 8 << 20;
        let (Storage::Mapped(map), None) = (&self.storage, &self.expanded) else {
            return;
        };
        let at = usize::try_from(offset).unwrap_or(usize::MAX).min(map.len());
        let (behind, end) = (
            self.released.load(Ordering::Relaxed),
            at.saturating_sub(STEP) / STEP * STEP,
        );
        if end <= behind {
            return;
        }
        // SAFETY: the map is a read-only private mapping of a file that is never written
        // through it, so MADV_DONTNEED only drops page-table entries: a later access
        // faults the same bytes in again from the file. Nothing is freed that a reference
        // could observe as changed. Failure is harmless: the pages just stay resident.
        if unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, behind, end - behind)
        }
        .is_ok()
        {
            self.released.store(end, Ordering::Relaxed);
        }
    }

    /// Compressed records (`perf record -z`) the file holds; they are read expanded.
    pub fn compressed_records(&self) -> u64 {
        self.expanded.as_ref().map_or(0, |e| e.compressed_records)
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
        match &self.expanded {
            Some(e) => e.data.len() as u64,
            None => {
                let (a, b) = data_range(&self.header, self.storage.bytes().len());
                (b - a) as u64
            }
        }
    }

    /// The records of the data section in file order. After an error the iterator yields
    /// nothing more; records before it are valid.
    /// When the file holds compressed records, offsets in errors count bytes of the
    /// expanded stream from the start of the data section.
    pub fn records(&self) -> Records<'_> {
        let bytes = self.storage.bytes();
        let (start, end) = data_range(&self.header, bytes.len());
        if let Some(e) = &self.expanded {
            return Records::new(&e.data, start as u64, None, &self.attrs, &self.attribution)
                .with_final_error(e.error.clone());
        }
        let data = bytes.get(start..end).unwrap_or(&[]);
        let claimed_end = self
            .header
            .data
            .offset
            .saturating_add(self.header.data.size);
        let claimed = (self.header.data.size != 0 && claimed_end > bytes.len() as u64)
            .then(|| claimed_end - self.header.data.offset.min(claimed_end));
        let claimed = claimed.filter(|&c| c > data.len() as u64);
        Records::new(data, start as u64, claimed, &self.attrs, &self.attribution)
    }
}

/// Byte range of the records, clamped to the file.
fn data_range(header: &FileHeader, len: usize) -> (usize, usize) {
    let start = usize::try_from(header.data.offset)
        .unwrap_or(usize::MAX)
        .min(len);
    let end = if header.data.size == 0 {
        len
    } else {
        usize::try_from(header.data.offset.saturating_add(header.data.size))
            .unwrap_or(usize::MAX)
            .min(len)
    };
    (start, end.max(start))
}

/// Names the PMU of the events whose PMU the name alone does not tell, from PMU_MAPPINGS:
/// a hybrid CPU's hardware event is `cpu_core/cycles/` or `cpu_atom/cycles/` (as perf
/// names them), also where the file names both `cycles` or names neither; an unnamed
/// event of a dynamic PMU is `ibs_op/config=0x0/`.
fn name_pmus(attrs: &mut [AttrEntry], features: &Features) {
    for a in attrs {
        let qualified = a.name.as_deref().is_some_and(|n| n.contains('/'));
        if let Some(t) = a.attr.hybrid_pmu_type().filter(|_| !qualified) {
            let pmu = features
                .pmu_name(t)
                .map_or_else(|| format!("pmu{t}"), str::to_string);
            let name = a.name.clone().unwrap_or_else(|| a.attr.event_name());
            // `cycles:u` becomes `cpu_core/cycles/u`, as perf writes modifiers after the PMU.
            let (event, modifiers) = name.split_once(':').unwrap_or((&name, ""));
            a.name = Some(format!("{pmu}/{event}/{modifiers}"));
        } else if a.name.is_none() && a.attr.type_ > PERF_TYPE_BREAKPOINT {
            if let Some(pmu) = features.pmu_name(a.attr.type_) {
                a.name = Some(format!("{pmu}/config=0x{:x}/", a.attr.config));
            }
        }
    }
}

/// Gives each attr its EVENT_DESC name, matched by sample id (or by position when the
/// file recorded no ids, which happens with a single event).
fn name_attrs(attrs: &mut [AttrEntry], features: &Features) {
    let by_position = features.event_desc.len() == attrs.len();
    for (i, desc) in features.event_desc.iter().enumerate() {
        let by_id = desc
            .ids
            .first()
            .and_then(|id| attrs.iter().position(|a| a.ids.contains(id)));
        let target = by_id.or(by_position.then_some(i));
        if let Some(a) = target.and_then(|t| attrs.get_mut(t)) {
            a.name = Some(desc.name.clone());
        }
    }
}
