//! `kairos collect ANALYSIS --hugepages=hugetlb|thp [--reserve N]`: the collection of a
//! launched program with malloc's huge pages switched on, as `kairos run` does for a plain
//! run: the same set-up, the same watch of the program's /proc (started by the
//! collection's step on the target), and the result says whether it really got huge pages
//! (its manifest's `hugepages`, as a run's).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::setup::Setup;
use super::watch::{self, Seen, Watch};
use super::{require_glibc, Mode};
use crate::{Error, Sink};

/// A collection under huge pages, from [`HugeRun::start`] to [`HugeRun::finish`].
pub struct HugeRun {
    setup: Setup,
    /// The mode as the manifest names it.
    mode_text: String,
    /// Started on the program by the collection (its step on the target).
    pub watch: Arc<Watch>,
    started: Instant,
}

/// What the watch saw, and whether it could be added to the result.
#[derive(Debug)]
pub struct HugeFinished {
    pub seen: Seen,
    /// What went wrong with the huge pages, one sentence each.
    pub warnings: Vec<String>,
    /// Adding the readings to the result.
    pub recorded: Result<(), Error>,
}

impl HugeRun {
    /// Sets everything up for `asked` (the mode and `--reserve`; None: `--hugepages` not
    /// given). Only a program Kairos launches can be given malloc's tunable; None when
    /// there is nothing to do.
    pub fn start(
        asked: Option<(Mode, Option<u64>)>,
        launches: bool,
        sink: &Sink,
    ) -> Result<Option<HugeRun>, Error> {
        let Some((mode, reserved)) = asked else {
            return Ok(launches.then(from_environment).flatten());
        };
        if mode == Mode::None {
            return Ok(None);
        }
        if !launches {
            return Err(Error::HugepagesNeedLaunch);
        }
        require_glibc(mode)?;
        let setup = Setup::start(mode, reserved, sink)?;
        if let Some(v) = &setup.tunables {
            // Kairos's own malloc read its tunables at start (the CLI sees to that): from
            // here the variable reaches only the programs it starts.
            std::env::set_var("GLIBC_TUNABLES", v);
        }
        Ok(Some(HugeRun::new(setup, mode.name().to_string())))
    }

    fn new(setup: Setup, mode_text: String) -> HugeRun {
        HugeRun {
            setup,
            mode_text,
            watch: Arc::new(Watch::new()),
            started: Instant::now(),
        }
    }

    /// Stops the watch, restores the pool, and records what was seen in the result at
    /// `dir` (when the collection made one).
    pub fn finish(mut self, dir: Option<&Path>) -> HugeFinished {
        let seen = self.watch.finish();
        self.setup.restore();
        let warnings = watch::warnings(
            self.setup.mode,
            None,
            &seen,
            self.setup.pool_before,
            self.started.elapsed().as_secs_f64(),
        );
        let recorded = match dir.filter(|d| d.join(kairos_result::MANIFEST_FILE).is_file()) {
            Some(dir) => self.record(dir, &seen, &warnings),
            None => Ok(()),
        };
        HugeFinished {
            seen,
            warnings,
            recorded,
        }
    }

    /// The manifest's `hugepages`.
    fn record(&self, dir: &Path, seen: &Seen, warnings: &[String]) -> Result<(), Error> {
        let mut d = kairos_result::ResultDir::open(dir).map_err(|source| Error::CannotRecord {
            what: "huge-page readings",
            dir: dir.to_path_buf(),
            source,
        })?;
        let s = &self.setup;
        let m = d.manifest_mut();
        m.extra.insert(
            "hugepages".into(),
            serde_json::json!({"mode": self.mode_text, "tunable": s.mode.tunable(), "glibc_tunables": s.tunables,
                               "reserved": s.reserved, "proc_samples": seen.samples,
                               "hugetlb_peak_kb": seen.hugetlb_peak_kb, "anon_huge_peak_kb": seen.thp_peak_kb, "warnings": warnings}),
        );
        m.notes.extend(warnings.iter().cloned());
        kairos_session::save(&d)?;
        Ok(())
    }
}

/// Huge pages asked for the other way, `GLIBC_TUNABLES=glibc.malloc.hugetlb=N` in front of
/// `kairos collect` (kept for the target only by the CLI): nothing to set up, but whether
/// the program got them is watched and said all the same.
fn from_environment() -> Option<HugeRun> {
    let v = std::env::var("GLIBC_TUNABLES").ok()?;
    let mode = mode_in(&v)?;
    let text = format!("{} (GLIBC_TUNABLES)", mode.name());
    Some(HugeRun::new(Setup::inherited(mode, v), text))
}

/// The mode the last `glibc.malloc.hugetlb` of a GLIBC_TUNABLES value asks for.
fn mode_in(tunables: &str) -> Option<Mode> {
    tunables.split(':').rev().find_map(|t| {
        match t.trim().strip_prefix("glibc.malloc.hugetlb=")? {
            "1" => Some(Mode::Thp),
            "2" => Some(Mode::Hugetlb),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_hugetlb_tunable_names_the_mode() {
        assert_eq!(mode_in("glibc.malloc.hugetlb=2"), Some(Mode::Hugetlb));
        assert_eq!(
            mode_in("glibc.malloc.hugetlb=2:glibc.malloc.hugetlb=1"),
            Some(Mode::Thp)
        );
        assert_eq!(mode_in("glibc.malloc.hugetlb=0"), None);
        assert_eq!(mode_in("glibc.malloc.arena_max=1"), None);
    }

    #[test]
    fn nothing_is_set_up_when_nothing_is_asked() {
        let sink: Sink = Arc::new(|_| {});
        assert!(matches!(
            HugeRun::start(Some((Mode::None, None)), true, &sink),
            Ok(None)
        ));
        assert!(matches!(
            HugeRun::start(Some((Mode::Thp, None)), false, &sink),
            Err(Error::HugepagesNeedLaunch)
        ));
        assert!(matches!(HugeRun::start(None, false, &sink), Ok(None)));
    }
}
