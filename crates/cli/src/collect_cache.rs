//! Cache options that hold for every analysis of `kairos collect`: `-k cache-group=NAME`
//! runs the target in an existing resctrl group, `-k cache-group=new -k cache-ways=N [-k
//! cache-level=L3|L2]` in a new group holding N exclusive ways (as `kairos run
//! --cache-ways` does). The knobs are read here; kairos-run sets the group up, records its
//! occupancy and undoes everything; what it recorded and undid is printed here.

use std::path::{Path, PathBuf};

use kairos_run::cache::{CacheKnobs, CacheRun};

use crate::error::{CliResult, UserError};

const NAMES: [&str; 4] = ["cache-group", "cache-ways", "cache-level", "resctrl-root"];

/// Takes the cache knobs out of `raw`; the rest belong to the analysis.
pub fn split(raw: &[String]) -> CliResult<(Vec<String>, CacheKnobs)> {
    let mut k = CacheKnobs::default();
    let mut rest = Vec::new();
    for r in raw {
        let Some((name, value)) = r.split_once('=').filter(|(n, _)| NAMES.contains(n)) else {
            rest.push(r.clone());
            continue;
        };
        match name {
            "cache-group" if !value.is_empty() => k.group = Some(value.to_string()),
            "cache-ways" => {
                k.ways = Some(value.parse::<u32>().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
                    UserError::usage(format!("-k cache-ways={value}: give a number of cache ways from 1 to 64 (see `kairos cache`)"))
                })?)
            }
            "cache-level" if matches!(value.to_ascii_uppercase().as_str(), "L2" | "L3") => k.level = value.to_ascii_uppercase(),
            "resctrl-root" if !value.is_empty() => k.root = PathBuf::from(value),
            _ => return Err(UserError::usage(format!("-k {r}: cache-group takes a group name or 'new', cache-level L2 or L3, resctrl-root a directory"))),
        }
    }
    match (k.group.as_deref(), k.ways) {
        (Some("new"), None) => Err(UserError::usage("-k cache-group=new needs -k cache-ways=N: how many exclusive ways the new group holds")),
        (Some(g), Some(_)) if g != "new" => Err(UserError::usage(format!("-k cache-ways applies to a new group; group {g} keeps its own ways (or use -k cache-group=new)"))),
        (None, Some(_)) => Err(UserError::usage("-k cache-ways needs -k cache-group=new")),
        _ => Ok((rest, k)),
    }
}

/// Sets up the group (when asked) and the occupancy recording (when resctrl monitors).
/// `None` when there is nothing to do: no cache knob and no resctrl monitoring here.
pub fn start(k: &CacheKnobs, system_wide: bool, pid: Option<i32>) -> CliResult<Option<CacheRun>> {
    Ok(CacheRun::start(k, system_wide, pid)?)
}

/// Stops the recording, undoes everything, says what was recorded and undone, and
/// writes it into the result at `dir` (when the collection made one).
pub fn finish(cache: CacheRun, dir: Option<&Path>) -> CliResult {
    let f = cache.finish(dir);
    println!(
        "Cache: group {} ({} readings every {} ms)",
        f.label, f.readings, f.every_ms
    );
    if let Some(k) = f.kib {
        println!(
            "Cache: LLC occupancy first {} KiB, peak {} KiB, last {} KiB",
            k.first, k.peak, k.last
        );
    }
    for l in &f.journal {
        println!("Cache: {l}");
    }
    Ok(f.into_result()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cache_knobs_are_taken_out_and_checked() {
        let (rest, k) = split(&s(&[
            "event=cpu-clock",
            "cache-group=new",
            "cache-ways=4",
            "cache-level=l2",
        ]))
        .unwrap();
        assert_eq!(rest, ["event=cpu-clock"]);
        assert_eq!(
            (k.group.as_deref(), k.ways, k.level.as_str()),
            (Some("new"), Some(4), "L2")
        );
        for bad in [
            &["cache-group=new"][..],
            &["cache-ways=4"],
            &["cache-group=g1", "cache-ways=2"],
            &["cache-ways=0", "cache-group=new"],
            &["cache-level=L1"],
        ] {
            assert!(split(&s(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(split(&s(&[])).unwrap().1.group, None);
    }
}
