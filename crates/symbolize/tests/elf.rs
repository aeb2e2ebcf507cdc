//! ELF/DWARF symbolisation against binaries built with gcc at test time, with binutils'
//! `nm` and `addr2line` as oracles.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use kairos_symbolize::{
    file_offset_to_elf_vaddr, ElfInfo, ModuleKey, Symbolizer, SymbolizerOptions,
};

fn opts(debug_dirs: Vec<PathBuf>) -> SymbolizerOptions {
    SymbolizerOptions {
        debug_dirs,
        ..SymbolizerOptions::hermetic()
    }
}

fn key(path: &Path, build_id: Option<String>) -> ModuleKey {
    ModuleKey::Elf {
        path: path.display().to_string(),
        build_id,
    }
}

/// Every address of `outer` compared with addr2line; returns how many had inlined frames.
fn check_outer_against_addr2line(
    sym: &mut Symbolizer,
    key: &ModuleKey,
    oracle_bin: &Path,
) -> usize {
    let (start, size) = nm_symbol(oracle_bin, "outer");
    let addrs: Vec<u64> = (start..start + size).collect();
    let ours = sym.symbolize(key, &addrs);
    let mut inlined = 0;
    for (addr, frames) in addrs.iter().zip(&ours) {
        let want = addr2line(oracle_bin, *addr);
        assert_eq!(shape(frames), want, "address {addr:#x}");
        if frames.len() > 1 {
            inlined += 1;
            assert_eq!(frames[0].function, "outer");
            assert_eq!(frames.last().unwrap().function, "leaf");
        }
    }
    inlined
}

#[test]
fn dwarf_lines_and_inline_chain_match_addr2line() {
    let dir = tempfile::tempdir().unwrap();
    let bin = gcc(dir.path(), "inl", INLINE_C, &["-g", "-O2"]);
    let mut sym = Symbolizer::new(opts(vec![]));
    let k = key(&bin, None);
    let inlined = check_outer_against_addr2line(&mut sym, &k, &bin);
    assert!(inlined > 0, "no address of outer showed the inlined leaf");
    // The inlined leaf's line is the one of its body, the outer frame's the call site.
    let (start, size) = nm_symbol(&bin, "outer");
    let addrs: Vec<u64> = (start..start + size).collect();
    let chain = sym
        .symbolize(&k, &addrs)
        .into_iter()
        .find(|f| f.len() == 2)
        .unwrap();
    assert_eq!(chain[1].line, Some(3));
    assert_eq!(chain[0].line, Some(8));
    assert!(chain[0].file.as_deref().unwrap().ends_with("inl.c"));
    // main is found too, and an address outside any function is empty.
    let (main, _) = nm_symbol(&bin, "main");
    let r = sym.symbolize(&k, &[main, 0x10]);
    assert_eq!(r[0][0].function, "main");
    assert!(r[1].is_empty());
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());
}

#[test]
fn stripped_binary_follows_gnu_debuglink_with_crc() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", INLINE_C, &["-g", "-O2"]);
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir_all(bin_dir.join(".debug")).unwrap();
    let bin = bin_dir.join("prog");
    let dbg = bin_dir.join(".debug").join("prog.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(&dbg));
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&bin)
        .arg(&full));
    // objcopy computes the CRC of the file it is given, then we move it to .debug/.
    let tmp_dbg = bin_dir.join("prog.debug");
    std::fs::copy(&dbg, &tmp_dbg).unwrap();
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", tmp_dbg.display()))
        .arg(&bin));
    std::fs::remove_file(&tmp_dbg).unwrap();
    let info = ElfInfo::open(&bin).unwrap();
    assert!(!info.has_debug_info && !info.has_symtab);
    assert_eq!(info.debuglink.as_ref().unwrap().0, "prog.debug");

    // No build-id dir given: only the debuglink can find the .debug/ file.
    let mut sym = Symbolizer::new(opts(vec![]));
    let k = key(&bin, None);
    assert!(check_outer_against_addr2line(&mut sym, &k, &full) > 0);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());

    // A debug file with the right name but other contents is refused.
    std::fs::write(&dbg, b"not the debug file").unwrap();
    let mut sym = Symbolizer::new(opts(vec![]));
    let (outer, _) = nm_symbol(&full, "outer");
    assert!(sym.symbolize(&k, &[outer])[0].is_empty());
    let notes = sym.notes().join("\n");
    assert!(notes.contains("CRC differs"), "{notes}");
}

