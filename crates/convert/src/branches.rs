//! Branch stacks of samples become [`BranchRecord`]s: symbolised FROM and TO, a kind
//! (call, return, other), cycles, and whether each record is new since the previous
//! snapshot of its thread ([`crate::overlap`]).

use rustc_hash::FxHashMap as HashMap;

use kairos_model::{BranchInfo, BranchKind, BranchRecord, FrameIdx, ThreadIdx};
use kairos_perf_data::{
    PERF_SAMPLE_BRANCH_ANY, PERF_SAMPLE_BRANCH_ANY_CALL, PERF_SAMPLE_BRANCH_ANY_RETURN,
    PERF_SAMPLE_BRANCH_CALL, PERF_SAMPLE_BRANCH_CALL_STACK, PERF_SAMPLE_BRANCH_COND,
    PERF_SAMPLE_BRANCH_HV, PERF_SAMPLE_BRANCH_IND_CALL, PERF_SAMPLE_BRANCH_IND_JUMP,
    PERF_SAMPLE_BRANCH_KERNEL, PERF_SAMPLE_BRANCH_USER,
};

use crate::overlap::{overlap, Key};

/// One entry as read from a sample, before symbolisation finished.
#[derive(Debug, Clone, Copy)]
pub struct PendingBranch {
    pub from: u64,
    pub to: u64,
    /// Raw frame ids (see `frames::RawStacks`), None outside any known module.
    pub from_raw: Option<u32>,
    pub to_raw: Option<u32>,
    pub kind: BranchKind,
    pub cycles: u16,
    pub mispredicted: bool,
}

/// The filter a `branch_sample_type` asks the hardware for, in words: "any",
/// "user call+return", "user+kernel any"...
pub fn describe_filter(bst: u64) -> String {
    let privs: Vec<&str> = [
        (PERF_SAMPLE_BRANCH_USER, "user"),
        (PERF_SAMPLE_BRANCH_KERNEL, "kernel"),
        (PERF_SAMPLE_BRANCH_HV, "hv"),
    ]
    .iter()
    .filter(|(b, _)| bst & b != 0)
    .map(|(_, n)| *n)
    .collect();
    let mut types: Vec<&str> = [
        (PERF_SAMPLE_BRANCH_ANY, "any"),
        (PERF_SAMPLE_BRANCH_ANY_CALL, "call"),
        (PERF_SAMPLE_BRANCH_ANY_RETURN, "return"),
        (PERF_SAMPLE_BRANCH_IND_CALL, "indirect call"),
        (PERF_SAMPLE_BRANCH_CALL, "direct call"),
        (PERF_SAMPLE_BRANCH_COND, "conditional"),
        (PERF_SAMPLE_BRANCH_IND_JUMP, "indirect jump"),
        (PERF_SAMPLE_BRANCH_CALL_STACK, "call stack"),
    ]
    .iter()
    .filter(|(b, _)| bst & b != 0)
    .map(|(_, n)| *n)
    .collect();
    if types.is_empty() {
        // The kernel treats "no type" as every taken branch.
        types.push("any");
    }
    let types = types.join("+");
    if privs.is_empty() {
        types
    } else {
        format!("{} {types}", privs.join("+"))
    }
}

/// One sample's branch stack waiting for the final sample order.
pub struct SampleBranches {
    pub thread: ThreadIdx,
    pub entries: Vec<PendingBranch>,
}

/// Builds the records of every sample, given in final (time) order with their index in
/// `Profile::samples`; `frame_of` maps raw frame ids to the innermost profile frame.
pub fn assemble(
    in_order: impl Iterator<Item = (u32, SampleBranches)>,
    frame_of: &HashMap<u32, FrameIdx>,
    filter: String,
) -> (Vec<BranchRecord>, BranchInfo) {
    let mut all: Vec<(u32, SampleBranches)> = in_order.collect();
    let depth = all.iter().map(|(_, b)| b.entries.len()).max().unwrap_or(0);
    let mut info = BranchInfo {
        depth: depth as u32,
        filter,
        ..Default::default()
    };
    let mut prev: HashMap<ThreadIdx, Vec<Key>> = HashMap::default();
    let mut out = Vec::with_capacity(all.iter().map(|(_, b)| b.entries.len()).sum());
    for (sample, b) in all.drain(..) {
        let keys: Vec<Key> = b.entries.iter().map(|e| (e.from, e.to)).collect();
        let o = overlap(prev.get(&b.thread).map(Vec::as_slice), &keys, depth);
        info.overflowed_snapshots += u64::from(o.overflowed);
        for (i, e) in b.entries.iter().enumerate() {
            info.has_cycles |= e.cycles > 0;
            info.unclassified += u64::from(e.kind == BranchKind::Unknown);
            out.push(BranchRecord {
                sample,
                // The kernel caps nr at the hardware depth (32 today); saturate anyway.
                position: u16::try_from(i).unwrap_or(u16::MAX),
                from_address: e.from,
                to_address: e.to,
                from_frame: e.from_raw.and_then(|r| frame_of.get(&r).copied()),
                to_frame: e.to_raw.and_then(|r| frame_of.get(&r).copied()),
                kind: e.kind,
                cycles: (e.cycles > 0).then_some(u32::from(e.cycles)),
                mispredicted: e.mispredicted,
                is_new: i < o.new,
            });
        }
        prev.insert(b.thread, keys);
    }
    (out, info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_in_words() {
        assert_eq!(describe_filter(PERF_SAMPLE_BRANCH_ANY), "any");
        assert_eq!(describe_filter(0), "any");
        let callret =
            PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_ANY_RETURN;
        assert_eq!(describe_filter(callret), "user call+return");
        assert_eq!(
            describe_filter(
                PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_KERNEL | PERF_SAMPLE_BRANCH_ANY
            ),
            "user+kernel any"
        );
    }

    fn entry(from: u64) -> PendingBranch {
        PendingBranch {
            from,
            to: from + 1,
            from_raw: None,
            to_raw: None,
            kind: BranchKind::Unknown,
            cycles: 0,
            mispredicted: false,
        }
    }

    #[test]
    fn records_are_marked_new_per_thread() {
        let s = |thread, v: &[u64]| SampleBranches {
            thread,
            entries: v.iter().map(|&x| entry(x)).collect(),
        };
        let samples = vec![
            (0, s(0, &[3, 2, 1])),
            (1, s(1, &[9, 8, 7])),
            (2, s(0, &[4, 3, 2])),
            (3, s(1, &[6, 5, 4])),
        ];
        let (recs, info) = assemble(samples.into_iter(), &HashMap::default(), "any".into());
        let new: Vec<bool> = recs
            .iter()
            .filter(|r| r.sample == 2)
            .map(|r| r.is_new)
            .collect();
        assert_eq!(new, [true, false, false]);
        assert_eq!(
            (info.depth, info.overflowed_snapshots, info.unclassified),
            (3, 1, 12)
        );
        assert!(!info.has_cycles && !info.emulated);
    }
}
