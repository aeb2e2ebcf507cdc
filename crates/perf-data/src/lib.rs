//! Reader of the perf.data file format (perf's `PERFILE2` and the older `PERFFILE`, little-endian, file and pipe mode,
//! zstd-compressed or not) with
//! our own decoder of every sample field, including branch stacks (LBR).
//!
//! ```no_run
//! use kairos_perf_data::{PerfFile, Record};
//! let file = PerfFile::open("perf.data")?;
//! for record in file.records() {
//!     if let Record::Sample(s) = record? {
//!         let branches = s.branch_stack.map_or(0, |b| b.entries.len());
//!         println!("{:?} {:x?} {branches}", s.tid, s.ip);
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Nothing here panics on bad input: the header and attrs must be sound for
//! [`PerfFile::open`] to succeed; a damaged record stream ends with one [`DecodeError`]
//! that names the file offset, after the records that decoded.

mod attr;
mod branch;
pub mod consts;
mod error;
mod features;
mod file;
mod header;
mod reader;
mod record;
mod records;
mod sample;
mod stream;
pub mod write;

pub use attr::{AttrEntry, EventAttr};
pub use branch::{BranchEntry, BranchFlags, BranchStack, BranchType};
pub use consts::*;
pub use error::{DecodeError, DecodeErrorKind, PerfDataError};
pub use features::{BuildIdEntry, EventDesc, Features, MemNode, MemTopology, NumaNode};
pub use file::PerfFile;
pub use header::{FileHeader, FileSection};
pub use reader::U64s;
pub use record::{Comm, ForkExit, Inode, Lost, LostSamples, Mmap, Record, Throttle};
pub use records::{Next, Peek, Records};
pub use sample::{ReadValue, ReadValues, Regs, Sample, SampleId};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_stream;
