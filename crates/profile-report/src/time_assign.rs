//! `--time-assignment METHOD` of `kairos report hotspots|timeline`: branch records become
//! extra time-stamped points (crate kairos-time-assignment) and the report is computed on
//! the derived profile. The report then says which method made its points and how many
//! points per sample it gained, so nobody mistakes estimated points for samples.

use std::path::Path;
use std::str::FromStr;

use kairos_analysis_api::Failure;
use kairos_model::Profile;
use kairos_time_assignment::{assign, to_profile, Method};

/// What a report prints about the time assignment it used.
pub struct Applied {
    pub method: Method,
    pub points_per_sample: f64,
    pub notes: Vec<String>,
}

impl Applied {
    /// The lines under a text report (stderr for CSV and JSON, which must stay parseable).
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![
            format!(
                "Time assignment: {} ({})",
                self.method,
                self.method.description()
            ),
            format!("Points per sample: {:.1}", self.points_per_sample),
        ];
        v.extend(
            self.notes
                .iter()
                .map(|n| format!("Time assignment note: {n}")),
        );
        v
    }
}

/// Parses `name`; for a method other than `none`, replaces `profile` by the profile of
/// its points. A branch method on a result without branch records is one clear error.
pub(crate) fn apply(name: &str, profile: &mut Profile, dir: &Path) -> Result<Applied, Failure> {
    let method = Method::from_str(name).map_err(|e| Failure::usage(e.to_string()))?;
    if method != Method::None && profile.branches.is_empty() {
        return Err(Failure::failed(format!(
            "--time-assignment {method} needs branch records and the result {} has none; collect with `-k branch-records=on` \
             on a CPU with LBR, emulate them from a trace with `kairos lab emulate-lbr`, or use --time-assignment none",
            dir.display()
        )));
    }
    let a = assign(profile, method).map_err(|e| Failure::failed(format!("{e}")))?;
    let applied = Applied {
        method,
        points_per_sample: a.points_per_sample,
        notes: a.notes.clone(),
    };
    if method != Method::None {
        *profile = to_profile(profile, &a);
    }
    Ok(applied)
}
