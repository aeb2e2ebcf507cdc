//! A stand-in for the KERNEL's side of resctrl on a plain directory (a copy of a
//! recorded tree), for tests only: it is not a fake of Kairos's code. The real kernel
//! fills a new group directory during mkdir and keeps its counters; this thread does the
//! same a few milliseconds later (Kairos waits for the files on plain directories):
//!
//! - a new directory under the root gets `schemata` (every resource of the default
//!   group at its full mask, as the kernel gives a new group in shareable mode), `mode`
//!   (shareable), `tasks`, `cpus`, `cpus_list`, and `mon_data/mon_L3_XX` when the tree
//!   monitors;
//! - the counters of such a group read "Unavailable" until a task is in it, then
//!   `llc_occupancy` grows by 64 KiB and `mbm_total_bytes` by 1 MiB per 10 ms tick.
//!
//! It does not merge partial schemata writes or validate masks as the kernel does;
//! Kairos writes whole schemata files, which both accept the same way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::info::Caps;
use crate::mask;
use crate::schemata::{Line, Schemata};

pub struct FakeKernel {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeKernel {
    pub fn start(root: &Path) -> FakeKernel {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r) = (stop.clone(), root.to_path_buf());
        let thread = std::thread::spawn(move || {
            let mut tick = 0u64;
            // Each directory is filled once: a group being removed must not come back.
            let mut seen = std::collections::HashSet::new();
            while !s.load(Ordering::SeqCst) {
                populate(&r, &mut seen);
                if tick.is_multiple_of(5) {
                    count(&r);
                }
                tick += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        FakeKernel {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeKernel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn groups(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && !matches!(
                            p.file_name().and_then(|n| n.to_str()),
                            Some("info" | "mon_groups" | "mon_data")
                        )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn populate(root: &Path, seen: &mut std::collections::HashSet<PathBuf>) {
    let caps = Caps::read(root).unwrap_or_default();
    let def = std::fs::read_to_string(root.join("schemata"))
        .ok()
        .and_then(|s| Schemata::parse(&s).ok())
        .unwrap_or_default();
    for g in groups(root) {
        if !seen.insert(g.clone()) || g.join("schemata").exists() {
            continue;
        }
        let mut s = Schemata::default();
        for l in &def.lines {
            let full = caps
                .cache(&l.resource)
                .map(|c| mask::format_cbm(c.cbm_mask, c.cbm_mask));
            s.set_line(Line {
                resource: l.resource.clone(),
                domains: l
                    .domains
                    .iter()
                    .map(|(d, v)| (*d, full.clone().unwrap_or_else(|| v.clone())))
                    .collect(),
            });
        }
        for (f, v) in [
            ("mode", "shareable\n"),
            ("tasks", ""),
            ("cpus", "0\n"),
            ("cpus_list", "\n"),
        ] {
            let _ = std::fs::write(g.join(f), v);
        }
        if caps.mon.is_some() {
            let doms = caps
                .caches
                .iter()
                .find(|c| c.level() == Some(3))
                .map(|c| {
                    def.line(&c.name)
                        .map(|l| l.domains.iter().map(|(d, _)| *d).collect())
                        .unwrap_or_default()
                })
                .unwrap_or_else(|| vec![0]);
            for d in doms {
                let m = g.join(format!("mon_data/mon_L3_{d:02}"));
                let _ = std::fs::create_dir_all(&m);
                for f in ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"] {
                    let _ = std::fs::write(m.join(f), "Unavailable\n");
                }
            }
        }
        // Last: its presence tells Kairos the directory is ready.
        let _ = std::fs::write(g.join("schemata"), s.render());
    }
}

fn count(root: &Path) {
    for g in groups(root) {
        let busy = std::fs::read_to_string(g.join("tasks")).is_ok_and(|t| !t.trim().is_empty());
        let Ok(rd) = std::fs::read_dir(g.join("mon_data")) else {
            continue;
        };
        for m in rd.filter_map(Result::ok).map(|e| e.path()) {
            if !busy {
                continue;
            }
            let bump = |f: &str, by: u64| {
                let old = std::fs::read_to_string(m.join(f))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                // Never create: the group may be going away.
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(m.join(f))
                {
                    let _ =
                        std::io::Write::write_all(&mut file, format!("{}\n", old + by).as_bytes());
                }
            };
            bump("llc_occupancy", 65536);
            bump("mbm_total_bytes", 1 << 20);
            bump("mbm_local_bytes", 1 << 20);
        }
    }
}
