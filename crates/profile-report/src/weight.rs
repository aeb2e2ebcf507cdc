//! How sample weights are labelled and shown: nanoseconds of CPU time for timer events,
//! plain counts of the event otherwise (a cycles recording has no time unit to show).

use kairos_model::Profile;
use kairos_report::Cell;

pub(crate) struct Weight<'a> {
    event: Option<&'a str>,
}

impl<'a> Weight<'a> {
    pub(crate) fn of(profile: &'a Profile) -> Self {
        Self::new(profile.weight_event.as_deref())
    }

    pub(crate) fn new(event: Option<&'a str>) -> Self {
        Weight { event }
    }

    /// `"time"`, or the event name, to complete column names such as "Self time".
    pub(crate) fn noun(&self) -> &str {
        self.event.unwrap_or("time")
    }

    /// "CPU time", or the event name, for totals.
    pub(crate) fn total_label(&self) -> String {
        match self.event {
            None => "CPU time".into(),
            Some(e) => e.to_string(),
        }
    }

    pub(crate) fn cell(&self, w: u64) -> Cell {
        match self.event {
            None => Cell::ns(w),
            Some(_) => Cell::UInt(w),
        }
    }
}
