//! Fuzzing harness of the perf.data reader and the converter, shared by the AFL++ binaries
//! (`src/bin/fuzz_*.rs`, built by `cargo afl build --features afl`), the `replay` tool and
//! the regression test (`tests/regressions.rs`, plain `cargo test`, no AFL needed).
//!
//! A target takes any bytes and must return normally: the reader and the converter promise
//! that nothing panics on any input (docs/ARCHITECTURE.md). A panic, an abort, an
//! out-of-memory or a hang is a bug of the code under test, or a broken contract checked
//! here with `assert!` (for example: the record iterator yields nothing after an error).

use std::io::Write;
use std::path::PathBuf;

use kairos_convert::{convert, ConvertOptions};
use kairos_perf_data::{PerfFile, Record};
use kairos_symbolize::SymbolizerOptions;

/// A fuzz target: name and entry point.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, by the name that `scripts/fuzz.sh` and `fuzz/regressions/<name>/` use.
pub const TARGETS: &[Target] = &[Target { name: "reader", run: reader }, Target { name: "convert", run: converter }];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Reader target: parse the header, attrs and features, then walk every record to the
/// end, formatting each (so every decoded field is read) and calling every accessor.
pub fn reader(data: &[u8]) {
    let mut out = std::io::sink();
    let file = match PerfFile::from_bytes(data.to_vec()) {
        Ok(file) => file,
        Err(e) => {
            let _ = write!(out, "{e} {e:?}");
            return;
        }
    };
    let _ = write!(out, "{file:?} {:?} {}", file.features(), file.data_size());
    let _ = write!(out, "{:?}", file.header());
    for bit in 0..300 {
        let _ = file.header().has_feature(bit);
    }
    for a in file.attrs() {
        let attr = &a.attr;
        let _ = write!(out, "{a:?} {} {} {:?} {:?}", attr.event_name(), attr.precise_ip(), attr.sample_period(), attr.sample_freq());
    }
    let mut records = file.records();
    let mut last_offset = records.offset();
    let mut failed = false;
    while let Some(record) = records.next() {
        assert!(!failed, "the record iterator yielded an item after an error");
        match record {
            Ok(record) => {
                let _ = write!(out, "{record:?}");
                touch(&record, &mut out);
            }
            Err(e) => {
                let _ = write!(out, "{e} {e:?}");
                failed = true;
            }
        }
        let offset = records.offset();
        assert!(offset >= last_offset, "record offset went back from {last_offset} to {offset}");
        last_offset = offset;
    }
    assert!(records.next().is_none(), "the record iterator is not fused");
}

/// Calls the accessors of a record that `{:?}` does not.
fn touch(record: &Record<'_>, out: &mut impl Write) {
    match record {
        Record::Sample(s) => {
            let _ = write!(out, "{:?}", s.weight_struct());
            if let Some(b) = &s.branch_stack {
                for e in &b.entries {
                    let f = e.flags;
                    let _ = write!(
                        out,
                        "{} {} {} {} {} {} {} {} {} {} {:?}",
                        f.mispred(),
                        f.predicted(),
                        f.in_tx(),
                        f.abort(),
                        f.cycles(),
                        f.type_bits(),
                        f.spec(),
                        f.new_type(),
                        f.privilege(),
                        f.reserved(),
                        f.branch_type()
                    );
                }
            }
            for regs in [&s.regs_user, &s.regs_intr].into_iter().flatten() {
                for reg in 0..70 {
                    let _ = write!(out, "{:?}", regs.get(reg));
                }
            }
        }
        Record::Mmap(m) => {
            let _ = write!(out, "{} {}", m.is_kernel(), m.is_data());
        }
        _ => {}
    }
}

