//! `equal` (paper method 1): the interval is divided equally among the n new records and
//! the sample, T/(n+1) each, points in order of occurrence with the sample last.

use crate::layout::split;
use crate::pipe::Out;
use crate::prepare::Prepared;

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    for iv in p.ivs() {
        split(iv, &vec![1.0; iv.recs.len() + 1], out);
    }
}
