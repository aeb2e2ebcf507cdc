//! Where a time-assignment method's error comes from (issue 14 item 1).
//!
//! An emulated result keeps the trace it came from, so every part of an interval
//! (t_{i-1}, t_i] can be given its exact content on purpose, one part at a time, and the
//! result scored with the same [`crate::score_points`] as the methods:
//!
//! - the part the records *cover*: from the branch before the oldest record in the ring
//!   (the start of the stretch its cycles measure) to the sample; when the ring overlaps
//!   the previous snapshot this reaches back past t_{i-1} and covers the whole interval;
//! - the *gap*: the rest, (t_{i-1}, start of the covered part], which no record explains.
//!
//! [`oracle_points`] gives the covered part its exact content and the gap a chosen
//! estimate ([`Gap`]); with `None` everything is exact, which measures what the score
//! itself adds (its floor). [`exact_cycles`] rewrites the records' cycles as the exact,
//! unsaturated durations, to separate what the 16-bit cycle field costs a method.

use kairos_model::{FrameIdx, Profile, ThreadIdx};
use kairos_time_assignment::Point;

use crate::error::Result;
use crate::timeline::{thread_events, ThreadEvents};

/// What the gap of an interval is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gap {
    /// The function of the sample that ends the interval (plain sampling's rule), drawn
    /// where the gap is.
    Sample,
    /// As `Sample`, but drawn at the sample's end together with the tail, as the `cycles`
    /// method does: the same function shares, a different place in time.
    SampleAtEnd,
    /// The function of the sample that starts the interval, at the gap's start.
    PreviousSample,
    /// Half to each of the two samples around the interval.
    BothSamples,
    /// The covered part's own mix of functions, scaled to the gap's length.
    CoveredMix,
    /// The exact mix of the last `ns` before the sample, scaled to the gap (a window of
    /// fixed length ending at a random time is an unbiased sample where records cover
    /// it); the sample's function when they do not cover that much.
    Window(u64),
    /// As `Window`, averaged over the windows before both samples around the interval.
    WindowBoth(u64),
}

impl Gap {
    pub const ALL: [Gap; 5] = [
        Gap::Sample,
        Gap::SampleAtEnd,
        Gap::PreviousSample,
        Gap::BothSamples,
        Gap::CoveredMix,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Gap::Sample => "sample",
            Gap::SampleAtEnd => "sample, drawn at the end",
            Gap::PreviousSample => "previous sample",
            Gap::BothSamples => "both samples, half each",
            Gap::CoveredMix => "covered mix",
            Gap::Window(_) => "window before the sample",
            Gap::WindowBoth(_) => "windows before both samples",
        }
    }
}

/// One sample's interval and how much of it the ring covers.
struct Span {
    sample: u32,
    thread: ThreadIdx,
    start: u64,
    end: u64,
    /// Start of the covered part (may lie before `start`: the whole interval is covered).
    covered_from: u64,
    leaf: Option<FrameIdx>,
    prev_leaf: Option<FrameIdx>,
    /// Index in `events` of the first event after the sample (events[..next] happened).
    next: usize,
}

fn leaf_of(p: &Profile, sample: usize) -> Option<FrameIdx> {
    p.samples
        .get(sample)
        .and_then(|s| s.stack)
        .and_then(|st| p.stacks.get(st as usize))
        .map(|n| n.frame)
}

fn depth_of(p: &Profile) -> usize {
    p.branch_info.as_ref().map_or(0, |b| b.depth as usize)
}

/// The intervals of one thread's samples, in time order.
fn spans(p: &Profile, te: &ThreadEvents, depth: usize) -> Vec<Span> {
    let first = te.events.first().map_or(0, |e| e.time_ns);
    let mut out: Vec<Span> = Vec::new();
    for (i, s) in p
        .samples
        .iter()
        .enumerate()
        .filter(|(_, s)| s.thread == te.thread)
    {
        let (start, prev_leaf) = match out.last() {
            Some(prev) => (prev.end, prev.leaf),
            None => (s.time_ns.saturating_sub(s.weight), None),
        };
        let next = te.events.partition_point(|e| e.time_ns <= s.time_ns);
        // Cycles of the oldest record measure from the event before it.
        let covered_from = if next > depth {
            te.events[next - depth - 1].time_ns
        } else {
            first.min(start)
        };
        out.push(Span {
            sample: i as u32,
            thread: te.thread,
            start,
            end: s.time_ns,
            covered_from,
            leaf: leaf_of(p, i),
            prev_leaf,
            next,
        });
    }
    out
}

