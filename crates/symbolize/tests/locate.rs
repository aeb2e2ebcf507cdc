//! Where binaries and debug files are found when the recorded path does not hold them:
//! perf's build-id cache (filled by the real `perf buildid-cache`, and perf's older
//! layout), `perf archive` tarballs, the debuginfod client cache, and the build-id
//! check that keeps a file of another build from being used.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use kairos_symbolize::{
    buildid_cache, DebuginfodOptions, Locator, ModuleKey, Origin, Symbolizer, SymbolizerOptions,
};

fn opts(buildid_dirs: Vec<PathBuf>) -> SymbolizerOptions {
    SymbolizerOptions {
        buildid_dirs,
        debug_dirs: Vec::new(),
        ..SymbolizerOptions::hermetic()
    }
}

/// `outer` at its start, middle and end resolves to outer (and its inlined leaf).
fn outer_resolves(sym: &mut Symbolizer, key: &ModuleKey, oracle: &Path, with_lines: bool) {
    let (start, size) = nm_symbol(oracle, "outer");
    for frames in sym.symbolize(key, &[start, start + size / 2, start + size - 1]) {
        assert_eq!(
            frames.first().map(|f| f.function.as_str()),
            Some("outer"),
            "{frames:?} notes {:?}",
            sym.notes()
        );
        assert_eq!(frames[0].line.is_some(), with_lines, "{frames:?}");
    }
}

fn strip(full: &Path, out: &Path) {
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(out)
        .arg(full));
}

fn only_debug(full: &Path, out: &Path) {
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(full)
        .arg(out));
}

fn key(path: &str, id: &str) -> ModuleKey {
    ModuleKey::Elf {
        path: path.into(),
        build_id: Some(id.into()),
    }
}

#[test]
fn perf_buildid_cache_add_is_read_by_build_id() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "prog", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    let cache = dir.path().join("cache");
    let perf = Command::new("perf")
        .arg("--buildid-dir")
        .arg(&cache)
        .args(["buildid-cache", "-a"])
        .arg(&full)
        .output();
    match perf {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!("perf_buildid_cache_add_is_read_by_build_id: `perf buildid-cache` unavailable ({other:?}); perf's own cache not checked, the layout is in the next test");
            return;
        }
    }
    // The binary is gone from its recorded path; perf's cache still has it.
    let gone = dir.path().join("prog").display().to_string();
    std::fs::remove_file(&full).unwrap();
    let cached = cache
        .join(gone.trim_start_matches('/'))
        .join(&id)
        .join("elf");
    assert!(cached.is_file(), "perf wrote no {}", cached.display());
    let mut sym = Symbolizer::new(opts(vec![PathBuf::from("/nonexistent"), cache.clone()]));
    outer_resolves(&mut sym, &key(&gone, &id), &cached, true);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());
    let mut loc = Locator::new(&opts(vec![cache.clone()]));
    let found = loc.binary(&gone, Some(&id.to_uppercase()), None).unwrap();
    assert_eq!(found.origin, Origin::BuildIdCache { dir: cache });
}

#[test]
fn cache_layouts_old_and_new_with_debug_files_and_archives() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "prog", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    let (head, rest) = id.split_at(2);

    // perf 4.x and later: .build-id/xx/rest -> ../../<path>/<id>/ holding elf and debug;
    // here the elf is stripped and the debug file carries the DWARF.
    let new = dir.path().join("new");
    let entry = new.join("opt/app/prog").join(&id);
    std::fs::create_dir_all(&entry).unwrap();
    strip(&full, &entry.join("elf"));
    only_debug(&full, &entry.join("debug"));
    std::fs::create_dir_all(new.join(".build-id").join(head)).unwrap();
    std::os::unix::fs::symlink(
        format!("../../opt/app/prog/{id}"),
        new.join(".build-id").join(head).join(rest),
    )
    .unwrap();
    let mut sym = Symbolizer::new(opts(vec![new.clone()]));
    outer_resolves(&mut sym, &key("/opt/app/prog", &id), &full, true);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());

    // Older perf: .build-id/xx/rest is the binary itself (here with its symbol table only).
    let old = dir.path().join("old");
    std::fs::create_dir_all(old.join(".build-id").join(head)).unwrap();
    let nodebug = dir.path().join("nodebug");
    run(Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&nodebug)
        .arg(&full));
    std::fs::copy(&nodebug, old.join(".build-id").join(head).join(rest)).unwrap();
    let mut sym = Symbolizer::new(opts(vec![old.clone()]));
    outer_resolves(&mut sym, &key("/opt/app/prog", &id), &full, false);
    assert!(
        sym.notes()[0].contains("no debug info"),
        "{:?}",
        sym.notes()
    );

    // The same cache packed as `perf archive` packs it (tar, bzip2), then unpacked.
    let tarball = dir.path().join("perf.data.tar.bz2");
    let tar = Command::new("tar")
        .arg("cjf")
        .arg(&tarball)
        .arg("-C")
        .arg(&new)
        .args([".build-id", "opt"])
        .output();
    match tar {
        Ok(o) if o.status.success() => {
            let unpacked = dir.path().join("unpacked");
            std::fs::create_dir_all(&unpacked).unwrap();
            buildid_cache::unpack_archive(&tarball, &unpacked).unwrap();
            let mut sym = Symbolizer::new(opts(vec![unpacked]));
            outer_resolves(&mut sym, &key("/opt/app/prog", &id), &full, true);
        }
        other => {
            eprintln!("cache_layouts: tar with bzip2 unavailable ({other:?}); archive not checked")
        }
    }
}

