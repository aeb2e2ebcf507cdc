//! The record stream before it is decoded: how far each record reaches, the zstd
//! decompression of `perf record -z` data (PERF_RECORD_COMPRESSED and COMPRESSED2), and
//! the header records of pipe mode (attrs, event names, features) that a file keeps in
//! its header instead.

use crate::attr::{AttrEntry, EventAttr};
use crate::consts::*;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::features::Features;
use crate::reader::{le_u64, u64_at};

pub(crate) const RECORD_HEADER_SIZE: usize = 8;

/// Decompressed data may be at most this many times the compressed bytes (perf's own
/// ratios are 3-20): a bound that keeps a hostile file from filling memory.
const MAX_RATIO: usize = 1024;
/// ...and never less than this, so that small files are not refused for their ratio.
const MIN_LIMIT: usize = 64 << 20;

/// Type, misc and size of the record at the start of `rest`.
pub(crate) fn header(rest: &[u8]) -> Option<(u32, u16, usize)> {
    let word = u64_at(rest, 0)?;
    Some((word as u32, (word >> 32) as u16, (word >> 48) as usize))
}

/// Bytes from the start of a record to the start of the next one, `None` when the
/// payload length cannot be read. Two records carry a payload outside `header.size`:
/// AUXTRACE (u64 size first) and TRACING_DATA (u32 size first, padded to 8) as perf
/// writes it; simpleperf counts the tracing data inside the record instead, which a
/// record too short to hold it betrays.
pub(crate) fn extent(record_type: u32, size: usize, body: &[u8]) -> Option<u64> {
    let payload = match record_type {
        PERF_RECORD_AUXTRACE => u64_at(body, 0)?,
        PERF_RECORD_HEADER_TRACING_DATA => {
            let len = u64::from(u64_at(body, 0)? as u32);
            // perf: header (8) + u32 size + u32 pad = 16, payload after. simpleperf: all inside.
            if size as u64 >= RECORD_HEADER_SIZE as u64 + 4 + len {
                0
            } else {
                len.next_multiple_of(8)
            }
        }
        _ => 0,
    };
    payload.checked_add(size as u64)
}

/// The compressed bytes of a COMPRESSED (the whole body) or COMPRESSED2 (u64 length,
/// then the data, padded to 8) record.
fn compressed_payload(record_type: u32, body: &[u8]) -> Option<&[u8]> {
    if record_type == PERF_RECORD_COMPRESSED {
        return Some(body);
    }
    let len = usize::try_from(u64_at(body, 0)?).ok()?;
    body.get(8..8usize.checked_add(len)?)
}

/// The record stream with every compressed record replaced by the records it holds.
pub(crate) struct Expanded {
    pub data: Vec<u8>,
    /// Where expansion stopped early (bad zstd data, a bound exceeded); records before
    /// it are in `data`.
    pub error: Option<DecodeError>,
    /// Compressed records met.
    pub compressed_records: u64,
}

/// Expands `data` when it holds compressed records; `None` when it has none (the
/// stream is then read in place). `base` is the file offset of `data[0]`, for errors.
pub(crate) fn expand(data: &[u8], base: u64) -> Option<Expanded> {
    let first = first_compressed(data)?;
    let limit = data.len().saturating_mul(MAX_RATIO).max(MIN_LIMIT);
    let mut out = Expanded {
        data: Vec::with_capacity(data.len() * 4),
        error: None,
        compressed_records: 0,
    };
    out.data.extend_from_slice(data.get(..first).unwrap_or(&[]));
    let mut decoder = match zstd::stream::raw::Decoder::new() {
        Ok(d) => d,
        Err(_) => {
            out.error = Some(DecodeError {
                offset: base + first as u64,
                kind: DecodeErrorKind::Decompress("cannot create a zstd decoder".into()),
            });
            return Some(out);
        }
    };
    let mut pos = first;
    while let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
        let Some((record_type, _, size)) =
            header(rest).filter(|&(_, _, s)| s >= RECORD_HEADER_SIZE)
        else {
            break;
        };
        let Some(rec) = rest.get(..size) else { break };
        let body = rec.get(RECORD_HEADER_SIZE..).unwrap_or(&[]);
        let Some(advance) = extent(record_type, size, body).filter(|&a| a <= rest.len() as u64)
        else {
            break;
        };
        if matches!(
            record_type,
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2
        ) {
            out.compressed_records += 1;
            let fail = |why: String| {
                Some(DecodeError {
                    offset: base + pos as u64,
                    kind: DecodeErrorKind::Decompress(why),
                })
            };
            match compressed_payload(record_type, body) {
                None => {
                    out.error =
                        fail("the COMPRESSED2 record's data size runs past the record".into())
                }
                Some(src) => {
                    let before = out.data.len();
                    if let Err(why) = decompress(&mut decoder, src, &mut out.data, limit) {
                        // What this record gave before failing is not to be trusted.
                        out.data.truncate(before);
                        out.error = fail(why);
                    }
                }
            }
            if out.error.is_some() {
                return Some(out);
            }
        } else {
            out.data
                .extend_from_slice(rest.get(..advance as usize).unwrap_or(rest));
        }
        pos += advance as usize;
    }
    // Whatever could not be walked is kept verbatim: the record reader reports it.
    out.data.extend_from_slice(data.get(pos..).unwrap_or(&[]));
    Some(out)
}

