//! The kernel's capabilities: tracepoints, uprobes, BTF, huge pages, perf_event_paranoid,
//! kallsyms, the sampling rate limit, and the C library's huge-page tunable.

use std::path::{Path, PathBuf};

use crate::probe::{self, PerfProbe, ProbeOutcome};
use crate::{cap, names, parse, read, read_trim, Capability, Ctx};

impl Ctx<'_> {
    pub(crate) fn tracefs_dir(&self) -> Option<PathBuf> {
        self.mounts
            .iter()
            .find(|m| m.fstype == "tracefs")
            .map(|m| self.root.map_path(&m.target))
            .or_else(|| {
                // debugfs exposes tracing/ as an automount of tracefs.
                self.mounts
                    .iter()
                    .find(|m| m.fstype == "debugfs")
                    .map(|m| self.root.map_path(&m.target).join("tracing"))
                    .filter(|p| p.join("events").is_dir())
            })
    }

    pub(crate) fn tracepoints_cap(&self) -> Capability {
        let pmu = self.pmu_dir("tracepoint").is_dir();
        let Some(dir) = self.tracefs_dir() else {
            let why = if self.filesystems.contains("tracefs") {
                "tracefs is not mounted; as root: mount -t tracefs nodev /sys/kernel/tracing"
            } else {
                "the kernel has no tracefs (CONFIG_TRACING off)"
            };
            return cap(
                names::TRACEPOINTS,
                false,
                format!("tracepoint PMU {}", if pmu { "present" } else { "absent" }),
                Some(why.into()),
            );
        };
        let pf = dir.join("events/exceptions/page_fault_user/id");
        let id: Option<u64> = read_trim(&pf).and_then(|s| s.parse().ok());
        let mut detail = format!("tracefs at {}", dir.display());
        match id {
            Some(id) => {
                detail.push_str(&format!(", exceptions:page_fault_user id {id}"));
                match self.prober.perf_open(PerfProbe::Tracepoint(id)) {
                    ProbeOutcome::Opened => {
                        detail.push_str(", opened");
                        cap(names::TRACEPOINTS, true, detail, None)
                    }
                    o => cap(
                        names::TRACEPOINTS,
                        false,
                        detail,
                        Some(probe::describe_outcome(&o)),
                    ),
                }
            }
            None => {
                let events = dir.join("events").is_dir();
                cap(
                    names::TRACEPOINTS,
                    events,
                    detail,
                    Some(if events {
                        "exceptions:page_fault_user is missing (x86-only tracepoint, or events not readable); other tracepoints are available".into()
                    } else {
                        "tracefs has no readable events directory".into()
                    }),
                )
            }
        }
    }

    pub(crate) fn uprobes_cap(&self) -> Capability {
        let pmu = self.pmu_dir("uprobe");
        if pmu.is_dir() {
            let t = read_trim(&pmu.join("type")).unwrap_or_default();
            cap(
                names::UPROBES,
                true,
                format!("uprobe PMU type {t} (perf_event_open uprobes)"),
                None,
            )
        } else {
            let via_tracefs = self
                .tracefs_dir()
                .is_some_and(|d| d.join("uprobe_events").exists());
            if via_tracefs {
                cap(names::UPROBES, true, "uprobe_events in tracefs", None)
            } else {
                cap(
                    names::UPROBES,
                    false,
                    "no uprobe PMU, no tracefs uprobe_events",
                    Some("the kernel was built without CONFIG_UPROBE_EVENTS".into()),
                )
            }
        }
    }

    pub(crate) fn btf_cap(&self) -> Capability {
        let btf = self.root.sys("kernel/btf/vmlinux");
        let unpriv = self
            .root
            .read_proc("sys/kernel/unprivileged_bpf_disabled")
            .map(|s| s.trim().to_string());
        let priv_txt = if self.privileges.is_root() || self.privileges.has_cap(parse::CAP_BPF) {
            "we may load BPF programs (root or CAP_BPF)"
        } else {
            "loading BPF programs needs root or CAP_BPF+CAP_PERFMON"
        };
        let unpriv_txt = unpriv
            .map(|v| format!("; unprivileged_bpf_disabled = {v}"))
            .unwrap_or_default();
        match std::fs::metadata(&btf) {
            Ok(m) => cap(
                names::EBPF_BTF,
                true,
                format!("/sys/kernel/btf/vmlinux ({} bytes); {priv_txt}{unpriv_txt}", m.len()),
                None,
            ),
            Err(_) => cap(
                names::EBPF_BTF,
                false,
                format!("no /sys/kernel/btf/vmlinux{unpriv_txt}"),
                Some("the kernel was built without CONFIG_DEBUG_INFO_BTF: CO-RE eBPF programs cannot run".into()),
            ),
        }
    }

    pub(crate) fn hugetlb_caps(&self) -> Vec<Capability> {
        let meminfo = self.root.read_proc("meminfo").unwrap_or_default();
        let total = parse::meminfo_field(&meminfo, "HugePages_Total");
        let free = parse::meminfo_field(&meminfo, "HugePages_Free");
        let size = parse::meminfo_field(&meminfo, "Hugepagesize");
        let mounts: Vec<String> = self
            .mounts
            .iter()
            .filter(|m| m.fstype == "hugetlbfs")
            .map(|m| {
                let ps = m
                    .options
                    .split(',')
                    .find_map(|o| o.strip_prefix("pagesize="))
                    .unwrap_or("default");
                format!("{} (pagesize {ps})", m.target)
            })
            .collect();
        let fs = self.filesystems.contains("hugetlbfs");
        let pool_txt = format!(
            "HugePages_Total {} Free {} Hugepagesize {} kB",
            total.map_or("?".into(), |v| v.to_string()),
            free.map_or("?".into(), |v| v.to_string()),
            size.map_or("?".into(), |v| v.to_string())
        );
        let mut out = Vec::new();
        let mount_txt = if mounts.is_empty() {
            "not mounted".to_string()
        } else {
            format!("mounted at {}", mounts.join(", "))
        };
        out.push(if fs {
            cap(
                names::HUGETLBFS,
                true,
                format!("{mount_txt}; {pool_txt}"),
                if mounts.is_empty() {
                    Some("no hugetlbfs mount: MAP_HUGETLB and glibc.malloc.hugetlb=2 still work; libhugetlbfs-style file mappings need one (mount -t hugetlbfs none /dev/hugepages)".into())
                } else {
                    None
                },
            )
        } else {
            cap(
                names::HUGETLBFS,
                false,
                pool_txt,
                Some("the kernel has no hugetlbfs (CONFIG_HUGETLBFS off)".into()),
            )
        });
        for (name, kb, label) in [
            (names::HUGEPAGES_2M, 2048u64, "2 MiB"),
            (names::HUGEPAGES_1G, 1_048_576u64, "1 GiB"),
        ] {
            let dir = self
                .root
                .sys(&format!("kernel/mm/hugepages/hugepages-{kb}kB"));
            if !dir.is_dir() {
                out.push(cap(
                    name,
                    false,
                    format!("no {}", dir.display()),
                    Some(
                        if kb == 1_048_576
                            && !self.cpu.has_flag("pdpe1gb")
                            && self.cpu.vendor.contains("Genuine")
                        {
                            format!("{label} pages need the pdpe1gb CPU flag")
                        } else {
                            format!("the kernel offers no {label} huge pages here")
                        },
                    ),
                ));
                continue;
            }
            let nr: Option<u64> = read_trim(&dir.join("nr_hugepages")).and_then(|s| s.parse().ok());
            let fr: Option<u64> =
                read_trim(&dir.join("free_hugepages")).and_then(|s| s.parse().ok());
            let detail = format!(
                "{label} pool: nr_hugepages {} free {}",
                nr.map_or("?".into(), |v| v.to_string()),
                fr.map_or("?".into(), |v| v.to_string())
            );
            match nr {
                Some(n) if n > 0 => out.push(cap(name, true, detail, None)),
                _ => out.push(cap(
                    name,
                    false,
                    detail,
                    Some(format!(
                        "no {label} pages reserved; as root: echo N > /sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages{}",
                        if kb == 1_048_576 { " (or hugepagesz=1G hugepages=N at boot)" } else { "" }
                    )),
                )),
            }
        }
        out
    }

    pub(crate) fn thp_cap(&self) -> Capability {
        let base = self.root.sys("kernel/mm/transparent_hugepage");
        let Some(enabled) = read(&base.join("enabled")) else {
            return cap(
                names::THP,
                false,
                "no /sys/kernel/mm/transparent_hugepage",
                Some("the kernel was built without transparent huge pages".into()),
            );
        };
        let mode = parse::bracketed_choice(&enabled).unwrap_or_else(|| enabled.trim().to_string());
        let defrag = read(&base.join("defrag")).and_then(|d| parse::bracketed_choice(&d));
        let detail = format!(
            "enabled [{mode}]{}",
            defrag
                .map(|d| format!(", defrag [{d}]"))
                .unwrap_or_default()
        );
        match mode.as_str() {
            "never" => cap(
                names::THP,
                false,
                detail,
                Some("transparent huge pages are switched off (enabled = never)".into()),
            ),
            "madvise" => cap(
                names::THP,
                true,
                detail,
                Some("only for memory the program marks with madvise(MADV_HUGEPAGE) (glibc 2.35+: GLIBC_TUNABLES=glibc.malloc.hugetlb=1)".into()),
            ),
            _ => cap(names::THP, true, detail, None),
        }
    }

    pub(crate) fn paranoid_cap(&self) -> Capability {
        let p = self.privileges;
        let who = if p.is_root() {
            "running as root".to_string()
        } else {
            format!(
                "running as uid {}",
                p.euid.map_or("?".into(), |u| u.to_string())
            )
        };
        let capt = if p.has_cap(parse::CAP_PERFMON) {
            ", CAP_PERFMON held"
        } else if p.has_cap(parse::CAP_SYS_ADMIN) {
            ", CAP_SYS_ADMIN held"
        } else {
            ", no CAP_PERFMON"
        };
        let privileged = p.perf_privileged();
        match self.paranoid {
            None => cap(
                names::PERF_EVENT_PARANOID,
                false,
                format!("no /proc/sys/kernel/perf_event_paranoid; {who}{capt}"),
                Some("the kernel has no perf events".into()),
            ),
            Some(v) => {
                let detail = format!("{v}: {}; {who}{capt}", parse::paranoid_meaning(v));
                if privileged {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        true,
                        format!("{detail}: no restrictions apply to us"),
                        None,
                    )
                } else if v >= 3 {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        false,
                        detail,
                        Some("perf_event_open is forbidden to this user; run as root, grant CAP_PERFMON, or: sysctl kernel.perf_event_paranoid=2".into()),
                    )
                } else {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        true,
                        detail,
                        Some(match v {
                            2 => "kernel code, system-wide profiling and tracepoint data need root/CAP_PERFMON or perf_event_paranoid <= 1 (and -1 for raw tracepoints)".into(),
                            1 => "system-wide profiling needs root/CAP_PERFMON or perf_event_paranoid <= 0".into(),
                            _ => "raw tracepoint data needs perf_event_paranoid = -1 or root".into(),
                        }),
                    )
                }
            }
        }
    }

    pub(crate) fn kptr_cap(&self) -> Capability {
        let v: Option<i32> = self
            .root
            .read_proc("sys/kernel/kptr_restrict")
            .and_then(|s| s.trim().parse().ok());
        // Are the addresses in kallsyms real? (zeros when restricted)
        let kallsyms_real = read_head(&self.root.proc("kallsyms"), 4096).map(|head| {
            head.lines()
                .take(8)
                .filter_map(|l| l.split_whitespace().next())
                .any(|a| a.chars().any(|c| c != '0'))
        });
        let ks = match kallsyms_real {
            Some(true) => "; /proc/kallsyms shows real addresses",
            Some(false) => "; /proc/kallsyms shows zeroed addresses",
            None => "; /proc/kallsyms unreadable",
        };
        match v {
            None => cap(
                names::KPTR_RESTRICT,
                kallsyms_real == Some(true),
                format!("no /proc/sys/kernel/kptr_restrict{ks}"),
                None,
            ),
            Some(v) => {
                let detail = format!("{v}: {}{ks}", parse::kptr_meaning(v));
                let ok = kallsyms_real.unwrap_or(match v {
                    0 => true,
                    1 => self.privileges.has_cap(parse::CAP_SYSLOG),
                    _ => false,
                });
                if ok {
                    cap(names::KPTR_RESTRICT, true, detail, None)
                } else {
                    cap(
                        names::KPTR_RESTRICT,
                        false,
                        detail,
                        Some("kernel functions cannot be named; run as root (with kptr_restrict <= 1) or: sysctl kernel.kptr_restrict=0".into()),
                    )
                }
            }
        }
    }

    pub(crate) fn max_rate_cap(&self, rate: Option<u64>) -> Capability {
        let pct = self
            .root
            .read_proc("sys/kernel/perf_cpu_time_max_percent")
            .map(|s| s.trim().to_string());
        match rate {
            Some(r) if r > 0 => {
                let period_us = 1e6 / r as f64;
                cap(
                    names::MAX_SAMPLE_RATE,
                    true,
                    format!(
                        "{r} Hz (shortest frequency-mode period {period_us:.1} us){}",
                        pct.map(|p| format!("; perf_cpu_time_max_percent {p}")).unwrap_or_default()
                    ),
                    Some("the kernel lowers this limit by itself when sample handling takes too long (see dmesg: \"perf: interrupt took too long\")".into()),
                )
            }
            Some(_) => cap(
                names::MAX_SAMPLE_RATE,
                false,
                "0 Hz",
                Some("sampling is disabled (perf_event_max_sample_rate = 0)".into()),
            ),
            None => cap(
                names::MAX_SAMPLE_RATE,
                false,
                "no /proc/sys/kernel/perf_event_max_sample_rate",
                Some("the kernel has no perf events".into()),
            ),
        }
    }
}

fn read_head(p: &Path, max: usize) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut buf = Vec::with_capacity(max);
    f.take(max as u64).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

pub(crate) fn glibc_cap(version: Option<String>) -> Capability {
    let Some(v) = version else {
        return cap(
            names::GLIBC,
            false,
            "not linked against glibc",
            Some("gnu_get_libc_version is not available (musl or another C library)".into()),
        );
    };
    let (maj, min) = {
        let mut it = v.split('.').map(|p| p.trim().parse::<u32>().ok());
        (it.next().flatten(), it.next().flatten())
    };
    let note = match (maj, min) {
        (Some(2), Some(m)) if m >= 35 => Some(
            "malloc huge pages via GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (THP) or =2 (hugetlbfs pool); libhugetlbfs HUGETLB_MORECORE does nothing since 2.34".to_string(),
        ),
        (Some(2), Some(34)) => Some(
            "libhugetlbfs HUGETLB_MORECORE does nothing (morecore removed in 2.34); glibc.malloc.hugetlb needs 2.35".to_string(),
        ),
        (Some(2), Some(_)) => Some("no glibc.malloc.hugetlb tunable (needs 2.35)".to_string()),
        _ => None,
    };
    cap(names::GLIBC, true, format!("glibc {v}"), note)
}
