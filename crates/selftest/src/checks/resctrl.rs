//! resctrl against its own files: every control group's schemata as `kairos cache --format
//! json` reads them and as the files say; and, where resctrl monitors, the LLC occupancy
//! and memory bandwidth kairos records into a collection's manifest (`cache`) while
//! `cache_thrash` runs, against the same group's `mon_data` files read directly every
//! 100 ms over the same stretch (each side's busy median, so the windows' idle ends do not
//! count). No perf event reads resctrl: the files are the reference.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_platform::names;

use crate::context::{table_rows, Ctx, Step};
use crate::verdict::{busy_rate, Figure, Line, Tolerance, Unit};

pub(crate) const NAME: &str = "resctrl";
const ROOT: &str = "/sys/fs/resctrl";
const SECONDS: &str = "2";

/// A schemata text as a map (resource, domain) -> value, whatever its padding: the kernel
/// writes `    L3:0=fffff;1=fffff` and `MB:0= 100;1= 100` on lines of their own, kairos
/// `L3:0=fffff;1=fffff MB:0=100;1=100` on one.
pub(crate) fn schemata(text: &str) -> BTreeMap<(String, String), String> {
    let mut t = text.replace('\n', " ");
    while t.contains("= ") || t.contains("; ") {
        t = t.replace("= ", "=").replace("; ", ";");
    }
    let mut out = BTreeMap::new();
    for word in t.split_whitespace() {
        let Some((res, rest)) = word.split_once(':') else {
            continue;
        };
        for (d, v) in rest.split(';').filter_map(|p| p.split_once('=')) {
            let v = v.trim().to_ascii_lowercase();
            let v = v.trim_start_matches('0');
            out.insert(
                (res.to_string(), d.trim().to_string()),
                if v.is_empty() {
                    "0".to_string()
                } else {
                    v.to_string()
                },
            );
        }
    }
    out
}

/// The control groups as the files say: (label, schemata text); the root is `default`.
pub(crate) fn groups_on_disk(root: &Path) -> Vec<(String, String)> {
    let mut out = vec![(
        "default".to_string(),
        std::fs::read_to_string(root.join("schemata")).unwrap_or_default(),
    )];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("schemata").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((
            name,
            std::fs::read_to_string(d.join("schemata")).unwrap_or_default(),
        ));
    }
    out
}

/// How many groups kairos reads as the files say, of how many there are.
pub(crate) fn schemata_figures(doc: &serde_json::Value, disk: &[(String, String)]) -> Vec<Figure> {
    let rows = table_rows(doc, "Control groups");
    let same = disk
        .iter()
        .filter(|(name, text)| {
            rows.iter().any(|r| {
                r["Group"].as_str() == Some(name)
                    && r["Schemata"]
                        .as_str()
                        .is_some_and(|s| schemata(s) == schemata(text))
            })
        })
        .count();
    let exact = Tolerance::Absolute(0.0);
    vec![
        Figure::new(
            "control groups",
            Unit::Count,
            Some(rows.len() as f64),
            Some(disk.len() as f64),
            exact,
        ),
        Figure::new(
            "groups whose schemata read as the files say",
            Unit::Count,
            Some(same as f64),
            Some(disk.len() as f64),
            exact,
        ),
    ]
}

/// One reading of a group's monitoring: seconds, (LLC occupancy, MBM total bytes) summed
/// over the domains that gave a figure.
pub(crate) type Reading = (f64, Option<u64>, Option<u64>);

fn read_mon(group: &Path) -> (Option<u64>, Option<u64>) {
    let mut occ = None;
    let mut mbm = None;
    for e in std::fs::read_dir(group.join("mon_data"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let v = |f: &str| {
            std::fs::read_to_string(e.path().join(f))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
        };
        if let Some(x) = v("llc_occupancy") {
            occ = Some(occ.unwrap_or(0) + x);
        }
        if let Some(x) = v("mbm_total_bytes") {
            mbm = Some(mbm.unwrap_or(0) + x);
        }
    }
    (occ, mbm)
}

/// kairos's readings from the manifest's `cache.occupancy`.
pub(crate) fn kairos_readings(cache: &serde_json::Value) -> Vec<Reading> {
    cache["occupancy"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let t = r["t_s"].as_f64()?;
            let domains = r["domains"].as_array()?;
            let sum = |key: &str| {
                let v: Vec<u64> = domains.iter().filter_map(|d| d[key].as_u64()).collect();
                (!v.is_empty()).then(|| v.iter().sum())
            };
            Some((t, sum("llc_occupancy"), sum("mbm_total_bytes")))
        })
        .collect()
}

