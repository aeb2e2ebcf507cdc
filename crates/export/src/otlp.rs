//! OpenTelemetry's profiles signal: a selection as one OTLP
//! `ExportProfilesServiceRequest` (`opentelemetry.proto.collector.profiles.v1development`),
//! what an OpenTelemetry Collector's OTLP receiver accepts and hands on to Pyroscope,
//! Elastic and the others. One dictionary per request holds every table (strings,
//! mappings, locations, functions, stacks, attributes; entry 0 of each is the zero value
//! the format reserves); one `ResourceProfiles` per process, whose resource carries the
//! caller's attributes (host, service, labels) and the process's own (`process.pid`,
//! `process.executable.name`); one profile per process, each sample a (stack, thread) with
//! one value and one timestamp per Kairos sample, so the time series survives. Frames are
//! named here, as the backends may not have the binaries.

use std::collections::{BTreeMap, HashMap};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development as pd;
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::select::Selection;

/// An attribute's value, as OTLP's `AnyValue` holds the two kinds Kairos sets.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
}

impl AttrValue {
    fn any(&self) -> AnyValue {
        AnyValue {
            value: Some(match self {
                AttrValue::Str(s) => any_value::Value::StringValue(s.clone()),
                AttrValue::Int(i) => any_value::Value::IntValue(*i),
            }),
        }
    }
}

/// Attribute key of a mapping's GNU build id (OpenTelemetry's semantic conventions).
pub const BUILD_ID_KEY: &str = "process.executable.build_id.gnu";

/// What a request says besides the samples.
pub struct OtlpOptions<'o> {
    /// On every process's resource (host.name, service.name, user labels...).
    pub resource: &'o [(String, AttrValue)],
    /// On every profile (the agent's own cost, its dropped windows...).
    pub profile_attributes: &'o [(String, AttrValue)],
    /// The instrumentation scope: the name and version of what made the profiles.
    pub scope_name: &'o str,
    pub scope_version: &'o str,
}

/// The request for `sel`: one resource per process, in order of pid, each with one
/// profile of its samples.
pub fn request(sel: &Selection<'_>, opts: &OtlpOptions<'_>) -> ExportProfilesServiceRequest {
    let mut b = RequestBuilder::new(sel, opts);
    for (pid, indices) in by_process(sel) {
        b.add(pid, None, &indices, &[]);
    }
    b.finish()
}

/// A request made profile by profile, every profile sharing the one dictionary:
/// [`request`] adds one per process; a caller with its own cut of the samples (one
/// profile per slow request) adds its own.
pub struct RequestBuilder<'s, 'a, 'o> {
    d: Dictionary<'s, 'a>,
    opts: &'o OtlpOptions<'o>,
    sample_type: pd::ValueType,
    period: i64,
    /// The request-wide profile attributes, in the dictionary.
    common: Vec<i32>,
    /// One resource per process, by pid.
    resources: BTreeMap<i32, pd::ResourceProfiles>,
}

impl<'s, 'a, 'o> RequestBuilder<'s, 'a, 'o> {
    pub fn new(sel: &'s Selection<'a>, opts: &'o OtlpOptions<'o>) -> Self {
        let mut d = Dictionary::new(sel);
        let (kind, unit) = if sel.weight_is_time() {
            ("cpu", "nanoseconds")
        } else {
            (sel.weight_event(), "count")
        };
        let sample_type = pd::ValueType {
            type_strindex: d.string(kind),
            unit_strindex: d.string(unit),
        };
        let common = opts
            .profile_attributes
            .iter()
            .map(|(k, v)| d.attribute(k, v))
            .collect();
        RequestBuilder {
            d,
            opts,
            sample_type,
            period: sel.median_weight() as i64,
            common,
            resources: BTreeMap::new(),
        }
    }

