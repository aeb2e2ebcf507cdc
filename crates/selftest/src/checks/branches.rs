//! Branch records (LBR): kairos's hotspots collection with `-k branch-records=on` and
//! `perf record -j` with the same filter, each on its own run of transitions (two users of
//! the LBR at once would share or take turns with it). Per-sample figures do not depend
//! on the run: records per sample, the share of them that are calls, and which functions
//! the calls go to (transitions calls p3_A, p3_f1, p3_f2, p3_B, p3_C, F1, F2, F3 in known
//! proportions).

use std::collections::BTreeMap;
use std::ffi::OsString;

use kairos_model::{BranchKind, Profile};
use kairos_platform::names;

use super::{unavailable, Probe};
use crate::context::{Ctx, Step};
use crate::perf_text::{self, BranchEntry};
use crate::verdict::{share_tolerance, Figure, Line, Tolerance, Unit};

pub(crate) const NAME: &str = "lbr";
const ITERATIONS: &str = "2000";
/// Call targets at or above this share of calls, on either side, are compared.
const TARGETS_SHOWN: f64 = 2.0;

/// What a set of branch stacks says, whoever recorded them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Stacks {
    /// Samples with at least one record.
    pub samples: u64,
    pub records: u64,
    pub calls: u64,
    /// Calls by the function they went to.
    pub targets: BTreeMap<String, u64>,
}

impl Stacks {
    fn per_sample(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.records as f64 / self.samples as f64)
    }
    fn call_share(&self) -> Option<f64> {
        (self.records > 0).then(|| 100.0 * self.calls as f64 / self.records as f64)
    }
    fn target_share(&self, f: &str) -> f64 {
        if self.calls == 0 {
            return 0.0;
        }
        100.0 * self.targets.get(f).copied().unwrap_or(0) as f64 / self.calls as f64
    }
}

/// kairos's records: kinds as kairos decided them, targets by the symbolised frame.
pub(crate) fn from_profile(p: &Profile) -> Stacks {
    let mut s = Stacks::default();
    let mut last = None;
    for b in &p.branches {
        if last != Some(b.sample) {
            s.samples += 1;
            last = Some(b.sample);
        }
        s.records += 1;
        if b.kind == BranchKind::Call {
            s.calls += 1;
            let f = b
                .to_frame
                .and_then(|i| p.frames.get(i as usize))
                .map_or("[unknown]", |f| f.function.as_str());
            *s.targets.entry(f.to_string()).or_default() += 1;
        }
    }
    s
}

/// perf's records: a branch to a function's first byte is a call.
pub(crate) fn from_perf(stacks: &[Vec<BranchEntry>]) -> Stacks {
    let mut s = Stacks::default();
    for st in stacks.iter().filter(|s| !s.is_empty()) {
        s.samples += 1;
        for e in st {
            s.records += 1;
            if e.is_call() {
                s.calls += 1;
                *s.targets.entry(e.to_function().to_string()).or_default() += 1;
            }
        }
    }
    s
}

/// perf record's `-j` for kairos's filter in words ("user call+return", "user any").
pub(crate) fn perf_filter(words: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let (privs, types) = words.split_once(' ').unwrap_or(("user", words));
    for t in types.split('+') {
        out.push(match t.trim() {
            "call" => "any_call",
            "return" => "any_ret",
            "indirect call" => "ind_call",
            "direct call" => "call",
            "conditional" => "cond",
            "indirect jump" => "ind_jmp",
            "call stack" => "call_stack",
            _ => "any",
        });
    }
    out.dedup();
    for p in privs.split('+') {
        out.push(match p {
            "kernel" => "k",
            "hv" => "hv",
            _ => "u",
        });
    }
    out.join(",")
}

pub(crate) fn compare(ours: &Stacks, perf: &Stacks) -> Vec<Figure> {
    let mut f = vec![
        Figure::new(
            "records per sample",
            Unit::Entries,
            ours.per_sample(),
            perf.per_sample(),
            Tolerance::Relative {
                fraction: 0.10,
                floor: 1.0,
            },
        ),
        Figure::new(
            "calls among records",
            Unit::Percent,
            ours.call_share(),
            perf.call_share(),
            // Records of one sample are not independent: samples are what count.
            share_tolerance(
                perf.call_share().unwrap_or(50.0),
                ours.samples,
                perf.samples,
                5.0,
            ),
        ),
    ];
    let mut targets: Vec<(&String, f64, f64)> = ours
        .targets
        .keys()
        .chain(perf.targets.keys())
        .map(|t| (t, ours.target_share(t), perf.target_share(t)))
        .filter(|(_, k, p)| *k >= TARGETS_SHOWN || *p >= TARGETS_SHOWN)
        .collect();
    targets.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    targets.dedup_by(|a, b| a.0 == b.0);
    for (t, k, p) in targets {
        f.push(Figure::new(
            format!("calls to {t}"),
            Unit::Percent,
            Some(k),
            Some(p),
            share_tolerance(p, ours.samples, perf.samples, 3.0),
        ));
    }
    f
}