/// Self-time segments `(start, end, frame)` of a thread, in time order.
fn segments(te: &ThreadEvents) -> Vec<(u64, u64, Option<FrameIdx>)> {
    te.segments().collect()
}

/// Points for the exact content of `[from, to)`, one per segment piece, each at its end.
fn exact(
    segs: &[(u64, u64, Option<FrameIdx>)],
    sp: &Span,
    from: u64,
    to: u64,
    out: &mut Vec<Point>,
) {
    let k = segs.partition_point(|s| s.1 <= from);
    for &(a, b, f) in segs.get(k..).unwrap_or(&[]).iter().take_while(|s| s.0 < to) {
        let (a, b) = (a.max(from), b.min(to));
        if b > a {
            out.push(Point {
                time_ns: b,
                thread: sp.thread,
                frame: f,
                weight_ns: b - a,
                from_branch: true,
                sample: sp.sample,
                record: None,
            });
        }
    }
}

fn point(sp: &Span, time_ns: u64, frame: Option<FrameIdx>, weight_ns: u64) -> Point {
    Point {
        time_ns,
        thread: sp.thread,
        frame,
        weight_ns,
        from_branch: false,
        sample: sp.sample,
        record: None,
    }
}

/// Points with the covered part of every interval exact and the gap given by `gap`
/// (`None`: the gap exact too, i.e. the truth as the samples' intervals cut it).
pub fn oracle_points(emulated: &Profile, gap: Option<Gap>) -> Result<Vec<Point>> {
    let depth = depth_of(emulated);
    let mut out = Vec::new();
    for te in thread_events(emulated)? {
        let segs = segments(&te);
        let mut prev_span: Option<Span> = None;
        for sp in spans(emulated, &te, depth) {
            let c = sp.covered_from.clamp(sp.start, sp.end);
            let u = c - sp.start;
            match gap {
                _ if u == 0 => {}
                None => exact(&segs, &sp, sp.start, c, &mut out),
                Some(Gap::Sample) => out.push(point(&sp, c, sp.leaf, u)),
                Some(Gap::SampleAtEnd) => out.push(point(&sp, sp.end, sp.leaf, u)),
                Some(Gap::PreviousSample) => out.push(point(&sp, c, sp.prev_leaf.or(sp.leaf), u)),
                Some(Gap::BothSamples) => {
                    let h = u / 2;
                    out.push(point(&sp, sp.start + h, sp.prev_leaf.or(sp.leaf), h));
                    out.push(point(&sp, c, sp.leaf, u - h));
                }
                Some(Gap::Window(w)) => {
                    let mix = window(&segs, &sp, sp.end, sp.covered_from, w, sp.leaf);
                    fill(&sp, c, u, &mix, &mut out);
                }
                Some(Gap::WindowBoth(w)) => {
                    let mut mix = window(&segs, &sp, sp.end, sp.covered_from, w, sp.leaf);
                    let prev = match prev_span.as_ref() {
                        Some(p) => window(&segs, p, p.end, p.covered_from, w, p.leaf),
                        None => mix.clone(),
                    };
                    mix.iter_mut().for_each(|m| m.1 /= 2.0);
                    mix.extend(prev.into_iter().map(|(f, x)| (f, x / 2.0)));
                    fill(&sp, c, u, &mix, &mut out);
                }
                Some(Gap::CoveredMix) => {
                    let mut mix = Vec::new();
                    exact(&segs, &sp, c, sp.end, &mut mix);
                    let covered: u64 = mix.iter().map(|p| p.weight_ns).sum();
                    if covered == 0 {
                        out.push(point(&sp, c, sp.leaf, u));
                        continue;
                    }
                    // The gap replays the covered mix, scaled, in the same order.
                    let mut at = sp.start;
                    let mut acc = 0u64;
                    for m in &mix {
                        acc += m.weight_ns;
                        let to = sp.start + (u as u128 * acc as u128 / covered as u128) as u64;
                        if to > at {
                            out.push(point(&sp, to, m.frame, to - at));
                            at = to;
                        }
                    }
                }
            }
            exact(&segs, &sp, c, sp.end, &mut out);
            prev_span = Some(sp);
        }
    }
    out.sort_by_key(|p| p.time_ns);
    Ok(out)
}

