//! The Firefox Profiler's processed profile format, built with the
//! `fxprof-processed-profile` crate (the Firefox Profiler team's own library for it, as
//! samply uses), so the format's many tables stay consistent by construction. Firefox
//! Profiler and Perfetto open the JSON.
//!
//! One process per pid, one thread per thread, one sample per sample with its CPU time
//! as the CPU delta (the profiler's CPU graph) and weight 1. Frames name their function
//! and, through a pre-symbolicated library, their module: every frame address gets a
//! one-byte symbol, and the profiler merges frames into functions by (name, library).
//! Inlined frames share their caller's address, so they become plain labels.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, LibraryHandle,
    LibraryInfo, ProcessHandle, Profile as FxProfile, ReferenceTimestamp, SamplingInterval, Symbol,
    SymbolTable, ThreadHandle, Timestamp,
};
use kairos_model::Mode;

use crate::select::Selection;

pub fn write(sel: &Selection<'_>, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(out, &build(sel)).map_err(crate::json_err)
}

/// How each Kairos frame is shown: as an address in a library with a symbol, or a label.
enum Place {
    InLib(LibraryHandle, u32),
    Label,
}

pub(crate) fn build(sel: &Selection<'_>) -> FxProfile {
    let p = sel.profile;
    let reference = ReferenceTimestamp::from_millis_since_unix_epoch(
        sel.wall_start_ns.unwrap_or(0) as f64 / 1e6,
    );
    let all: Vec<usize> = (0..sel.samples.len()).collect();
    let interval = SamplingInterval::from_nanos(sel.typical_gap_ns(&all).max(1));
    let mut fx = FxProfile::new("Kairos", reference, interval);
    fx.set_os_name("Linux");
    // Every frame carries its function name already; nothing is left to symbolicate.
    fx.set_symbolicated(true);
    let user = CategoryPairHandle::from(fx.add_category("User", CategoryColor::Yellow));
    let kernel = CategoryPairHandle::from(fx.add_category("Kernel", CategoryColor::Orange));

    let places = libraries(sel, &mut fx);

    let mut processes: HashMap<i32, ProcessHandle> = HashMap::new();
    let threads = sel.by_thread();
    let mut handles: Vec<(ThreadHandle, &[usize])> = Vec::new();
    for (thread, indices) in &threads {
        let (pid, tid) = sel.ids(*thread);
        let first = indices
            .first()
            .and_then(|&i| sel.samples.get(i))
            .map_or(0, |s| sel.rel_ns(s));
        let start = Timestamp::from_nanos_since_reference(first);
        let process = *processes
            .entry(pid)
            .or_insert_with(|| fx.add_process(&sel.process_name(*thread), pid as u32, start));
        let th = fx.add_thread(process, tid as u32, start, pid == tid);
        fx.set_thread_name(th, &sel.thread_name(*thread));
        handles.push((th, indices));
    }

    for (th, indices) in handles {
        let gap = sel.typical_gap_ns(indices);
        let mut prev: Option<u64> = None;
        for &i in indices {
            let Some(s) = sel.samples.get(i) else {
                continue;
            };
            let t = sel.rel_ns(s);
            let frames = sel.root_first(s.stack).into_iter().map(|f| {
                let frame = p.frames.get(f as usize);
                let category = if frame.is_some_and(|fr| fr.mode == Mode::Kernel) {
                    kernel
                } else {
                    user
                };
                let frame = match places.get(f as usize) {
                    Some(Place::InLib(lib, rva)) => {
                        Frame::RelativeAddressFromInstructionPointer(*lib, *rva)
                    }
                    _ => Frame::Label(fx.intern_string(sel.function(f))),
                };
                FrameInfo {
                    frame,
                    category_pair: category,
                    flags: FrameFlags::empty(),
                }
            });
            let frames: Vec<FrameInfo> = frames.collect();
            let stack = fx.intern_stack_frames(th, frames.into_iter());
            // CPU time since the previous sample: the timer's weight, or for event
            // counts the time since the previous sample, at most one usual gap.
            let cpu = if sel.weight_is_time() {
                s.weight
            } else {
                prev.map_or(gap, |pt| t.saturating_sub(pt).min(gap))
            };
            fx.add_sample(
                th,
                Timestamp::from_nanos_since_reference(t),
                stack,
                CpuDelta::from_nanos(cpu),
                1,
            );
            prev = Some(t);
        }
    }
    fx
}

/// One library per module, with a symbol table holding one symbol per frame address;
/// returns how each frame (by index) is placed.
fn libraries(sel: &Selection<'_>, fx: &mut FxProfile) -> Vec<Place> {
    let p = sel.profile;
    let mut symbols: HashMap<u32, HashMap<u32, &str>> = HashMap::new();
    let mut places = Vec::with_capacity(p.frames.len());
    let mut wanted = Vec::with_capacity(p.frames.len());
    for fr in &p.frames {
        // Only outermost frames own their address; offsets past 4 GiB do not fit the
        // format's 32-bit relative addresses.
        let slot = match (fr.module, u32::try_from(fr.module_offset)) {
            (Some(m), Ok(rva)) if fr.inline_depth == 0 && (m as usize) < p.modules.len() => {
                let syms = symbols.entry(m).or_default();
                match syms.get(&rva) {
                    Some(&name) if name != fr.function => None,
                    _ => {
                        syms.insert(rva, fr.function.as_str());
                        Some((m, rva))
                    }
                }
            }
            _ => None,
        };
        wanted.push(slot);
    }
    let mut libs: HashMap<u32, LibraryHandle> = HashMap::new();
    let mut modules: Vec<_> = symbols.into_iter().collect();
    modules.sort_unstable_by_key(|(m, _)| *m);
    for (m, syms) in modules {
        let Some(md) = p.modules.get(m as usize) else {
            continue;
        };
        let name = md.path.rsplit('/').next().unwrap_or(&md.path).to_string();
        let table = SymbolTable::new(
            syms.into_iter()
                .map(|(address, name)| Symbol {
                    address,
                    size: Some(1),
                    name: name.to_string(),
                })
                .collect(),
        );
        let lib = fx.add_lib(LibraryInfo {
            name: name.clone(),
            debug_name: name,
            path: md.path.clone(),
            debug_path: md.path.clone(),
            debug_id: debugid::DebugId::nil(),
            code_id: (!md.build_id.is_empty()).then(|| md.build_id.clone()),
            arch: None,
            symbol_table: Some(Arc::new(table)),
        });
        libs.insert(m, lib);
    }
    for slot in wanted {
        places.push(
            match slot.and_then(|(m, rva)| Some(Place::InLib(*libs.get(&m)?, rva))) {
                Some(p) => p,
                None => Place::Label,
            },
        );
    }
    places
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::tests::profile;

    #[test]
    fn processed_format_has_threads_samples_and_names() {
        let p = profile();
        let v = serde_json::to_value(build(&Selection::new(&p, None))).unwrap();
        assert!(v["meta"]["version"].as_u64().unwrap() > 0);
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0]["samples"]["length"], 3);
        assert_eq!(threads[1]["name"], "worker");
        // Function names and the library name are in the string table(s).
        let text = v.to_string();
        for name in ["main", "\"a\"", "\"b\"", "we;ird", "app"] {
            assert!(text.contains(name), "{name} missing");
        }
        assert_eq!(v["libs"][0]["name"], "app");
    }
}
