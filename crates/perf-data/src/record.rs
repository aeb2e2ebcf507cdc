//! Record types of the data section and the decoders of the non-sample ones.
//! Non-sample record bodies are followed by a `sample_id` trailer when the event has
//! sample_id_all; the caller cuts that trailer off before these decoders run.

use crate::consts::*;
use crate::reader::{c_string, Cursor, Short};
use crate::sample::{Sample, SampleId};

/// One record of the data section.
// Samples are most of the stream; boxing them would cost an allocation each to save
// space only on the rare small records.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// PERF_RECORD_SAMPLE.
    Sample(Sample<'a>),
    /// PERF_RECORD_MMAP or PERF_RECORD_MMAP2.
    Mmap(Mmap),
    /// PERF_RECORD_COMM.
    Comm(Comm),
    /// PERF_RECORD_FORK.
    Fork(ForkExit),
    /// PERF_RECORD_EXIT.
    Exit(ForkExit),
    /// PERF_RECORD_LOST.
    Lost(Lost),
    /// PERF_RECORD_LOST_SAMPLES.
    LostSamples(LostSamples),
    /// PERF_RECORD_THROTTLE.
    Throttle(Throttle),
    /// PERF_RECORD_UNTHROTTLE.
    Unthrottle(Throttle),
    /// PERF_RECORD_FINISHED_ROUND: records before it may be sorted by time.
    FinishedRound,
    /// Any other record, undecoded. `bytes` is the whole record including its 8-byte
    /// header (for AUXTRACE and TRACING_DATA, without the payload that follows it).
    /// Samples whose event id matches no attr also come here, as perf drops them.
    Other {
        /// PERF_RECORD_* type.
        record_type: u32,
        /// Header misc bits.
        misc: u16,
        /// The record bytes.
        bytes: &'a [u8],
    },
}

/// A memory mapping (MMAP and MMAP2 in one shape).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mmap {
    /// Header misc: cpu mode (`PERF_RECORD_MISC_KERNEL`/`USER`), `MMAP_DATA`, `MMAP_BUILD_ID`.
    pub misc: u16,
    /// Process id (-1 for kernel maps).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Mapped path (lossy UTF-8), or a pseudo name such as `[vdso]`, `//anon`.
    pub filename: String,
    /// MMAP2 with MMAP_BUILD_ID: the build id.
    pub build_id: Option<Vec<u8>>,
    /// MMAP2 without build id: device and inode.
    pub inode: Option<Inode>,
    /// MMAP2: protection bits.
    pub prot: Option<u32>,
    /// MMAP2: mapping flags.
    pub flags: Option<u32>,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

impl Mmap {
    /// The mapping was recorded in kernel mode (a kernel or module map).
    pub fn is_kernel(&self) -> bool {
        self.misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL
    }
    /// A non-executable (data) mapping.
    pub fn is_data(&self) -> bool {
        self.misc & PERF_RECORD_MISC_MMAP_DATA != 0
    }
}

/// Device and inode of an MMAP2 mapping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inode {
    /// Major device number.
    pub maj: u32,
    /// Minor device number.
    pub min: u32,
    /// Inode number.
    pub ino: u64,
    /// Inode generation.
    pub ino_generation: u64,
}

/// A thread name change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comm {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// New name (lossy UTF-8).
    pub comm: String,
    /// The change comes from exec (PERF_RECORD_MISC_COMM_EXEC).
    pub exec: bool,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

/// FORK or EXIT.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForkExit {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Thread id.
    pub tid: i32,
    /// Parent thread id.
    pub ptid: i32,
    /// Time stamp.
    pub time: u64,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

/// Records lost in the ring buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    /// Event id.
    pub id: u64,
    /// Number of records lost.
    pub lost: u64,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

/// Samples lost (for example by the PMU driver).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostSamples {
    /// Number of samples lost.
    pub lost: u64,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

/// THROTTLE or UNTHROTTLE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    /// Time stamp.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
    /// Trailer, when the event has sample_id_all.
    pub sample_id: Option<SampleId>,
}

