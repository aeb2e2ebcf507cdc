//! The result set-up of `kairos import`, as `start_manifest` and the target are for
//! `kairos collect`: the perf.data file (or pipe-mode stream) goes into a new result
//! directory, the manifest says where it came from and on which machine, the recording
//! machine's topology is kept, and the symboliser is told where to look. What the
//! recording then becomes is the analyses' decision (the registry's `import`).

use std::path::{Path, PathBuf};

use kairos_analysis_api::Failure;
use kairos_convert::{Background, ConvertOptions};
use kairos_perf_data::{Features, PerfFile};
use kairos_result::{Host, ResultDir, Source};
use kairos_symbolize::buildid_cache::{self, UnpackedArchive};
use kairos_symbolize::SymbolizerOptions;

use crate::result::{create_result_dir, save, PERF_DATA};

/// `kairos import FILE|- [options]`, as plain data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportRequest {
    /// A perf.data file, or `-` for standard input.
    pub file: PathBuf,
    pub result_dir: Option<PathBuf>,
    pub symfs: Option<PathBuf>,
    /// Directories of perf-PID.map files (empty: /tmp).
    pub perf_map_dirs: Vec<PathBuf>,
    /// Directories of separate debug files (empty: /usr/lib/debug).
    pub debug_dirs: Vec<PathBuf>,
    /// perf build-id caches or `perf archive` tarballs, searched before ~/.debug.
    pub buildid_dirs: Vec<PathBuf>,
    pub kallsyms: Option<PathBuf>,
    pub quiet: bool,
}

/// A result ready for conversion: its directory holds the recording and a manifest.
pub struct Imported {
    pub dir: ResultDir,
    /// The recording's header.
    pub header: Features,
    pub options: ConvertOptions,
    pub background: Background,
    /// Tarballs of `--buildid-dir`, unpacked until this is dropped.
    pub unpacked: Vec<UnpackedArchive>,
}

/// Takes the recording into a new result (`kind`, named `rNNN<suffix>`), describes it and
/// prepares its conversion. A file that is not perf.data leaves no result behind.
pub fn start_import(req: &ImportRequest, kind: &str, suffix: &str) -> Result<Imported, Failure> {
    let from_stdin = req.file.as_os_str() == "-";
    let (mut dir, header) = if from_stdin {
        take_stdin(req.result_dir.as_deref(), suffix)?
    } else {
        take_file(&req.file, req.result_dir.as_deref(), suffix)?
    };
    let here = crate::this_host();
    let same_kernel = header.os_release.is_some()
        && header.os_release == here.kernel_release
        && header.hostname == here.name;
    let (kallsyms, background) = kernel_symbols(&mut dir, req, same_kernel);
    describe(&mut dir, req, &header, kind, from_stdin);
    // A pipe-mode stream has no header features: no topology to keep.
    if !from_stdin {
        keep_topology(&mut dir, &header);
    }
    save(&dir)?;
    let (mut buildid_dirs, unpacked) =
        buildid_cache::open_dirs(&req.buildid_dirs).map_err(|e| {
            Failure::failed(format!(
            "{e}; --buildid-dir takes a perf build-id cache directory or a `perf archive` tarball"
        ))
        })?;
    buildid_dirs.extend(buildid_cache::default_dirs());
    let options = ConvertOptions {
        symbolizer: SymbolizerOptions {
            symfs: req.symfs.clone(),
            debug_dirs: or_default(&req.debug_dirs, "/usr/lib/debug"),
            perf_map_dirs: or_default(&req.perf_map_dirs, "/tmp"),
            kallsyms,
            buildid_dirs,
            ..SymbolizerOptions::default()
        },
        kernel_symbols: req.kallsyms.is_some() || same_kernel,
        keep_raw: false,
    };
    Ok(Imported {
        dir,
        header,
        options,
        background,
        unpacked,
    })
}

/// Where kernel symbols come from: `--kallsyms`, else this machine's kallsyms when the
/// recording was made on this kernel (copied on a thread of its own while records are
/// decoded), else nowhere, which the manifest says.
fn kernel_symbols(
    dir: &mut ResultDir,
    req: &ImportRequest,
    same_kernel: bool,
) -> (Option<PathBuf>, Background) {
    let mut background = Background::default();
    let kallsyms = match (&req.kallsyms, same_kernel) {
        (Some(k), _) => Some(k.clone()),
        (None, true) => {
            background.kallsyms_snapshot = Some(dir.path().to_path_buf());
            None
        }
        (None, false) => {
            dir.manifest_mut().notes.push(
                "kernel frames are not symbolised: the file was recorded on another machine or kernel; pass --kallsyms FILE from that machine".into(),
            );
            None
        }
    };
    (kallsyms, background)
}

