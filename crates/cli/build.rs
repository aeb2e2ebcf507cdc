//! Build script of the `kairos` package: compiles the C sample programs in
//! `samples/*.c` (workspace root) with the system C compiler into
//! `<target>/<profile>/samples/NAME`, next to the `kairos` binary.
//!
//! Compiler: `$KAIROS_SAMPLES_CC`, else `$CC`, else `cc`.
//! Flags: `-O2 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls`
//! (+ `-mno-omit-leaf-frame-pointer` on x86-64/aarch64) `-pthread ... -lm`, plus
//! `$KAIROS_SAMPLES_CFLAGS` (split on whitespace). Position-independent executables
//! stay the distribution default (PIE), as real programs are, so the samples exercise
//! the load-bias path of symbolisation.
//! `KAIROS_SKIP_SAMPLES=1` skips the samples (the samples tests then fail and say so).

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    if let Err(msg) = run() {
        eprintln!("\nerror: kairos build script: {msg}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "KAIROS_SAMPLES_CC",
        "CC",
        "KAIROS_SAMPLES_CFLAGS",
        "KAIROS_SKIP_SAMPLES",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?);
    // crates/cli -> workspace root
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the workspace root above CARGO_MANIFEST_DIR")?;
    let samples_src = root.join("samples");
    println!("cargo:rerun-if-changed={}", samples_src.display());

    if env::var_os("KAIROS_SKIP_SAMPLES").is_some_and(|v| v != "0" && !v.is_empty()) {
        println!("cargo:warning=KAIROS_SKIP_SAMPLES is set: the C sample programs are not built");
        return Ok(());
    }

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    // OUT_DIR = <target>/<profile>/build/kairos-xxxx/out
    let profile_dir = out_dir
        .ancestors()
        .nth(3)
        .ok_or_else(|| format!("unexpected OUT_DIR layout: {}", out_dir.display()))?;
    let dest = profile_dir.join("samples");

    let host = env::var("HOST").unwrap_or_default();
    let target = env::var("TARGET").unwrap_or_default();
    let explicit_cc = env::var_os("KAIROS_SAMPLES_CC").or_else(|| env::var_os("CC"));
    if host != target && explicit_cc.is_none() {
        println!(
            "cargo:warning=cross-compiling ({host} -> {target}) without CC or KAIROS_SAMPLES_CC: \
             the C sample programs are not built"
        );
        return Ok(());
    }
    let cc: OsString = explicit_cc.unwrap_or_else(|| OsString::from("cc"));

    let mut sources: Vec<PathBuf> = match std::fs::read_dir(&samples_src) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "c"))
            .collect(),
        Err(e) => {
            return Err(format!(
                "cannot read the samples directory {}: {e}",
                samples_src.display()
            ))
        }
    };
    sources.sort();
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    for h in std::fs::read_dir(&samples_src)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "h"))
    {
        println!("cargo:rerun-if-changed={}", h.display());
    }
    // The request markers' header, which `orders` includes.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("runtime/requests/kairos_requests.h").display()
    );
    if sources.is_empty() {
        return Ok(());
    }

    // Is there a compiler at all?
    match Command::new(&cc)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => {}
        Err(e) => {
            return Err(format!(
                "the C compiler `{}` could not be run ({e}); it is needed to build the sample \
                 programs in {}.\n       Install one (Debian/Ubuntu: `apt-get install gcc`, \
                 Fedora: `dnf install gcc`), or point CC / KAIROS_SAMPLES_CC at one, or set \
                 KAIROS_SKIP_SAMPLES=1 to build without the samples.",
                cc.to_string_lossy(),
                samples_src.display()
            ))
        }
    }

    std::fs::create_dir_all(&dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;

    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let mut flags: Vec<String> = [
        "-O2",
        "-g",
        "-fno-omit-frame-pointer",
        "-fno-inline",
        "-fno-optimize-sibling-calls",
        "-Wall",
        "-Wextra",
        "-pthread",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if arch == "x86_64" || arch == "aarch64" {
        flags.push("-mno-omit-leaf-frame-pointer".to_string());
    }
    if let Ok(extra) = env::var("KAIROS_SAMPLES_CFLAGS") {
        flags.extend(extra.split_whitespace().map(str::to_string));
    }

    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .iter()
            .map(|src| {
                let cc = &cc;
                let flags = &flags;
                let dest = &dest;
                scope.spawn(move || compile(cc, flags, src, dest))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a compiler thread failed".to_string()))
            })
            .collect()
    });
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    trace_runtime(&cc, &flags, root, profile_dir, &dest)?;
    memtrack_runtime(&cc, root, profile_dir)
}

