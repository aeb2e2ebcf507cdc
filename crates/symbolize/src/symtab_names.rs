//! Symbol-table lookups with each distinct name demangled once.
//!
//! blazesym demangles the name of every address it resolves; in a large C++ library
//! (libLLVM under a system-wide profile) thousands of sampled addresses share a few
//! hundred functions, and demangling them one by one was the biggest cost of
//! symbolising. Symbol tables carry no source language, so blazesym treats their names
//! as of unknown language; [`demangle_unknown`] repeats exactly that rule, and the
//! cache makes it once per name. DWARF lookups keep blazesym's own demangling, which
//! depends on each unit's language.

use std::collections::HashMap;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::Input;

use crate::blaze_frames::to_frames_named;
use crate::SymFrame;

/// A blazesym instance that leaves names mangled, and the names demangled so far.
pub(crate) struct SymtabNames {
    blaze: blazesym::symbolize::Symbolizer,
    names: HashMap<String, String>,
}

impl SymtabNames {
    pub(crate) fn new() -> Self {
        let blaze = blazesym::symbolize::Symbolizer::builder()
            .enable_code_info(true)
            .enable_inlined_fns(true)
            .enable_demangling(false)
            .set_debug_dirs(Some(Vec::<std::path::PathBuf>::new()))
            .build();
        Self {
            blaze,
            names: HashMap::new(),
        }
    }

    /// The frames of each address from the symbol table of `path`, as blazesym with
    /// demangling gives them.
    pub(crate) fn lookup(
        &mut self,
        path: &std::path::Path,
        addrs: &[u64],
    ) -> Result<Vec<Vec<SymFrame>>, blazesym::Error> {
        let src = Source::Elf(Elf {
            debug_syms: false,
            ..Elf::new(path)
        });
        let Self { blaze, names } = self;
        let syms = blaze.symbolize(&src, Input::VirtOffset(addrs))?;
        let mut demangle = |n: &str| demangled(names, n);
        Ok(syms
            .iter()
            .map(|s| to_frames_named(s, &mut demangle))
            .collect())
    }
}

fn demangled(names: &mut HashMap<String, String>, name: &str) -> String {
    if let Some(d) = names.get(name) {
        return d.clone();
    }
    let d = demangle_unknown(name);
    names.insert(name.to_string(), d.clone());
    d
}

/// blazesym's demangling of a name of unknown language (blazesym 0.2, `SrcLang::Unknown`):
/// Rust first, shown without its hash; then Itanium C++ (any name, not only `_Z...`); else
/// the name as it is.
pub(crate) fn demangle_unknown(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::demangle_unknown;
    use blazesym::symbolize::source::{Elf, Source};
    use blazesym::symbolize::{Input, Symbolizer};

    #[test]
    fn demangles_as_blazesym_does_for_symbol_tables() {
        assert_eq!(
            demangle_unknown("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle_unknown("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle_unknown("_RNvCs59TyybOfEHA_18rustc_codegen_llvm3foo"),
            "rustc_codegen_llvm::foo"
        );
        assert_eq!(demangle_unknown("schedule"), "schedule");
        assert_eq!(demangle_unknown("_Zbroken"), "_Zbroken");
    }

    /// Looked up both ways, the symbol-table frames of this test binary (Rust and C
    /// names) and of libstdc++ where installed (C++ names) agree.
    #[test]
    fn same_frames_as_blazesym_demangling() {
        let exe = std::env::current_exe().expect("test binary path");
        let cxx = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
        let mut names = super::SymtabNames::new();
        for path in [exe.as_path(), cxx] {
            let Ok(info) = crate::ElfInfo::open(path) else {
                assert!(path == cxx, "the test binary is ELF");
                continue;
            };
            // Every 64th byte of the loaded segments: many functions and some gaps.
            let addrs: Vec<u64> = info
                .load_segments
                .iter()
                .flat_map(|s| (s.vaddr..s.vaddr.saturating_add(s.memsz)).step_by(64))
                .take(40_000)
                .collect();
            let src = Source::Elf(Elf {
                debug_syms: false,
                ..Elf::new(path)
            });
            let blaze = Symbolizer::builder().enable_demangling(true).build();
            let want: Vec<Vec<crate::SymFrame>> = blaze
                .symbolize(&src, Input::VirtOffset(&addrs))
                .expect("blazesym reads the file")
                .iter()
                .map(crate::blaze_frames::to_frames)
                .collect();
            let got = names.lookup(path, &addrs).expect("reads the file");
            assert!(want.iter().filter(|w| !w.is_empty()).count() > 100);
            assert_eq!(got.len(), want.len());
            let first_diff = (0..got.len()).find(|&i| got[i] != want[i]);
            assert_eq!(
                first_diff.map(|i| (&got[i], &want[i])),
                None,
                "{}",
                path.display()
            );
        }
    }
}
