//! Reading what perf prints: `perf report --stdio` symbol tables, `perf stat -x,` counts
//! (once or every interval), `perf script -F brstacksym` branch stacks, `perf mem -D`
//! sample dumps, and the sentence perf gives when it refuses. Each reader skips what it
//! does not understand rather than failing, so perf's warnings never break a check.

/// One symbol of `perf report --stdio -q -n --sort sym [--children]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolRow {
    pub symbol: String,
    /// `[k]`: a kernel symbol.
    pub kernel: bool,
    /// The Children column, percent (with `--children`).
    pub children: Option<f64>,
    /// The Self column, percent.
    pub self_percent: f64,
    /// Samples whose leaf is this symbol (`-n`).
    pub samples: Option<u64>,
}

fn percent(s: &str) -> Option<f64> {
    s.strip_suffix('%')?.parse().ok()
}

/// Rows such as `    29.99%    29.91%          1048  [.] F2` (children, self, samples) or
/// `    29.85%          1048  [.] F2` (self, samples) or `  28.99%  [.] p3_C` (self).
pub fn report_rows(text: &str) -> Vec<SymbolRow> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let Some(kind_at) = words
            .iter()
            .position(|w| w.len() == 3 && w.starts_with('[') && w.ends_with(']'))
        else {
            continue;
        };
        let symbol = words[kind_at + 1..].join(" ");
        if symbol.is_empty() {
            continue;
        }
        let before = &words[..kind_at];
        let percents: Vec<f64> = before.iter().filter_map(|w| percent(w)).collect();
        let samples = before
            .iter()
            .filter(|w| !w.ends_with('%'))
            .find_map(|w| w.parse::<u64>().ok());
        let (children, self_percent) = match percents.as_slice() {
            [c, s] => (Some(*c), *s),
            [s] => (None, *s),
            _ => continue,
        };
        out.push(SymbolRow {
            symbol,
            kernel: words[kind_at] == "[k]",
            children,
            self_percent,
            samples,
        });
    }
    out
}

/// One event's line of `perf stat -x,` (`-I`: with the interval's end time first).
#[derive(Debug, Clone, PartialEq)]
pub struct StatRow {
    /// Seconds since perf started, in interval mode.
    pub time: Option<f64>,
    /// None when perf did not count it; `note` then says why (`<not supported>`).
    pub value: Option<f64>,
    pub note: Option<String>,
    /// perf's unit after scaling (`MiB` for the uncore CAS aliases), often empty.
    pub unit: String,
    pub event: String,
    /// Percent of the time the event was on a counter (below 100: multiplexed and scaled).
    pub running: Option<f64>,
}

/// `perf stat -x,` rows: `value,unit,event,run time,percent running,...`, or in interval
/// mode `time,value,unit,event,...`. Lines that are not event rows are skipped.
pub fn stat_rows(text: &str, interval: bool) -> Vec<StatRow> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut f: Vec<&str> = t.split(',').map(str::trim).collect();
        let time = if interval {
            match f.first().and_then(|x| x.parse::<f64>().ok()) {
                Some(x) => {
                    f.remove(0);
                    Some(x)
                }
                None => continue,
            }
        } else {
            None
        };
        if f.len() < 3 {
            continue;
        }
        let (value, note) = match f[0].parse::<f64>() {
            Ok(v) => (Some(v), None),
            Err(_) if f[0].starts_with('<') => (None, Some(f[0].to_string())),
            Err(_) => continue,
        };
        if f[2].is_empty() {
            continue;
        }
        out.push(StatRow {
            time,
            value,
            note,
            unit: f[1].to_string(),
            event: f[2].to_string(),
            running: f.get(4).and_then(|x| x.parse().ok()),
        });
    }
    out
}

/// One branch record of `perf script -F brstacksym`: `from/to/flags...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchEntry {
    /// `function+0x1c`, or `[unknown]`.
    pub from: String,
    pub to: String,
}

impl BranchEntry {
    /// The function the branch went to, without the offset.
    pub fn to_function(&self) -> &str {
        function_of(&self.to)
    }

    /// A branch to the first byte of a function: a call (returns land after a call
    /// instruction, never on a function's first byte).
    pub fn is_call(&self) -> bool {
        self.to.ends_with("+0x0") && self.to != "[unknown]"
    }
}

/// `p3_f1+0x1c` -> `p3_f1`.
pub fn function_of(sym_off: &str) -> &str {
    match sym_off.rfind("+0x") {
        Some(i) => &sym_off[..i],
        None => sym_off,
    }
}

