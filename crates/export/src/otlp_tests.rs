//! The OTLP request read back through prost as a receiver decodes it: the reserved zero
//! entries, stacks leaf first, one value and one Unix timestamp per sample, and the
//! attributes where the backends look for them.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

use super::*;
use crate::select::tests::profile;

fn encode_decode(sel: &Selection<'_>) -> ExportProfilesServiceRequest {
    let resource = [
        ("host.name".to_string(), AttrValue::Str("h1".into())),
        ("team".to_string(), AttrValue::Str("orders".into())),
    ];
    let attrs = [("kairos.agent.window".to_string(), AttrValue::Int(3))];
    let req = request(
        sel,
        &OtlpOptions {
            resource: &resource,
            profile_attributes: &attrs,
            scope_name: "kairos",
            scope_version: "1.0",
        },
    );
    ExportProfilesServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap()
}

fn resource_attr(rp: &pd::ResourceProfiles, key: &str) -> Option<Value> {
    rp.resource
        .as_ref()?
        .attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .clone()?
        .value
}

#[test]
fn zero_entries_stacks_values_and_times() {
    let p = profile();
    let mut sel = Selection::new(&p, None);
    sel.wall_start_ns = Some(1_700_000_000_000_000_000);
    let req = encode_decode(&sel);
    let d = req.dictionary.unwrap();
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.mapping_table[0], pd::Mapping::default());
    assert_eq!(d.location_table[0], pd::Location::default());
    assert_eq!(d.function_table[0], pd::Function::default());
    assert_eq!(d.stack_table[0], pd::Stack::default());
    assert_eq!(d.attribute_table[0], pd::KeyValueAndUnit::default());
    assert_eq!(req.resource_profiles.len(), 1, "one process");
    let rp = &req.resource_profiles[0];
    assert_eq!(resource_attr(rp, "process.pid"), Some(Value::IntValue(10)));
    assert_eq!(
        resource_attr(rp, "process.executable.name"),
        Some(Value::StringValue("app".into()))
    );
    assert_eq!(
        resource_attr(rp, "team"),
        Some(Value::StringValue("orders".into()))
    );
    let prof = &rp.scope_profiles[0].profiles[0];
    let name = |i: i32| d.string_table[i as usize].as_str();
    let st = prof.sample_type.unwrap();
    assert_eq!(
        (name(st.type_strindex), name(st.unit_strindex)),
        ("cpu", "nanoseconds")
    );
    // main;a;b twice on thread 10: one sample with two values and two times, leaf first.
    let leaf_names = |s: &pd::Sample| -> Vec<&str> {
        d.stack_table[s.stack_index as usize]
            .location_indices
            .iter()
            .map(|&l| {
                let f = d.location_table[l as usize].lines[0].function_index;
                name(d.function_table[f as usize].name_strindex)
            })
            .collect()
    };
    let ab = prof
        .samples
        .iter()
        .find(|s| leaf_names(s) == ["b", "a", "main"])
        .unwrap();
    assert_eq!(ab.values, [1_000_000, 1_000_000]);
    let t0 = 1_700_000_000_000_000_000;
    assert_eq!(ab.timestamps_unix_nano, [t0, t0 + 1_000_000]);
    assert_eq!(prof.time_unix_nano, t0);
    assert!(prof.duration_nano > 3_000_000);
    let total: i64 = prof.samples.iter().flat_map(|s| &s.values).sum();
    assert_eq!(total, 4_000_000);
    // Thread attributes on samples; the profile's own attributes on the profile.
    let attr = |i: i32| {
        let a = &d.attribute_table[i as usize];
        (
            name(a.key_strindex),
            a.value.clone().unwrap().value.unwrap(),
        )
    };
    let threads: Vec<_> = prof
        .samples
        .iter()
        .map(|s| {
            s.attribute_indices
                .iter()
                .map(|&i| attr(i))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(threads
        .iter()
        .any(|a| a.contains(&("thread.name", Value::StringValue("worker".into())))));
    assert_eq!(
        prof.attribute_indices
            .iter()
            .map(|&i| attr(i))
            .collect::<Vec<_>>(),
        [("kairos.agent.window", Value::IntValue(3))]
    );
    // The module's mapping covers its frames and carries its build id.
    let m = &d.mapping_table[1];
    assert_eq!(name(m.filename_strindex), "/bin/app");
    assert!(m.memory_start <= 0x1100 && m.memory_limit > 0x1500);
    assert_eq!(
        attr(m.attribute_indices[0]),
        (BUILD_ID_KEY, Value::StringValue("abcd".into()))
    );
}

#[test]
fn one_resource_per_process_and_nothing_for_no_samples() {
    let mut p = profile();
    p.threads[1].pid = 20;
    p.threads[1].process_name = "other".into();
    let req = encode_decode(&Selection::new(&p, None));
    let pids: Vec<_> = req
        .resource_profiles
        .iter()
        .map(|rp| resource_attr(rp, "process.pid"))
        .collect();
    assert_eq!(pids, [Some(Value::IntValue(10)), Some(Value::IntValue(20))]);
    p.samples.clear();
    let empty = encode_decode(&Selection::new(&p, None));
    assert!(empty.resource_profiles.is_empty());
}

#[test]
fn damaged_indices_give_unknown_frames_not_panics() {
    let mut p = profile();
    p.samples[0].stack = Some(999);
    p.frames[1].module = Some(42);
    let req = encode_decode(&Selection::new(&p, None));
    assert!(!req.resource_profiles.is_empty());
}