/// Bandwidth between consecutive readings (a counter that went down is left out), and
/// the occupancy of each.
pub(crate) fn series(r: &[Reading]) -> (Vec<f64>, Vec<f64>) {
    let mut rates = Vec::new();
    for w in r.windows(2) {
        if let ((t0, _, Some(a)), (t1, _, Some(b))) = (w[0], w[1]) {
            if b >= a && t1 > t0 {
                rates.push((b - a) as f64 / (t1 - t0));
            }
        }
    }
    (
        rates,
        r.iter().filter_map(|x| x.1.map(|o| o as f64)).collect(),
    )
}

pub(crate) fn monitor_figures(ours: &[Reading], files: &[Reading]) -> Vec<Figure> {
    let (kr, ko) = series(ours);
    let (fr, fo) = series(files);
    vec![
        Figure::new(
            "memory bandwidth (mbm_total_bytes)",
            Unit::BytesPerSecond,
            busy_rate(&kr),
            busy_rate(&fr),
            Tolerance::Relative {
                fraction: 0.15,
                floor: 0.05e9,
            },
        ),
        Figure::new(
            "LLC occupancy",
            Unit::Bytes,
            busy_rate(&ko),
            busy_rate(&fo),
            Tolerance::Relative {
                fraction: 0.20,
                floor: 1024.0 * 1024.0,
            },
        ),
    ]
}

/// The group this process runs in (kairos's launched target inherits it): the control
/// group whose tasks list us, else the default group.
fn our_group(root: &Path) -> PathBuf {
    let me = std::process::id().to_string();
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.join("schemata").is_file()
                && std::fs::read_to_string(p.join("tasks"))
                    .is_ok_and(|t| t.lines().any(|l| l.trim() == me))
        })
        .unwrap_or_else(|| root.to_path_buf())
}

