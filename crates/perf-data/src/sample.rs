//! PERF_RECORD_SAMPLE bodies and the `sample_id` trailer of other records. Fields are
//! read in the order the kernel writes them (kernel/events/core.c, perf_output_sample),
//! each only when its PERF_SAMPLE_* bit is set in the event's sample_type.

use crate::attr::EventAttr;
use crate::branch::{self, BranchStack};
use crate::consts::*;
use crate::reader::{Cursor, Short, U64s};

/// A decoded sample. `None` means the event did not record that field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Index into [`crate::PerfFile::attrs`] of the event that produced it.
    pub attr_index: usize,
    /// Record header misc bits (cpu mode, exact IP).
    pub misc: u16,
    /// PERF_SAMPLE_IDENTIFIER.
    pub identifier: Option<u64>,
    /// PERF_SAMPLE_IP.
    pub ip: Option<u64>,
    /// PERF_SAMPLE_TID: process id.
    pub pid: Option<i32>,
    /// PERF_SAMPLE_TID: thread id.
    pub tid: Option<i32>,
    /// PERF_SAMPLE_TIME (ns, clock per the attr).
    pub time: Option<u64>,
    /// PERF_SAMPLE_ADDR.
    pub addr: Option<u64>,
    /// PERF_SAMPLE_ID.
    pub id: Option<u64>,
    /// PERF_SAMPLE_STREAM_ID.
    pub stream_id: Option<u64>,
    /// PERF_SAMPLE_CPU.
    pub cpu: Option<u32>,
    /// PERF_SAMPLE_PERIOD.
    pub period: Option<u64>,
    /// PERF_SAMPLE_READ.
    pub read: Option<ReadValues>,
    /// PERF_SAMPLE_CALLCHAIN (with PERF_CONTEXT_* markers as recorded), read in place.
    pub callchain: Option<U64s<'a>>,
    /// PERF_SAMPLE_RAW payload.
    pub raw: Option<&'a [u8]>,
    /// PERF_SAMPLE_BRANCH_STACK.
    pub branch_stack: Option<BranchStack>,
    /// PERF_SAMPLE_REGS_USER.
    pub regs_user: Option<Regs>,
    /// PERF_SAMPLE_STACK_USER: the dumped bytes (of which `stack_user_dyn_size` are valid).
    pub stack_user: Option<&'a [u8]>,
    /// PERF_SAMPLE_STACK_USER: valid bytes of the dump (absent when the dump is empty).
    pub stack_user_dyn_size: Option<u64>,
    /// PERF_SAMPLE_WEIGHT or PERF_SAMPLE_WEIGHT_STRUCT, the raw u64 (see [`Sample::weight_struct`]).
    pub weight: Option<u64>,
    /// PERF_SAMPLE_DATA_SRC.
    pub data_src: Option<u64>,
    /// PERF_SAMPLE_TRANSACTION.
    pub transaction: Option<u64>,
    /// PERF_SAMPLE_REGS_INTR.
    pub regs_intr: Option<Regs>,
    /// PERF_SAMPLE_PHYS_ADDR.
    pub phys_addr: Option<u64>,
    /// PERF_SAMPLE_CGROUP.
    pub cgroup: Option<u64>,
    /// PERF_SAMPLE_DATA_PAGE_SIZE.
    pub data_page_size: Option<u64>,
    /// PERF_SAMPLE_CODE_PAGE_SIZE.
    pub code_page_size: Option<u64>,
    /// PERF_SAMPLE_AUX payload.
    pub aux: Option<&'a [u8]>,
}

impl Sample<'_> {
    /// The weight split as WEIGHT_STRUCT defines it: (var1_dw, var2_w, var3_w).
    pub fn weight_struct(&self) -> Option<(u32, u16, u16)> {
        self.weight
            .map(|w| (w as u32, (w >> 32) as u16, (w >> 48) as u16))
    }
}

/// Counter values of PERF_SAMPLE_READ (one value, or a whole group).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadValues {
    /// Whether PERF_FORMAT_GROUP was set.
    pub group: bool,
    /// PERF_FORMAT_TOTAL_TIME_ENABLED.
    pub time_enabled: Option<u64>,
    /// PERF_FORMAT_TOTAL_TIME_RUNNING.
    pub time_running: Option<u64>,
    /// One value (not a group) or one per group member.
    pub values: Vec<ReadValue>,
}

/// One counter value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// Count.
    pub value: u64,
    /// PERF_FORMAT_ID.
    pub id: Option<u64>,
    /// PERF_FORMAT_LOST.
    pub lost: Option<u64>,
}

/// A register dump (REGS_USER or REGS_INTR).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Regs {
    /// `PERF_SAMPLE_REGS_ABI_*`: 0 none (no values follow), 1 32-bit, 2 64-bit.
    pub abi: u64,
    /// The attr's register mask: bit i set means register i is in `values`.
    pub mask: u64,
    /// Register values in ascending bit order of `mask`.
    pub values: Vec<u64>,
}

impl Regs {
    /// Value of register number `reg` (an arch `PERF_REG_*` index), if dumped.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1u64 << reg) == 0 {
            return None;
        }
        let index = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        self.values.get(index).copied()
    }
}

