//! Choosing and opening a module's symbol source, once per module: the ELF file (or a
//! verified separate debug file, under `--symfs`), kallsyms, or a perf map.

use std::path::PathBuf;

use super::{Module, Symbolizer};
use crate::elf_info::ElfInfo;
use crate::kallsyms::Kallsyms;
use crate::perf_map::{self, PerfMap};
use crate::{debug_file, ModuleKey, SymbolizeError};

impl Symbolizer {
    pub(super) fn load(&mut self, module: &ModuleKey) -> Module {
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
