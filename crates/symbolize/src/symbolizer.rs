//! The [`Symbolizer`]: per-module choice of a symbol source, cached, and the lookups.
//!
//! ELF and DWARF reading is blazesym's; this module decides *which file* to read (the
//! binary, or a verified separate debug file), because Kairos wants perf's symfs, an
//! explicit search order and a note when nothing is found, and handles kallsyms and perf
//! maps with the small parsers of this crate.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized};

use crate::elf_info::{ElfInfo, LoadSegment};
use crate::kallsyms::Kallsyms;
use crate::perf_map::{self, PerfMap};
use crate::symtab_names::SymtabNames;
use crate::{debug_file, ModuleKey, SymFrame, SymbolizeError};

/// Where to look for symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolizerOptions {
    /// Root prefix for binaries, like `perf --symfs`: `/usr/bin/x` is read at
    /// `<symfs>/usr/bin/x`. Debug dirs are not prefixed (give them under symfs if wanted).
    pub symfs: Option<PathBuf>,
    /// Roots of separate debug files (default `/usr/lib/debug`).
    pub debug_dirs: Vec<PathBuf>,
    /// Directories holding `perf-PID.map` files (default `/tmp`).
    pub perf_map_dirs: Vec<PathBuf>,
    /// A kallsyms file (e.g. the copy in a result directory); `None` reads `/proc/kallsyms`.
    pub kallsyms: Option<PathBuf>,
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        Self {
            symfs: None,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            perf_map_dirs: vec![PathBuf::from("/tmp")],
            kallsyms: None,
        }
    }
}

/// What a module resolved to, cached after the first lookup.
enum Module {
    /// Read `path` with blazesym; `dwarf` false means symbol tables only. Only addresses
    /// inside `segments` are looked up: blazesym stretches sizeless symbols such as `_end`
    /// over any address past them, which would name addresses outside the image.
    Elf {
        path: PathBuf,
        dwarf: bool,
        segments: Vec<LoadSegment>,
    },
    Kernel(Kallsyms),
    PerfMap(PerfMap),
    Nothing,
}

/// Turns addresses into frames, caching one symbol source per module.
///
/// Not `Send`: blazesym's symbolizer uses reference counting internally. Use one per
/// thread if symbolising in parallel.
pub struct Symbolizer {
    opts: SymbolizerOptions,
    blaze: blazesym::symbolize::Symbolizer,
    /// Lookups in symbol tables only (modules without DWARF).
    symtab: SymtabNames,
    modules: HashMap<ModuleKey, Module>,
    notes: Vec<String>,
}

impl Symbolizer {
    pub fn new(opts: SymbolizerOptions) -> Self {
        let blaze = blazesym::symbolize::Symbolizer::builder()
            .enable_code_info(true)
            .enable_inlined_fns(true)
            .enable_demangling(true)
            // We hand blazesym the already chosen debug file; an empty list keeps it from
            // searching the system's debug dirs on its own.
            .set_debug_dirs(Some(Vec::<PathBuf>::new()))
            .build();
        Self {
            opts,
            blaze,
            symtab: SymtabNames::new(),
            modules: HashMap::new(),
            notes: Vec::new(),
        }
    }

    /// Notes about modules whose symbols are missing or partial, one per problem.
    pub fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Frames for each address: outermost function first, innermost inlined callee last;
    /// an empty Vec where nothing is known. Address meaning depends on `module`.
    pub fn symbolize(&mut self, module: &ModuleKey, addrs: &[u64]) -> Vec<Vec<SymFrame>> {
        if !self.modules.contains_key(module) {
            let loaded = self.load(module);
            self.modules.insert(module.clone(), loaded);
        }
        let frame = |name: &str| {
            vec![SymFrame {
                function: name.to_string(),
                file: None,
                line: None,
            }]
        };
        match self.modules.get(module) {
            Some(Module::Kernel(k)) => addrs
                .iter()
                .map(|&a| k.lookup(a).map(frame).unwrap_or_default())
                .collect(),
            Some(Module::PerfMap(m)) => addrs
                .iter()
                .map(|&a| m.lookup(a).map(frame).unwrap_or_default())
                .collect(),
            Some(Module::Elf {
                path,
                dwarf,
                segments,
            }) => {
                let (path, dwarf) = (path.clone(), *dwarf);
                let inside = |a: u64| {
                    segments.is_empty()
                        || segments
                            .iter()
                            .any(|s| a >= s.vaddr && a - s.vaddr < s.memsz)
                };
                let (idx, wanted): (Vec<usize>, Vec<u64>) = addrs
                    .iter()
                    .enumerate()
                    .filter(|(_, &a)| inside(a))
                    .map(|(i, &a)| (i, a))
                    .unzip();
                let mut out = vec![Vec::new(); addrs.len()];
                if wanted.is_empty() {
                    return out;
                }
                for (i, frames) in idx
                    .into_iter()
                    .zip(self.symbolize_elf(module, &path, dwarf, &wanted))
                {
                    out[i] = frames;
                }
                out
            }
            Some(Module::Nothing) | None => vec![Vec::new(); addrs.len()],
        }
    }