/// Position of the first compressed record, walking record headers only.
fn first_compressed(data: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    while let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
        let (record_type, _, size) = header(rest).filter(|&(_, _, s)| s >= RECORD_HEADER_SIZE)?;
        if matches!(
            record_type,
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2
        ) {
            return Some(pos);
        }
        let advance = extent(record_type, size, rest.get(RECORD_HEADER_SIZE..size)?)?;
        pos = pos.checked_add(usize::try_from(advance).ok()?)?;
    }
    None
}

/// Feeds one compressed chunk to the decoder, whose state carries over from the previous
/// chunk (perf flushes, but does not end, its zstd stream at every chunk).
fn decompress(
    decoder: &mut zstd::stream::raw::Decoder<'_>,
    src: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), String> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    let mut input = InBuffer::around(src);
    loop {
        if out.len() >= limit {
            return Err(format!("decompressed data exceeds {} MiB ({MAX_RATIO}x the compressed size): the file is damaged", limit >> 20));
        }
        out.reserve((src.len() * 8).clamp(64 << 10, 16 << 20));
        let (start, read_before) = (out.len(), input.pos());
        let mut output = OutBuffer::around_pos(out, start);
        decoder
            .run(&mut input, &mut output)
            .map_err(|e| format!("zstd: {e}"))?;
        let (written, full) = (output.pos() - start, output.pos() == output.capacity());
        let consumed = input.pos() >= src.len();
        if consumed && !full {
            return Ok(());
        }
        if written == 0 && input.pos() == read_before {
            // Neither side moved: more output room will not help either.
            return if consumed {
                Ok(())
            } else {
                Err("zstd made no progress".into())
            };
        }
    }
}

/// What pipe mode carries as records: the attrs (HEADER_ATTR), event names
/// (EVENT_UPDATE), build ids (HEADER_BUILD_ID) and features (HEADER_FEATURE).
pub(crate) fn pipe_header(data: &[u8]) -> (Vec<AttrEntry>, Features, Vec<(u64, String)>) {
    let mut attrs = Vec::new();
    let mut features = Features::default();
    let mut names = Vec::new();
    let mut pos = 0usize;
    while let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
        let Some((record_type, _, size)) =
            header(rest).filter(|&(_, _, s)| s >= RECORD_HEADER_SIZE)
        else {
            break;
        };
        let Some(rec) = rest.get(..size) else { break };
        let body = rec.get(RECORD_HEADER_SIZE..).unwrap_or(&[]);
        match record_type {
            PERF_RECORD_HEADER_ATTR => {
                // The attr by its own size, then the ids up to the end of the record.
                let (attr, used) = EventAttr::parse_sized(body, body.len());
                let ids = body
                    .get(used..)
                    .unwrap_or(&[])
                    .chunks_exact(8)
                    .map(le_u64)
                    .collect();
                attrs.push(AttrEntry {
                    attr,
                    ids,
                    name: None,
                });
            }
            PERF_RECORD_EVENT_UPDATE => {
                // u64 type (3 = name), u64 id, then the data.
                const EVENT_UPDATE_NAME: u64 = 3;
                if let (Some(EVENT_UPDATE_NAME), Some(id)) = (u64_at(body, 0), u64_at(body, 8)) {
                    names.push((id, crate::reader::c_string(body.get(16..).unwrap_or(&[]))));
                }
            }
            PERF_RECORD_HEADER_FEATURE => {
                if let Some(bit) = u64_at(body, 0).and_then(|b| u32::try_from(b).ok()) {
                    features.add_section(bit, body.get(8..).unwrap_or(&[]));
                }
            }
            PERF_RECORD_HEADER_BUILD_ID => features.add_build_id_record(rec),
            _ => {}
        }
        let Some(advance) = extent(record_type, size, body) else {
            break;
        };
        let Some(next) = usize::try_from(advance)
            .ok()
            .and_then(|a| pos.checked_add(a))
        else {
            break;
        };
        pos = next;
    }
    (attrs, features, names)
}
