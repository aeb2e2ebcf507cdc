//! The hotspots analysis: sampling collection (`collect`), the result's completion
//! (`finish`), its claim on imported recordings (`claim`), and its reports: those of any
//! sampled profile (kairos-profile-report) and its own over branch records (`branches`)
//! and the TLB (`tlb`).

mod branches;
mod claim;
mod collect;
mod finish;
mod report;
mod spec;
mod tlb;

pub use branches::BRANCH_CAPABILITY;
pub use collect::{lbr_missing, sampling_options};
pub use spec::{SAMPLING_KNOBS, SPEC};