pub(crate) fn check(ctx: &mut Ctx) -> Line {
    let run = || -> Step<Line> {
        let root = Path::new(ROOT);
        let na = |why: String| Line::not_available(NAME, why);
        if let Err(why) = ctx.capability(names::RESCTRL) {
            let files = if root.join("info").is_dir() {
                format!("{ROOT}/info exists")
            } else {
                format!("{ROOT} is not mounted")
            };
            return Err(na(format!("kairos: {why}; resctrl files: {files}")));
        }
        let against = format!("the resctrl files under {ROOT}, read directly");
        let args: Vec<OsString> = ["cache", "--format", "json"]
            .iter()
            .map(OsString::from)
            .collect();
        let o = ctx.kairos(&args).map_err(na)?;
        if !o.ok() {
            return Err(Line::disagrees(
                NAME,
                &against,
                format!("kairos cache failed: {}", o.kairos_sentence()),
            ));
        }
        let doc: serde_json::Value = serde_json::from_str(&o.stdout).map_err(|e| {
            Line::disagrees(
                NAME,
                &against,
                format!("kairos cache --format json printed no JSON ({e})"),
            )
        })?;
        let mut figures = schemata_figures(&doc, &groups_on_disk(root));
        let group = our_group(root);
        let mut monitored = "no monitoring here (no mon_data): schemata only".to_string();
        if group.join("mon_data").is_dir() {
            let prog = ctx.sample("cache_thrash").map_err(na)?;
            let stop = Arc::new(AtomicBool::new(false));
            let (g, s) = (group.clone(), stop.clone());
            let reader = std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut out: Vec<Reading> = Vec::new();
                while !s.load(Ordering::SeqCst) {
                    let (occ, mbm) = read_mon(&g);
                    out.push((t0.elapsed().as_secs_f64(), occ, mbm));
                    std::thread::sleep(Duration::from_millis(100));
                }
                out
            });
            let dir = ctx.path(NAME);
            let collected = ctx.collect(
                "hotspots",
                &dir,
                &["event=cpu-clock"],
                &prog,
                &["--seconds", SECONDS],
            );
            stop.store(true, Ordering::SeqCst);
            let files = reader.join().unwrap_or_default();
            collected.map_err(|e| Line::disagrees(NAME, &against, e))?;
            let cache = kairos_result::ResultDir::open(&dir)
                .map(|d| d.manifest().extra.get("cache").cloned().unwrap_or_default())
                .map_err(|e| {
                    Line::disagrees(
                        NAME,
                        &against,
                        format!("kairos's result cannot be read: {e}"),
                    )
                })?;
            figures.extend(monitor_figures(&kairos_readings(&cache), &files));
            monitored = format!(
                "group {}: bandwidth within 15% (at least 0.05 GB/s) and occupancy within 20% (at least 1 MiB) while cache_thrash --seconds {SECONDS} ran",
                cache["group"].as_str().unwrap_or("?")
            );
        }
        Ok(Line::judged(
            NAME,
            against,
            format!("every control group's schemata exactly; {monitored}"),
            figures,
        ))
    };
    run().unwrap_or_else(|l| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    #[test]
    fn schemata_read_alike_whatever_the_padding() {
        let kernel = "    L3:0=fffff;1=fffff\n    MB:0= 100;1= 100\n";
        let kairos = "L3:0=fffff;1=fffff MB:0=100;1=100";
        assert_eq!(schemata(kernel), schemata(kairos));
        assert_eq!(schemata(kairos).len(), 4);
        assert_eq!(schemata("L3:0=000ff"), schemata("L3:0=ff"));
        assert_ne!(schemata("L3:0=ff"), schemata("L3:0=f0"));
    }

    /// The recorded goresctrl tree (a plain copy) and kairos cache's JSON of it.
    fn fixture() -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/resctrl/goresctrl/resctrl.full");
        p.is_dir().then_some(p)
    }

    #[test]
    fn the_recorded_tree_reads_as_kairos_read_it() {
        let Some(root) = fixture() else {
            // The shared fixtures are not part of this checkout everywhere: say so.
            eprintln!("skipped: the goresctrl fixture tree is not here");
            return;
        };
        let disk = groups_on_disk(&root);
        assert_eq!(disk.len(), 5, "{disk:?}");
        let row = |g: &str| serde_json::json!({"Group": g, "Mode": "shareable", "Schemata": "L3:0=fffff;1=fffff;2=fffff;3=fffff MB:0=100;1=100;2=100;3=100"});
        let names = [
            "default",
            "Guaranteed",
            "goresctrl.Guaranteed",
            "goresctrl.Stale",
            "non_goresctrl.Group",
        ];
        let doc = serde_json::json!({"blocks": [{"kind": "table", "title": "Control groups", "rows": names.iter().map(|n| row(n)).collect::<Vec<_>>()}]});
        let l = Line::judged(NAME, "files", "x", schemata_figures(&doc, &disk));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // One mask misread.
        let mut rows: Vec<serde_json::Value> = names.iter().map(|n| row(n)).collect();
        rows[1]["Schemata"] =
            "L3:0=fff00;1=fffff;2=fffff;3=fffff MB:0=100;1=100;2=100;3=100".into();
        let doc = serde_json::json!({"blocks": [{"kind": "table", "title": "Control groups", "rows": rows}]});
        let l = Line::judged(NAME, "files", "x", schemata_figures(&doc, &disk));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .starts_with("groups whose schemata read as the files say 4 vs 5"),
            "{}",
            l.figures_text()
        );
    }

    /// Made-up monitoring of a machine with MBM (about 8 GB/s while streaming, 30 MiB of
    /// LLC occupied), read by kairos and from the files at slightly different moments.
    #[test]
    fn made_up_monitoring_agrees_and_disagrees_as_it_should() {
        let readings = |offset: f64, gbs: f64| -> Vec<Reading> {
            let mut bytes = 1u64 << 30;
            (0..25)
                .map(|i| {
                    let busy = (3..22).contains(&i);
                    let r = (
                        offset + i as f64 * 0.1,
                        Some(if busy { 30 << 20 } else { 2 << 20 }),
                        Some(bytes),
                    );
                    bytes += if busy { (gbs * 1e8) as u64 } else { 1_000_000 };
                    r
                })
                .collect()
        };
        let l = Line::judged(
            NAME,
            "files",
            "x",
            monitor_figures(&readings(0.03, 8.0), &readings(0.0, 8.2)),
        );
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        let l = Line::judged(
            NAME,
            "files",
            "x",
            monitor_figures(&readings(0.03, 4.0), &readings(0.0, 8.2)),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        // kairos's manifest form.
        let cache = serde_json::json!({"group": "default", "occupancy": [
            {"t_s": 0.0, "domains": [{"domain": 0, "llc_occupancy": 100, "mbm_total_bytes": 1000, "mbm_local_bytes": 10}, {"domain": 1, "llc_occupancy": 50, "mbm_total_bytes": null, "mbm_local_bytes": null}]},
            {"t_s": 0.1, "domains": [{"domain": 0, "llc_occupancy": 120, "mbm_total_bytes": 3000, "mbm_local_bytes": 10}]}
        ]});
        let r = kairos_readings(&cache);
        assert_eq!(
            r,
            vec![(0.0, Some(150), Some(1000)), (0.1, Some(120), Some(3000))]
        );
        let (rates, occ) = series(&r);
        assert!((rates[0] - 20000.0).abs() < 1e-6, "{rates:?}");
        assert_eq!(occ, vec![150.0, 120.0]);
    }
}