type FieldResult<T> = Result<T, (Short, &'static str)>;

fn f<T>(r: Result<T, Short>, name: &'static str) -> FieldResult<T> {
    r.map_err(|s| (s, name))
}

/// Decodes a non-sample record of a known type from its body (after the 8-byte header,
/// before the trailer). Returns `None` for types decoded elsewhere or not at all.
pub(crate) fn decode_other<'a>(
    record_type: u32,
    misc: u16,
    body: &[u8],
    sample_id: Option<SampleId>,
) -> Option<FieldResult<Record<'a>>> {
    let c = &mut Cursor::new(body);
    let r = match record_type {
        PERF_RECORD_MMAP | PERF_RECORD_MMAP2 => {
            mmap(c, record_type == PERF_RECORD_MMAP2, misc, sample_id).map(Record::Mmap)
        }
        PERF_RECORD_COMM => (|| {
            Ok(Record::Comm(Comm {
                pid: f(c.i32(), "comm.pid")?,
                tid: f(c.i32(), "comm.tid")?,
                comm: c_string(c.rest()),
                exec: misc & PERF_RECORD_MISC_COMM_EXEC != 0,
                sample_id,
            }))
        })(),
        PERF_RECORD_FORK | PERF_RECORD_EXIT => (|| {
            let fe = ForkExit {
                pid: f(c.i32(), "fork.pid")?,
                ppid: f(c.i32(), "fork.ppid")?,
                tid: f(c.i32(), "fork.tid")?,
                ptid: f(c.i32(), "fork.ptid")?,
                time: f(c.u64(), "fork.time")?,
                sample_id,
            };
            Ok(if record_type == PERF_RECORD_FORK {
                Record::Fork(fe)
            } else {
                Record::Exit(fe)
            })
        })(),
        PERF_RECORD_LOST => (|| {
            Ok(Record::Lost(Lost {
                id: f(c.u64(), "lost.id")?,
                lost: f(c.u64(), "lost.lost")?,
                sample_id,
            }))
        })(),
        PERF_RECORD_LOST_SAMPLES => (|| {
            Ok(Record::LostSamples(LostSamples {
                lost: f(c.u64(), "lost_samples.lost")?,
                sample_id,
            }))
        })(),
        PERF_RECORD_THROTTLE | PERF_RECORD_UNTHROTTLE => (|| {
            let t = Throttle {
                time: f(c.u64(), "throttle.time")?,
                id: f(c.u64(), "throttle.id")?,
                stream_id: f(c.u64(), "throttle.stream_id")?,
                sample_id,
            };
            Ok(if record_type == PERF_RECORD_THROTTLE {
                Record::Throttle(t)
            } else {
                Record::Unthrottle(t)
            })
        })(),
        PERF_RECORD_FINISHED_ROUND => Ok(Record::FinishedRound),
        _ => return None,
    };
    Some(r)
}

fn mmap(c: &mut Cursor<'_>, v2: bool, misc: u16, sample_id: Option<SampleId>) -> FieldResult<Mmap> {
    let mut m = Mmap {
        misc,
        pid: f(c.i32(), "mmap.pid")?,
        tid: f(c.i32(), "mmap.tid")?,
        start: f(c.u64(), "mmap.start")?,
        len: f(c.u64(), "mmap.len")?,
        pgoff: f(c.u64(), "mmap.pgoff")?,
        sample_id,
        ..Mmap::default()
    };
    if v2 {
        // A 24-byte union: {maj, min, ino, ino_generation} or {build_id_size, pad[3], build_id[20]}.
        let u = f(c.bytes(24), "mmap2.inode")?;
        let mut uc = Cursor::new(u);
        if misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
            let size = f(uc.u8(), "mmap2.build_id")?.min(20) as usize;
            // The kernel sets the flag with size 0 when it could not read the id.
            m.build_id = u
                .get(4..4 + size)
                .filter(|id| !id.is_empty())
                .map(<[u8]>::to_vec);
        } else {
            m.inode = Some(Inode {
                maj: f(uc.u32(), "mmap2.maj")?,
                min: f(uc.u32(), "mmap2.min")?,
                ino: f(uc.u64(), "mmap2.ino")?,
                ino_generation: f(uc.u64(), "mmap2.ino_generation")?,
            });
        }
        m.prot = Some(f(c.u32(), "mmap2.prot")?);
        m.flags = Some(f(c.u32(), "mmap2.flags")?);
    }
    m.filename = c_string(c.rest());
    Ok(m)
}
