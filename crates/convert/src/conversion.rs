//! What a recording's conversion gives besides the tables it writes: the profile of its
//! default event and what the converter found beside it. Kept here, with the converter,
//! so that the session that makes it and the analyses that finish it name one type.

use std::collections::BTreeMap;

use kairos_model::Profile;

use crate::{DataAccess, SideSample};

/// What a conversion gives besides the tables it writes.
#[derive(Debug)]
pub struct Conversion {
    /// Showing the recording's default event.
    pub profile: Profile,
    /// Page faults, tracepoints (see [`SideSample`]).
    pub side_samples: Vec<SideSample>,
    /// Event names by attr.
    pub events: Vec<String>,
    /// Sampled data accesses (see [`DataAccess`]).
    pub data_accesses: Vec<DataAccess>,
    /// Samples of access events that gave no address, by reason.
    pub unresolved_accesses: BTreeMap<String, u64>,
}
