//! Bandwidth from resctrl memory-bandwidth monitoring (MBM): the `mbm_total_bytes` and
//! `mbm_local_bytes` files of a group's `mon_data/mon_L3_XX` are cumulative byte counts, so
//! a rate is the difference of two reads over the time between them. A count that went
//! down (the kernel widens the hardware counter to 64 bits, so this is a reset, not a
//! wrap) and a file that says "Unavailable" or "Error" give no figure for that interval.

use std::path::Path;

use kairos_resctrl::monitor::{delta, read, Delta, Reading};

use crate::timeline::Flow;

/// Why `root` gives no MBM figures, or None when it does.
pub fn why_not(root: &Path) -> Option<String> {
    if !root.join("info").is_dir() {
        return Some(format!(
            "resctrl is not mounted at {} (mount -t resctrl resctrl {} on a CPU with RDT monitoring)",
            root.display(),
            root.display()
        ));
    }
    let features =
        std::fs::read_to_string(root.join("info/L3_MON/mon_features")).unwrap_or_default();
    if !features.lines().any(|l| l.trim().starts_with("mbm_")) {
        return Some("resctrl has no memory-bandwidth monitoring here (info/L3_MON/mon_features lists no mbm_ event)".into());
    }
    if !root.join("mon_data").is_dir() {
        return Some(format!("{} has no mon_data folder", root.display()));
    }
    None
}

/// What one interval gave: rates per (domain, flow), and the counters without a figure.
#[derive(Debug, Default, PartialEq)]
pub struct Rates {
    pub bytes_per_s: Vec<(u32, Flow, f64)>,
    /// (domain, flow, "reset" or "unavailable").
    pub missing: Vec<(u32, Flow, &'static str)>,
}

/// Rates between two reads of the same group `seconds` apart.
pub fn rates(prev: &[Reading], now: &[Reading], seconds: f64) -> Rates {
    let mut out = Rates::default();
    for n in now {
        let p = prev.iter().find(|p| p.domain == n.domain);
        for (flow, before, after) in [
            (
                Flow::Total,
                p.and_then(|p| p.mbm_total_bytes),
                n.mbm_total_bytes,
            ),
            (
                Flow::Local,
                p.and_then(|p| p.mbm_local_bytes),
                n.mbm_local_bytes,
            ),
        ] {
            match delta(before, after, 64) {
                Delta::Bytes(b) => {
                    out.bytes_per_s
                        .push((n.domain, flow, b as f64 / seconds.max(1e-9)))
                }
                Delta::Reset => out.missing.push((n.domain, flow, "reset")),
                Delta::Unknown => out.missing.push((n.domain, flow, "unavailable")),
            }
        }
    }
    out
}

/// Reads the group at `group` (the resctrl root: the default group).
pub fn read_group(group: &Path) -> Result<Vec<Reading>, String> {
    read(group).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        let shared = std::env::var_os("KAIROS_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
        shared.join("fixtures/resctrl/goresctrl").join(name)
    }

    /// A copy of a recorded tree's mon_data, so that values can change between reads.
    fn copy(name: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let src = fixture(name).join("mon_data");
        for d in std::fs::read_dir(&src)
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
            .filter_map(Result::ok)
        {
            let to = dir.path().join("mon_data").join(d.file_name());
            std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("{e}"));
            for f in std::fs::read_dir(d.path())
                .unwrap_or_else(|e| panic!("{e}"))
                .filter_map(Result::ok)
            {
                std::fs::copy(f.path(), to.join(f.file_name())).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        dir
    }

    fn set(dir: &Path, domain: &str, file: &str, v: &str) {
        std::fs::write(dir.join("mon_data").join(domain).join(file), v)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn deltas_of_a_recorded_tree_become_rates_resets_and_unavailable_are_left_out() {
        let t = copy("resctrl.nomb");
        let first = read_group(t.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            first.iter().map(|r| r.domain).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let v0 = first[0]
            .mbm_total_bytes
            .unwrap_or_else(|| panic!("the recording has mbm_total_bytes: {first:?}"));
        let l0 = first[0].mbm_local_bytes.unwrap_or(0);
        // Half a second later: domain 0 moved 1 GB (0.5 GB local), domain 1's counter was
        // reset, domain 2 says Unavailable, domain 3 did not move.
        set(
            t.path(),
            "mon_L3_00",
            "mbm_total_bytes",
            &format!("{}\n", v0 + 1_000_000_000),
        );
        set(
            t.path(),
            "mon_L3_00",
            "mbm_local_bytes",
            &format!("{}\n", l0 + 500_000_000),
        );
        set(t.path(), "mon_L3_01", "mbm_total_bytes", "0\n");
        set(t.path(), "mon_L3_02", "mbm_total_bytes", "Unavailable\n");
        let second = read_group(t.path()).unwrap_or_else(|e| panic!("{e}"));
        let r = rates(&first, &second, 0.5);
        let get = |d, f| {
            r.bytes_per_s
                .iter()
                .find(|x| x.0 == d && x.1 == f)
                .map(|x| x.2)
        };
        assert_eq!(get(0, Flow::Total), Some(2e9));
        assert_eq!(get(0, Flow::Local), Some(1e9));
        assert_eq!(get(3, Flow::Total), Some(0.0));
        assert_eq!(get(1, Flow::Total), None);
        assert!(
            r.missing.contains(&(1, Flow::Total, "reset")),
            "{:?}",
            r.missing
        );
        assert!(
            r.missing.contains(&(2, Flow::Total, "unavailable")),
            "{:?}",
            r.missing
        );
        // The next interval from a reset counter counts again.
        set(t.path(), "mon_L3_01", "mbm_total_bytes", "4000\n");
        let third = read_group(t.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rates(&second, &third, 1.0)
                .bytes_per_s
                .iter()
                .find(|x| x.0 == 1 && x.1 == Flow::Total)
                .map(|x| x.2),
            Some(4000.0)
        );
    }

    #[test]
    fn trees_without_mbm_say_why() {
        let none = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(why_not(none.path())
            .unwrap_or_default()
            .contains("resctrl is not mounted"));
        // The recorded trees: one with MBM, one without (L2 only), one that lists MBM
        // features but has no mon_data.
        assert_eq!(why_not(&fixture("resctrl.full")), None);
        assert!(why_not(&fixture("resctrl.l2"))
            .unwrap_or_default()
            .contains("no memory-bandwidth monitoring"));
        assert!(why_not(&fixture("resctrl.l2l3mb"))
            .unwrap_or_default()
            .contains("no mon_data folder"));
    }
}
