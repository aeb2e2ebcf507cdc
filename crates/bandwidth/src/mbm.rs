//! Bandwidth from resctrl memory-bandwidth monitoring (MBM): the `mbm_total_bytes` and
//! `mbm_local_bytes` files of a group's `mon_data/mon_L3_XX` are cumulative byte counts, so
//! a rate is the difference of two reads over the time between them. A count that went
//! down (the kernel widens the hardware counter to 64 bits, so this is a reset, not a
//! wrap) and a file that says "Unavailable" or "Error" give no figure for that interval.
//!
//! A group's counts cover its own tasks only (a control group's include its monitoring
//! groups'), so the machine's bandwidth is the sum over the default group and every
//! control group: [`read_machine`] and [`machine_rates`].

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

/// The default group and every control group with monitoring data: together they hold
/// every task once (monitoring groups are counted in their control group already).
pub fn control_groups(root: &Path) -> Vec<std::path::PathBuf> {
    let mut v = vec![root.to_path_buf()];
    let mut more: Vec<_> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    !matches!(name, "info" | "mon_groups" | "mon_data")
                        && p.join("mon_data").is_dir()
                })
                .collect()
        })
        .unwrap_or_default();
    more.sort();
    v.extend(more);
    v
}

/// One read of every group of [`control_groups`], by group (a group that cannot be read,
/// e.g. removed meanwhile, is left out).
pub fn read_machine(root: &Path) -> Vec<(std::path::PathBuf, Vec<Reading>)> {
    control_groups(root)
        .into_iter()
        .filter_map(|g| read_group(&g).ok().map(|r| (g, r)))
        .collect()
}

/// The machine's rates: each group's, summed per (domain, flow). A group without a figure
/// for a (domain, flow) in this interval (reset, unavailable) leaves that sum out, since it
/// would be short; a group that appeared since the last read counts from the next one.
pub fn machine_rates(
    prev: &[(std::path::PathBuf, Vec<Reading>)],
    now: &[(std::path::PathBuf, Vec<Reading>)],
    seconds: f64,
) -> Rates {
    use std::collections::BTreeMap;
    let mut sums: BTreeMap<(u32, Flow), f64> = BTreeMap::new();
    let mut out = Rates::default();
    for (group, readings) in now {
        let Some((_, before)) = prev.iter().find(|(g, _)| g == group) else {
            continue;
        };
        let r = rates(before, readings, seconds);
        for (d, f, v) in r.bytes_per_s {
            *sums.entry((d, f)).or_default() += v;
        }
        out.missing.extend(r.missing);
    }
    out.missing.sort_by_key(|m| (m.0, m.1 as u8, m.2));
    out.missing.dedup();
    out.bytes_per_s = sums
        .into_iter()
        .filter(|((d, f), _)| !out.missing.iter().any(|m| m.0 == *d && m.1 == *f))
        .map(|((d, f), v)| (d, f, v))
        .collect();
    out
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

    /// A copy of a whole recorded tree (every group's files).
    fn copy_tree(name: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ok = std::process::Command::new("cp")
            .arg("-r")
            .arg(fixture(name))
            .arg(dir.path().join("r"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cp -r {name}");
        dir
    }

    fn add(group: &Path, domain: &str, bytes: u64) {
        let f = group.join("mon_data").join(domain).join("mbm_total_bytes");
        let v: u64 = std::fs::read_to_string(&f)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        std::fs::write(&f, format!("{}\n", v + bytes)).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_machine_is_the_default_group_plus_every_control_group_once() {
        let t = copy_tree("resctrl.full");
        let root = t.path().join("r");
        let groups: Vec<String> = control_groups(&root)
            .iter()
            .map(|g| g.strip_prefix(&root).unwrap_or(g).display().to_string())
            .collect();
        // Monitoring groups (mon_groups/*) are inside their control group's counts.
        assert_eq!(groups[0], "");
        assert!(
            groups
                .iter()
                .all(|g| !g.contains("mon_groups") && g != "info"),
            "{groups:?}"
        );
        assert!(
            groups.contains(&"goresctrl.Guaranteed".to_string()),
            "{groups:?}"
        );
        let first = read_machine(&root);
        // One second later: 100 MB in the default group and 30 MB in a control group on
        // domain 0; 7 MB in a monitoring group of that control group, which the kernel
        // also counts in the control group (so the files of both move).
        add(&root, "mon_L3_00", 100_000_000);
        add(&root.join("goresctrl.Guaranteed"), "mon_L3_00", 37_000_000);
        add(
            &root
                .join("goresctrl.Guaranteed/mon_groups")
                .join(first_mon_group(&root)),
            "mon_L3_00",
            7_000_000,
        );
        let second = read_machine(&root);
        let r = machine_rates(&first, &second, 1.0);
        let total = |d| {
            r.bytes_per_s
                .iter()
                .find(|x| x.0 == d && x.1 == Flow::Total)
                .map(|x| x.2)
        };
        assert_eq!(total(0), Some(137e6), "{r:?}");
        assert_eq!(total(1), Some(0.0));
        // A reset in one group leaves that domain's sum out rather than short.
        std::fs::write(
            root.join("goresctrl.Guaranteed/mon_data/mon_L3_01/mbm_total_bytes"),
            "0\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let third = read_machine(&root);
        let r = machine_rates(&second, &third, 1.0);
        assert!(
            r.bytes_per_s
                .iter()
                .all(|x| !(x.0 == 1 && x.1 == Flow::Total)),
            "{r:?}"
        );
        assert!(r.missing.contains(&(1, Flow::Total, "reset")));
    }

    fn first_mon_group(root: &Path) -> String {
        let dir = root.join("goresctrl.Guaranteed/mon_groups");
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .find(|e| e.path().join("mon_data").is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .unwrap_or_else(|| panic!("no monitoring group in {}", dir.display()))
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
