//! The shared back half of `collect` and `import`: a perf.data file inside a result
//! directory becomes symbolised Parquet tables and a completed manifest. Both commands
//! go through here, so a live recording and an imported file are treated identically.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use kairos_convert::{Background, ConvertOptions, Converted, Progress};
use kairos_model::Profile;
use kairos_perf_data::PerfFile;
use kairos_result::{Counts, Event, ResultDir};

use crate::error::{CliResult, UserError};

/// Name of the raw recording inside a result directory.
pub const PERF_DATA: &str = "perf.data";

/// Decodes, converts and symbolises `dir/perf.data`, writes the tables and fills the
/// manifest's counts, event and notes.
pub fn convert_result(dir: &mut ResultDir, opts: &ConvertOptions, quiet: bool) -> CliResult<Profile> {
    convert_result_with_side(dir, opts, quiet).map(|(p, _, _)| p)
}

/// As [`convert_result`], with more work for the converter's symbolising thread, which
/// runs while records are decoded (the kallsyms snapshot of `kairos import`).
pub fn convert_result_with(dir: &mut ResultDir, opts: &ConvertOptions, background: &Background, quiet: bool) -> CliResult<Profile> {
    convert_inner(dir, opts, background, quiet).map(|(p, _, _)| p)
}

/// As [`convert_result`], also returning the side samples (page faults, tracepoints) and
/// the event names by attr, which the system overview turns into kernel entries.
pub fn convert_result_with_side(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    quiet: bool,
) -> CliResult<(Profile, Vec<kairos_convert::SideSample>, Vec<String>)> {
    convert_inner(dir, opts, &Background::default(), quiet)
}

fn convert_inner(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    background: &Background,
    quiet: bool,
) -> CliResult<(Profile, Vec<kairos_convert::SideSample>, Vec<String>)> {
    let perf_data = dir.path().join(PERF_DATA);
    let file = PerfFile::open(&perf_data).map_err(|e| {
        UserError::failed(format!("cannot read {}: {e}; is it a perf.data file written by perf record or kairos?", perf_data.display()))
    })?;
    let bar = progress_bar(quiet, file.data_size());
    let Converted { mut profile, decode_error, notes, events, side_samples, left_out } = kairos_convert::convert_with(&file, opts, background, &mut |p: Progress| {
        bar.set_length(p.total.max(1));
        bar.set_position(p.done);
    });
    bar.finish_and_clear();

    let m = dir.manifest_mut();
    if let Some(e) = &decode_error {
        m.notes.push(format!("the recording is damaged: {e}; everything before that point was kept"));
    }
    m.notes.extend(notes);
    if m.event.is_none() {
        // The event reports show by default: the first that has samples.
        if let Some(name) = events.get(profile.default_event() as usize) {
            let reason = if events.len() > 1 { "the first recorded event with samples" } else { "as recorded in the perf.data file" };
            m.event = Some(Event { name: name.clone(), reason: Some(reason.into()) });
        }
    }
    let mut counts = Counts::new(profile.samples.len() as u64, profile.losses);
    if decode_error.is_some() {
        counts.undecodable += 1;
    }
    m.counts = Some(counts);
    let tables = kairos_result::write_profile(dir, &profile).map_err(|e| {
        UserError::failed(format!("cannot write the result tables in {}: {e}; check free disk space and permissions", dir.path().display()))
    })?;
    dir.manifest_mut().tables = tables;
    save(dir)?;
    if let Some(e) = decode_error {
        eprintln!("kairos: warning: the recording is damaged ({e}); the result keeps what came before that point");
    }
    if left_out > 0 {
        eprintln!("kairos: warning: {left_out} samples of the recording are not in the result; `kairos report summary` says why");
    }
    // The analyses that run now see one event, as reports do; the tables keep them all.
    let default = profile.default_event();
    profile.select_event(default);
    Ok((profile, side_samples, events))
}

pub fn save(dir: &ResultDir) -> CliResult {
    dir.save_manifest().map_err(|e| {
        UserError::failed(format!("cannot write the manifest of {}: {e}; check free disk space and permissions", dir.path().display()))
    })
}

/// Creates the result directory: `-r DIR` as given (refusing an existing result), or the
/// next free `rNNN<suffix>` in the current directory.
pub fn create_result_dir(explicit: Option<&Path>, suffix: &str) -> CliResult<ResultDir> {
    let made = match explicit {
        Some(p) => ResultDir::create(p),
        None => ResultDir::create_next(Path::new("."), suffix),
    };
    made.map_err(|e| match e {
        kairos_result::Error::AlreadyExists { path } => UserError::failed(format!(
            "result directory {} already exists and is not empty; choose another with -r DIR or remove it first",
            path.display()
        )),
        other => UserError::failed(format!("cannot create the result directory: {other}")),
    })
}

/// Copies /proc/kallsyms into the result when its addresses are visible, so kernel
/// frames stay symbolisable later. Returns the copy's path, or why there is none.
pub fn snapshot_kallsyms(dir: &Path) -> Result<PathBuf, String> {
    kairos_convert::snapshot_kallsyms(dir)
}

fn progress_bar(quiet: bool, total: u64) -> ProgressBar {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total.max(1));
    if let Ok(style) = ProgressStyle::with_template("converting {bar:40} {bytes}/{total_bytes} {eta}") {
        bar.set_style(style);
    }
    bar
}

/// This machine, as the manifest describes a host.
pub fn this_host() -> kairos_result::Host {
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct it is given; on failure the fields stay zeroed.
    let ok = unsafe { libc::uname(&mut uts) } == 0;
    let field = |f: &[libc::c_char]| -> Option<String> {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        (ok && !bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned())
    };
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()));
    kairos_result::Host {
        name: field(&uts.nodename),
        cpu_model,
        kernel_release: field(&uts.release),
        nr_cpus: std::thread::available_parallelism().ok().map(|n| n.get() as u32),
    }
}