/// The allocation tracker of `kairos collect memory-consumption` (runtime/memtrack/*.c) as
/// `<profile>/lib/libkairos_memtrack.so`, preloaded into the target. Frame pointers are
/// kept because its stack walk starts from its own frames.
fn memtrack_runtime(cc: &OsString, root: &Path, profile_dir: &Path) -> Result<(), String> {
    let dir = root.join("runtime/memtrack");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    srcs.sort();
    for s in &srcs {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    let lib = profile_dir.join("lib");
    std::fs::create_dir_all(&lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    let out = lib.join("libkairos_memtrack.so");
    let tmp = lib.join(format!("libkairos_memtrack.so.tmp{}", std::process::id()));
    let mut cmd = Command::new(cc);
    // -fexceptions: a C++ bad_alloc may unwind through the operator new hooks.
    cmd.args([
        "-O2",
        "-g",
        "-fPIC",
        "-shared",
        "-fexceptions",
        "-fno-omit-frame-pointer",
        "-fvisibility=hidden",
        "-pthread",
        "-Wall",
        "-Wextra",
    ]);
    if env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64" || a == "aarch64") {
        cmd.arg("-mno-omit-leaf-frame-pointer");
    }
    let o = cmd
        .args(&srcs)
        .arg("-ldl")
        .arg("-o")
        .arg(&tmp)
        .output()
        .map_err(|e| format!("cannot run the compiler: {e}"))?;
    if !o.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "building {} failed:\n{}",
            out.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    std::fs::rename(&tmp, &out)
        .map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), out.display()))
}

/// The tracing runtime of `kairos collect trace` (runtime/trace/kairos_trace.c) as
/// `<profile>/lib/libkairos_trace.so` (preloaded into instrumented programs),
/// `kairos_trace.o` and `libkairos_trace.a` (to link it in), and the samples `transitions`
/// and `spikes` built with -finstrument-functions and linked with it, as
/// `samples/NAME-instrumented`.
fn trace_runtime(
    cc: &OsString,
    flags: &[String],
    root: &Path,
    profile_dir: &Path,
    samples: &Path,
) -> Result<(), String> {
    let src = root.join("runtime/trace/kairos_trace.c");
    println!("cargo:rerun-if-changed={}", src.display());
    let lib = profile_dir.join("lib");
    std::fs::create_dir_all(&lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    let run = |args: Vec<OsString>, out: &Path| -> Result<(), String> {
        let mut tmp = out.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let mut full = args.clone();
        full.push("-o".into());
        full.push(tmp.clone().into_os_string());
        let o = Command::new(if args.first().is_some_and(|a| a == "rcs") {
            OsString::from("ar")
        } else {
            cc.clone()
        })
        .args(if args.first().is_some_and(|a| a == "rcs") {
            args.clone()
        } else {
            full
        })
        .output()
        .map_err(|e| format!("cannot run the compiler: {e}"))?;
        if !o.status.success() {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!(
                "building {} failed:\n{}",
                out.display(),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        if tmp.exists() {
            std::fs::rename(&tmp, out)
                .map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), out.display()))?;
        }
        Ok(())
    };
    // The runtime itself is never instrumented (and marks every function so as well).
    let common: Vec<OsString> = ["-O2", "-g", "-fPIC", "-pthread", "-Wall", "-Wextra"]
        .iter()
        .map(OsString::from)
        .collect();
    let so = lib.join("libkairos_trace.so");
    run(
        [
            common.clone(),
            vec!["-shared".into(), src.clone().into_os_string()],
        ]
        .concat(),
        &so,
    )?;
    let obj = lib.join("kairos_trace.o");
    run(
        [common, vec!["-c".into(), src.into_os_string()]].concat(),
        &obj,
    )?;
    let a = lib.join("libkairos_trace.a");
    let _ = std::fs::remove_file(&a);
    run(
        vec![
            "rcs".into(),
            a.clone().into_os_string(),
            obj.clone().into_os_string(),
        ],
        &a,
    )?;
    for name in ["transitions", "spikes"] {
        let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
        // `ticks` and `busy` are always_inline helpers: GCC instruments inlined functions
        // too, which would show calls the plain build never makes (and that uftrace's -pg
        // build, uprobes and LBR never see). Excluding them keeps the traced calls the
        // program's real calls.
        args.push("-finstrument-functions".into());
        args.push("-finstrument-functions-exclude-function-list=ticks,busy".into());
        args.push(
            root.join("samples")
                .join(format!("{name}.c"))
                .into_os_string(),
        );
        args.push(obj.clone().into_os_string());
        args.push("-lm".into());
        run(args, &samples.join(format!("{name}-instrumented")))?;
    }
    Ok(())
}

fn compile(cc: &OsString, flags: &[String], src: &Path, dest: &Path) -> Result<(), String> {
    let name = src
        .file_stem()
        .ok_or_else(|| format!("bad source name {}", src.display()))?;
    let out = dest.join(name);
    // Write to a temporary name, then rename: a concurrent build or test never sees a
    // half-written executable.
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dest.join(tmp_name);

    let output = Command::new(cc)
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", cc.to_string_lossy()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "`{} {} -o {} {} -lm` failed ({}):\n{}",
            cc.to_string_lossy(),
            flags.join(" "),
            out.display(),
            src.display(),
            output.status,
            stderr
        ));
    }
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        println!("cargo:warning={}: {line}", src.display());
    }
    std::fs::rename(&tmp, &out).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot move {} to {}: {e}", tmp.display(), out.display())
    })
}