pub(crate) fn check(ctx: &mut Ctx) -> Line {
    let run = || -> Step<Line> {
        if let Err(why) = ctx.capability(names::LBR) {
            return Err(unavailable(ctx, NAME, &why, Probe::BranchStack, true));
        }
        let na = |why: String| Line::not_available(NAME, why);
        ctx.perf_ready().map_err(na)?;
        let prog = ctx.sample("transitions").map_err(na)?;
        let dir = ctx.path(NAME);
        let against_base = format!("perf record -j on a separate run of transitions {ITERATIONS}");
        ctx.collect(
            "hotspots",
            &dir,
            &["branch-records=on"],
            &prog,
            &[ITERATIONS],
        )
        .map_err(|e| Line::disagrees(NAME, &against_base, e))?;
        let read =
            kairos_result::ResultDir::open(&dir).and_then(|d| kairos_result::read_profile(&d));
        let profile = read.map_err(|e| {
            Line::disagrees(
                NAME,
                &against_base,
                format!("kairos's result cannot be read: {e}"),
            )
        })?;
        let filter = profile
            .branch_info
            .as_ref()
            .map_or("user call+return".to_string(), |b| b.filter.clone());
        let j = perf_filter(&filter);
        let data = ctx.path("lbr.perf.data");
        let rec: Vec<OsString> = ["record", "-q", "-e", "cycles", "-j", &j, "-o"]
            .iter()
            .map(OsString::from)
            .chain([
                data.clone().into(),
                "--".into(),
                prog.into(),
                ITERATIONS.into(),
            ])
            .collect();
        let o = ctx.perf(&rec).map_err(na)?;
        if !o.ok() {
            return Err(na(format!(
                "perf record -j {j} failed: {}",
                perf_text::message(&o.stderr)
            )));
        }
        let script: Vec<OsString> = ["script", "-F", "brstacksym", "--comm", "transitions", "-i"]
            .iter()
            .map(OsString::from)
            .chain([data.into()])
            .collect();
        let s = ctx.perf(&script).map_err(na)?;
        if !s.ok() {
            return Err(na(format!(
                "perf script failed: {}",
                perf_text::message(&s.stderr)
            )));
        }
        let ours = from_profile(&profile);
        let perf = from_perf(&perf_text::branch_stacks(&s.stdout));
        let depth = ctx
            .caps
            .lbr_depth
            .map_or(String::new(), |d| format!(", LBR depth {d}"));
        Ok(Line::judged(
            NAME,
            format!("perf record -e cycles -j {j} on a separate run of transitions {ITERATIONS}"),
            format!(
                "filter {filter}{depth}; kairos {} samples with records, perf {}; records per sample within 10% (at least 1), call share within 5 points, calls to each function at {TARGETS_SHOWN}% or more within 3 points (or 3 standard deviations); a call is a record kairos typed as one, and for perf a branch to a function's first byte",
                ours.samples, perf.samples
            ),
            compare(&ours, &perf),
        ))
    };
    run().unwrap_or_else(|l| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;
    use kairos_model::{BranchRecord, Frame};

    #[test]
    fn filters_in_perfs_words() {
        assert_eq!(perf_filter("user call+return"), "any_call,any_ret,u");
        assert_eq!(perf_filter("user any"), "any,u");
        assert_eq!(perf_filter("user+kernel any"), "any,u,k");
        assert_eq!(perf_filter("garbage"), "any,u");
    }

    fn frame(name: &str) -> Frame {
        Frame {
            address: 0,
            module: None,
            module_offset: 0,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: kairos_model::Mode::User,
        }
    }

    fn record(sample: u32, position: u16, to: Option<u32>, kind: BranchKind) -> BranchRecord {
        BranchRecord {
            sample,
            position,
            from_address: 1,
            to_address: 2,
            from_frame: None,
            to_frame: to,
            kind,
            cycles: None,
            mispredicted: false,
            is_new: true,
        }
    }

    #[test]
    fn kairos_and_perf_stacks_are_counted_alike() {
        let p = Profile {
            frames: vec![frame("p3_B"), frame("p3_f2")],
            branches: vec![
                record(0, 0, Some(0), BranchKind::Call),
                record(0, 1, Some(1), BranchKind::Return),
                record(3, 0, Some(0), BranchKind::Call),
                record(3, 1, None, BranchKind::Return),
            ],
            ..Profile::default()
        };
        let k = from_profile(&p);
        assert_eq!((k.samples, k.records, k.calls), (2, 4, 2));
        assert_eq!(k.targets.get("p3_B"), Some(&2));
        let text = "p3_f2+0x21/p3_B+0x0/P/-/-/0/ p3_B+0x40/p3_f2+0x26/P/-/-/0/\n\n\
                    p3_f2+0x21/p3_B+0x0/P/-/-/0/ p3_B+0x40/p3_f2+0x26/P/-/-/0/\n";
        let q = from_perf(&perf_text::branch_stacks(text));
        assert_eq!(k, q);
        let l = Line::judged(NAME, "perf", "x", compare(&k, &q));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
    }

    /// Made-up figures of a PMU machine (32-deep LBR, transitions), for the verdicts only.
    fn made_up(per_sample: u64, calls_to_f2: u64) -> Stacks {
        let samples = 1000;
        let records = samples * per_sample;
        let mut targets = BTreeMap::new();
        targets.insert("F2".to_string(), calls_to_f2);
        targets.insert("p3_B".to_string(), records / 2 - calls_to_f2);
        Stacks {
            samples,
            records,
            calls: records / 2,
            targets,
        }
    }

    #[test]
    fn made_up_pmu_figures_agree_and_disagree_as_they_should() {
        let perf = made_up(32, 800);
        let l = Line::judged(NAME, "perf", "x", compare(&made_up(32, 820), &perf));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // Half the records per sample: the ring read short.
        let l = Line::judged(NAME, "perf", "x", compare(&made_up(16, 400), &perf));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .starts_with("records per sample 16.0 vs 32.0"),
            "{}",
            l.figures_text()
        );
        // Calls going to the wrong function.
        let l = Line::judged(NAME, "perf", "x", compare(&made_up(32, 4000), &perf));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text().contains("calls to F2 25.0% vs 5.0%"),
            "{}",
            l.figures_text()
        );
        // Nothing recorded by kairos: no figure, no agreement.
        let l = Line::judged(NAME, "perf", "x", compare(&Stacks::default(), &perf));
        assert_eq!(l.verdict, Verdict::Disagrees);
    }
}
