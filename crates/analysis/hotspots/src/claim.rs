//! Every recording is a sampled profile: the hotspots analysis claims whatever no other
//! analysis does (`kairos import`), and makes the summary's function rows while the tables
//! are written.

use kairos_analysis_api::{Claimed, Failure};
use kairos_convert::{Conversion, DataAccess};
use kairos_model::Profile;
use kairos_perf_data::Features;
use kairos_result::ResultDir;

use kairos_profile_report::Rows;

/// The spec's claim: always.
pub(crate) fn claim_import(profile: &Profile, _: &[DataAccess]) -> Option<Box<dyn Claimed>> {
    Some(Box::new(SampledProfile {
        functions: kairos_profile_report::summary_rows(profile),
    }))
}

struct SampledProfile {
    functions: Option<Rows>,
}

impl Claimed for SampledProfile {
    fn finish(
        self: Box<Self>,
        dir: &mut ResultDir,
        c: &mut Conversion,
        _: &Features,
    ) -> Result<(), Failure> {
        kairos_profile_report::print_summary_from(dir, &c.profile, self.functions);
        Ok(())
    }
}