#[test]
fn build_id_debug_file_found_even_without_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    let readelf = run(Command::new("readelf").arg("-n").arg(&full));
    assert!(readelf.contains(&id), "our build id {id} not in readelf -n");
    let debug_root = dir.path().join("debug");
    let id_dir = debug_root.join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&id_dir).unwrap();
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(id_dir.join(format!("{}.debug", &id[2..]))));
    let bin = dir.path().join("stripped");
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&bin)
        .arg(&full));

    let mut sym = Symbolizer::new(opts(vec![
        PathBuf::from("/nonexistent"),
        debug_root.clone(),
    ]));
    assert!(check_outer_against_addr2line(&mut sym, &key(&bin, None), &full) > 0);
    // The binary is gone but the recording knew its build id.
    let gone = key(Path::new("/gone/stripped"), Some(id.to_uppercase()));
    assert!(check_outer_against_addr2line(&mut sym, &gone, &full) > 0);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());

    // A recorded build id that differs from the file's: the file is not trusted.
    let mut sym = Symbolizer::new(opts(vec![]));
    let (outer, _) = nm_symbol(&full, "outer");
    let wrong = key(&full, Some("00".repeat(20)));
    assert!(sym.symbolize(&wrong, &[outer])[0].is_empty());
    assert!(sym.notes()[0].contains("build id"), "{:?}", sym.notes());
}

#[test]
fn symtab_fallback_without_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let bin = gcc(dir.path(), "nodwarf", INLINE_C, &["-O2"]);
    let info = ElfInfo::open(&bin).unwrap();
    assert!(info.has_symtab && !info.has_debug_info);
    let mut sym = Symbolizer::new(opts(vec![]));
    let k = key(&bin, None);
    for name in ["outer", "main"] {
        let (start, size) = nm_symbol(&bin, name);
        for frames in sym.symbolize(&k, &[start, start + size / 2, start + size - 1]) {
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].function, name);
            assert_eq!((frames[0].file.as_deref(), frames[0].line), (None, None));
        }
    }
    let notes = sym.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("no debug info"), "{notes:?}");
}

#[test]
fn symfs_prefixes_binary_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    let bin = gcc(&root.join("usr/bin"), "prog", INLINE_C, &["-g", "-O2"]);
    let mut sym = Symbolizer::new(SymbolizerOptions {
        symfs: Some(root),
        ..opts(vec![])
    });
    let (outer, _) = nm_symbol(&bin, "outer");
    let k = ModuleKey::Elf {
        path: "/usr/bin/prog".into(),
        build_id: None,
    };
    assert_eq!(sym.symbolize(&k, &[outer])[0][0].function, "outer");
}

#[test]
fn missing_and_corrupt_files_give_empty_results_and_notes() {
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt");
    let mut bytes = b"\x7fELF\x02\x01\x01\x00".to_vec();
    bytes.resize(200, 0xff);
    std::fs::write(&corrupt, &bytes).unwrap();
    // A real binary cut in half: headers fine, sections point past the end.
    let full = gcc(dir.path(), "full", INLINE_C, &["-g", "-O2"]);
    let data = std::fs::read(&full).unwrap();
    let cut = dir.path().join("cut");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();

    let mut sym = Symbolizer::new(opts(vec![]));
    for path in [
        "/no/such/binary",
        corrupt.to_str().unwrap(),
        cut.to_str().unwrap(),
    ] {
        let k = ModuleKey::Elf {
            path: path.into(),
            build_id: None,
        };
        let r = sym.symbolize(&k, &[0, 0x1000, 0x1139, u64::MAX]);
        assert_eq!(r.len(), 4);
        // Cached: a second call adds no note.
        let _ = sym.symbolize(&k, &[0x1000]);
    }
    let notes = sym.notes();
    assert!(
        notes[0].starts_with("no symbols for /no/such/binary: not found on this machine"),
        "{notes:?}"
    );
    assert!(
        notes[1]
            .ends_with("corrupt is not a valid ELF file: Invalid ELF section header entry size"),
        "{notes:?}"
    );
    assert_eq!(
        sym.symbolize(&ModuleKey::Anonymous, &[1, 2]),
        vec![Vec::new(), Vec::new()]
    );
}

