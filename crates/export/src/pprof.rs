//! pprof's profile.proto (github.com/google/pprof, proto/profile.proto), gzipped, as
//! `go tool pprof` reads it. Two values per sample: the number of samples and their
//! weight (CPU nanoseconds for timer events, else the event's count). One location per
//! Kairos frame, one function per (name, source file), one mapping per module. Samples
//! with the same stack and thread are summed: the format has no per-sample time anyway,
//! and summing keeps files small.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::otlp::AttrValue;
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
    write_labelled(sel, &[], out)
}

/// [`write`] with `labels` on every sample, beside the thread's (pprof's sample labels,
/// which Pyroscope and Parca keep and search by, as Go's `pprof.Do` sets them).
pub fn write_labelled(
    sel: &Selection<'_>,
    labels: &[(String, AttrValue)],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&encode(sel, labels))?;
    gz.finish()?;
    Ok(())
}

/// The uncompressed profile message.
pub(crate) fn encode(sel: &Selection<'_>, labels: &[(String, AttrValue)]) -> Vec<u8> {
    let mut e = Encoder::new(sel, labels);
    let mut root = Msg::default();

    let (weight_kind, weight_unit) = if sel.weight_is_time() {
        ("cpu", "nanoseconds")
    } else {
        (sel.weight_event(), "count")
    };
    root.msg(
        PROFILE_SAMPLE_TYPE,
        &value_type(&mut e.strings, "samples", "count"),
    );
    root.msg(
        PROFILE_SAMPLE_TYPE,
        &value_type(&mut e.strings, weight_kind, weight_unit),
    );
    let (sums, order) = sum_per_stack(sel);
    for key in &order {
        let Some(&(count, weight)) = sums.get(key) else {
            continue;
        };
        let m = e.sample(*key, count, weight);
        root.msg(PROFILE_SAMPLE, &m);
    }
    e.mappings(&mut root);
    for m in &e.location_msgs {
        root.msg(PROFILE_LOCATION, m);
    }
    for m in &e.function_msgs {
        root.msg(PROFILE_FUNCTION, m);
    }

    let duration = match (sel.samples.first(), sel.samples.last()) {
        (Some(a), Some(b)) => b.time_ns.saturating_sub(a.time_ns),
        _ => 0,
    };
    let start = sel.samples.first().map_or(0, |s| sel.rel_ns(s));
    let period_type = value_type(&mut e.strings, weight_kind, weight_unit);
    let default_type = e.strings.get(weight_kind);
    for s in &e.strings.list {
        root.bytes(PROFILE_STRING_TABLE, s.as_bytes());
    }
    if let Some(wall) = sel.wall_start_ns {
        root.int(PROFILE_TIME_NANOS, wall.saturating_add(start) as i64);
    }
    root.int(PROFILE_DURATION_NANOS, duration as i64);
    root.msg(PROFILE_PERIOD_TYPE, &period_type);
    root.int(PROFILE_PERIOD, sel.median_weight() as i64);
    root.int(PROFILE_DEFAULT_SAMPLE_TYPE, default_type);
    root.buf
}

/// (stack, thread) of a sample.
type SampleKey = (Option<u32>, u32);

/// (samples, weight) summed per (stack, thread), and the keys in order of first sample.
fn sum_per_stack(sel: &Selection<'_>) -> (HashMap<SampleKey, (u64, u64)>, Vec<SampleKey>) {
    let mut sums: HashMap<SampleKey, (u64, u64)> = HashMap::new();
    let mut order = Vec::new();
    for s in sel.samples {
        let e = sums.entry((s.stack, s.thread)).or_insert_with(|| {
            order.push((s.stack, s.thread));
            (0, 0)
        });
        e.0 += 1;
        e.1 = e.1.saturating_add(s.weight);
    }
    (sums, order)
}

/// The tables the samples refer to, built as they are first used.
struct Encoder<'s, 'a> {
    sel: &'s Selection<'a>,
    /// Put on every sample.
    labels: &'s [(String, AttrValue)],
    strings: Strings,
    /// Location id per Kairos frame.
    locations: HashMap<u32, u64>,
    /// Function id per (name, source file).
    functions: HashMap<(&'a str, &'a str), u64>,
    function_msgs: Vec<Msg>,
    location_msgs: Vec<Msg>,
    /// Address range per module over the frames used, for the mappings.
    mapping_range: HashMap<u32, (u64, u64)>,
}

impl<'s, 'a> Encoder<'s, 'a> {
    fn new(sel: &'s Selection<'a>, labels: &'s [(String, AttrValue)]) -> Self {
        Encoder {
            sel,
            labels,
            strings: Strings::new(),
            locations: HashMap::new(),
            functions: HashMap::new(),
            function_msgs: Vec::new(),
            location_msgs: Vec::new(),
            mapping_range: HashMap::new(),
        }
    }

