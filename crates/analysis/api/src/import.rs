//! How an analysis claims a recording it did not collect (`kairos import`): while the
//! recording is converted, each analysis that declares a claim looks at the profile and the
//! sampled data accesses and says whether the recording is its; the first that says yes
//! finishes the result. The registry asks them in its order, the sampled profile last.

use kairos_convert::{Conversion, DataAccess};
use kairos_model::Profile;
use kairos_perf_data::Features;
use kairos_result::ResultDir;

use crate::Failure;

/// An analysis's claim on a recording, holding what it worked out while the tables were
/// written; it finishes the result once the conversion is done.
pub trait Claimed: Send {
    /// Completes the result (its kind, tables, manifest) and prints its summary. `header`
    /// is the recording's perf.data header.
    fn finish(
        self: Box<Self>,
        dir: &mut ResultDir,
        conversion: &mut Conversion,
        header: &Features,
    ) -> Result<(), Failure>;
}

/// Run on the recording's default-event profile and its sampled data accesses, beside the
/// writing of its tables: `Some` when the recording is this analysis's.
pub type ClaimFn = fn(&Profile, &[DataAccess]) -> Option<Box<dyn Claimed>>;
