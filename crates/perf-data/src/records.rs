//! The iterator over the data section: splits records by their headers, attributes each
//! to its event the way perf does (evlist__event2id), and stops after the first error.

use crate::attr::AttrEntry;
use crate::consts::*;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::reader::{u64_at, Short};
use crate::record::{decode_other, Record};
use crate::sample::{
    decode_sample, decode_sample_id, decode_sample_into, sample_id_size, FieldError, Sample,
    SampleId,
};
use crate::stream::{self, RECORD_HEADER_SIZE};

/// Record types from this value up are synthesised by perf and carry no sample_id trailer.
const PERF_RECORD_USER_TYPE_START: u32 = 64;

/// How to find a record's event. Computed once per file from the first attr, as perf does
/// (all attrs of a file share the position of the id, or use IDENTIFIER).
#[derive(Debug, Clone, Default)]
pub(crate) struct Attribution {
    /// (id, attr index) sorted by id, first attr of an id only: looked up once per
    /// record, so a binary search over a few entries rather than a hash.
    id_to_attr: Vec<(u64, usize)>,
    single: bool,
    /// u64 index of the id in a sample body.
    sample_id_pos: Option<usize>,
    /// u64 index of the id counted from the end of a non-sample body (1 = last).
    trailer_id_pos: Option<usize>,
}

impl Attribution {
    pub(crate) fn new(attrs: &[AttrEntry]) -> Self {
        let mut id_to_attr: Vec<(u64, usize)> = attrs
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.ids.iter().map(move |&id| (id, i)))
            .collect();
        // Stable: the first attr naming an id stays first, and dedup keeps it.
        id_to_attr.sort_by_key(|&(id, _)| id);
        id_to_attr.dedup_by_key(|&mut (id, _)| id);
        let first = attrs.first().map(|a| &a.attr);
        let st = first.map_or(0, |a| a.sample_type);
        let sample_id_all = first.is_some_and(|a| a.sample_id_all());
        let count = |bits: &[u64]| bits.iter().filter(|&&b| st & b != 0).count();
        let (sample_id_pos, trailer_id_pos) = if st & PERF_SAMPLE_IDENTIFIER != 0 {
            (Some(0), Some(1))
        } else if st & PERF_SAMPLE_ID != 0 {
            (
                Some(count(&[
                    PERF_SAMPLE_IP,
                    PERF_SAMPLE_TID,
                    PERF_SAMPLE_TIME,
                    PERF_SAMPLE_ADDR,
                ])),
                Some(1 + count(&[PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU])),
            )
        } else {
            (None, None)
        };
        Attribution {
            id_to_attr,
            single: attrs.len() == 1,
            sample_id_pos,
            trailer_id_pos: trailer_id_pos.filter(|_| sample_id_all),
        }
    }

    fn attr_of_id(&self, id: u64) -> Option<usize> {
        let i = self
            .id_to_attr
            .binary_search_by_key(&id, |&(id, _)| id)
            .ok()?;
        Some(self.id_to_attr[i].1)
    }

    /// The attr of a sample, `None` when its id is unknown.
    fn of_sample(&self, body: &[u8]) -> Option<usize> {
        match (self.single, self.sample_id_pos) {
            (true, _) | (false, None) => Some(0),
            (false, Some(k)) => self.attr_of_id(u64_at(body, k * 8)?),
        }
    }

    /// The attr whose trailer layout applies to a non-sample record, and whether it is known.
    fn of_other(&self, body: &[u8]) -> Option<usize> {
        match (self.single, self.trailer_id_pos) {
            (true, _) | (false, None) => Some(0),
            (false, Some(k)) => {
                let at = body.len().checked_sub(k * 8)?;
                self.attr_of_id(u64_at(body, at)?)
            }
        }
    }
}

/// Iterator over the records of a file; see [`crate::PerfFile::records`].
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    /// File offset of `data[0]`.
    base: u64,
    pos: usize,
    /// Bytes the header says the data section has, when more than the file holds.
    claimed: Option<u64>,
    attrs: &'a [AttrEntry],
    attribution: &'a Attribution,
    done: bool,
    /// Yielded after the last record: where an earlier stage (decompression) stopped.
    final_error: Option<DecodeError>,
    /// Time stamp of the record read last (a sample's, or a trailer's), if it had one.
    last_time: Option<u64>,
}

impl<'a> Records<'a> {
    pub(crate) fn new(
        data: &'a [u8],
        base: u64,
        claimed: Option<u64>,
        attrs: &'a [AttrEntry],
        attribution: &'a Attribution,
    ) -> Self {
        Records {
            data,
            base,
            pos: 0,
            claimed,
            attrs,
            attribution,
            done: false,
            final_error: None,
            last_time: None,
        }
    }

    pub(crate) fn with_final_error(mut self, e: Option<DecodeError>) -> Self {
        self.final_error = e;
        self
    }

