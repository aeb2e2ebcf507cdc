//! pprof's profile.proto (github.com/google/pprof, proto/profile.proto), gzipped, as
//! `go tool pprof` reads it. Two values per sample: the number of samples and their
//! weight (CPU nanoseconds for timer events, else the event's count). One location per
//! Kairos frame, one function per (name, source file), one mapping per module. Samples
//! with the same stack and thread are summed: the format has no per-sample time anyway,
//! and summing keeps files small.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::proto::Msg;
use crate::select::Selection;

// Field numbers of profile.proto.
const PROFILE_SAMPLE_TYPE: u32 = 1;
const PROFILE_SAMPLE: u32 = 2;
const PROFILE_MAPPING: u32 = 3;
const PROFILE_LOCATION: u32 = 4;
const PROFILE_FUNCTION: u32 = 5;
const PROFILE_STRING_TABLE: u32 = 6;
const PROFILE_TIME_NANOS: u32 = 9;
const PROFILE_DURATION_NANOS: u32 = 10;
const PROFILE_PERIOD_TYPE: u32 = 11;
const PROFILE_PERIOD: u32 = 12;
const PROFILE_DEFAULT_SAMPLE_TYPE: u32 = 14;

/// The string table: index 0 must be the empty string.
struct Strings {
    list: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            list: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.list.push(s.to_string());
        let i = (self.list.len() - 1) as i64;
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, kind: &str, unit: &str) -> Msg {
    let mut m = Msg::default();
    m.int(1, strings.get(kind));
    m.int(2, strings.get(unit));
    m
}

pub fn write(sel: &Selection<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&encode(sel))?;
    gz.finish()?;
    Ok(())
}

/// The uncompressed profile message.
pub(crate) fn encode(sel: &Selection<'_>) -> Vec<u8> {
    let p = sel.profile;
    let mut strings = Strings::new();
    let mut root = Msg::default();

    let (weight_kind, weight_unit) = if sel.weight_is_time() {
        ("cpu", "nanoseconds")
    } else {
        (sel.weight_event(), "count")
    };
    root.msg(
        PROFILE_SAMPLE_TYPE,
        &value_type(&mut strings, "samples", "count"),
    );
    root.msg(
        PROFILE_SAMPLE_TYPE,
        &value_type(&mut strings, weight_kind, weight_unit),
    );

    // Sum samples per (stack, thread).
    let mut sums: HashMap<(Option<u32>, u32), (u64, u64)> = HashMap::new();
    let mut order = Vec::new();
    for s in sel.samples {
        let e = sums.entry((s.stack, s.thread)).or_insert_with(|| {
            order.push((s.stack, s.thread));
            (0, 0)
        });
        e.0 += 1;
        e.1 = e.1.saturating_add(s.weight);
    }

    let mut locations: HashMap<u32, u64> = HashMap::new();
    let mut functions: HashMap<(&str, &str), u64> = HashMap::new();
    let mut function_msgs = Vec::new();
    let mut location_msgs = Vec::new();
    // Address range per module over the frames used, for the mappings.
    let mut mapping_range: HashMap<u32, (u64, u64)> = HashMap::new();
    for key in &order {
        let Some(&(count, weight)) = sums.get(key) else {
            continue;
        };
        let (stack, thread) = *key;
        let mut ids = Vec::new();
        // pprof stacks are leaf first.
        for f in sel.root_first(stack).into_iter().rev() {
            let id = *locations.entry(f).or_insert_with(|| {
                let id = location_msgs.len() as u64 + 1;
                let frame = p.frames.get(f as usize);
                let name = sel.function(f);
                let file = frame.and_then(|fr| fr.file.as_deref()).unwrap_or("");
                let fid = *functions.entry((name, file)).or_insert_with(|| {
                    let fid = function_msgs.len() as u64 + 1;
                    let mut m = Msg::default();
                    m.uint(1, fid);
                    m.int(2, strings.get(name));
                    m.int(3, strings.get(name));
                    m.int(4, strings.get(file));
                    function_msgs.push(m);
                    fid
                });
                let mut line = Msg::default();
                line.uint(1, fid);
                line.int(2, frame.and_then(|fr| fr.line).map_or(0, i64::from));
                let mut m = Msg::default();
                m.uint(1, id);
                if let Some(fr) = frame {
                    if let Some(module) = fr.module.filter(|&m| (m as usize) < p.modules.len()) {
                        m.uint(2, u64::from(module) + 1);
                        let r = mapping_range
                            .entry(module)
                            .or_insert((fr.address, fr.address));
                        *r = (r.0.min(fr.address), r.1.max(fr.address));
                    }
                    m.uint(3, fr.address);
                }
                m.msg(4, &line);
                location_msgs.push(m);
                id
            });
            ids.push(id);
        }
        let mut m = Msg::default();
        m.packed(1, ids);
        m.packed(2, [count, weight]);
        let (pid, tid) = sel.ids(thread);
        for (k, s, n) in [
            ("thread", Some(sel.thread_name(thread)), 0),
            ("tid", None, tid),
            ("pid", None, pid),
        ] {
            let mut label = Msg::default();
            label.int(1, strings.get(k));
            match s {
                Some(s) => label.int(2, strings.get(&s)),
                None => label.int(3, i64::from(n)),
            }
            m.msg(3, &label);
        }
        root.msg(PROFILE_SAMPLE, &m);
    }

    let mut modules: Vec<_> = mapping_range.into_iter().collect();
    modules.sort_unstable();
    for (module, (lo, hi)) in modules {
        let Some(md) = p.modules.get(module as usize) else {
            continue;
        };
        let mut m = Msg::default();
        m.uint(1, u64::from(module) + 1);
        m.uint(2, lo);
        m.uint(3, hi.saturating_add(1));
        m.int(5, strings.get(&md.path));
        m.int(6, strings.get(&md.build_id));
        // Names come from Kairos's own symbolisation: pprof must not try again.
        m.bool(7, true);
        root.msg(PROFILE_MAPPING, &m);
    }
    for m in &location_msgs {
        root.msg(PROFILE_LOCATION, m);
    }
    for m in &function_msgs {
        root.msg(PROFILE_FUNCTION, m);
    }

    let duration = match (sel.samples.first(), sel.samples.last()) {
        (Some(a), Some(b)) => b.time_ns.saturating_sub(a.time_ns),
        _ => 0,
    };
    let start = sel.samples.first().map_or(0, |s| sel.rel_ns(s));
    let period_type = value_type(&mut strings, weight_kind, weight_unit);
    let default_type = strings.get(weight_kind);
    for s in &strings.list {
        root.bytes(PROFILE_STRING_TABLE, s.as_bytes());
    }
    if let Some(wall) = sel.wall_start_ns {
        root.int(PROFILE_TIME_NANOS, wall.saturating_add(start) as i64);
    }
    root.int(PROFILE_DURATION_NANOS, duration as i64);
    root.msg(PROFILE_PERIOD_TYPE, &period_type);
    root.int(PROFILE_PERIOD, median_weight(sel) as i64);
    root.int(PROFILE_DEFAULT_SAMPLE_TYPE, default_type);
    root.buf
}