    /// Adds a profile of process `pid` made of the selection's samples at `indices`
    /// (none is allowed: the profile then says what it says by its attributes), with
    /// `attributes` besides the request-wide ones. `process_name` names the process
    /// when no sample does.
    pub fn add(
        &mut self,
        pid: i32,
        process_name: Option<&str>,
        indices: &[usize],
        attributes: &[(String, AttrValue)],
    ) {
        let sel = self.d.sel;
        let mut keys: BTreeMap<(Option<u32>, u32), Vec<usize>> = BTreeMap::new();
        for &i in indices {
            if let Some(s) = sel.samples.get(i) {
                keys.entry((s.stack, s.thread)).or_default().push(i);
            }
        }
        let name = keys
            .keys()
            .next()
            .map(|&(_, thread)| sel.process_name(thread))
            .or_else(|| process_name.map(str::to_string));
        let (mut first, mut last) = (u64::MAX, 0);
        let d = &mut self.d;
        let samples = keys
            .iter()
            .map(|(&(stack, thread), indices)| {
                let (values, timestamps) = indices
                    .iter()
                    .filter_map(|&i| sel.samples.get(i))
                    .map(|s| (s.weight as i64, d.wall_ns(s.time_ns)))
                    .unzip::<_, _, Vec<i64>, Vec<u64>>();
                for &t in &timestamps {
                    first = first.min(t);
                    last = last.max(t);
                }
                pd::Sample {
                    stack_index: d.stack(stack),
                    attribute_indices: d.thread_attributes(thread),
                    link_index: 0,
                    values,
                    timestamps_unix_nano: timestamps,
                }
            })
            .collect::<Vec<_>>();
        let first = if first == u64::MAX { 0 } else { first };
        let mut attribute_indices = self.common.clone();
        attribute_indices.extend(attributes.iter().map(|(k, v)| d.attribute(k, v)));
        let n = self.resources.get(&pid).map_or(0, |r| {
            r.scope_profiles
                .iter()
                .map(|s| s.profiles.len())
                .sum::<usize>()
        });
        let profile = pd::Profile {
            sample_type: Some(self.sample_type),
            samples,
            time_unix_nano: first,
            // The timestamps fall in [time, time + duration).
            duration_nano: last.saturating_sub(first).saturating_add(1),
            period_type: Some(self.sample_type),
            period: self.period,
            profile_id: profile_id(pid, first, n as u32),
            attribute_indices,
            ..Default::default()
        };
        let opts = self.opts;
        let resource = self.resources.entry(pid).or_insert_with(|| {
            let mut attributes: Vec<KeyValue> =
                opts.resource.iter().map(|(k, v)| key_value(k, v)).collect();
            attributes.push(key_value("process.pid", &AttrValue::Int(i64::from(pid))));
            if let Some(name) = &name {
                attributes.push(key_value(
                    "process.executable.name",
                    &AttrValue::Str(name.clone()),
                ));
            }
            pd::ResourceProfiles {
                resource: Some(Resource {
                    attributes,
                    ..Default::default()
                }),
                scope_profiles: vec![pd::ScopeProfiles {
                    scope: Some(InstrumentationScope {
                        name: opts.scope_name.to_string(),
                        version: opts.scope_version.to_string(),
                        ..Default::default()
                    }),
                    profiles: Vec::new(),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }
        });
        if let Some(scope) = resource.scope_profiles.first_mut() {
            scope.profiles.push(profile);
        }
    }

    pub fn finish(self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest {
            resource_profiles: self.resources.into_values().collect(),
            dictionary: Some(self.d.finish()),
        }
    }
}

/// Sample indices per process, in a stable order.
fn by_process(sel: &Selection<'_>) -> BTreeMap<i32, Vec<usize>> {
    let mut out: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, s) in sel.samples.iter().enumerate() {
        out.entry(sel.ids(s.thread).0).or_default().push(i);
    }
    out
}

/// 16 bytes, as the format asks: the pid, the profile's number in its resource and the
/// first timestamp, unique per window.
fn profile_id(pid: i32, first_ns: u64, n: u32) -> Vec<u8> {
    let mut id = Vec::with_capacity(16);
    id.extend_from_slice(&(pid as u32).to_be_bytes());
    id.extend_from_slice(&n.to_be_bytes());
    id.extend_from_slice(&first_ns.to_be_bytes());
    id
}

fn key_value(k: &str, v: &AttrValue) -> KeyValue {
    KeyValue {
        key: k.to_string(),
        value: Some(v.any()),
        ..Default::default()
    }
}

/// The request's shared tables, each entry added on first use.
struct Dictionary<'s, 'a> {
    sel: &'s Selection<'a>,
    /// Wall-clock minus monotonic time, to make sample times Unix times.
    wall_offset: i128,
    table: pd::ProfilesDictionary,
    strings: HashMap<String, i32>,
    attributes: HashMap<(String, String), i32>,
    functions: HashMap<(String, String), i32>,
    locations: HashMap<u32, i32>,
    mappings: HashMap<u32, i32>,
    stacks: HashMap<Option<u32>, i32>,
    threads: HashMap<u32, Vec<i32>>,
}

impl<'s, 'a> Dictionary<'s, 'a> {
    fn new(sel: &'s Selection<'a>) -> Self {
        let wall_offset = sel
            .wall_start_ns
            .map_or(0, |w| i128::from(w) - i128::from(sel.origin_ns));
        Dictionary {
            sel,
            wall_offset,
            // Entry 0 of every table is its zero value, which index 0 means.
            table: pd::ProfilesDictionary {
                mapping_table: vec![pd::Mapping::default()],
                location_table: vec![pd::Location::default()],
                function_table: vec![pd::Function::default()],
                link_table: vec![pd::Link::default()],
                string_table: vec![String::new()],
                attribute_table: vec![pd::KeyValueAndUnit::default()],
                stack_table: vec![pd::Stack::default()],
            },
            strings: HashMap::from([(String::new(), 0)]),
            attributes: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
            mappings: HashMap::new(),
            stacks: HashMap::new(),
            threads: HashMap::new(),
        }
    }

