//! Typed errors: [`PerfDataError`] for problems that make the whole file unreadable
//! (header, attrs), [`DecodeError`] for a record stream that breaks part-way, so that
//! everything decoded before the break stays usable.

use std::path::PathBuf;

/// The file cannot be opened as a perf.data file at all.
#[derive(Debug, thiserror::Error)]
pub enum PerfDataError {
    /// Reading or mapping the file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The first 8 bytes are not `PERFILE2`.
    #[error("not a perf.data file: the first 8 bytes are {0:02x?}, expected \"PERFILE2\" (or the old \"PERFFILE\")")]
    BadMagic([u8; 8]),
    /// The magic is byte-swapped: the file was written on a big-endian machine.
    #[error("big-endian perf.data files are not supported (the PERFILE2 magic is byte-swapped); convert it with perf on a big-endian machine")]
    BigEndian,
    /// A pipe-mode stream whose records hold no event attr (HEADER_ATTR).
    #[error("pipe-mode perf.data without any event attr record: the stream was cut before perf wrote its header records")]
    PipeWithoutAttrs,
    /// A header structure lies (partly) outside the file.
    #[error(
        "truncated perf.data: {what} needs bytes {start}..{end} but the file has {file_len} bytes"
    )]
    Truncated {
        /// Which structure.
        what: &'static str,
        /// First byte needed.
        start: u64,
        /// One past the last byte needed.
        end: u64,
        /// File length.
        file_len: u64,
    },
    /// A header value is impossible.
    #[error("invalid perf.data header: {0}")]
    InvalidHeader(String),
}

/// Where and why the record stream broke. The records iterator yields one of these
/// and then stops.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("perf.data record stream broken at file offset {offset}: {kind}")]
pub struct DecodeError {
    /// File offset (from the start of the file) where decoding failed.
    pub offset: u64,
    /// What went wrong.
    pub kind: DecodeErrorKind,
}

/// The reason a [`DecodeError`] occurred.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// Fewer than 8 bytes (a record header) are left in the data section.
    #[error("record header needs 8 bytes, only {available} left")]
    HeaderTruncated {
        /// Bytes left.
        available: u64,
    },
    /// A record header claims a size smaller than the header itself.
    #[error("record of type {record_type} has impossible size {size}")]
    BadSize {
        /// PERF_RECORD_* type.
        record_type: u32,
        /// The size field.
        size: u64,
    },
    /// The record (or its out-of-record payload) runs past the end of the data.
    #[error("record of type {record_type} needs {needed} bytes, only {available} left")]
    RecordTruncated {
        /// PERF_RECORD_* type.
        record_type: u32,
        /// Bytes the record claims.
        needed: u64,
        /// Bytes left in the data section.
        available: u64,
    },
    /// The record body ends inside a field (a count or size inside the record is wrong).
    #[error("record of type {record_type} ends inside field `{field}`")]
    FieldTruncated {
        /// PERF_RECORD_* type.
        record_type: u32,
        /// The field being read.
        field: &'static str,
    },
    /// Compressed data (`perf record -z`) could not be decompressed.
    #[error("compressed data cannot be decompressed: {0}")]
    Decompress(String),
    /// A record kind this reader does not decode and cannot skip safely.
    #[error("unsupported record: {0}")]
    Unsupported(&'static str),
}
