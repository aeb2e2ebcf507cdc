//! `proportional` (paper method 3): the interval is divided among the records and the
//! sample in proportion to the run shares r_f of their functions, normalised within the
//! interval. Functions sampling never saw get a small epsilon so they still appear.

use crate::layout::{epsilon, share_or, split};
use crate::pipe::Out;
use crate::prepare::{Iv, Prepared};

/// The weights of one interval (records oldest first, the sample last).
pub(crate) fn weights(p: &Prepared, iv: Iv<'_>) -> Vec<f64> {
    let eps = epsilon(&p.shares);
    iv.recs
        .iter()
        .map(|r| p.func(r))
        .chain([iv.leaf_func])
        .map(|f| share_or(&p.shares, f, eps))
        .collect()
}

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    for iv in p.ivs() {
        split(iv, &weights(p, iv), out);
    }
}
