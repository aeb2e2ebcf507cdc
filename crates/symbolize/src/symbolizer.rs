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
use blazesym::symbolize::Input;

use crate::blaze_frames::to_frames;
use crate::elf_info::LoadSegment;
use crate::kallsyms::Kallsyms;
use crate::locate::Locator;
use crate::perf_map::PerfMap;
use crate::symtab_names::SymtabNames;
use crate::DebuginfodOptions;
use crate::{ModuleKey, SymFrame};

mod load;

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
    /// perf build-id caches, searched in order by build id (an unpacked `perf archive`,
    /// `~/.debug`); default [`crate::buildid_cache::default_dirs`].
    pub buildid_dirs: Vec<PathBuf>,
    /// debuginfod servers and client cache; default from the environment, as elfutils.
    pub debuginfod: DebuginfodOptions,
    /// Read binaries of processes that still run here through `/proc/PID/root` and
    /// `/proc/PID/map_files` (containers, deleted files). Only used with a process's
    /// mapping at hand ([`crate::Locator::binary`]), and checked by build id or by the
    /// process still mapping that path at the recorded address.
    pub processes: bool,
}

impl SymbolizerOptions {
    /// Only what is named here: no build-id caches, no debuginfod, no running processes
    /// (for tests and for runs that must not depend on this machine's files).
    pub fn hermetic() -> Self {
        SymbolizerOptions {
            buildid_dirs: Vec::new(),
            debuginfod: DebuginfodOptions::none(),
            processes: false,
            ..SymbolizerOptions::default()
        }
    }
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        Self {
            symfs: None,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            perf_map_dirs: vec![PathBuf::from("/tmp")],
            kallsyms: None,
            buildid_dirs: crate::buildid_cache::default_dirs(),
            debuginfod: DebuginfodOptions::from_env(),
            processes: true,
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
    locator: Locator,
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
            locator: Locator::new(&opts),
            opts,
            blaze,
            symtab: SymtabNames::new(),
            modules: HashMap::new(),
            notes: Vec::new(),
        }
    }

    /// Forgets what may change between two recordings of a running machine, keeping
    /// the rest for the next: JIT maps (rewritten as code is compiled) and files known
    /// by path alone (replaceable in place) go; files checked by build id and the
    /// kernel's symbols stay.
    pub fn forget_changeable(&mut self) {
        self.modules.retain(|k, _| match k {
            ModuleKey::Kernel => true,
            ModuleKey::Elf { build_id, .. } | ModuleKey::ElfAt { build_id, .. } => {
                build_id.is_some()
            }
            _ => false,
        });
    }

    /// How many modules' symbols are held.
    pub fn modules_held(&self) -> usize {
        self.modules.len()
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
}
