//! Running a program with malloc's huge pages switched on, for `kairos run --hugepages` and
//! `kairos collect ANALYSIS --hugepages`: the mode and pool size asked for, glibc's tunable
//! set in the program's environment only, the 2 MiB pool raised for it and restored after
//! ([`pool`]), and a watch of /proc that says whether the program really got huge pages
//! ([`watch`]; glibc falls back to 4 KiB pages silently). Both commands share the set-up
//! ([`setup`]); [`run`] and [`collect`] are their two stories.

mod collect;
mod pool;
mod run;
mod setup;
mod watch;

pub use collect::{HugeFinished, HugeRun};
pub use run::{run, HugeRunOutcome, HugeRunRequest};
pub use watch::{Seen, Watch};

use kairos_analysis_hugepages::parse_glibc;
use kairos_platform::Prober;

use crate::Error;

/// How malloc gets its memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// As it is (a plain baseline run).
    None,
    /// 2 MiB pool pages (`glibc.malloc.hugetlb=2`).
    Hugetlb,
    /// Transparent huge pages (`glibc.malloc.hugetlb=1`).
    Thp,
}

impl Mode {
    /// `hugetlb`, `thp` or `none`.
    pub fn parse(s: &str) -> Result<Mode, Error> {
        match s {
            "hugetlb" => Ok(Mode::Hugetlb),
            "thp" => Ok(Mode::Thp),
            "none" => Ok(Mode::None),
            other => Err(Error::UnknownMode(other.to_string())),
        }
    }

    /// The name [`Mode::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Hugetlb => "hugetlb",
            Mode::Thp => "thp",
            Mode::None => "none",
        }
    }

    /// glibc's tunable for the mode (None: leave malloc as it is).
    pub fn tunable(self) -> Option<&'static str> {
        match self {
            Mode::Hugetlb => Some("glibc.malloc.hugetlb=2"),
            Mode::Thp => Some("glibc.malloc.hugetlb=1"),
            Mode::None => None,
        }
    }
}

/// `--reserve N`: a number of 2 MiB pages, for hugetlb only.
pub fn parse_reserve(reserve: Option<&str>, mode: Mode) -> Result<Option<u64>, Error> {
    let n = match reserve {
        None => return Ok(None),
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 && n <= 1 << 24 => n,
            _ => return Err(Error::BadReserve(s.to_string())),
        },
    };
    if mode != Mode::Hugetlb {
        return Err(Error::ReserveNeedsHugetlb);
    }
    Ok(Some(n))
}

/// Refuses a mode this glibc cannot apply (the tunable came with 2.35).
fn require_glibc(mode: Mode) -> Result<(), Error> {
    if mode == Mode::None {
        return Ok(());
    }
    let glibc_text = kairos_platform::LiveProber.glibc_version();
    if matches!(glibc_text.as_deref().and_then(parse_glibc), Some((2, m)) if m >= 35) {
        return Ok(());
    }
    Err(Error::OldGlibc(
        glibc_text.unwrap_or_else(|| "(not found)".to_string()),
    ))
}

/// GLIBC_TUNABLES for the program: the user's own (as Kairos was started with them; the
/// CLI keeps them for the target) with the mode's tunable last, so that it wins.
fn tunables_for_target(mode: Mode) -> Option<String> {
    let t = mode.tunable()?;
    Some(match std::env::var("GLIBC_TUNABLES") {
        Ok(old) if !old.is_empty() => format!("{old}:{t}"),
        _ => t.to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_reserves_are_checked() {
        for m in [Mode::None, Mode::Hugetlb, Mode::Thp] {
            assert_eq!(Mode::parse(m.name()).unwrap(), m);
        }
        assert!(matches!(Mode::parse("huge"), Err(Error::UnknownMode(_))));
        assert_eq!(parse_reserve(None, Mode::Thp).unwrap(), None);
        assert_eq!(parse_reserve(Some("52"), Mode::Hugetlb).unwrap(), Some(52));
        assert!(matches!(
            parse_reserve(Some("0"), Mode::Hugetlb),
            Err(Error::BadReserve(_))
        ));
        assert!(matches!(
            parse_reserve(Some("3"), Mode::Thp),
            Err(Error::ReserveNeedsHugetlb)
        ));
        assert_eq!(tunables_for_target(Mode::None), None);
        assert!(require_glibc(Mode::None).is_ok());
    }
}