    /// File offset of the next record to be read.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes of the record stream read so far: counts against [`crate::PerfFile::data_size`].
    pub fn consumed(&self) -> u64 {
        self.pos as u64
    }

    /// Time stamp of the record read last: a sample's TIME, or the sample_id trailer's of
    /// another kernel record; None without one (no TIME, no sample_id_all, user records).
    pub fn last_time(&self) -> Option<u64> {
        self.last_time
    }

    /// Where the next record starts, for [`Records::at`].
    pub fn record_position(&self) -> usize {
        self.pos
    }

    /// The same records, about to read the one at `position` (a value of
    /// [`Records::record_position`]): to read again, out of order, records already read.
    pub fn at(&self, position: usize) -> Records<'a> {
        Records {
            pos: position,
            done: false,
            final_error: None,
            last_time: None,
            ..self.clone()
        }
    }

    /// As `next()`, but a sample is decoded into `slot` (and `Next::Sample` returned)
    /// rather than moved out in a [`Record`]: the fast way through a large file.
    pub fn next_into(&mut self, slot: &mut Sample<'a>) -> Option<Result<Next<'a>, DecodeError>> {
        if self.done {
            return None;
        }
        self.next_record(Some(slot))
    }

    /// Steps over the next record reading only its type and time stamp (a sample's TIME,
    /// another kernel record's trailer time): a cheap look ahead of the records that
    /// [`Records::next_into`] will decode. Stops, as it does, at a record that does not
    /// fit; fields are not checked.
    pub fn peek_next(&mut self) -> Option<Peek> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let rest = self.data.get(start..)?;
        let word = u64_at(rest, 0).filter(|_| rest.len() >= RECORD_HEADER_SIZE)?;
        let (record_type, size) = (word as u32, (word >> 48) as usize);
        let rec = rest.get(..size).filter(|_| size >= RECORD_HEADER_SIZE)?;
        let body = rec.get(RECORD_HEADER_SIZE..).unwrap_or(&[]);
        let advance =
            stream::extent(record_type, size, body).filter(|&e| e <= rest.len() as u64)?;
        self.pos = start + advance as usize;
        let time = if record_type == PERF_RECORD_SAMPLE {
            self.attribution
                .of_sample(body)
                .and_then(|i| self.attrs.get(i))
                .and_then(|a| sample_time(body, a.attr.sample_type))
        } else if record_type < PERF_RECORD_USER_TYPE_START {
            let known = self.attribution.of_other(body).unwrap_or(0);
            self.attrs
                .get(known)
                .filter(|a| a.attr.sample_id_all())
                .and_then(|a| trailer_time(body, a.attr.sample_type))
        } else {
            None
        };
        Some(Peek {
            record_type,
            time,
            position: start,
        })
    }

    fn fail<T>(&mut self, at: usize, kind: DecodeErrorKind) -> Option<Result<T, DecodeError>> {
        self.done = true;
        Some(Err(DecodeError {
            offset: self.base + at as u64,
            kind,
        }))
    }

    fn next_record(
        &mut self,
        slot: Option<&mut Sample<'a>>,
    ) -> Option<Result<Next<'a>, DecodeError>> {
        let start = self.pos;
        let rest = self.data.get(start..).unwrap_or(&[]);
        if rest.is_empty() {
            self.done = true;
            // The header promised more data than the file has: say so rather than end quietly.
            return match (self.claimed, self.final_error.take()) {
                (Some(claimed), _) => self.fail(
                    start,
                    DecodeErrorKind::RecordTruncated {
                        record_type: 0,
                        needed: claimed - self.data.len() as u64,
                        available: 0,
                    },
                ),
                (None, Some(e)) => Some(Err(e)),
                (None, None) => None,
            };
        }
        let (Some(word), true) = (u64_at(rest, 0), rest.len() >= RECORD_HEADER_SIZE) else {
            return self.fail(
                start,
                DecodeErrorKind::HeaderTruncated {
                    available: rest.len() as u64,
                },
            );
        };
        let record_type = word as u32;
        let misc = (word >> 32) as u16;
        let size = (word >> 48) as usize;
        if size < RECORD_HEADER_SIZE {
            return self.fail(
                start,
                DecodeErrorKind::BadSize {
                    record_type,
                    size: size as u64,
                },
            );
        }
        let Some(rec) = rest.get(..size) else {
            return self.fail(
                start,
                DecodeErrorKind::RecordTruncated {
                    record_type,
                    needed: size as u64,
                    available: rest.len() as u64,
                },
            );
        };
        let body = rec.get(RECORD_HEADER_SIZE..).unwrap_or(&[]);
        if matches!(
            record_type,
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2
        ) {
            // The file expands these when it opens; one left here could not be reached then.
            return self.fail(
                start,
                DecodeErrorKind::Unsupported("a compressed record that could not be expanded"),
            );
        }
        let payload = stream::extent(record_type, size, body).map(|e| e - size as u64);
        let Some(advance) = payload
            .and_then(|p| p.checked_add(size as u64))
            .filter(|&a| a <= rest.len() as u64)
        else {
            let needed = payload.map_or(u64::MAX, |p| p.saturating_add(size as u64));
            return self.fail(
                start,
                DecodeErrorKind::RecordTruncated {
                    record_type,
                    needed,
                    available: rest.len() as u64,
                },
            );
        };
        let body_at = start + RECORD_HEADER_SIZE;
        let decoded = self.decode(record_type, misc, rec, body, slot);
        match decoded {
            Ok((r, time)) => {
                self.pos = start + advance as usize;
                self.last_time = time;
                Some(Ok(r))
            }
            Err((Short { at }, field)) => self.fail(
                body_at + at,
                DecodeErrorKind::FieldTruncated { record_type, field },
            ),
        }
    }

    /// Decodes one record; errors carry the position in `body`.
    fn decode(
        &self,
        record_type: u32,
        misc: u16,
        rec: &'a [u8],
        body: &'a [u8],
        slot: Option<&mut Sample<'a>>,
    ) -> Result<(Next<'a>, Option<u64>), FieldError> {
        let other = || {
            Next::Record(Box::new(Record::Other {
                record_type,
                misc,
                bytes: rec,
            }))
        };
        if record_type == PERF_RECORD_SAMPLE {
            let Some((i, a)) = self
                .attribution
                .of_sample(body)
                .and_then(|i| Some((i, self.attrs.get(i)?)))
            else {
                return Ok((other(), None));
            };
            return match slot {
                Some(slot) => decode_sample_into(body, &a.attr, i, misc, slot)
                    .map(|()| (Next::Sample, slot.time)),
                None => decode_sample(body, &a.attr, i, misc).map(|s| {
                    let time = s.time;
                    (Next::Record(Box::new(Record::Sample(s))), time)
                }),
            };
        }
        let (main, sample_id) = if record_type < PERF_RECORD_USER_TYPE_START {
            self.split_trailer(body)?
        } else {
            (body, None)
        };
        let time = sample_id.as_ref().and_then(|s| s.time);
        match decode_other(record_type, misc, main, sample_id) {
            Some(Ok(r)) => Ok((Next::Record(Box::new(r)), time)),
            Some(Err(e)) => Err(e),
            None => Ok((other(), time)),
        }
    }

    /// Cuts the sample_id trailer off a kernel record body and decodes it.
    fn split_trailer(&self, body: &'a [u8]) -> Result<(&'a [u8], Option<SampleId>), FieldError> {
        let known = self.attribution.of_other(body);
        // An unknown id still tells us the trailer layout: perf requires it to be the same for all events.
        let Some(attr) = self.attrs.get(known.unwrap_or(0)).map(|a| &a.attr) else {
            return Ok((body, None));
        };
        if !attr.sample_id_all() {
            return Ok((body, None));
        }
        let n = sample_id_size(attr.sample_type);
        let Some(cut) = body.len().checked_sub(n) else {
            return Err((Short { at: 0 }, "sample_id"));
        };
        let (main, trailer) = body.split_at(cut);
        let sid = decode_sample_id(trailer, attr.sample_type, known)
            .map_err(|(s, f)| (Short { at: cut + s.at }, f))?;
        Ok((main, Some(sid)))
    }
}