/// The `sample_id` trailer of non-sample records (present when the attr has sample_id_all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Index of the event in [`crate::PerfFile::attrs`], `None` when its id is unknown.
    pub attr_index: Option<usize>,
    /// Process id.
    pub pid: Option<i32>,
    /// Thread id.
    pub tid: Option<i32>,
    /// Time stamp.
    pub time: Option<u64>,
    /// Event id.
    pub id: Option<u64>,
    /// Stream id.
    pub stream_id: Option<u64>,
    /// Cpu.
    pub cpu: Option<u32>,
    /// Identifier.
    pub identifier: Option<u64>,
}

/// A field that ran past the end of the record: position in the record body and name.
pub(crate) type FieldError = (Short, &'static str);

fn field<T>(r: Result<T, Short>, name: &'static str) -> Result<T, FieldError> {
    r.map_err(|s| (s, name))
}

fn opt_u64(
    c: &mut Cursor<'_>,
    st: u64,
    bit: u64,
    name: &'static str,
) -> Result<Option<u64>, FieldError> {
    if st & bit == 0 {
        return Ok(None);
    }
    field(c.u64(), name).map(Some)
}

/// Decodes a sample body (the record after its 8-byte header).
pub(crate) fn decode_sample<'a>(
    body: &'a [u8],
    attr: &EventAttr,
    attr_index: usize,
    misc: u16,
) -> Result<Sample<'a>, FieldError> {
    let mut s = Sample::default();
    decode_sample_into(body, attr, attr_index, misc, &mut s)?;
    Ok(s)
}

/// Decodes a sample body into `s`, setting every field, so that one `Sample` can be
/// reused for a whole file without being moved around (it is over 500 bytes). After an
/// error `s` is partly overwritten.
pub(crate) fn decode_sample_into<'a>(
    body: &'a [u8],
    attr: &EventAttr,
    attr_index: usize,
    misc: u16,
    s: &mut Sample<'a>,
) -> Result<(), FieldError> {
    let st = attr.sample_type;
    let c = &mut Cursor::new(body);
    s.attr_index = attr_index;
    s.misc = misc;
    s.identifier = opt_u64(c, st, PERF_SAMPLE_IDENTIFIER, "identifier")?;
    s.ip = opt_u64(c, st, PERF_SAMPLE_IP, "ip")?;
    (s.pid, s.tid) = (None, None);
    if st & PERF_SAMPLE_TID != 0 {
        s.pid = Some(field(c.i32(), "pid")?);
        s.tid = Some(field(c.i32(), "tid")?);
    }
    s.time = opt_u64(c, st, PERF_SAMPLE_TIME, "time")?;
    s.addr = opt_u64(c, st, PERF_SAMPLE_ADDR, "addr")?;
    s.id = opt_u64(c, st, PERF_SAMPLE_ID, "id")?;
    s.stream_id = opt_u64(c, st, PERF_SAMPLE_STREAM_ID, "stream_id")?;
    s.cpu = None;
    if st & PERF_SAMPLE_CPU != 0 {
        s.cpu = Some(field(c.u32(), "cpu")?);
        field(c.u32(), "cpu.reserved")?;
    }
    s.period = opt_u64(c, st, PERF_SAMPLE_PERIOD, "period")?;
    s.read = None;
    if st & PERF_SAMPLE_READ != 0 {
        s.read = Some(read_values(c, attr.read_format)?);
    }
    s.callchain = None;
    if st & PERF_SAMPLE_CALLCHAIN != 0 {
        let nr = field(c.u64(), "callchain.nr")?;
        s.callchain = Some(field(c.u64_slice(nr), "callchain.ips")?);
    }
    s.raw = None;
    if st & PERF_SAMPLE_RAW != 0 {
        // u32 size then the data; the kernel pads so that size + 4 keeps 8-byte alignment.
        let size = field(c.u32(), "raw.size")?;
        s.raw = Some(field(c.bytes(size as usize), "raw.data")?);
    }
    s.branch_stack = None;
    if st & PERF_SAMPLE_BRANCH_STACK != 0 {
        s.branch_stack = Some(branch::decode(c, attr.branch_sample_type)?);
    }
    s.regs_user = None;
    if st & PERF_SAMPLE_REGS_USER != 0 {
        s.regs_user = Some(regs(c, attr.sample_regs_user, "regs_user")?);
    }
    (s.stack_user, s.stack_user_dyn_size) = (None, None);
    if st & PERF_SAMPLE_STACK_USER != 0 {
        let size = field(c.u64(), "stack_user.size")?;
        s.stack_user = Some(field(c.bytes_u64(size), "stack_user.data")?);
        if size != 0 {
            s.stack_user_dyn_size = Some(field(c.u64(), "stack_user.dyn_size")?);
        }
    }
    s.weight = opt_u64(
        c,
        st,
        PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT,
        "weight",
    )?;
    s.data_src = opt_u64(c, st, PERF_SAMPLE_DATA_SRC, "data_src")?;
    s.transaction = opt_u64(c, st, PERF_SAMPLE_TRANSACTION, "transaction")?;
    s.regs_intr = None;
    if st & PERF_SAMPLE_REGS_INTR != 0 {
        s.regs_intr = Some(regs(c, attr.sample_regs_intr, "regs_intr")?);
    }
    s.phys_addr = opt_u64(c, st, PERF_SAMPLE_PHYS_ADDR, "phys_addr")?;
    s.cgroup = opt_u64(c, st, PERF_SAMPLE_CGROUP, "cgroup")?;
    s.data_page_size = opt_u64(c, st, PERF_SAMPLE_DATA_PAGE_SIZE, "data_page_size")?;
    s.code_page_size = opt_u64(c, st, PERF_SAMPLE_CODE_PAGE_SIZE, "code_page_size")?;
    s.aux = None;
    if st & PERF_SAMPLE_AUX != 0 {
        let size = field(c.u64(), "aux.size")?;
        s.aux = Some(field(c.bytes_u64(size), "aux.data")?);
    }
    Ok(())
}