/// The mix (frame, fraction) of `[end - w, end)` when records cover it, else the leaf.
fn window(
    segs: &[(u64, u64, Option<FrameIdx>)],
    sp: &Span,
    end: u64,
    covered_from: u64,
    w: u64,
    leaf: Option<FrameIdx>,
) -> Vec<(Option<FrameIdx>, f64)> {
    if end.saturating_sub(covered_from) < w || w == 0 {
        return vec![(leaf, 1.0)];
    }
    let mut v = Vec::new();
    exact(segs, sp, end - w, end, &mut v);
    v.into_iter()
        .map(|p| (p.frame, p.weight_ns as f64 / w as f64))
        .collect()
}

/// Gap points `(start, c]` of length `u` for a mix of fractions summing to 1.
fn fill(sp: &Span, c: u64, u: u64, mix: &[(Option<FrameIdx>, f64)], out: &mut Vec<Point>) {
    let total: f64 = mix.iter().map(|m| m.1).sum();
    let (mut at, mut acc) = (sp.start, 0.0);
    for (f, x) in mix {
        acc += x;
        let to = (sp.start + (u as f64 * acc / total.max(f64::MIN_POSITIVE)).round() as u64).min(c);
        if to > at {
            out.push(point(sp, to, *f, to - at));
            at = to;
        }
    }
}

/// The share of the sampled time that records cover, over all threads (0..=1).
pub fn coverage(emulated: &Profile) -> Result<f64> {
    let depth = depth_of(emulated);
    let (mut covered, mut total) = (0u128, 0u128);
    for te in thread_events(emulated)? {
        for sp in spans(emulated, &te, depth) {
            total += u128::from(sp.end - sp.start);
            covered += u128::from(sp.end - sp.covered_from.clamp(sp.start, sp.end));
        }
    }
    Ok(if total == 0 {
        0.0
    } else {
        covered as f64 / total as f64
    })
}

/// `emulated` with every record's cycles the exact time since the branch before it at
/// `cpu_ghz`, without the 16-bit saturation of the hardware field.
pub fn exact_cycles(emulated: &Profile, cpu_ghz: f64) -> Result<Profile> {
    let depth = depth_of(emulated);
    let mut out = emulated.clone();
    // (sample, position) -> cycles, filled per thread.
    let mut by_sample: Vec<Vec<u32>> = vec![Vec::new(); emulated.samples.len()];
    for te in thread_events(emulated)? {
        for sp in spans(emulated, &te, depth) {
            let v: Vec<u32> = (0..depth.min(sp.next))
                .map(|k| {
                    let i = sp.next - 1 - k;
                    let dt = i
                        .checked_sub(1)
                        .map_or(0, |p| te.events[i].time_ns - te.events[p].time_ns);
                    (dt as f64 * cpu_ghz).round().min(f64::from(u32::MAX)) as u32
                })
                .collect();
            if let Some(slot) = by_sample.get_mut(sp.sample as usize) {
                *slot = v;
            }
        }
    }
    for b in &mut out.branches {
        if let Some(c) = by_sample
            .get(b.sample as usize)
            .and_then(|v| v.get(b.position as usize))
        {
            b.cycles = Some(*c);
        }
    }
    Ok(out)
}

/// Whole-run shares per function name over the sampled span: (name, exact, of `points`).
pub fn run_shares(emulated: &Profile, points: &[Point]) -> Result<Vec<(String, f64, f64)>> {
    use std::collections::BTreeMap;
    let name = |f: Option<FrameIdx>| {
        f.and_then(|f| emulated.frames.get(f as usize))
            .map_or("[untraced]".to_string(), |f| f.function.clone())
    };
    let mut by: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let depth = depth_of(emulated);
    for te in thread_events(emulated)? {
        let segs = segments(&te);
        for sp in spans(emulated, &te, depth) {
            let mut v = Vec::new();
            exact(&segs, &sp, sp.start, sp.end, &mut v);
            for p in v {
                by.entry(name(p.frame)).or_default().0 += p.weight_ns as f64;
            }
        }
    }
    for p in points {
        by.entry(name(p.frame)).or_default().1 += p.weight_ns as f64;
    }
    let (te, tp): (f64, f64) = by.values().fold((0.0, 0.0), |a, v| (a.0 + v.0, a.1 + v.1));
    Ok(by
        .into_iter()
        .map(|(k, (e, q))| (k, e / te.max(1.0), q / tp.max(1.0)))
        .collect())
}
