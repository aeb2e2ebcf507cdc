//! `kairos import FILE.perf.data`: a perf.data recorded by perf becomes a result through
//! the same converter `kairos collect` uses.

use std::path::PathBuf;

use kairos_convert::{Background, ConvertOptions};
use kairos_perf_data::PerfFile;
use kairos_result::{Host, Source};
use kairos_symbolize::SymbolizerOptions;

use crate::args::ImportArgs;
use crate::error::{CliResult, UserError};
use kairos_analysis_hotspots::SPEC as SAMPLED;
use kairos_session::{self as session, PERF_DATA};

pub fn run(args: ImportArgs) -> CliResult {
    let from_stdin = args.file.as_os_str() == "-";
    let (mut dir, features) = if from_stdin {
        take_stdin(&args)?
    } else {
        take_file(&args)?
    };

    let here = session::this_host();
    let same_kernel = features.os_release.is_some()
        && features.os_release == here.kernel_release
        && features.hostname == here.name;
    let kernel_symbols = args.kallsyms.is_some() || same_kernel;
    // The converter copies this machine's kallsyms on a thread of its own while records
    // are decoded; kernel symbols then come from the copy.
    let mut background = Background::default();
    let kallsyms = match (&args.kallsyms, same_kernel) {
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
    {
        let m = dir.manifest_mut();
        // A perf.data file holds a sampled profile: the hotspots analysis reads it.
        m.kind = Some(SAMPLED.name.into());
        m.command_line = Some(std::env::args().collect());
        let file = if from_stdin {
            "standard input".to_string()
        } else {
            args.file.display().to_string()
        };
        m.source = Some(Source::Imported { file });
        m.host = Some(Host {
            name: features.hostname.clone(),
            cpu_model: features.cpu_desc.clone(),
            kernel_release: features.os_release.clone(),
            nr_cpus: features.nr_cpus.map(|(_, online)| online),
        });
        if let Some(cmdline) = &features.cmdline {
            m.notes
                .push(format!("recorded with: {}", cmdline.join(" ")));
        }
    }
    // The recording machine's nodes and sockets from the header's topology features, for
    // `report topology` (a header lists no devices; without the features it says so).
    if !from_stdin {
        let nodes: Vec<kairos_platform::HeaderNode<'_>> = features
            .numa_nodes
            .iter()
            .map(|n| kairos_platform::HeaderNode {
                id: n.id,
                mem_total_kb: n.mem_total_kb,
                cpus: &n.cpus,
            })
            .collect();
        if let Some(p) = kairos_platform::Platform::from_perf_header(
            &nodes,
            &features.core_siblings,
            &features.thread_siblings,
        ) {
            if let Err(e) = p.write(dir.path()) {
                dir.manifest_mut()
                    .notes
                    .push(format!("no platform snapshot: {e}"));
            }
        }
    }
    session::save(&dir)?;
    // --buildid-dir caches first (perf archive tarballs unpacked until the end), then
    // the user's own (~/.debug).
    let (mut buildid_dirs, _unpacked) =
        kairos_symbolize::buildid_cache::open_dirs(&args.buildid_dirs).map_err(|e| {
            UserError::failed(format!(
            "{e}; --buildid-dir takes a perf build-id cache directory or a `perf archive` tarball"
        ))
        })?;
    buildid_dirs.extend(kairos_symbolize::buildid_cache::default_dirs());
    let opts = ConvertOptions {
        symbolizer: SymbolizerOptions {
            symfs: args.symfs.clone(),
            debug_dirs: or_default(&args.debug_dirs, "/usr/lib/debug"),
            perf_map_dirs: or_default(&args.perf_map_dirs, "/tmp"),
            kallsyms,
            buildid_dirs,
            ..SymbolizerOptions::default()
        },
        kernel_symbols,
    };
    // Every recording is a sampled profile; the memory-access analysis claims the memory
    // recordings among them (its one decision), whose summary is its own. The summary's
    // function rows are made while the tables are written, for the others.
    let (mut functions, mut memory) = (None, None);
    let mut c =
        session::convert_result_full(&mut dir, &opts, &background, args.quiet, &mut |p, acc| {
            memory = kairos_analysis_memory_access::claim(&p.events, acc);
            if memory.is_none() {
                functions = kairos_analysis_hotspots::summary_rows(p);
            }
        })?;
    match &memory {
        Some(claim) => {
            kairos_analysis_memory_access::finish_import(&mut dir, &mut c, &features, claim)?
        }
        None => kairos_analysis_hotspots::print_summary_from(&dir, &c.profile, functions),
    }
    // The process ends next: freeing a large profile object by object would only cost time.
    std::mem::forget(c);
    Ok(())
}

/// A perf.data file: its header is read first, so that a file that is not perf.data
/// leaves no result behind; then it is linked (or copied) into the result.
fn take_file(
    args: &ImportArgs,
) -> CliResult<(kairos_result::ResultDir, kairos_perf_data::Features)> {
    let file = PerfFile::open(&args.file).map_err(|e| {
        UserError::failed(format!(
            "cannot import {}: {e}; give a perf.data file written by `perf record`",
            args.file.display()
        ))
    })?;
    let features = file.features().clone();
    drop(file);
    let dir = session::create_result_dir(args.result_dir.as_deref(), SAMPLED.result_suffix)?;
    let dest = dir.path().join(PERF_DATA);
    // The raw records travel with the result; a hard link costs nothing when possible.
    if std::fs::hard_link(&args.file, &dest).is_err() {
        std::fs::copy(&args.file, &dest).map_err(|e| {
            UserError::failed(format!(
                "cannot copy {} into {}: {e}; check free disk space",
                args.file.display(),
                dir.path().display()
            ))
        })?;
    }
    Ok((dir, features))
}

/// `kairos import -`: a pipe-mode stream (`perf record -o - ... | kairos import -`) is
/// written into the result as it arrives, then read like a file.
fn take_stdin(
    args: &ImportArgs,
) -> CliResult<(kairos_result::ResultDir, kairos_perf_data::Features)> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Err(UserError::usage("`kairos import -` reads perf.data from standard input; pipe it in: perf record -o - -- PROGRAM | kairos import -"));
    }
    let dir = session::create_result_dir(args.result_dir.as_deref(), SAMPLED.result_suffix)?;
    let dest = dir.path().join(PERF_DATA);
    let discard = |dir: &kairos_result::ResultDir| {
        let _ = std::fs::remove_dir_all(dir.path());
    };
    let copied = std::fs::File::create(&dest)
        .and_then(|mut f| std::io::copy(&mut std::io::stdin().lock(), &mut f));
    if let Err(e) = copied {
        // A stream cut short is still worth reading (perf record killed): keep what came.
        if !dest.exists() {
            discard(&dir);
            return Err(UserError::failed(format!(
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
            Err(UserError::failed(format!(
                "cannot import standard input: {e}; pipe in the output of `perf record -o -`"
            )))
        }
    }
}

fn or_default(given: &[PathBuf], default: &str) -> Vec<PathBuf> {
    if given.is_empty() {
        vec![PathBuf::from(default)]
    } else {
        given.to_vec()
    }
}