fn read_values(c: &mut Cursor<'_>, rf: u64) -> Result<ReadValues, FieldError> {
    let mut r = ReadValues {
        group: rf & PERF_FORMAT_GROUP != 0,
        ..ReadValues::default()
    };
    let one = |c: &mut Cursor<'_>, value: u64| -> Result<ReadValue, FieldError> {
        Ok(ReadValue {
            value,
            id: opt_u64(c, rf, PERF_FORMAT_ID, "read.id")?,
            lost: opt_u64(c, rf, PERF_FORMAT_LOST, "read.lost")?,
        })
    };
    if r.group {
        let nr = field(c.u64(), "read.nr")?;
        r.time_enabled = opt_u64(c, rf, PERF_FORMAT_TOTAL_TIME_ENABLED, "read.time_enabled")?;
        r.time_running = opt_u64(c, rf, PERF_FORMAT_TOTAL_TIME_RUNNING, "read.time_running")?;
        // Bound nr by the bytes left before allocating.
        let per =
            8 * (1 + u64::from(rf & PERF_FORMAT_ID != 0) + u64::from(rf & PERF_FORMAT_LOST != 0));
        if nr.checked_mul(per).is_none_or(|n| n > c.remaining() as u64) {
            return Err((Short { at: c.pos() }, "read.values"));
        }
        for _ in 0..nr {
            let v = field(c.u64(), "read.value")?;
            r.values.push(one(c, v)?);
        }
    } else {
        let v = field(c.u64(), "read.value")?;
        r.time_enabled = opt_u64(c, rf, PERF_FORMAT_TOTAL_TIME_ENABLED, "read.time_enabled")?;
        r.time_running = opt_u64(c, rf, PERF_FORMAT_TOTAL_TIME_RUNNING, "read.time_running")?;
        r.values.push(one(c, v)?);
    }
    Ok(r)
}

fn regs(c: &mut Cursor<'_>, mask: u64, name: &'static str) -> Result<Regs, FieldError> {
    let abi = field(c.u64(), name)?;
    // ABI_NONE: the task had no user context (kernel thread); no values follow.
    let values = if abi == 0 {
        Vec::new()
    } else {
        field(c.u64s(u64::from(mask.count_ones())), name)?
    };
    Ok(Regs { abi, mask, values })
}

/// Size in bytes of the sample_id trailer for this sample_type.
pub(crate) fn sample_id_size(st: u64) -> usize {
    [
        PERF_SAMPLE_TID,
        PERF_SAMPLE_TIME,
        PERF_SAMPLE_ID,
        PERF_SAMPLE_STREAM_ID,
        PERF_SAMPLE_CPU,
        PERF_SAMPLE_IDENTIFIER,
    ]
    .iter()
    .filter(|&&b| st & b != 0)
    .count()
        * 8
}

/// Decodes the trailer, which occupies the last `sample_id_size` bytes of `trailer`.
pub(crate) fn decode_sample_id(
    trailer: &[u8],
    st: u64,
    attr_index: Option<usize>,
) -> Result<SampleId, FieldError> {
    let c = &mut Cursor::new(trailer);
    let mut s = SampleId {
        attr_index,
        ..SampleId::default()
    };
    if st & PERF_SAMPLE_TID != 0 {
        s.pid = Some(field(c.i32(), "sample_id.pid")?);
        s.tid = Some(field(c.i32(), "sample_id.tid")?);
    }
    s.time = opt_u64(c, st, PERF_SAMPLE_TIME, "sample_id.time")?;
    s.id = opt_u64(c, st, PERF_SAMPLE_ID, "sample_id.id")?;
    s.stream_id = opt_u64(c, st, PERF_SAMPLE_STREAM_ID, "sample_id.stream_id")?;
    if st & PERF_SAMPLE_CPU != 0 {
        s.cpu = Some(field(c.u32(), "sample_id.cpu")?);
        field(c.u32(), "sample_id.cpu")?;
    }
    s.identifier = opt_u64(c, st, PERF_SAMPLE_IDENTIFIER, "sample_id.identifier")?;
    Ok(s)
}