    fn finish(self) -> pd::ProfilesDictionary {
        self.table
    }

    fn wall_ns(&self, monotonic_ns: u64) -> u64 {
        (i128::from(monotonic_ns) + self.wall_offset).clamp(0, i128::from(u64::MAX)) as u64
    }

    fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.table.string_table.len() as i32;
        self.table.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn attribute(&mut self, key: &str, value: &AttrValue) -> i32 {
        let id = (key.to_string(), format!("{value:?}"));
        if let Some(&i) = self.attributes.get(&id) {
            return i;
        }
        let i = self.table.attribute_table.len() as i32;
        let key_strindex = self.string(key);
        self.table.attribute_table.push(pd::KeyValueAndUnit {
            key_strindex,
            value: Some(value.any()),
            unit_strindex: 0,
        });
        self.attributes.insert(id, i);
        i
    }

    /// `thread.id` and `thread.name` of a thread.
    fn thread_attributes(&mut self, thread: u32) -> Vec<i32> {
        if let Some(v) = self.threads.get(&thread) {
            return v.clone();
        }
        let (_, tid) = self.sel.ids(thread);
        let v = vec![
            self.attribute("thread.id", &AttrValue::Int(i64::from(tid))),
            self.attribute("thread.name", &AttrValue::Str(self.sel.thread_name(thread))),
        ];
        self.threads.insert(thread, v.clone());
        v
    }

    /// A stack's entry, leaf first as the format has it; no stack is the empty entry 0.
    fn stack(&mut self, stack: Option<u32>) -> i32 {
        if let Some(&i) = self.stacks.get(&stack) {
            return i;
        }
        let frames = self.sel.root_first(stack);
        let location_indices = frames.into_iter().rev().map(|f| self.location(f)).collect();
        let i = self.table.stack_table.len() as i32;
        self.table.stack_table.push(pd::Stack { location_indices });
        self.stacks.insert(stack, i);
        i
    }

    fn location(&mut self, f: u32) -> i32 {
        if let Some(&i) = self.locations.get(&f) {
            return i;
        }
        let p = self.sel.profile;
        let frame = p.frames.get(f as usize);
        let name = self.sel.function(f);
        let file = frame.and_then(|fr| fr.file.as_deref()).unwrap_or("");
        let function_index = self.function(name, file);
        let mapping_index = frame
            .and_then(|fr| fr.module)
            .map_or(0, |m| self.mapping(m));
        if let (Some(fr), true) = (frame, mapping_index > 0) {
            self.widen_mapping(mapping_index, fr.address);
        }
        let location = pd::Location {
            mapping_index,
            address: frame.map_or(0, |fr| fr.address),
            lines: vec![pd::Line {
                function_index,
                line: frame.and_then(|fr| fr.line).map_or(0, i64::from),
                column: 0,
            }],
            attribute_indices: Vec::new(),
        };
        let i = self.table.location_table.len() as i32;
        self.table.location_table.push(location);
        self.locations.insert(f, i);
        i
    }

    fn function(&mut self, name: &str, file: &str) -> i32 {
        let id = (name.to_string(), file.to_string());
        if let Some(&i) = self.functions.get(&id) {
            return i;
        }
        let name_strindex = self.string(name);
        let filename_strindex = self.string(file);
        let i = self.table.function_table.len() as i32;
        self.table.function_table.push(pd::Function {
            name_strindex,
            system_name_strindex: name_strindex,
            filename_strindex,
            start_line: 0,
        });
        self.functions.insert(id, i);
        i
    }

    /// A module's mapping; 0 (none) for a module index that points nowhere.
    fn mapping(&mut self, module: u32) -> i32 {
        if let Some(&i) = self.mappings.get(&module) {
            return i;
        }
        let Some(md) = self.sel.profile.modules.get(module as usize) else {
            return 0;
        };
        let (path, build_id) = (md.path.clone(), md.build_id.clone());
        let filename_strindex = self.string(&path);
        let attribute_indices = if build_id.is_empty() {
            Vec::new()
        } else {
            vec![self.attribute(BUILD_ID_KEY, &AttrValue::Str(build_id))]
        };
        let i = self.table.mapping_table.len() as i32;
        self.table.mapping_table.push(pd::Mapping {
            memory_start: u64::MAX,
            memory_limit: 0,
            file_offset: 0,
            filename_strindex,
            attribute_indices,
        });
        self.mappings.insert(module, i);
        i
    }

    /// A mapping covers the addresses of its frames used.
    fn widen_mapping(&mut self, mapping: i32, address: u64) {
        if let Some(m) = self.table.mapping_table.get_mut(mapping as usize) {
            m.memory_start = m.memory_start.min(address);
            m.memory_limit = m.memory_limit.max(address.saturating_add(1));
        }
    }
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