fn median_weight(sel: &Selection<'_>) -> u64 {
    let mut w: Vec<u64> = sel.samples.iter().map(|s| s.weight).collect();
    w.sort_unstable();
    w.get(w.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::tests::{decode, unpack};
    use crate::select::tests::profile;

    #[test]
    fn round_trip_names_and_totals() {
        let p = profile();
        let buf = encode(&Selection::new(&p, None));
        let fields = decode(&buf);
        let strings: Vec<String> = fields
            .iter()
            .filter(|f| f.0 == PROFILE_STRING_TABLE)
            .map(|f| String::from_utf8(f.2.clone()).unwrap())
            .collect();
        assert_eq!(strings[0], "");
        // function id -> name
        let funcs: HashMap<u64, String> = fields
            .iter()
            .filter(|f| f.0 == PROFILE_FUNCTION)
            .map(|f| {
                let d = decode(&f.2);
                (d[0].1, strings[d[1].1 as usize].clone())
            })
            .collect();
        // location id -> function name
        let locs: HashMap<u64, String> = fields
            .iter()
            .filter(|f| f.0 == PROFILE_LOCATION)
            .map(|f| {
                let d = decode(&f.2);
                let line = decode(&d.iter().find(|x| x.0 == 4).unwrap().2);
                (d[0].1, funcs[&line[0].1].clone())
            })
            .collect();
        let mut total = (0, 0);
        let mut leaves = Vec::new();
        for f in fields.iter().filter(|f| f.0 == PROFILE_SAMPLE) {
            let d = decode(&f.2);
            let ids = unpack(&d[0].2);
            let v = unpack(&d[1].2);
            total = (total.0 + v[0], total.1 + v[1]);
            leaves.push((
                locs[&ids[0]].clone(),
                locs[ids.last().unwrap()].clone(),
                v[0],
            ));
        }
        assert_eq!(total, (4, 4_000_000));
        assert!(leaves.contains(&("b".into(), "main".into(), 2)));
        assert_eq!(fields.iter().filter(|f| f.0 == PROFILE_MAPPING).count(), 1);
    }
}