/// The manifest: the kind the recording is read as until an analysis claims it, the
/// command line, where it came from, the recording machine, perf's command line.
fn describe(dir: &mut ResultDir, req: &ImportRequest, header: &Features, kind: &str, stdin: bool) {
    let m = dir.manifest_mut();
    m.kind = Some(kind.into());
    m.command_line = Some(std::env::args().collect());
    let file = if stdin {
        "standard input".to_string()
    } else {
        req.file.display().to_string()
    };
    m.source = Some(Source::Imported { file });
    m.host = Some(Host {
        name: header.hostname.clone(),
        cpu_model: header.cpu_desc.clone(),
        kernel_release: header.os_release.clone(),
        nr_cpus: header.nr_cpus.map(|(_, online)| online),
    });
    if let Some(cmdline) = &header.cmdline {
        m.notes
            .push(format!("recorded with: {}", cmdline.join(" ")));
    }
}

/// The recording machine's nodes and sockets from the header's topology features, for
/// `report topology` (a header lists no devices; without the features it says so).
fn keep_topology(dir: &mut ResultDir, header: &Features) {
    let nodes = header_nodes(header);
    if let Some(p) = kairos_platform::Platform::from_perf_header(
        &nodes,
        &header.core_siblings,
        &header.thread_siblings,
    ) {
        if let Err(e) = p.write(dir.path()) {
            dir.manifest_mut()
                .notes
                .push(format!("no platform snapshot: {e}"));
        }
    }
}

/// A perf.data file: its header is read first, so that a file that is not perf.data
/// leaves no result behind; then it is linked (or copied) into the result.
fn take_file(
    file: &Path,
    result_dir: Option<&Path>,
    suffix: &str,
) -> Result<(ResultDir, Features), Failure> {
    let opened = PerfFile::open(file).map_err(|e| {
        Failure::failed(format!(
            "cannot import {}: {e}; give a perf.data file written by `perf record`",
            file.display()
        ))
    })?;
    let header = opened.features().clone();
    drop(opened);
    let dir = create_result_dir(result_dir, suffix)?;
    let dest = dir.path().join(PERF_DATA);
    // The raw records travel with the result; a hard link costs nothing when possible.
    if std::fs::hard_link(file, &dest).is_err() {
        std::fs::copy(file, &dest).map_err(|e| {
            Failure::failed(format!(
                "cannot copy {} into {}: {e}; check free disk space",
                file.display(),
                dir.path().display()
            ))
        })?;
    }
    Ok((dir, header))
}

/// `kairos import -`: a pipe-mode stream (`perf record -o - ... | kairos import -`) is
/// written into the result as it arrives, then read like a file.
fn take_stdin(result_dir: Option<&Path>, suffix: &str) -> Result<(ResultDir, Features), Failure> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Err(Failure::usage("`kairos import -` reads perf.data from standard input; pipe it in: perf record -o - -- PROGRAM | kairos import -"));
    }
    let dir = create_result_dir(result_dir, suffix)?;
    let dest = dir.path().join(PERF_DATA);
    let discard = |dir: &ResultDir| {
        let _ = std::fs::remove_dir_all(dir.path());
    };
    let copied = std::fs::File::create(&dest)
        .and_then(|mut f| std::io::copy(&mut std::io::stdin().lock(), &mut f));
    if let Err(e) = copied {
        // A stream cut short is still worth reading (perf record killed): keep what came.
        if !dest.exists() {
            discard(&dir);
            return Err(Failure::failed(format!(
                "cannot write {}: {e}; check free disk space",
                dest.display()
            )));
        }
        eprintln!(
            "kairos: warning: reading standard input stopped early ({e}); importing what arrived"
        );
    }
    match PerfFile::open(&dest) {
        Ok(file) => Ok((dir, file.features().clone())),
        Err(e) => {
            discard(&dir);
            Err(Failure::failed(format!(
                "cannot import standard input: {e}; pipe in the output of `perf record -o -`"
            )))
        }
    }
}

/// The NUMA nodes of a perf.data header's NUMA_TOPOLOGY, as the platform reads them.
pub fn header_nodes(header: &Features) -> Vec<kairos_platform::HeaderNode<'_>> {
    header
        .numa_nodes
        .iter()
        .map(|n| kairos_platform::HeaderNode {
            id: n.id,
            mem_total_kb: n.mem_total_kb,
            cpus: &n.cpus,
        })
        .collect()
}

fn or_default(given: &[PathBuf], default: &str) -> Vec<PathBuf> {
    if given.is_empty() {
        vec![PathBuf::from(default)]
    } else {
        given.to_vec()
    }
}