#[test]
fn debuginfod_client_cache_layout() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "prog", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    let cache = dir.path().join("debuginfod_client");
    std::fs::create_dir_all(cache.join(&id)).unwrap();
    strip(&full, &cache.join(&id).join("executable"));
    only_debug(&full, &cache.join(&id).join("debuginfo"));
    let o = SymbolizerOptions {
        debuginfod: DebuginfodOptions {
            urls: Vec::new(),
            cache: Some(cache.clone()),
            timeout: std::time::Duration::from_secs(1),
        },
        ..opts(Vec::new())
    };
    let mut loc = Locator::new(&o);
    let exe = loc.binary("/srv/prog", Some(&id), None).unwrap();
    assert_eq!(exe.origin, Origin::Debuginfod { url: None });
    assert_eq!(exe.file, cache.join(&id).join("executable"));
    let (dbg, _) = loc.debug_file("/srv/prog", Some(&id), Some(&exe));
    assert_eq!(dbg.unwrap().file, cache.join(&id).join("debuginfo"));
    let mut sym = Symbolizer::new(o);
    outer_resolves(&mut sym, &key("/srv/prog", &id), &full, true);
    assert!(sym.notes().is_empty(), "{:?}", sym.notes());
}

#[test]
fn a_file_of_another_build_is_skipped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "prog", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    // Another build at the recorded path (the same source, other flags).
    let host = dir.path().join("host");
    std::fs::create_dir_all(&host).unwrap();
    let other = gcc(&host, "prog", INLINE_C, &["-g", "-O1"]);
    let other_id = build_id(&other);
    assert_ne!(id, other_id);
    let path = other.display().to_string();

    // Nothing else has it: no symbols, and the note names the file and both ids.
    let mut sym = Symbolizer::new(opts(Vec::new()));
    let (start, _) = nm_symbol(&full, "outer");
    assert!(sym.symbolize(&key(&path, &id), &[start])[0].is_empty());
    let notes = sym.notes().join("\n");
    assert!(
        notes.contains(&path) && notes.contains(&id) && notes.contains(&other_id),
        "{notes}"
    );

    // The right build in a cache: that one is used, and the skipped file is named.
    let cache = dir.path().join("cache");
    let entry = cache.join(path.trim_start_matches('/')).join(&id);
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::copy(&full, entry.join("elf")).unwrap();
    let mut sym = Symbolizer::new(opts(vec![cache.clone()]));
    outer_resolves(&mut sym, &key(&path, &id), &full, true);
    let notes = sym.notes().join("\n");
    assert!(
        notes.contains("skipped") && notes.contains(&other_id),
        "{notes}"
    );
    // Without a recorded build id the file at the path is all there is to go by.
    let mut loc = Locator::new(&opts(vec![cache]));
    assert_eq!(loc.binary(&path, None, None).unwrap().origin, Origin::Path);

    // --symfs comes first: the right build under it wins over the cache.
    let symfs = dir.path().join("symfs");
    let under = symfs.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::copy(&full, &under).unwrap();
    let mut loc = Locator::new(&SymbolizerOptions {
        symfs: Some(symfs.clone()),
        ..opts(Vec::new())
    });
    let found = loc.binary(&path, Some(&id), None).unwrap();
    assert_eq!((found.origin, found.file), (Origin::Symfs, under));
}

#[test]
fn a_running_process_maps_a_deleted_binary() {
    // This test process maps a copy of a binary and deletes it: the recorded path is
    // gone, /proc/self/map_files still has the file.
    let dir = tempfile::tempdir().unwrap();
    let full = gcc(dir.path(), "prog", INLINE_C, &["-g", "-O2"]);
    let id = build_id(&full);
    let f = std::fs::File::open(&full).unwrap();
    // SAFETY: read-only map of our own file, which nothing writes.
    let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
    std::fs::remove_file(&full).unwrap();
    let path = format!("{} (deleted)", full.display());
    let me = std::process::id() as i32;
    let mapping = kairos_symbolize::ProcessMapping {
        pid: me,
        start: map.as_ptr() as u64,
    };
    let mut loc = Locator::new(&SymbolizerOptions {
        processes: true,
        ..opts(Vec::new())
    });
    match loc.binary(&path, Some(&id), Some(mapping)) {
        Ok(found) => {
            assert_eq!(found.origin, Origin::MapFiles { pid: me });
            assert_eq!(found.info.build_id.as_deref(), Some(id.as_str()));
        }
        Err(why) if !Path::new("/proc/self/map_files").exists() => {
            eprintln!("a_running_process_maps_a_deleted_binary: no /proc/self/map_files here ({why:?}); not checked")
        }
        Err(why) => panic!("{why:?}"),
    }
    // Not allowed to ask processes: not found, and said why.
    let mut loc = Locator::new(&opts(Vec::new()));
    assert!(loc.binary(&path, Some(&id), Some(mapping)).is_err());
    drop(map);
}