    fn symbolize_elf(
        &mut self,
        module: &ModuleKey,
        path: &Path,
        dwarf: bool,
        addrs: &[u64],
    ) -> Vec<Vec<SymFrame>> {
        match self.blaze_lookup(path, dwarf, addrs) {
            Ok(frames) => frames,
            Err(e) if dwarf => {
                // Unreadable DWARF should not cost us the function names of the symtab.
                self.notes.push(format!(
                    "debug info of {} unusable ({e}); using its symbol table",
                    path.display()
                ));
                if let Some(Module::Elf { dwarf, .. }) = self.modules.get_mut(module) {
                    *dwarf = false;
                }
                self.symbolize_elf(module, path, false, addrs)
            }
            Err(e) => {
                self.notes
                    .push(format!("no symbols for {}: {e}", path.display()));
                self.modules.insert(module.clone(), Module::Nothing);
                vec![Vec::new(); addrs.len()]
            }
        }
    }

    fn blaze_lookup(
        &mut self,
        path: &Path,
        dwarf: bool,
        addrs: &[u64],
    ) -> Result<Vec<Vec<SymFrame>>, String> {
        let src = Source::Elf(Elf {
            debug_syms: dwarf,
            ..Elf::new(path)
        });
        // blazesym parses untrusted files; a panic in it must not take the import down.
        let result = catch_unwind(AssertUnwindSafe(|| {
            if !dwarf {
                return self.symtab.lookup(path, addrs);
            }
            self.blaze
                .symbolize(&src, Input::VirtOffset(addrs))
                .map(|syms| syms.iter().map(to_frames).collect::<Vec<_>>())
        }));
        match result {
            Ok(Ok(frames)) if frames.len() == addrs.len() => Ok(frames),
            Ok(Ok(_)) => Err("symbolizer returned a wrong number of results".into()),
            // The whole chain: the outer context alone ("failed to read ELF section with
            // index 65") hides the cause, such as an unsupported compression.
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(_) => Err("the ELF/DWARF reader crashed on this file".into()),
        }
    }

    fn load(&mut self, module: &ModuleKey) -> Module {
        match module {
            ModuleKey::Elf { path, build_id } => self.load_elf(path, build_id.as_deref()),
            ModuleKey::Kernel => self.load_kernel(),
            ModuleKey::PerfMap { pid } => self.load_perf_map(*pid),
            ModuleKey::Anonymous => Module::Nothing,
        }
    }

