//! Choosing and opening a module's symbol source, once per module: the ELF file found by
//! the [`crate::Locator`] (or given by the converter), or a verified separate debug file;
//! kallsyms; or a perf map.

use std::path::{Path, PathBuf};

use super::{Module, Symbolizer};
use crate::elf_info::ElfInfo;
use crate::kallsyms::Kallsyms;
use crate::locate::{Located, Origin};
use crate::perf_map::{self, PerfMap};
use crate::ModuleKey;

impl Symbolizer {
    pub(super) fn load(&mut self, module: &ModuleKey) -> Module {
        match module {
            ModuleKey::Elf { path, build_id } => self.load_elf(path, build_id.as_deref(), None),
            ModuleKey::ElfAt {
                path,
                build_id,
                file,
                root,
            } => self.load_elf(path, build_id.as_deref(), Some((file, root.as_deref()))),
            ModuleKey::Kernel => self.load_kernel(),
            ModuleKey::PerfMap { pid } => self.load_perf_map(*pid),
            ModuleKey::Anonymous => Module::Nothing,
        }
    }

    /// The binary: the file the converter found (`at`), else the locator's search.
    fn find_binary(
        &mut self,
        name: &str,
        want_id: Option<&str>,
        at: Option<(&Path, Option<&Path>)>,
        why: &mut Vec<String>,
    ) -> Option<Located> {
        let Some((file, root)) = at else {
            return match self.locator.binary(name, want_id, None) {
                Ok(found) => {
                    if !found.skipped.is_empty() {
                        self.notes.push(format!(
                            "{name}: read {} {}; skipped {}",
                            found.file.display(),
                            found.origin,
                            found.skipped.join("; ")
                        ));
                    }
                    Some(found)
                }
                Err(reasons) => {
                    why.extend(reasons);
                    None
                }
            };
        };
        match ElfInfo::open(file) {
            Ok(info) => match (want_id, info.build_id.as_deref()) {
                (Some(want), Some(have)) if want != have => {
                    why.push(format!(
                        "{} has build id {have}, the recording has {want}",
                        file.display()
                    ));
                    None
                }
                _ => Some(Located {
                    file: file.to_path_buf(),
                    info,
                    origin: Origin::Path,
                    root: root.map(Path::to_path_buf),
                    skipped: Vec::new(),
                }),
            },
            Err(e) => {
                why.push(e.to_string());
                None
            }
        }
    }

    fn load_elf(
        &mut self,
        name: &str,
        want_id: Option<&str>,
        at: Option<(&PathBuf, Option<&Path>)>,
    ) -> Module {
        let want_id = want_id
            .map(str::to_ascii_lowercase)
            .filter(|w| !w.is_empty());
        let mut why = Vec::new();
        let at = at.map(|(f, r)| (f.as_path(), r));
        let binary = self.find_binary(name, want_id.as_deref(), at, &mut why);
        if let Some(b) = binary.as_ref().filter(|b| b.info.has_debug_info) {
            return Module::Elf {
                path: b.file.clone(),
                dwarf: true,
                segments: b.info.load_segments.clone(),
            };
        }
        let build_id = want_id.or_else(|| binary.as_ref().and_then(|b| b.info.build_id.clone()));
        let (found, rejected) = self
            .locator
            .debug_file(name, build_id.as_deref(), binary.as_ref());
        why.extend(rejected);
        match (found, binary) {
            (Some(found), _) if found.info.has_debug_info || found.info.has_symbols() => {
                // objcopy --only-keep-debug keeps the program headers, so its segments
                // are the binary's.
                Module::Elf {
                    path: found.file,
                    dwarf: found.info.has_debug_info,
                    segments: found.info.load_segments,
                }
            }
            (_, Some(b)) if b.info.has_symbols() => {
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                };
                self.notes.push(format!("no debug info for {name}: function names from its symbol table, no lines or inlines{why}"));
                Module::Elf {
                    path: b.file,
                    dwarf: false,
                    segments: b.info.load_segments,
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
