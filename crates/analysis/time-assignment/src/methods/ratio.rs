//! `ratio` (paper method 2): record j gets T x r_{f_j}, r_f being the function's share of
//! the whole run by plain sampling; what is left (T - sum, at least 0) goes to the
//! sample's function. When the records alone ask for more than T they are scaled down
//! proportionally and the sample gets nothing.

use crate::layout::split;
use crate::pipe::Out;
use crate::prepare::Prepared;

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    for iv in p.ivs() {
        let t = iv.len() as f64;
        let mut w: Vec<f64> = iv
            .recs
            .iter()
            .map(|r| t * p.shares.get(p.func(r) as usize).copied().unwrap_or(0.0))
            .collect();
        let used: f64 = w.iter().sum();
        w.push((t - used).max(0.0));
        split(iv, &w, out);
    }
}
