//! From paired calls and function locations to the [`Profile`] of a trace result: one
//! thread row per traced thread, one module per file, one frame per called function
//! (symbolised at its entry address, so file:line is where the function begins), and
//! one [`Call`] per call.

use std::collections::HashMap;

use kairos_model::{Call, Frame, Mode, Module, Profile, Thread};
use kairos_symbolize::{
    file_offset_to_elf_vaddr, ElfInfo, ModuleKey, Symbolizer, SymbolizerOptions,
};

use crate::maps::{self, Mapping};
use crate::pair::Paired;

/// Where a traced function is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionLoc {
    /// Run-time address of its entry (the ELF address when the load address is unknown).
    pub address: u64,
    /// The ELF file holding it, when known.
    pub module: Option<String>,
    /// Its address as the ELF file's symbols and DWARF speak.
    pub elf_vaddr: u64,
    /// Name the recorder already knows (uprobes probe symbols by name), used when the
    /// file has no symbol for it.
    pub name_hint: Option<String>,
}

/// A thread's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub pid: i32,
    pub tid: i32,
    pub name: String,
    pub process_name: String,
}

/// A thread and its paired calls (function = index into the [`FunctionLoc`] table).
#[derive(Debug, Clone)]
pub struct TracedThread {
    pub info: ThreadInfo,
    pub paired: Paired,
}

/// Locates run-time function addresses through a process's maps copy: module path and
/// ELF address. Addresses in no file mapping keep only their run-time address.
pub fn locate(addresses: &[u64], process_maps: &[Mapping]) -> Vec<FunctionLoc> {
    let mut elf: HashMap<String, Option<ElfInfo>> = HashMap::new();
    addresses
        .iter()
        .map(|&a| {
            let Some(m) = maps::find(process_maps, a).filter(|m| m.path.starts_with('/')) else {
                return FunctionLoc {
                    address: a,
                    module: None,
                    elf_vaddr: a,
                    name_hint: None,
                };
            };
            let info = elf
                .entry(m.path.clone())
                .or_insert_with(|| ElfInfo::open(&m.path).ok());
            let offset = a - m.start + m.offset;
            let vaddr = info
                .as_ref()
                .and_then(|i| file_offset_to_elf_vaddr(i, offset))
                .unwrap_or(offset);
            FunctionLoc {
                address: a,
                module: Some(m.path.clone()),
                elf_vaddr: vaddr,
                name_hint: None,
            }
        })
        .collect()
}

/// Builds the profile; returns it with notes (symbolisation problems).
pub fn build_profile(
    threads: &[TracedThread],
    functions: &[FunctionLoc],
    opts: SymbolizerOptions,
) -> (Profile, Vec<String>) {
    let mut p = Profile::default();
    // Frames only for functions that were called, in first-call order.
    let mut frame_of: HashMap<u32, u32> = HashMap::new();
    let mut used: Vec<u32> = Vec::new();
    for t in threads {
        for c in &t.paired.calls {
            if !frame_of.contains_key(&c.function) && (c.function as usize) < functions.len() {
                frame_of.insert(c.function, used.len() as u32);
                used.push(c.function);
            }
        }
    }
    let mut module_idx: HashMap<String, u32> = HashMap::new();
    let mut by_module: HashMap<String, Vec<usize>> = HashMap::new();
    for (fi, &f) in used.iter().enumerate() {
        let loc = &functions[f as usize];
        let module = loc.module.as_ref().map(|m| {
            *module_idx.entry(m.clone()).or_insert_with(|| {
                p.modules.push(Module {
                    path: m.clone(),
                    build_id: ElfInfo::open(m)
                        .ok()
                        .and_then(|i| i.build_id)
                        .unwrap_or_default(),
                });
                (p.modules.len() - 1) as u32
            })
        });
        if let Some(m) = &loc.module {
            by_module.entry(m.clone()).or_default().push(fi);
        }
        let fallback = loc.name_hint.clone().unwrap_or_else(|| match &loc.module {
            Some(m) => format!("[unknown {}+{:#x}]", short(m), loc.elf_vaddr),
            None => format!("[unknown {:#x}]", loc.address),
        });
        p.frames.push(Frame {
            address: loc.address,
            module,
            module_offset: loc.elf_vaddr,
            function: fallback,
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        });
    }
    let mut sym = Symbolizer::new(opts);
    for (path, frames) in &by_module {
        let addrs: Vec<u64> = frames
            .iter()
            .map(|&fi| p.frames[fi].module_offset)
            .collect();
        let key = ModuleKey::Elf {
            path: path.clone(),
            build_id: None,
        };
        for (&fi, found) in frames.iter().zip(sym.symbolize(&key, &addrs)) {
            // The outermost frame is the function itself; the entry address is never
            // inside an inlined callee.
            if let Some(s) = found.into_iter().next() {
                let f = &mut p.frames[fi];
                f.function = s.function;
                f.file = s.file;
                f.line = s.line;
            }
        }
    }
    for t in threads {
        let ti = p.threads.len() as u32;
        p.threads.push(Thread {
            pid: t.info.pid,
            tid: t.info.tid,
            name: t.info.name.clone(),
            process_name: t.info.process_name.clone(),
        });
        p.calls.extend(t.paired.calls.iter().filter_map(|c| {
            Some(Call {
                thread: ti,
                frame: *frame_of.get(&c.function)?,
                start_ns: c.start_ns,
                end_ns: c.end_ns,
                depth: c.depth,
            })
        }));
    }
    p.calls.sort_by_key(|c| (c.start_ns, c.thread, c.depth));
    (p, sym.notes())
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::RawCall;

    #[test]
    fn builds_threads_frames_and_calls() {
        let funcs = vec![
            FunctionLoc {
                address: 0x10,
                module: None,
                elf_vaddr: 0x10,
                name_hint: Some("f".into()),
            },
            FunctionLoc {
                address: 0x20,
                module: None,
                elf_vaddr: 0x20,
                name_hint: None,
            },
        ];
        let paired = Paired {
            calls: vec![
                RawCall {
                    function: 1,
                    start_ns: 1,
                    end_ns: 9,
                    depth: 0,
                },
                RawCall {
                    function: 0,
                    start_ns: 2,
                    end_ns: 3,
                    depth: 1,
                },
                RawCall {
                    function: 7,
                    start_ns: 4,
                    end_ns: 5,
                    depth: 1,
                }, // no such function: dropped
            ],
            ..Default::default()
        };
        let info = ThreadInfo {
            pid: 1,
            tid: 1,
            name: "a".into(),
            process_name: "a".into(),
        };
        let (p, _) = build_profile(
            &[TracedThread { info, paired }],
            &funcs,
            SymbolizerOptions::default(),
        );
        assert_eq!(p.frames.len(), 2);
        assert_eq!(p.frames[0].function, "[unknown 0x20]");
        assert_eq!(p.frames[1].function, "f");
        assert_eq!(p.calls.len(), 2);
        assert_eq!((p.calls[1].frame, p.calls[1].depth), (1, 1));
    }
}
