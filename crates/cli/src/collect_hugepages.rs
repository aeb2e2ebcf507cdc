//! `kairos collect ANALYSIS --hugepages=hugetlb|thp [--reserve N]`: the collection of a
//! launched program with malloc's huge pages switched on, in one command, as `kairos run`
//! does for a plain run: the tunable goes into the program's environment only, the pool
//! is raised for it and restored, and the program's /proc is watched so that the result
//! says whether it really got huge pages (its manifest's `hugepages`, as a run's).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use kairos_analysis_hugepages::pool::PoolCounts;

use crate::error::{CliResult, UserError};
use crate::hugepage_setup::{self, Mode, PoolGuard, Watch};

/// A collection under huge pages, from its start to [`HugeRun::finish`].
pub struct HugeRun {
    mode: Mode,
    mode_text: String,
    reserved: Option<u64>,
    tunables: Option<String>,
    guard: Option<PoolGuard>,
    pub watch: Arc<Watch>,
    pool_before: PoolCounts,
    started: Instant,
}

/// Checks the options and sets everything up (None: `--hugepages` not given or none).
/// Only a program Kairos launches can be given malloc's tunable.
pub fn start(
    hugepages: Option<&str>,
    reserve: Option<&str>,
    launches: bool,
) -> CliResult<Option<HugeRun>> {
    let Some(text) = hugepages else {
        if reserve.is_some() {
            return Err(UserError::usage(
                "--reserve goes with --hugepages=hugetlb, e.g. --hugepages=hugetlb --reserve 52",
            ));
        }
        return Ok(launches.then(from_environment).flatten());
    };
    let mode = Mode::parse(text)?;
    let reserved = hugepage_setup::parse_reserve(reserve, mode)?;
    if mode == Mode::None {
        return Ok(None);
    }
    if !launches {
        return Err(UserError::usage("--hugepages applies to a program Kairos launches (after `--`): malloc reads its tunable when a process starts, so a running process (-p) or the whole system (-a) cannot be switched"));
    }
    hugepage_setup::require_glibc(mode)?;
    let guard = reserved.map(hugepage_setup::reserve).transpose()?.flatten();
    if mode == Mode::Hugetlb
        && reserved.is_none()
        && hugepage_setup::meminfo("HugePages_Free").unwrap_or(0) == 0
    {
        eprintln!("kairos: warning: the 2 MiB pool has no free pages, so malloc will fall back to 4 KiB pages; give --reserve N (see `kairos report hugepages`)");
    }
    let tunables = hugepage_setup::tunables_for_target(mode);
    if let Some(v) = &tunables {
        // Kairos's own malloc read its tunables at start (see crate::own_env): from here
        // the variable reaches only the programs it starts.
        std::env::set_var("GLIBC_TUNABLES", v);
        println!("Environment of the program: GLIBC_TUNABLES={v}");
    }
    Ok(Some(HugeRun {
        mode,
        mode_text: text.to_string(),
        reserved,
        tunables,
        guard,
        watch: Arc::new(Watch::new()),
        pool_before: hugepage_setup::pool_now().unwrap_or_default(),
        started: Instant::now(),
    }))
}

/// Huge pages asked for the other way, `GLIBC_TUNABLES=glibc.malloc.hugetlb=N` in front of
/// `kairos collect` (kept for the target only, see `crate::own_env`): nothing to set up,
/// but whether the program got them is watched and said all the same.
fn from_environment() -> Option<HugeRun> {
    let v = std::env::var("GLIBC_TUNABLES").ok()?;
    let mode = v.split(':').rev().find_map(|t| {
        match t.trim().strip_prefix("glibc.malloc.hugetlb=")? {
            "1" => Some(Mode::Thp),
            "2" => Some(Mode::Hugetlb),
            _ => None,
        }
    })?;
    Some(HugeRun {
        mode,
        mode_text: format!(
            "{} (GLIBC_TUNABLES)",
            if mode == Mode::Thp { "thp" } else { "hugetlb" }
        ),
        reserved: None,
        tunables: Some(v),
        guard: None,
        watch: Arc::new(Watch::new()),
        pool_before: hugepage_setup::pool_now().unwrap_or_default(),
        started: Instant::now(),
    })
}

impl HugeRun {
    /// Restores the pool, says whether the program got huge pages, and records it in the
    /// result at `dir` (when one was made).
    pub fn finish(self, dir: Option<&Path>) -> CliResult {
        let seen = self.watch.finish();
        drop(self.guard);
        let warnings = hugepage_setup::warnings(
            self.mode,
            None,
            &seen,
            self.pool_before.free,
            self.pool_before,
            self.started.elapsed().as_secs_f64(),
        );
        println!(
            "Huge pages: HugetlbPages peak {} kB ({} pages of 2 MiB), AnonHugePages peak {} kB ({} /proc readings)",
            seen.hugetlb_peak_kb,
            seen.hugetlb_peak_kb / 2048,
            seen.thp_peak_kb,
            seen.samples
        );
        for w in &warnings {
            eprintln!("kairos: warning: {w}");
        }
        if let Some(dir) = dir.filter(|d| d.join(kairos_result::MANIFEST_FILE).is_file()) {
            let mut d = kairos_result::ResultDir::open(dir).map_err(|e| {
                UserError::failed(format!(
                    "cannot add the huge-page readings to {}: {e}",
                    dir.display()
                ))
            })?;
            let m = d.manifest_mut();
            m.extra.insert(
                "hugepages".into(),
                serde_json::json!({"mode": self.mode_text, "tunable": self.mode.tunable(), "glibc_tunables": self.tunables,
                                   "reserved": self.reserved, "proc_samples": seen.samples,
                                   "hugetlb_peak_kb": seen.hugetlb_peak_kb, "anon_huge_peak_kb": seen.thp_peak_kb, "warnings": warnings}),
            );
            m.notes.extend(warnings.iter().cloned());
            kairos_session::save(&d)?;
        }
        Ok(())
    }
}
