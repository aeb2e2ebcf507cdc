//! Kernel (kallsyms) and JIT (perf map) symbolisation through the public API.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use kairos_symbolize::{kallsyms, perf_map, ModuleKey, Symbolizer, SymbolizerOptions};

/// The real LBR recordings' perf maps: `KAIROS_FIXTURES`, else `<repo>/../shared/fixtures/lbr`
/// (CI clones the repository beside `shared/`).
fn lbr_fixtures() -> PathBuf {
    let dir = std::env::var_os("KAIROS_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/lbr"),
        PathBuf::from,
    );
    assert!(
        dir.join("perf-5595.map").exists(),
        "fixtures missing at {}; set KAIROS_FIXTURES",
        dir.display()
    );
    dir
}

fn with_maps(dirs: Vec<PathBuf>) -> Symbolizer {
    Symbolizer::new(SymbolizerOptions {
        perf_map_dirs: dirs,
        ..SymbolizerOptions::default()
    })
}

#[test]
fn perf_map_fixtures_resolve_every_listed_function() {
    let dir = lbr_fixtures();
    let mut sym = with_maps(vec![PathBuf::from("/nonexistent"), dir.clone()]);
    for pid in [5595, 25532] {
        let text = std::fs::read_to_string(dir.join(format!("perf-{pid}.map"))).unwrap();
        let (entries, bad) = perf_map::parse(&text);
        assert_eq!(bad, 0);
        assert!(entries.len() > 5);
        let key = ModuleKey::PerfMap { pid };
        // First byte, last byte, one past the end of each function.
        let addrs: Vec<u64> = entries
            .iter()
            .flat_map(|e| [e.start, e.start + e.size - 1, e.start + e.size])
            .collect();
        let frames = sym.symbolize(&key, &addrs);
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(frames[3 * i][0].function, e.name);
            assert_eq!(frames[3 * i + 1][0].function, e.name);
            let next_starts_here = entries.iter().any(|n| n.start == e.start + e.size);
            assert!(
                next_starts_here || frames[3 * i + 2].is_empty(),
                "{:#x}",
                e.start + e.size
            );
        }
    }
    let main = sym.symbolize(&ModuleKey::PerfMap { pid: 25532 }, &[0x400b80 + 0x10]);
    assert_eq!(main[0][0].function, "main");
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());

    // The Haswell-E symbols file has the same format (non-PIE link addresses).
    let text =
        std::fs::read_to_string(dir.join("haswell-e_any_16deep_perf6.8.symbols.txt")).unwrap();
    let (entries, bad) = perf_map::parse(&text);
    assert_eq!(bad, 0);
    let map = perf_map::PerfMap::new(entries);
    assert_eq!(map.lookup(0x401050), Some("main"));
    assert_eq!(map.lookup(0x4011c0 + 0x4e), Some("test_unroll"));
}

#[test]
fn missing_perf_map_is_a_note() {
    let mut sym = with_maps(vec![PathBuf::from("/nonexistent")]);
    assert_eq!(
        sym.symbolize(&ModuleKey::PerfMap { pid: 1 }, &[0x1000]),
        vec![Vec::new()]
    );
    assert!(
        sym.notes()[0].contains("perf-1.map not found"),
        "{:?}",
        sym.notes()
    );
}

#[test]
fn kernel_addresses_from_proc_kallsyms() {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let (entries, _) = kallsyms::parse(&text);
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    if entries.iter().all(|e| e.addr == 0) {
        // Not root (kptr_restrict): the lookup must say so, not invent names.
        assert!(sym.symbolize(&ModuleKey::Kernel, &[0xffffffff81000000])[0].is_empty());
        assert!(
            sym.notes()[0].contains("kptr_restrict"),
            "{:?}",
            sym.notes()
        );
        return;
    }
    // Well-known core functions whose address no other text symbol shares.
    let mut text_syms: Vec<_> = entries
        .iter()
        .filter(|e| matches!(e.kind, 't' | 'T'))
        .collect();
    text_syms.sort_by_key(|e| e.addr);
    let mut checked = 0;
    for name in [
        "schedule",
        "do_sys_open",
        "vfs_read",
        "vfs_write",
        "kmalloc_trace",
        "__x64_sys_read",
        "tcp_sendmsg",
    ] {
        let Some(i) = text_syms
            .iter()
            .position(|e| e.name == name && e.module.is_none())
        else {
            continue;
        };
        let e = text_syms[i];
        let shared = text_syms.iter().filter(|o| o.addr == e.addr).count() > 1;
        let next = text_syms[i + 1..]
            .iter()
            .find(|o| o.addr > e.addr)
            .map(|o| o.addr);
        if shared || next.is_none() {
            continue;
        }
        let r = sym.symbolize(&ModuleKey::Kernel, &[e.addr, e.addr + 1, next.unwrap() - 1]);
        for frames in &r {
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].function, name);
        }
        checked += 1;
    }
    assert!(checked >= 3, "too few known kernel functions found");
    assert!(sym.symbolize(&ModuleKey::Kernel, &[0x10])[0].is_empty());
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());
}

#[test]
fn hidden_kallsyms_copy_is_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kallsyms");
    std::fs::write(
        &path,
        "0000000000000000 T _stext\n0000000000000000 T schedule\n",
    )
    .unwrap();
    let mut sym = Symbolizer::new(SymbolizerOptions {
        kallsyms: Some(path),
        ..SymbolizerOptions::default()
    });
    assert!(sym.symbolize(&ModuleKey::Kernel, &[0xffffffff81000000])[0].is_empty());
    assert!(
        sym.notes()[0].contains("kptr_restrict"),
        "{:?}",
        sym.notes()
    );
}