    fn load_elf(&mut self, name: &str, want_id: Option<&str>) -> Module {
        let binary = match &self.opts.symfs {
            Some(root) => root.join(name.trim_start_matches('/')),
            None => PathBuf::from(name),
        };
        let want_id = want_id.map(str::to_ascii_lowercase);
        let mut why = Vec::new();
        let info = match ElfInfo::open(&binary) {
            Ok(info) => match (&want_id, &info.build_id) {
                (Some(want), Some(have)) if want != have => {
                    why.push(format!(
                        "{} has build id {have}, recording wants {want}",
                        binary.display()
                    ));
                    None
                }
                _ => Some(info),
            },
            Err(SymbolizeError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                why.push("file not found".to_string());
                None
            }
            Err(SymbolizeError::Io { source, .. }) => {
                why.push(format!("cannot read {}: {source}", binary.display()));
                None
            }
            Err(SymbolizeError::BadElf { reason, .. }) => {
                why.push(format!("not a valid ELF file ({reason})"));
                None
            }
        };
        if let Some(info) = info.as_ref().filter(|i| i.has_debug_info) {
            return Module::Elf {
                path: binary,
                dwarf: true,
                segments: info.load_segments.clone(),
            };
        }
        let build_id = want_id.or_else(|| info.as_ref().and_then(|i| i.build_id.clone()));
        let link = info.as_ref().and_then(|i| i.debuglink.as_ref());
        let (found, rejected) =
            debug_file::find(&binary, build_id.as_deref(), link, &self.opts.debug_dirs);
        why.extend(rejected);
        match (found, info) {
            (Some(found), _) if found.info.has_debug_info || found.info.has_symbols() => {
                // objcopy --only-keep-debug keeps the program headers, so its segments
                // are the binary's.
                Module::Elf {
                    path: found.path,
                    dwarf: found.info.has_debug_info,
                    segments: found.info.load_segments,
                }
            }
            (_, Some(info)) if info.has_symbols() => {
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                };
                self.notes.push(format!("no debug info for {name}: function names from its symbol table, no lines or inlines{why}"));
                Module::Elf {
                    path: binary,
                    dwarf: false,
                    segments: info.load_segments,
                }
            }
            _ => {
                if why.is_empty() {
                    why.push("stripped and no debug file found".to_string());
                }
                self.notes
                    .push(format!("no symbols for {name}: {}", why.join("; ")));
                Module::Nothing
            }
        }
    }

    fn load_kernel(&mut self) -> Module {
        let path = self
            .opts
            .kallsyms
            .clone()
            .unwrap_or_else(|| PathBuf::from("/proc/kallsyms"));
        let text = match std::fs::read(&path) {
            // Valid UTF-8 (always, in practice) is taken as is, without a copy.
            Ok(bytes) => String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(e) => {
                self.notes.push(format!(
                    "no kernel symbols: cannot read {}: {e}",
                    path.display()
                ));
                return Module::Nothing;
            }
        };
        let k = Kallsyms::from_text(&text);
        if k.addresses_hidden() {
            self.notes.push(format!(
                "no kernel symbols: all addresses in {} are 0 (kernel.kptr_restrict hid them; collect as root or set kernel.kptr_restrict=0)",
                path.display()
            ));
            return Module::Nothing;
        }
        if k.is_empty() {
            self.notes.push(format!(
                "no kernel symbols: no text symbols in {}",
                path.display()
            ));
            return Module::Nothing;
        }
        Module::Kernel(k)
    }

    fn load_perf_map(&mut self, pid: i32) -> Module {
        let file = format!("perf-{pid}.map");
        for dir in &self.opts.perf_map_dirs {
            let path = dir.join(&file);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let (entries, bad) = perf_map::parse(&String::from_utf8_lossy(&bytes));
            if bad > 0 {
                self.notes
                    .push(format!("{}: {bad} malformed lines skipped", path.display()));
            }
            return Module::PerfMap(PerfMap::new(entries));
        }
        let dirs: Vec<_> = self
            .opts
            .perf_map_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        self.notes.push(format!(
            "no symbols for JIT code of pid {pid}: {file} not found in {}",
            dirs.join(", ")
        ));
        Module::Nothing
    }
}

/// blazesym reports the outer function with the call-site location of its first inlined
/// callee, and each inlined callee with the location inside it; that is our frame order.
pub(crate) fn to_frames(sym: &Symbolized<'_>) -> Vec<SymFrame> {
    to_frames_named(sym, &mut |n| n.to_string())
}

/// As [`to_frames`], with `demangle` giving each function's name from blazesym's.
pub(crate) fn to_frames_named(
    sym: &Symbolized<'_>,
    demangle: &mut dyn FnMut(&str) -> String,
) -> Vec<SymFrame> {
    let Some(sym) = sym.as_sym() else {
        return Vec::new();
    };
    let loc = |ci: Option<&blazesym::symbolize::CodeInfo<'_>>| match ci {
        Some(ci) => (Some(ci.to_path().display().to_string()), ci.line),
        None => (None, None),
    };
    let mut name = |n: &str| {
        let n = demangle(n);
        if n.is_empty() {
            "[unknown]".to_string()
        } else {
            n
        }
    };
    let (file, line) = loc(sym.code_info.as_deref());
    let mut frames = vec![SymFrame {
        function: name(&sym.name),
        file,
        line,
    }];
    for f in sym.inlined.iter() {
        let (file, line) = loc(f.code_info.as_ref());
        frames.push(SymFrame {
            function: name(&f.name),
            file,
            line,
        });
    }
    frames
}