/// One sample per line of `perf script -F brstacksym`: its records, newest first (an
/// empty line is a sample with none).
pub fn branch_stacks(text: &str) -> Vec<Vec<BranchEntry>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains("was found") && !l.starts_with("Warning"))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|tok| {
                    let mut parts = tok.split('/');
                    let (from, to) = (parts.next()?, parts.next()?);
                    // from/to/flag/...: at least the prediction flag follows.
                    parts.next()?;
                    Some(BranchEntry {
                        from: from.to_string(),
                        to: to.to_string(),
                    })
                })
                .collect()
        })
        .collect()
}

/// One sample of `perf mem -D -x, report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemSample {
    pub pid: u32,
    pub tid: u32,
    pub ip: u64,
    pub addr: u64,
    /// Local weight: the load's latency in cycles.
    pub weight: u64,
    /// PERF_SAMPLE_DATA_SRC as recorded.
    pub data_src: u64,
}

impl MemSample {
    /// The data source's operation says load (PERF_MEM_OP_LOAD, bit 1 of mem_op).
    pub fn is_load(&self) -> bool {
        self.data_src & 0x1f & 0x2 != 0
    }
    /// PERF_MEM_OP_STORE.
    pub fn is_store(&self) -> bool {
        self.data_src & 0x1f & 0x4 != 0
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `# PID, TID, IP, ADDR, LOCAL WEIGHT, DSRC, SYMBOL` rows (with `-p` a physical address
/// follows ADDR; it is skipped by counting from the end).
pub fn mem_samples(text: &str) -> Vec<MemSample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        // The symbol (last) may hold commas: the fixed fields come first.
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 7 {
            continue;
        }
        let parsed = (|| {
            Some(MemSample {
                pid: f[0].parse().ok()?,
                tid: f[1].parse().ok()?,
                ip: hex(f[2])?,
                addr: hex(f[3])?,
                weight: f[f.len() - 3].parse().ok().or_else(|| f[4].parse().ok())?,
                data_src: hex(f[f.len() - 2]).or_else(|| hex(f[5]))?,
            })
        })();
        out.extend(parsed);
    }
    out
}

/// perf's reason for refusing, in one line: its `Error:` sentence and what follows,
/// without usage text and blank lines; or the last non-empty line.
pub fn message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| {
            !l.starts_with("Usage:")
                && !l.starts_with("-e, --event")
                && !l.starts_with("Run 'perf list'")
        })
        .filter(|l| !l.contains("was found") && !l.starts_with("Warning:"))
        .collect();
    if lines.is_empty() {
        return "perf gave no reason".into();
    }
    let start = lines
        .iter()
        .position(|l| {
            l.starts_with("Error")
                || l.contains("failed")
                || l.contains("not supported")
                || l.starts_with("event syntax error")
        })
        .unwrap_or(lines.len() - 1);
    let mut s = lines[start..]
        .iter()
        .take(4)
        .map(|l| {
            l.trim_start_matches("Error:")
                .trim_start_matches('\\')
                .trim_start_matches('_')
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > 300 {
        let mut cut = 300;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_rows_read_children_self_and_samples() {
        // perf 6.1, `perf report --stdio -q --children -n --sort sym -g none` of transitions.
        let text = "   100.46%     0.00%             0  [.] __libc_start_call_main\n\
                    \x20   41.50%     0.11%             4  [.] p3_f1\n\
                    \x20   29.99%    29.91%          1048  [.] F2\n\
                    \x20    0.34%     0.03%             1  [k] do_mprotect_pkey\n\n";
        let rows = report_rows(text);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[2],
            SymbolRow {
                symbol: "F2".into(),
                kernel: false,
                children: Some(29.99),
                self_percent: 29.91,
                samples: Some(1048)
            }
        );
        assert!(rows[3].kernel);
        // Without --children and -n.
        let rows = report_rows("    28.99%  [.] p3_C\n     1.20%  [k] clear_page_erms\n");
        assert_eq!(rows[0].children, None);
        assert_eq!(rows[0].samples, None);
        assert_eq!(rows[1].self_percent, 1.2);
    }

    #[test]
    fn stat_rows_read_counts_refusals_and_intervals() {
        // perf 6.1 on this VM: `perf stat -x, -e page-faults,...,cycles -- kfaults`.
        let text = "22060,,page-faults,44578859,100.00,,\n2060,,minor-faults,44578859,100.00,,\n\
                    20004,,exceptions:page_fault_kernel,44578859,100.00,,\n<not supported>,,cycles,0,100.00,,\n";
        let rows = stat_rows(text, false);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            (rows[2].event.as_str(), rows[2].value),
            ("exceptions:page_fault_kernel", Some(20004.0))
        );
        assert_eq!(rows[3].value, None);
        assert_eq!(rows[3].note.as_deref(), Some("<not supported>"));
        assert_eq!(rows[0].running, Some(100.0));
        // Interval mode with the uncore CAS aliases, scaled to MiB (the form perf prints
        // them in; figures made up).
        let text = "     0.100123,1520.5,MiB,uncore_imc/cas_count_read/,401234,100.00,,\n\
                    \x20    0.100123,610.25,MiB,uncore_imc/cas_count_write/,401234,100.00,,\n";
        let rows = stat_rows(text, true);
        assert_eq!(rows[1].time, Some(0.100123));
        assert_eq!(rows[1].unit, "MiB");
        assert_eq!(rows[1].value, Some(610.25));
        // A task-clock row with a metric after it still reads.
        let rows = stat_rows(
            "0.88,msec,cpu-clock:u,881627,100.00,0.128,CPUs utilized\n",
            false,
        );
        assert_eq!(rows[0].value, Some(0.88));
    }

    #[test]
    fn branch_stacks_read_entries_and_empty_samples() {
        // perf 6.1 `-F brstacksym` of the Skylake echo recording (LBR not yet filled),
        // then a made-up stack of transitions' functions.
        let text = "[unknown]/[unknown]/P/-/-/4/ [unknown]/[unknown]/P/-/-/2/\n\n\
                    p3_f2+0x2b/p3_C+0x0/P/-/-/0/ p3_B+0x40/p3_f2+0x26/P/-/-/0/ p3_f2+0x21/p3_B+0x0/P/-/-/0/\n";
        let s = branch_stacks(text);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].len(), 2);
        assert!(s[1].is_empty());
        assert_eq!(s[2].len(), 3);
        assert!(s[2][0].is_call());
        assert_eq!(s[2][0].to_function(), "p3_C");
        assert!(!s[2][1].is_call(), "a return lands inside the caller");
        assert!(!s[0][0].is_call());
        assert_eq!(function_of("[unknown]"), "[unknown]");
    }

    #[test]
    fn mem_samples_read_the_dump_and_the_operation() {
        // perf 6.1 `perf mem -D -x, report` of the Skylake-SP PEBS recording (loads), and of
        // a `perf record -e page-faults -d` file (operation not available).
        let text = "# PID, TID, IP, ADDR, LOCAL WEIGHT, DSRC, SYMBOL\n\
                    20132,20144,0xffffffffa4470d46,0x55ffba5cda08,225,0x11868100242,[kernel.kallsyms]:???\n\
                    3216,3216,0xffffffffa423a747,0xffffc36a5ba4ba40,71,0x10268100142,[kernel.kallsyms]:???\n\
                    10858,10858,0xffffffff821e8700,0x5623b37d1068,0,0x1e05080021,[kernel.kallsyms]:rep_stos_alternative\n";
        let s = mem_samples(text);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].addr, 0x55ffba5cda08);
        assert_eq!(s[0].weight, 225);
        assert!(s[0].is_load() && !s[0].is_store());
        assert!(!s[2].is_load(), "PERF_MEM_OP_NA");
        // A symbol with commas in it does not shift the fields.
        let s = mem_samples("1,1,0x10,0x20,33,0x142,a.out:f(int, int)\n");
        assert_eq!((s[0].weight, s[0].data_src), (33, 0x142));
    }

    #[test]
    fn messages_are_perfs_own_sentence() {
        // perf 6.1 on a machine without a PMU.
        let lbr = "Error:\ncpu-clock:pppH: PMU Hardware or event type doesn't support branch stack sampling.\n";
        assert_eq!(
            message(lbr),
            "cpu-clock:pppH: PMU Hardware or event type doesn't support branch stack sampling."
        );
        assert_eq!(
            message("failed: memory events not supported\n"),
            "failed: memory events not supported"
        );
        let uncore = "event syntax error: 'uncore_imc/cas_count_read/'\n                     \\___ Cannot find PMU `uncore_imc'. Missing kernel support?\nRun 'perf list' for a list of valid events\n\n Usage: perf stat [<options>] [<command>]\n\n    -e, --event <event>   event selector. use 'perf list' to list available events\n";
        assert_eq!(message(uncore), "event syntax error: 'uncore_imc/cas_count_read/' Cannot find PMU `uncore_imc'. Missing kernel support?");
        assert_eq!(message(""), "perf gave no reason");
    }
}