/// Where the converter looks for binaries, debug files, perf maps and kallsyms: nowhere.
/// The symfs root does not exist, so even a recorded path such as `../../usr/bin/ls`
/// resolves to nothing (the kernel fails the lookup at the missing first component), and
/// a run neither depends on this machine's files nor spends time reading them.
pub fn convert_options() -> ConvertOptions {
    let nowhere = PathBuf::from("/nonexistent-kairos-fuzz");
    ConvertOptions {
        symbolizer: SymbolizerOptions {
            symfs: Some(nowhere.clone()),
            debug_dirs: Vec::new(),
            perf_map_dirs: Vec::new(),
            kallsyms: Some(nowhere.join("kallsyms")),
            // No build-id caches, no debuginfod, no running processes either.
            ..SymbolizerOptions::hermetic()
        },
        kernel_symbols: true,
        // Every side sample's payload kept too: that path sees every input as well.
        keep_raw: true,
    }
}

/// Converter target: records to a profile (threads, mappings, unwinding, stacks, branch
/// records), with symbolisation pointed at nothing on disk.
pub fn converter(data: &[u8]) {
    let Ok(file) = PerfFile::from_bytes(data.to_vec()) else { return };
    let converted = convert(&file, &convert_options(), &mut |_| {});
    let _ = write!(std::io::sink(), "{converted:?}");
}

/// Runs `target` on `data`, turning a panic into `Err(message at file:line)`.
pub fn run_catching(target: &Target, data: &[u8]) -> Result<(), String> {
    use std::cell::{Cell, RefCell};
    use std::panic;
    thread_local! {
        static CATCHING: Cell<bool> = const { Cell::new(false) };
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    // One hook for the whole process (tests run on several threads): it records the panic
    // of a thread inside run_catching and leaves every other panic to the previous hook.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-string panic payload)".to_string());
            let at = info.location().map_or_else(|| "unknown location".to_string(), |l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            LAST.with(|last| *last.borrow_mut() = Some(format!("{message} at {at}")));
        }));
    });
    CATCHING.with(|c| c.set(true));
    let outcome = panic::catch_unwind(|| (target.run)(data));
    CATCHING.with(|c| c.set(false));
    outcome.map_err(|_| LAST.with(|last| last.borrow_mut().take()).unwrap_or_else(|| "panic".to_string()))
}

/// The files directly in `dir` (none when it does not exist), sorted, hidden files and
/// README.md excluded.
pub fn inputs_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        p.is_file() && !name.starts_with('.') && name != "README.md"
    });
    files.sort();
    files
}

/// What the reader makes of `data`, in one line (for checking seeds): attrs, records,
/// samples and where decoding stopped.
pub fn reader_summary(data: &[u8]) -> String {
    let file = match PerfFile::from_bytes(data.to_vec()) {
        Ok(file) => file,
        Err(e) => return format!("not opened: {e}"),
    };
    let (mut records, mut samples, mut error) = (0, 0, None);
    for record in file.records() {
        match record {
            Ok(Record::Sample(_)) => (records, samples) = (records + 1, samples + 1),
            Ok(_) => records += 1,
            Err(e) => error = Some(e.to_string()),
        }
    }
    let end = error.map_or_else(|| "to the end".to_string(), |e| format!("then: {e}"));
    format!("{} attrs, {records} records ({samples} samples), {} features, {end}", file.attrs().len(), file.features().present.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_catching_reports_the_panic_and_its_location() {
        let boom = Target { name: "boom", run: |_| panic!("boom {}", 42) };
        let err = run_catching(&boom, b"").expect_err("panicked");
        assert!(err.starts_with("boom 42 at "), "{err}");
        assert!(err.contains("lib.rs:"), "{err}");
        assert!(run_catching(target("reader").expect("reader"), b"PERFILE2").is_ok());
    }

    #[test]
    fn every_target_takes_empty_and_tiny_inputs() {
        for t in TARGETS {
            for data in [&b""[..], b"PERFILE2", b"2ELIFREP", &[0xff; 200]] {
                assert_eq!(run_catching(t, data), Ok(()), "{} on {data:?}", t.name);
            }
        }
    }
}
