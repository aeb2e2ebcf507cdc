//! `tables/watch_hits.parquet`: one row per watchpoint hit (`-k watchpoints=on`), exact
//! where the time samples are statistical; and the hits as [`AccessSample`]s of weight 1.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, StringArray, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_collector::watch::{Access, Hit};
use kairos_table::{TableError, WriteOptions};

use crate::{AccessSample, Direction, Source};

pub const WATCH_HITS: &str = "watch_hits";

fn schema() -> Schema {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Schema::new(vec![
        f("time_ns", DataType::UInt64),
        f("pid", DataType::Int32),
        f("tid", DataType::Int32),
        f("ip", DataType::UInt64),
        f("address", DataType::UInt64),
        f("len", DataType::UInt8),
        f("access", DataType::Utf8),
    ])
}

pub fn access_name(a: Access) -> &'static str {
    match a {
        Access::Write => "write",
        Access::Read => "read",
        Access::ReadOrWrite => "read or write",
    }
}

/// Writes the hits; returns (name, file relative to the result, rows, bytes).
pub fn write(tables_dir: &Path, hits: &[Hit]) -> Result<(String, String, u64, u64), TableError> {
    let path = tables_dir.join(format!("{WATCH_HITS}.parquet"));
    let opts = WriteOptions {
        dictionary: &["pid", "tid", "access"],
        delta: &["time_ns"],
        created_by: format!("kairos {}", env!("CARGO_PKG_VERSION")),
        ..WriteOptions::default()
    };
    let n = kairos_table::write(&path, schema(), hits.len(), &opts, |r| {
        let h = &hits[r];
        Ok(vec![
            Arc::new(UInt64Array::from_iter_values(h.iter().map(|x| x.time_ns))) as ArrayRef,
            Arc::new(Int32Array::from_iter_values(h.iter().map(|x| x.pid))),
            Arc::new(Int32Array::from_iter_values(h.iter().map(|x| x.tid))),
            Arc::new(UInt64Array::from_iter_values(h.iter().map(|x| x.ip))),
            Arc::new(UInt64Array::from_iter_values(h.iter().map(|x| x.addr))),
            Arc::new(UInt8Array::from_iter_values(h.iter().map(|x| x.len))),
            Arc::new(StringArray::from_iter_values(
                h.iter().map(|x| access_name(x.access)),
            )),
        ])
    })?;
    Ok((
        WATCH_HITS.to_string(),
        format!("tables/{WATCH_HITS}.parquet"),
        hits.len() as u64,
        n,
    ))
}

/// Reads the hits back (no table: none).
pub fn read(tables_dir: &Path) -> Result<Vec<Hit>, TableError> {
    let path = tables_dir.join(format!("{WATCH_HITS}.parquet"));
    let mut out = Vec::new();
    if !path.exists() {
        return Ok(out);
    }
    kairos_table::read(&path, 1 << 16, |b| {
        let u64c = |n| b.col::<UInt64Array>(n, true);
        let i32c = |n| b.col::<Int32Array>(n, true);
        let (time, ip, addr) = (u64c("time_ns")?, u64c("ip")?, u64c("address")?);
        let (pid, tid) = (i32c("pid")?, i32c("tid")?);
        let len = b.col::<UInt8Array>("len", true)?;
        let access = b.col::<StringArray>("access", true)?;
        for i in 0..b.rows {
            let a = [Access::Write, Access::Read, Access::ReadOrWrite]
                .into_iter()
                .find(|&a| access_name(a) == access.value(i));
            let access = a.ok_or_else(|| {
                b.damaged(format!("unknown access '{}' in row {i}", access.value(i)))
            })?;
            out.push(Hit {
                time_ns: time.value(i),
                pid: pid.value(i),
                tid: tid.value(i),
                cpu: 0,
                ip: ip.value(i),
                addr: addr.value(i),
                len: len.value(i),
                access,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// A hit as an access sample of weight 1. A hit that may have been a read counts as one:
/// only hits known to write make a writer.
pub fn sample(h: &Hit, function: u32) -> AccessSample {
    AccessSample {
        time_ns: h.time_ns,
        pid: h.pid.max(0) as u32,
        tid: h.tid.max(0) as u32,
        ip: h.ip,
        function,
        addr: h.addr,
        size: u32::from(h.len),
        direction: if h.access == Access::Write {
            Direction::Store
        } else {
            Direction::Load
        },
        weight: 1,
        source: Source::Watchpoint,
        sp: None,
        level: None,
        hitm: false,
        cpu: h.cpu,
        phys_addr: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::{lines, Verdict};
    use crate::objects::Location;

    fn hit(tid: i32, addr: u64, access: Access) -> Hit {
        Hit {
            time_ns: 5,
            pid: 1,
            tid,
            cpu: 0,
            ip: 0x1003,
            addr,
            len: 8,
            access,
        }
    }

    #[test]
    fn hits_stay_apart_from_samples_and_confirm_the_line() {
        let timed = AccessSample {
            weight: 250_000,
            source: Source::Registers,
            direction: Direction::Store,
            ..sample(&hit(1, 0x1000, Access::Write), 0)
        };
        let hits = [
            hit(1, 0x1000, Access::Write),
            hit(2, 0x1008, Access::Write),
            hit(2, 0x1008, Access::ReadOrWrite),
        ];
        let mut all = vec![timed];
        all.extend(hits.iter().map(|h| sample(h, 0)));
        let at = Location {
            object: 0,
            offset: 0,
        };
        let l = &lines(all.iter().map(|s| (s, at)))[0];
        // One time sample: its weight and thread only; the hits are counted apart.
        assert_eq!((l.samples, l.weight, l.threads.len()), (1, 250_000, 1));
        assert_eq!((l.watch_hits, l.watch.len()), (3, 2));
        assert_eq!(l.confirmed, Some(Verdict::FalseSharing));
        // A hit that may be a read makes no writer: one writer is not false sharing.
        let one = [
            sample(&hits[0], 0),
            sample(&hit(2, 0x1008, Access::ReadOrWrite), 0),
        ];
        assert_eq!(
            lines(one.iter().map(|s| (s, at)))[0].confirmed,
            Some(Verdict::None)
        );
        let same = [
            sample(&hits[0], 0),
            sample(&hit(2, 0x1000, Access::Write), 0),
        ];
        assert_eq!(
            lines(same.iter().map(|s| (s, at)))[0].confirmed,
            Some(Verdict::TrueSharing)
        );
    }
}
