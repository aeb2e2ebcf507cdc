//! The shared back half of `collect` and `import`: a perf.data file inside a result
//! directory becomes symbolised Parquet tables and a completed manifest. Both commands
//! go through here, so a live recording and an imported file are treated identically.

use kairos_analysis_api::Failure;

use kairos_convert::{
    Background, Conversion, ConvertOptions, Converted, DataAccess, Progress, SideSample,
};
use kairos_model::Profile;
use kairos_perf_data::PerfFile;
use kairos_result::{Counts, Event, ResultDir};

use crate::progress::bytes_bar;
use crate::result::{save, PERF_DATA};

/// How a recording made on this machine is converted: kernel frames symbolised when the
/// collection kept a kallsyms copy (`finish_collection`), user frames from the binaries.
pub fn convert_options(kallsyms: Option<std::path::PathBuf>) -> ConvertOptions {
    ConvertOptions {
        kernel_symbols: kallsyms.is_some(),
        symbolizer: kairos_symbolize::SymbolizerOptions {
            kallsyms,
            ..Default::default()
        },
        keep_raw: false,
    }
}

/// Decodes, converts and symbolises `dir/perf.data`, writes the tables and fills the
/// manifest's counts, event and notes.
pub fn convert_result(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    quiet: bool,
) -> Result<Profile, Failure> {
    convert_inner(dir, opts, &Background::default(), quiet, &mut |_, _| {}).map(|c| c.profile)
}

/// Work on the converted profile (of the default event) that need not wait for the
/// tables: run while they are written when the recording has one event, after
/// otherwise. It is given the sampled data accesses too, so that work only one kind of
/// recording needs can be skipped for the other. Callers with nothing to do give
/// `&mut |_, _| {}`.
pub type Meanwhile<'a> = &'a mut (dyn FnMut(&Profile, &[DataAccess]) + Send);

/// As [`convert_result_with`], returning everything the converter found, with
/// `meanwhile` run on the profile while the tables are written (see [`Meanwhile`]).
pub fn convert_result_full(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    background: &Background,
    quiet: bool,
    meanwhile: Meanwhile<'_>,
) -> Result<Conversion, Failure> {
    convert_inner(dir, opts, background, quiet, meanwhile)
}

/// As [`convert_result`], with more work for the converter's symbolising thread, which
/// runs while records are decoded (the kallsyms snapshot of `kairos import`).
pub fn convert_result_with(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    background: &Background,
    quiet: bool,
) -> Result<Profile, Failure> {
    convert_inner(dir, opts, background, quiet, &mut |_, _| {}).map(|c| c.profile)
}

/// As [`convert_result`], also returning the side samples (page faults, tracepoints) and
/// the event names by attr, which the system overview turns into kernel entries.
pub fn convert_result_with_side(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    quiet: bool,
) -> Result<(Profile, Vec<SideSample>, Vec<String>), Failure> {
    convert_inner(dir, opts, &Background::default(), quiet, &mut |_, _| {})
        .map(|c| (c.profile, c.side_samples, c.events))
}

fn convert_inner(
    dir: &mut ResultDir,
    opts: &ConvertOptions,
    background: &Background,
    quiet: bool,
    meanwhile: Meanwhile<'_>,
) -> Result<Conversion, Failure> {
    let Converted {
        mut profile,
        decode_error,
        notes,
        events,
        side_samples,
        data_accesses,
        unresolved_accesses,
        left_out,
    } = convert_file(dir, opts, background, quiet)?;
    let default = describe(dir, &profile, decode_error.as_ref(), notes, &events);
    let ran_beside = write_tables(dir, &profile, &data_accesses, meanwhile)?;
    save(dir)?;
    if let Some(e) = decode_error {
        eprintln!("kairos: warning: the recording is damaged ({e}); the result keeps what came before that point");
    }
    if left_out > 0 {
        eprintln!("kairos: warning: {left_out} samples of the recording are not in the result; `kairos report summary` says why");
    }
    // The analyses that run now see one event, as reports do; the tables keep them all.
    profile.select(&default);
    if !ran_beside {
        meanwhile(&profile, &data_accesses);
    }
    Ok(Conversion {
        profile,
        side_samples,
        events,
        data_accesses,
        unresolved_accesses,
    })
}

/// The result's perf.data through the converter, with a progress bar of the bytes read.
fn convert_file(
    dir: &ResultDir,
    opts: &ConvertOptions,
    background: &Background,
    quiet: bool,
) -> Result<Converted, Failure> {
    let perf_data = dir.path().join(PERF_DATA);
    let file = PerfFile::open(&perf_data).map_err(|e| {
        Failure::failed(format!(
            "cannot read {}: {e}; is it a perf.data file written by perf record or kairos?",
            perf_data.display()
        ))
    })?;
    let bar = bytes_bar(quiet, file.data_size());
    let converted = kairos_convert::convert_with(&file, opts, background, &mut |p: Progress| {
        bar.set_length(p.total.max(1));
        bar.set_position(p.done);
    });
    bar.finish_and_clear();
    Ok(converted)
}

/// The manifest's notes, default event (with why) and counts; returns the default event.
fn describe(
    dir: &mut ResultDir,
    profile: &Profile,
    decode_error: Option<&String>,
    notes: Vec<String>,
    events: &[String],
) -> kairos_model::EventChoice {
    let m = dir.manifest_mut();
    if let Some(e) = decode_error {
        m.notes.push(format!(
            "the recording is damaged: {e}; everything before that point was kept"
        ));
    }
    m.notes.extend(notes);
    // The event reports show by default (the one that measures time, then the one with
    // the most samples; a hybrid CPU's core types together), and why.
    let (default, why) = profile.default_events();
    if m.event.is_none() && !events.is_empty() {
        let reason = match profile.merged_sentence(&default) {
            Some(merged) => format!("{}; {merged}", why.sentence()),
            None => why.sentence().to_string(),
        };
        m.event = Some(Event {
            name: default.name.clone(),
            reason: Some(reason),
        });
    }
    let mut counts = Counts::new(profile.samples.len() as u64, profile.losses);
    if decode_error.is_some() {
        counts.undecodable += 1;
    }
    m.counts = Some(counts);
    default
}

/// Writes the tables into the manifest's list and, for a recording of one event, runs
/// `meanwhile` beside the writing; returns whether it ran.
fn write_tables(
    dir: &mut ResultDir,
    profile: &Profile,
    data_accesses: &[DataAccess],
    meanwhile: Meanwhile<'_>,
) -> Result<bool, Failure> {
    // One event: the profile already is what the analyses see (the converter gave it the
    // default event's weight), so `meanwhile` needs no selection and runs beside the
    // writing, which does not change it.
    let one_event = profile.sample_events.is_empty();
    let (ran, written) = std::thread::scope(|scope| {
        let m = &mut *meanwhile;
        // Without a thread (it could not start), it runs after the writing instead.
        let beside = one_event
            .then(|| {
                std::thread::Builder::new()
                    .name("kairos-meanwhile".into())
                    .spawn_scoped(scope, move || m(profile, data_accesses))
                    .ok()
            })
            .flatten();
        let written = kairos_result::write_profile(dir, profile);
        let ran = beside.map(|t| t.join());
        (ran, written)
    });
    let ran_beside = match ran {
        Some(Ok(())) => true,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => false,
    };
    dir.manifest_mut().tables = written.map_err(|e| {
        Failure::failed(format!(
            "cannot write the result tables in {}: {e}; check free disk space and permissions",
            dir.path().display()
        ))
    })?;
    Ok(ran_beside)
}
