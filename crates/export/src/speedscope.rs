//! speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
//! frames shared by all profiles, one "sampled" profile per thread whose samples are
//! stacks of frame indices, root first, with one weight each.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use crate::select::Selection;

pub fn write(sel: &Selection<'_>, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(out, &document(sel)).map_err(crate::json_err)
}

pub(crate) fn document(sel: &Selection<'_>) -> Value {
    // One speedscope frame per (function, module): speedscope merges call-tree nodes by
    // frame, so frames of one function at different addresses must share an index.
    let mut frame_index: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    let mut frames: Vec<Value> = Vec::new();
    let mut profiles = Vec::new();
    // Weights are nanoseconds of CPU time for timer events; event counts have no unit
    // speedscope knows, so they are plain numbers ("none").
    let unit = if sel.weight_is_time() {
        "nanoseconds"
    } else {
        "none"
    };
    for (thread, indices) in sel.by_thread() {
        let mut samples = Vec::with_capacity(indices.len());
        let mut weights = Vec::with_capacity(indices.len());
        let mut total: u64 = 0;
        for &i in &indices {
            let Some(s) = sel.samples.get(i) else {
                continue;
            };
            let stack: Vec<usize> = sel
                .root_first(s.stack)
                .into_iter()
                .map(|f| {
                    let key = (sel.function(f), sel.module(f));
                    *frame_index.entry(key).or_insert_with(|| {
                        let mut fr = json!({ "name": key.0 });
                        if let Some(m) = key.1 {
                            fr["file"] = json!(m);
                        }
                        frames.push(fr);
                        frames.len() - 1
                    })
                })
                .collect();
            samples.push(stack);
            weights.push(s.weight);
            total = total.saturating_add(s.weight);
        }
        let (pid, tid) = sel.ids(thread);
        profiles.push(json!({
            "type": "sampled",
            "name": format!("{} ({pid}) / {} ({tid})", sel.process_name(thread), sel.thread_name(thread)),
            "unit": unit,
            "startValue": 0,
            "endValue": total,
            "samples": samples,
            "weights": weights,
        }));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": "Kairos profile",
        "activeProfileIndex": 0,
        "exporter": concat!("kairos ", env!("CARGO_PKG_VERSION")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::tests::profile;

    #[test]
    fn stacks_resolve_to_the_same_names_and_weights() {
        let p = profile();
        let d = document(&Selection::new(&p, None));
        let frames = d["shared"]["frames"].as_array().unwrap();
        let names = |s: &Value| -> Vec<String> {
            s.as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    frames[i.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        let main = &d["profiles"][0];
        assert_eq!(main["unit"], "nanoseconds");
        assert_eq!(names(&main["samples"][0]), ["main", "a", "b"]);
        assert_eq!(main["weights"].as_array().unwrap().len(), 3);
        assert_eq!(main["endValue"], 3_000_000);
        assert_eq!(names(&d["profiles"][1]["samples"][0]), ["main", "c"]);
        // main appears in both threads but is one shared frame.
        assert_eq!(frames.iter().filter(|f| f["name"] == "main").count(), 1);
    }
}