/// A record as [`Records::peek_next`] saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek {
    pub record_type: u32,
    pub time: Option<u64>,
    /// For [`Records::at`].
    pub position: usize,
}

/// A sample's TIME: after IDENTIFIER, IP and TID, each one u64.
fn sample_time(body: &[u8], st: u64) -> Option<u64> {
    if st & PERF_SAMPLE_TIME == 0 {
        return None;
    }
    let before = [PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID]
        .iter()
        .filter(|&&b| st & b != 0)
        .count();
    u64_at(body, before * 8)
}

/// The sample_id trailer's TIME: what follows it (ID, STREAM_ID, CPU, IDENTIFIER) is the
/// trailer without its TID and TIME.
fn trailer_time(body: &[u8], st: u64) -> Option<u64> {
    if st & PERF_SAMPLE_TIME == 0 {
        return None;
    }
    let after = sample_id_size(st & !(PERF_SAMPLE_TID | PERF_SAMPLE_TIME));
    u64_at(body, body.len().checked_sub(after + 8)?)
}

/// What [`Records::next_into`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next<'a> {
    /// A sample, now in the slot given.
    Sample,
    /// Any other record (including samples of no known event, as `Record::Other`). Boxed:
    /// these are few, and a small `Next` is not copied around record after record.
    Record(Box<Record<'a>>),
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Without a slot, samples come back inside the record.
        self.next_record(None).map(|r| {
            r.map(|n| match n {
                Next::Record(r) => *r,
                Next::Sample => Record::Other {
                    record_type: PERF_RECORD_SAMPLE,
                    misc: 0,
                    bytes: &[],
                },
            })
        })
    }
}

impl std::iter::FusedIterator for Records<'_> {}
