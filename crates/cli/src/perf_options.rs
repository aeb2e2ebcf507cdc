//! perf record's own spellings of what kairos calls knobs: `-F HZ` (sampling-interval-us),
//! `-e EVENT` (event) and `--call-graph fp|dwarf` (stack-unwinding), turned into `-k`
//! arguments for analyses that have the knob, with one sentence where one has not.

use kairos_analysis_registry::AnalysisSpec;

/// The perf options given on the command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PerfOptions {
    pub freq: Option<u64>,
    pub event: Option<String>,
    pub call_graph: Option<String>,
}

/// Highest rate: the knob's shortest interval, 10 us.
const MAX_HZ: u64 = 100_000;

/// `knobs` (the `-k` arguments) with the perf options added as knobs of `spec`.
pub fn as_knobs(
    spec: &AnalysisSpec,
    p: &PerfOptions,
    knobs: &[String],
) -> Result<Vec<String>, String> {
    let mut out = knobs.to_vec();
    let mut add = |option: &str, knob: &str, value: String| -> Result<(), String> {
        if !spec.knobs.iter().any(|k| k.name == knob) {
            return Err(format!(
                "{option} sets the knob {knob}, which the {} analysis does not have; `kairos collect --help` lists each analysis' knobs",
                spec.name
            ));
        }
        if knobs.iter().any(|k| k.split('=').next() == Some(knob)) {
            return Err(format!(
                "{option} and -k {knob}=... say the same thing; give one of them"
            ));
        }
        out.push(format!("{knob}={value}"));
        Ok(())
    };
    if let Some(hz) = p.freq {
        if !(1..=MAX_HZ).contains(&hz) {
            return Err(format!(
                "-F {hz}: the rate must be from 1 to {MAX_HZ} Hz (a sample every 10 us at most)"
            ));
        }
        // perf's -F is a rate per thread of the timer; the knob is its interval.
        add("-F", "sampling-interval-us", (1_000_000 / hz).to_string())?;
    }
    if let Some(e) = &p.event {
        // perf's modifiers (:u, :k, :ppp) and its `cpu-clock` spellings.
        let base = e.split(':').next().unwrap_or(e);
        let event = match base {
            "cpu-clock" | "cpu_clock" | "task-clock" => "cpu-clock",
            "cycles" | "cpu-cycles" => "cycles",
            _ => {
                return Err(format!(
                "-e {e}: kairos samples cpu-clock or cycles (the memory-access analysis chooses its PMU events itself, `kairos info` lists them); use -e cpu-clock or -e cycles"
            ))
            }
        };
        add("-e", "event", event.to_string())?;
    }
    if let Some(g) = &p.call_graph {
        let mode = match g.split(',').next().unwrap_or(g) {
            "fp" => "fp",
            "dwarf" => "dwarf",
            "lbr" => {
                return Err("--call-graph lbr: kairos records the LBR as branch records beside frame-pointer stacks (-k branch-records=on); use --call-graph fp or dwarf".into())
            }
            other => {
                return Err(format!(
                    "--call-graph {other}: use fp (frame pointers) or dwarf (a copy of the user stack)"
                ))
            }
        };
        add("--call-graph", "stack-unwinding", mode.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(spec: &AnalysisSpec, knob: &str) -> bool {
        spec.knobs.iter().any(|k| k.name == knob)
    }

    /// An analysis with all three knobs (the sampling profile).
    fn hotspots() -> &'static AnalysisSpec {
        let all = ["sampling-interval-us", "event", "stack-unwinding"];
        kairos_analysis_registry::ANALYSES
            .iter()
            .copied()
            .find(|a| all.iter().all(|k| has(a, k)))
            .expect("a sampling analysis is registered")
    }

    #[test]
    fn perf_spellings_become_the_analysis_knobs() {
        let p = PerfOptions {
            freq: Some(4000),
            event: Some("cpu-clock:u".into()),
            call_graph: Some("dwarf,16384".into()),
        };
        let k = as_knobs(hotspots(), &p, &["branch-records=off".into()]).unwrap();
        assert_eq!(
            k,
            [
                "branch-records=off",
                "sampling-interval-us=250",
                "event=cpu-clock",
                "stack-unwinding=dwarf"
            ]
        );
        assert_eq!(
            as_knobs(hotspots(), &PerfOptions::default(), &[]).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn what_cannot_be_done_is_said() {
        let f = |hz| PerfOptions {
            freq: Some(hz),
            ..PerfOptions::default()
        };
        assert!(as_knobs(hotspots(), &f(0), &[])
            .unwrap_err()
            .contains("from 1 to 100000"));
        assert!(as_knobs(hotspots(), &f(200_000), &[]).is_err());
        let twice = as_knobs(hotspots(), &f(100), &["sampling-interval-us=5000".into()]);
        assert!(twice.unwrap_err().contains("give one of them"));
        let e = PerfOptions {
            event: Some("instructions".into()),
            ..PerfOptions::default()
        };
        assert!(as_knobs(hotspots(), &e, &[])
            .unwrap_err()
            .contains("-e cpu-clock"));
        let lbr = PerfOptions {
            call_graph: Some("lbr".into()),
            ..PerfOptions::default()
        };
        assert!(as_knobs(hotspots(), &lbr, &[])
            .unwrap_err()
            .contains("branch-records=on"));
        // An analysis without the knob: named, with where to look.
        let other = kairos_analysis_registry::ANALYSES
            .iter()
            .copied()
            .find(|a| !has(a, "sampling-interval-us"))
            .expect("an analysis that does not sample is registered");
        let err = as_knobs(other, &f(100), &[]).unwrap_err();
        assert!(
            err.contains(&format!("the {} analysis does not have", other.name)),
            "{err}"
        );
    }
}
