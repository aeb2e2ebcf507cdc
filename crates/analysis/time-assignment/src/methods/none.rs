//! `none`: plain sampling. One point per sample at t_i standing for the whole interval.

use crate::pipe::Out;
use crate::prepare::Prepared;
use crate::Point;

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    for iv in p.ivs() {
        out.push(Point {
            time_ns: iv.end,
            thread: iv.thread,
            frame: iv.leaf_frame(),
            weight_ns: iv.len(),
            from_branch: false,
            sample: iv.sample,
            record: None,
        });
    }
}