    /// One Sample message: its locations (leaf first), values and thread labels.
    fn sample(&mut self, (stack, thread): SampleKey, count: u64, weight: u64) -> Msg {
        let sel = self.sel;
        // pprof stacks are leaf first.
        let ids: Vec<u64> = sel
            .root_first(stack)
            .into_iter()
            .rev()
            .map(|f| self.location(f))
            .collect();
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
            label.int(1, self.strings.get(k));
            match s {
                Some(s) => label.int(2, self.strings.get(&s)),
                None => label.int(3, i64::from(n)),
            }
            m.msg(3, &label);
        }
        for (k, v) in self.labels {
            let mut label = Msg::default();
            label.int(1, self.strings.get(k));
            match v {
                AttrValue::Str(s) => label.int(2, self.strings.get(s)),
                AttrValue::Int(n) => label.int(3, *n),
            }
            m.msg(3, &label);
        }
        m
    }

    /// The location id of frame `f`, its Location message written on first use.
    fn location(&mut self, f: u32) -> u64 {
        if let Some(&id) = self.locations.get(&f) {
            return id;
        }
        let p = self.sel.profile;
        let id = self.location_msgs.len() as u64 + 1;
        let frame = p.frames.get(f as usize);
        let name = self.sel.function(f);
        let file = frame.and_then(|fr| fr.file.as_deref()).unwrap_or("");
        let fid = self.function(name, file);
        let mut line = Msg::default();
        line.uint(1, fid);
        line.int(2, frame.and_then(|fr| fr.line).map_or(0, i64::from));
        let mut m = Msg::default();
        m.uint(1, id);
        if let Some(fr) = frame {
            if let Some(module) = fr.module.filter(|&m| (m as usize) < p.modules.len()) {
                m.uint(2, u64::from(module) + 1);
                let r = self
                    .mapping_range
                    .entry(module)
                    .or_insert((fr.address, fr.address));
                *r = (r.0.min(fr.address), r.1.max(fr.address));
            }
            m.uint(3, fr.address);
        }
        m.msg(4, &line);
        self.location_msgs.push(m);
        self.locations.insert(f, id);
        id
    }

    /// The function id of (name, file), its Function message written on first use.
    fn function(&mut self, name: &'a str, file: &'a str) -> u64 {
        if let Some(&fid) = self.functions.get(&(name, file)) {
            return fid;
        }
        let fid = self.function_msgs.len() as u64 + 1;
        let mut m = Msg::default();
        m.uint(1, fid);
        m.int(2, self.strings.get(name));
        m.int(3, self.strings.get(name));
        m.int(4, self.strings.get(file));
        self.function_msgs.push(m);
        self.functions.insert((name, file), fid);
        fid
    }

    /// One Mapping per module used, over the addresses of its frames used.
    fn mappings(&mut self, root: &mut Msg) {
        let p = self.sel.profile;
        let mut modules: Vec<_> = std::mem::take(&mut self.mapping_range)
            .into_iter()
            .collect();
        modules.sort_unstable();
        for (module, (lo, hi)) in modules {
            let Some(md) = p.modules.get(module as usize) else {
                continue;
            };
            let mut m = Msg::default();
            m.uint(1, u64::from(module) + 1);
            m.uint(2, lo);
            m.uint(3, hi.saturating_add(1));
            m.int(5, self.strings.get(&md.path));
            m.int(6, self.strings.get(&md.build_id));
            // Names come from Kairos's own symbolisation: pprof must not try again.
            m.bool(7, true);
            root.msg(PROFILE_MAPPING, &m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::tests::{decode, unpack};
    use crate::select::tests::profile;

    #[test]
    fn round_trip_names_and_totals() {
        let p = profile();
        let buf = encode(&Selection::new(&p, None), &[]);
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

    #[test]
    fn labels_go_on_every_sample() {
        let p = profile();
        let labels = [
            ("request_id".to_string(), AttrValue::Int(7)),
            (
                "request_cause_kind".to_string(),
                AttrValue::Str("blocked".into()),
            ),
        ];
        let fields = decode(&encode(&Selection::new(&p, None), &labels));
        let strings: Vec<String> = fields
            .iter()
            .filter(|f| f.0 == PROFILE_STRING_TABLE)
            .map(|f| String::from_utf8(f.2.clone()).unwrap())
            .collect();
        let samples: Vec<_> = fields.iter().filter(|f| f.0 == PROFILE_SAMPLE).collect();
        assert!(!samples.is_empty());
        for f in samples {
            let got: Vec<(String, String)> = decode(&f.2)
                .iter()
                .filter(|x| x.0 == 3)
                .map(|x| {
                    let l = decode(&x.2);
                    let key = strings[l[0].1 as usize].clone();
                    let value = match l[1].0 {
                        2 => strings[l[1].1 as usize].clone(),
                        _ => l[1].1.to_string(),
                    };
                    (key, value)
                })
                .collect();
            assert!(got.contains(&("request_id".into(), "7".into())), "{got:?}");
            assert!(
                got.contains(&("request_cause_kind".into(), "blocked".into())),
                "{got:?}"
            );
            assert!(got.iter().any(|(k, _)| k == "tid"), "{got:?}");
        }
    }
}