#[test]
fn normalises_a_live_address_to_the_nm_address() {
    // The program prints &outer and the /proc/self/maps line holding it.
    let src = format!(
        "{}\n{}",
        INLINE_C.replace("int main(", "int unused_main("),
        r#"#include <string.h>
int main(void) {
    unsigned long a = (unsigned long)&outer, s, e, off;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &off) == 3 && a >= s && a < e)
            printf("%lx %lx %lx\n", a, s, off);
    return 0;
}"#
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in [
        ("pie", &["-O1", "-fPIE", "-pie"][..]),
        ("nopie", &["-O1", "-no-pie"][..]),
    ] {
        let bin = gcc(dir.path(), name, &src, flags);
        let out = run(&mut Command::new(&bin));
        let v: Vec<u64> = out
            .split_whitespace()
            .map(|x| u64::from_str_radix(x, 16).unwrap())
            .collect();
        let (addr, start, pgoff) = (v[0], v[1], v[2]);
        let info = ElfInfo::open(&bin).unwrap();
        let vaddr = file_offset_to_elf_vaddr(&info, addr - start + pgoff);
        assert_eq!(vaddr, Some(nm_symbol(&bin, "outer").0), "{name}");
    }
}

#[test]
fn garbage_dwarf_does_not_panic_and_keeps_function_names() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", INLINE_C, &["-g", "-O2"]);
    let (outer, size) = nm_symbol(&full, "outer");
    let junk = dir.path().join("junk");
    for (i, fill) in [0xffu8, 0x00, 0x5a].into_iter().enumerate() {
        std::fs::write(&junk, vec![fill; 4096]).unwrap();
        let bad = dir.path().join(format!("bad{i}"));
        run(Command::new("objcopy")
            .arg(format!("--update-section=.debug_info={}", junk.display()))
            .arg(format!("--update-section=.debug_line={}", junk.display()))
            .arg(&full)
            .arg(&bad));
        let mut sym = Symbolizer::new(opts(vec![]));
        let r = sym.symbolize(&key(&bad, None), &[outer, outer + size / 2, 0, u64::MAX]);
        assert_eq!(r.len(), 4);
        // Either DWARF still names it or the symtab fallback does; never a wrong name.
        for frames in &r[..2] {
            assert_eq!(
                frames.first().map(|f| f.function.as_str()),
                Some("outer"),
                "{frames:?} {:?}",
                sym.notes()
            );
        }
        assert!(r[2].is_empty() && r[3].is_empty(), "{r:?}");
        assert!(
            sym.notes()[0].contains("using its symbol table"),
            "{:?}",
            sym.notes()
        );
    }
}

/// Whether readelf flags `.debug_info` of `bin` as compressed (SHF_COMPRESSED, "C").
fn debug_info_compressed(bin: &Path) -> bool {
    let out = run(Command::new("readelf").arg("-SW").arg(bin));
    out.lines()
        .find(|l| l.contains(" .debug_info "))
        .is_some_and(|l| {
            l.split_whitespace()
                .rev()
                .nth(3)
                .is_some_and(|flags| flags.contains('C'))
        })
}

/// Distributions ship debug files with zlib-compressed DWARF (Debian's libc6-dbg under
/// /usr/lib/debug/.build-id): they must give lines and inlines like plain ones, with no
/// note, whether the binary itself or its separate debug file carries them.
#[test]
fn zlib_compressed_debug_sections_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "full", INLINE_C, &["-g", "-O2"]);
    let packed = dir.path().join("packed");
    run(Command::new("objcopy")
        .arg("--compress-debug-sections=zlib")
        .arg(&full)
        .arg(&packed));
    assert!(
        debug_info_compressed(&packed),
        "objcopy did not compress .debug_info"
    );
    let mut sym = Symbolizer::new(opts(vec![]));
    assert!(check_outer_against_addr2line(&mut sym, &key(&packed, None), &full) > 0);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());

    // As libc6-dbg: a stripped binary and a compressed debug file found by build id.
    let id = build_id(&full);
    let debug_root = dir.path().join("debug");
    let id_dir = debug_root.join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&id_dir).unwrap();
    let dbg = id_dir.join(format!("{}.debug", &id[2..]));
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg("--compress-debug-sections=zlib")
        .arg(&full)
        .arg(&dbg));
    assert!(debug_info_compressed(&dbg));
    let bin = dir.path().join("stripped");
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&bin)
        .arg(&full));
    let mut sym = Symbolizer::new(opts(vec![debug_root]));
    assert!(check_outer_against_addr2line(&mut sym, &key(&bin, None), &full) > 0);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());
}
