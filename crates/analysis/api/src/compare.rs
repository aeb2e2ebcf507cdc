//! What an analysis puts into `kairos compare` (and the page's comparison): its figures of
//! one result, each with where its row goes and how it is compared. The comparison itself
//! (rows, differences, the words for them) is `kairos-compare`'s, the same for every
//! analysis.

use kairos_result::ResultDir;

/// A figure's value and how two of them are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A count: difference, ratio, "8.1x fewer".
    Count(u64),
    /// A percentage: compared in points ("12.0 points lower").
    Share(f64),
    /// A quantity shown with `decimals` decimals (seconds, GB/s, MB/s): difference, ratio.
    Quantity { value: f64, decimals: u8 },
}

/// One row of the comparison as one result gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Where its row goes: rows are ordered by `(place, key)`. Kairos's own rows take
    /// multiples of ten (run time 10, kernel-time share 20, page faults 30 and 40,
    /// bandwidth 70, samples 90, huge pages 100 and 110); an analysis takes the numbers
    /// between. A row neither result has a value for is left out when another row shares
    /// its place (a placeholder such as "kernel entries" for "kernel entries: syscall").
    pub place: u16,
    /// Orders the rows of one place.
    pub key: String,
    /// The row's name, as the table shows it.
    pub name: String,
    /// None: the result does not have it (n/a).
    pub value: Option<Measure>,
    /// The words for a smaller and a larger B ("fewer", "more").
    pub less: &'static str,
    pub more: &'static str,
    /// A count of a family (pages per node): a result that has others of its place but
    /// not this one has 0 of it, not n/a.
    pub missing_is_zero: bool,
    /// What it was measured from, said under the table when the result has a value.
    pub how: Option<&'static str>,
}

impl Figure {
    /// A count, "fewer"/"more".
    pub fn count(place: u16, name: impl Into<String>, value: Option<u64>) -> Figure {
        let name = name.into();
        Figure {
            place,
            key: name.clone(),
            name,
            value: value.map(Measure::Count),
            less: "fewer",
            more: "more",
            missing_is_zero: false,
            how: None,
        }
    }

    /// A percentage, compared in points.
    pub fn share(place: u16, name: impl Into<String>, value: Option<f64>) -> Figure {
        Figure {
            value: value.map(Measure::Share),
            ..Figure::count(place, name, None)
        }
    }

    /// A quantity with `decimals` decimals, "lower"/"higher".
    pub fn quantity(
        place: u16,
        name: impl Into<String>,
        value: Option<f64>,
        decimals: u8,
    ) -> Figure {
        Figure {
            value: value.map(|value| Measure::Quantity { value, decimals }),
            less: "lower",
            more: "higher",
            ..Figure::count(place, name, None)
        }
    }

    /// The same figure, ordered by `key` within its place.
    pub fn keyed(self, key: impl Into<String>) -> Figure {
        Figure {
            key: key.into(),
            ..self
        }
    }

    /// The same figure, 0 where a result has others of its place but not this one.
    pub fn zero_when_missing(self) -> Figure {
        Figure {
            missing_is_zero: true,
            ..self
        }
    }

    /// The same figure, saying what it was measured from.
    pub fn measured_from(self, how: &'static str) -> Figure {
        Figure {
            how: Some(how),
            ..self
        }
    }

    /// The same figure with other words for a smaller and a larger B.
    pub fn words(self, less: &'static str, more: &'static str) -> Figure {
        Figure { less, more, ..self }
    }
}

/// Kairos's own rows an analysis may give a better value of (place, name): see
/// [`Comparable`].
pub const KERNEL_SHARE: (u16, &str) = (20, "kernel-time share");
pub const PAGE_FAULTS: (u16, &str) = (30, "page faults");

/// What an analysis gives the comparison of one result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparable {
    /// Its rows. One with the place and key of one of Kairos's own rows, and a value,
    /// replaces that row's value (the system overview's measured kernel-time share).
    pub figures: Vec<Figure>,
    /// Values of Kairos's own rows (same place and key) for a result that has none of its
    /// own (the page faults the system overview counted, where the target's rusage is
    /// not recorded).
    pub fallback: Vec<Figure>,
    /// Why the result's run time says nothing of the program's speed.
    pub timing_caveat: Option<String>,
    /// Figures that could not be read, and why.
    pub notes: Vec<String>,
}

/// Run on every result compared (of any kind: a figure the result lacks is None).
pub type CompareFn = fn(&ResultDir) -> Comparable;

/// The timing caveat of a result recorded on an emulated machine.
pub const EMULATED_MACHINE: &str = "not comparable: recorded on an emulated machine (QEMU TCG), whose NUMA nodes are equally fast; a NUMA fix changes where pages are there but not how long the program runs: compare run times on real sockets";
