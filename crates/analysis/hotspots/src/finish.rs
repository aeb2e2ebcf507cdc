//! The end of a hotspots collection: what the collector reported goes into the manifest,
//! the recording is converted into the result's tables, and the summary is printed.

use kairos_analysis_api::Failure;
use kairos_collector::{CollectError, CollectSummary, TargetExit};
use kairos_result::{Capability, ResultDir};
use kairos_session as session;

use crate::branches::BRANCH_CAPABILITY;

pub(crate) fn finish(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
    quiet: bool,
) -> Result<(), Failure> {
    let (summary, kallsyms) = session::finish_collection(dir, summary)?;
    {
        let m = dir.manifest_mut();
        m.capabilities.push(Capability {
            name: "kernel samples".into(),
            available: summary.include_kernel,
            detail: None,
            reason: (!summary.include_kernel).then(|| {
                "kernel.perf_event_paranoid forbids kernel profiling for this user".into()
            }),
        });
        let b = &summary.branch_records;
        m.capabilities.push(Capability {
            name: BRANCH_CAPABILITY.into(),
            available: b.recorded,
            detail: b.recorded.then(|| b.detail.clone()),
            reason: (!b.recorded).then(|| b.detail.clone()),
        });
        if !b.recorded {
            // Notes are printed under every text report, so nobody looks for them in vain.
            m.notes
                .push(format!("branch records: not recorded: {}", b.detail));
        }
    }
    session::save(dir)?;
    session::warn_write_error(&summary.stopped_by);

    let convert = session::convert_options(kallsyms);
    let mut functions = None;
    let c =
        session::convert_result_full(dir, &convert, &Default::default(), quiet, &mut |p, _| {
            functions = kairos_profile_report::summary_rows(p)
        })?;
    kairos_profile_report::print_summary_from(dir, &c.profile, functions);
    if let Some(TargetExit::Signal(sig)) = summary.target_exit {
        eprintln!(
            "kairos: the target was killed by signal {sig}; the result covers it up to that point"
        );
    }
    Ok(())
}
