//! `kairos run [--hugepages=hugetlb|thp] [--reserve N] [-r DIR] -- PROGRAM ARGS`: runs a
//! program with malloc's huge pages switched on, checks from /proc that it really got
//! them (glibc falls back to 4 KiB pages silently), and restores the pool it changed.
//!
//! With `-r DIR` it also writes a small result (manifest only: elapsed time, the
//! target's rusage, the huge pages seen) for `kairos compare`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use kairos_analysis_hugepages::pool::{self, PoolCounts, PoolReading};
use kairos_analysis_hugepages::{parse_glibc, pool_file, MIB2};
use kairos_platform::Prober;

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// hugetlb (2 MiB pool pages via GLIBC_TUNABLES=glibc.malloc.hugetlb=2), thp
    /// (transparent huge pages, glibc.malloc.hugetlb=1) or none (a plain baseline run).
    #[arg(long = "hugepages", default_value = "none")]
    pub hugepages: String,
    /// Make sure this many 2 MiB pages are free in the pool while the program runs
    /// (raises /proc/sys/vm/nr_hugepages, restored afterwards). See `kairos report hugepages`.
    #[arg(long = "reserve", value_name = "N")]
    pub reserve: Option<String>,
    /// Write a result (manifest only) here, for `kairos compare`.
    #[arg(short = 'r', long = "result-dir")]
    pub result_dir: Option<PathBuf>,
    /// Give the program N cache ways of its own, exclusive, through resctrl (see `kairos
    /// cache`); its occupancy is recorded and every change restored when it ends.
    #[arg(long = "cache-ways", value_name = "N")]
    pub cache_ways: Option<String>,
    /// Cache level for --cache-ways: L3 (servers) or L2 (e.g. Atom); L3CODE/L3DATA under CDP.
    #[arg(long = "level", default_value = "L3")]
    pub level: String,
    /// With --cache-ways: run the program on these CPUs, which also join its group.
    #[arg(long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// With --cache-ways: pseudo-lock the ways in the cache of the first --cpus CPU
    /// (kernel support: Broadwell-X, Goldmont only); the program gets /dev/pseudo_lock/NAME
    /// in $KAIROS_PSEUDO_LOCK.
    #[arg(long = "lock")]
    pub lock: bool,
    /// With --cache-ways: where resctrl is mounted.
    #[arg(long = "resctrl-root", default_value = kairos_resctrl::DEFAULT_ROOT)]
    pub resctrl_root: PathBuf,
    /// CPU directory with cpuN/cache/indexK (tests).
    #[arg(long = "cpu-root", hide = true)]
    pub cpu_root: Option<PathBuf>,
    /// With --cache-ways: milliseconds between occupancy readings.
    #[arg(long = "interval-ms", default_value = "100")]
    pub interval_ms: u64,
    /// Program to run and its arguments (after `--`).
    #[arg(last = true)]
    pub program: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    None,
    Hugetlb,
    Thp,
}

/// A signal that asked Kairos to stop (SIGTERM, SIGHUP); 0 when none. Ctrl-C is ignored
/// by Kairos itself: it reaches the target (same process group), which ends, and Kairos
/// then restores the pool as on any exit.
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

/// The pool size Kairos changed, restored when dropped: on success, on error returns,
/// and when the target could not start.
struct PoolGuard {
    file: String,
    old: u64,
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        match std::fs::write(&self.file, format!("{}\n", self.old)) {
            Ok(()) => eprintln!(
                "kairos: huge-page pool restored to {} pages ({})",
                self.old, self.file
            ),
            Err(e) => eprintln!(
                "kairos: could not restore {} to {} ({e}); do it by hand: echo {} > {}",
                self.file, self.old, self.old, self.file
            ),
        }
    }
}

fn meminfo(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    kairos_platform::parse::meminfo_field(&s, key)
}

fn pool_now() -> Option<PoolCounts> {
    PoolCounts::from_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Reserves so that `n` 2 MiB pages are free; changes nothing when it cannot.
fn reserve(n: u64) -> CliResult<Option<PoolGuard>> {
    let file = pool_file(MIB2);
    let old = read_u64(&file).ok_or_else(|| {
        UserError::failed(format!(
            "cannot read {file}: this kernel has no hugetlbfs pool; nothing was changed"
        ))
    })?;
    // Free pages already promised to another process's mappings (HugePages_Rsvd) are not
    // free for this program.
    let free = pool_now().map_or(0, |p| p.free.saturating_sub(p.rsvd));
    if free >= n {
        println!(
            "Huge-page pool: {free} pages free already (nr_hugepages {old}), nothing to reserve"
        );
        return Ok(None);
    }
    let want = old + (n - free);
    if let Err(e) = std::fs::write(&file, format!("{want}\n")) {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
            "reserving huge pages needs root (or write access to that file)".to_string()
        } else {
            e.to_string()
        };
        return Err(UserError::failed(format!("cannot reserve {n} huge pages: writing {want} to {file} failed ({why}); nothing was changed")));
    }
    let guard = PoolGuard {
        file: file.clone(),
        old,
    };
    let got = read_u64(&file).unwrap_or(old);
    if got < want {
        let mem = meminfo("MemFree")
            .map(|k| format!("{} MiB", k / 1024))
            .unwrap_or_else(|| "unknown".into());
        drop(guard);
        return Err(UserError::failed(format!(
            "cannot reserve {n} huge pages: the kernel gave {} of the {} pages asked for (free memory {mem}, too little \
             or too fragmented for 2 MiB pages; try `echo 3 > /proc/sys/vm/drop_caches` or a smaller N); the pool was put back to {old}",
            got.saturating_sub(old),
            want - old
        )));
    }
    println!("Huge-page pool: nr_hugepages {old} -> {got} ({n} pages free for the program)");
    Ok(Some(guard))
}

/// A number from a `Key:   1234 kB` line of a /proc file.
fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    kairos_platform::parse::meminfo_field(&s, key)
}

pub fn run(args: RunArgs) -> CliResult {
    if args.cache_ways.is_some() || args.lock {
        return crate::cmd_run_cache::run(args);
    }
    let mode = match args.hugepages.as_str() {
        "hugetlb" => Mode::Hugetlb,
        "thp" => Mode::Thp,
        "none" => Mode::None,
        other => return Err(UserError::usage(format!("--hugepages '{other}' is not a mode; give hugetlb (the 2 MiB pool), thp (transparent huge pages) or none"))),
    };
    let reserve_n = match args.reserve.as_deref() {
        None => None,
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 && n <= 1 << 24 => Some(n),
            _ => return Err(UserError::usage(format!("--reserve '{s}' must be a number of 2 MiB pages from 1 to 16777216, e.g. --reserve 52 (see `kairos report hugepages`)"))),
        },
    };
    if reserve_n.is_some() && mode != Mode::Hugetlb {
        return Err(UserError::usage(
            "--reserve applies to --hugepages=hugetlb only: transparent huge pages need no pool",
        ));
    }
    let Some(first) = args.program.first() else {
        return Err(UserError::usage("nothing to run: give a program after `--`, e.g. `kairos run --hugepages=hugetlb -- ./app`"));
    };
    require_program(first)?;
    let glibc_text = kairos_platform::LiveProber.glibc_version();
    if mode != Mode::None
        && !matches!(glibc_text.as_deref().and_then(parse_glibc), Some((2, m)) if m >= 35)
    {
        return Err(UserError::failed(format!(
            "glibc {} has no glibc.malloc.hugetlb tunable (it needs 2.35 or newer; libhugetlbfs's HUGETLB_MORECORE does nothing \
             since 2.34), so Kairos cannot switch malloc to huge pages here; see `kairos report hugepages` for what works",
            glibc_text.as_deref().unwrap_or("(not found)")
        )));
    }
    let mut dir = match &args.result_dir {
        Some(p) => Some(kairos_session::create_result_dir(Some(p), "run")?),
        None => None,
    };

    // From here on every exit path drops the guard, which restores the pool.
    let guard = match reserve_n.map(reserve).transpose() {
        Ok(g) => g.flatten(),
        Err(e) => {
            if let Some(d) = dir.take() {
                let _ = std::fs::remove_dir_all(d.path());
            }
            return Err(e);
        }
    };
    if mode == Mode::Hugetlb && reserve_n.is_none() && meminfo("HugePages_Free").unwrap_or(0) == 0 {
        eprintln!("kairos: warning: the 2 MiB pool has no free pages, so malloc will fall back to 4 KiB pages; give --reserve N (see `kairos report hugepages`)");
    }
    let tunable = match mode {
        Mode::Hugetlb => Some("glibc.malloc.hugetlb=2"),
        Mode::Thp => Some("glibc.malloc.hugetlb=1"),
        Mode::None => None,
    };
    let mut cmd = Command::new(first);
    cmd.args(&args.program[1..]);
    if let Some(t) = tunable {
        // Keep other tunables the user set; ours goes last so it wins.
        let v = match std::env::var("GLIBC_TUNABLES") {
            Ok(old) if !old.is_empty() => format!("{old}:{t}"),
            _ => t.to_string(),
        };
        println!("Environment: GLIBC_TUNABLES={v}");
        cmd.env("GLIBC_TUNABLES", v);
    }
    // SAFETY: plain signal dispositions; the handler only stores to an atomic.
    let old_int = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
    }
    let pool_before = pool_now().unwrap_or_default();
    let pool_free_before = pool_before.free;
    let page_kb = meminfo("Hugepagesize").unwrap_or(2048);
    let mut readings: Vec<PoolReading> = Vec::new();
    let started = Instant::now();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            unsafe { libc::signal(libc::SIGINT, old_int) };
            drop(guard);
            if let Some(d) = dir.take() {
                let _ = std::fs::remove_dir_all(d.path());
            }
            return Err(UserError::failed(format!("'{first}' cannot be started ({e}); check the path and its execute bit; nothing else was changed")));
        }
    };
    let pid = child.id() as libc::pid_t;
    let (status_path, smaps_path) = (
        format!("/proc/{pid}/status"),
        format!("/proc/{pid}/smaps_rollup"),
    );
    let maps_path = format!("/proc/{pid}/smaps");
    let (mut samples, mut hugetlb_peak, mut thp_peak) = (0u64, 0u64, 0u64);
    let mut wstatus: libc::c_int = 0;
    // SAFETY: rusage is plain data, filled by wait4.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut forwarded = false;
    loop {
        // SAFETY: waits for our own child only; WNOHANG never blocks.
        let r = unsafe { libc::wait4(pid, &mut wstatus, libc::WNOHANG, &mut ru) };
        if r == pid || r < 0 {
            break;
        }
        // The pool first, the program second (see pool::lost_to_others).
        let pool_then = pool_now();
        let mapped = std::fs::read_to_string(&maps_path)
            .ok()
            .and_then(|t| pool::smaps_huge(&t, page_kb));
        if let (Some(h), t) = (
            proc_kb(&status_path, "HugetlbPages"),
            proc_kb(&smaps_path, "AnonHugePages"),
        ) {
            samples += 1;
            hugetlb_peak = hugetlb_peak.max(h);
            thp_peak = thp_peak.max(t.unwrap_or(0));
            // No mapping listed: the program is exiting; its pages are on their way back.
            if let (Some(pool), Some((mapped_kb, held_kb))) = (pool_then, mapped) {
                readings.push(PoolReading {
                    pool,
                    mapped_kb,
                    held_kb,
                });
            }
        }
        let sig = STOP.load(Ordering::SeqCst);
        if sig != 0 && !forwarded {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, sig) };
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed().as_secs_f64();
    unsafe {
        libc::signal(libc::SIGINT, old_int);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::signal(libc::SIGHUP, libc::SIG_DFL);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let (user_s, system_s) = (tv(ru.ru_utime), tv(ru.ru_stime));
    let (minflt, majflt) = (ru.ru_minflt as u64, ru.ru_majflt as u64);
    let exit = kairos_session::exit_of(std::os::unix::process::ExitStatusExt::from_raw(wstatus));
    drop(guard);

    println!("\nRun");
    println!(
        "  Elapsed:                {elapsed:.3} s (user {user_s:.3} s, system {system_s:.3} s)"
    );
    println!(
        "  Page faults:            {} ({minflt} minor, {majflt} major)",
        minflt + majflt
    );
    println!("  /proc samples (50 ms):  {samples}");
    println!(
        "  HugetlbPages, peak:     {hugetlb_peak} kB ({} pages of 2 MiB)",
        hugetlb_peak / 2048
    );
    println!("  AnonHugePages, peak:    {thp_peak} kB");
    match exit {
        kairos_result::TargetExit::Code { code } => {
            println!("  Target exit:            status {code}")
        }
        kairos_result::TargetExit::Signal { signal } => {
            println!("  Target exit:            killed by signal {signal}")
        }
        _ => {}
    }
    let mut warnings = Vec::new();
    if samples == 0 {
        warnings.push(format!(
            "the target exited after {:.0} ms, before Kairos could read /proc/{pid} once: whether it used huge pages is not verified",
            elapsed * 1e3
        ));
    } else if mode == Mode::Hugetlb && hugetlb_peak == 0 {
        warnings.push(format!(
            "huge pages were NOT used: /proc/{pid}/status never showed HugetlbPages (pool had {pool_free_before} free pages; \
             malloc uses them only for blocks of 2 MiB or more, and falls back to 4 KiB pages when the pool is short)"
        ));
    } else if mode == Mode::Thp && thp_peak == 0 {
        warnings.push(
            "transparent huge pages were NOT used: AnonHugePages stayed 0 (check /sys/kernel/mm/transparent_hugepage/enabled is not \
             'never'; malloc advises only blocks of 2 MiB or more)"
                .to_string(),
        );
    } else if mode == Mode::Hugetlb {
        let lost = pool::lost_to_others(pool_before, &readings, page_kb);
        if lost > 0 {
            warnings.push(format!(
                "the pool lost {lost} pages while the program ran that the program neither held nor had reserved; another process used the pool"
            ));
        }
    }
    for w in &warnings {
        eprintln!("kairos: warning: {w}");
    }
    if let Some(mut d) = dir {
        let m = d.manifest_mut();
        run_manifest(m, &args.program, elapsed, exit, forwarded);
        m.extra.insert(
            "process".into(),
            serde_json::json!({"minor_faults": minflt, "major_faults": majflt, "user_s": user_s, "system_s": system_s, "source": "wait4 rusage"}),
        );
        m.extra.insert(
            "hugepages".into(),
            serde_json::json!({"mode": args.hugepages, "tunable": tunable, "reserved": reserve_n, "proc_samples": samples,
                               "hugetlb_peak_kb": hugetlb_peak, "anon_huge_peak_kb": thp_peak, "warnings": warnings}),
        );
        m.notes.extend(warnings.iter().cloned());
        kairos_session::save(&d)?;
        println!(
            "\nResult: {}  (see `kairos compare A {}`)",
            d.path().display(),
            d.path().display()
        );
    }
    Ok(())
}

/// The manifest of a `kairos run` result: what ran, when, for how long and how it ended
/// (`signalled`: Kairos passed a stop signal on to it).
pub(crate) fn run_manifest(
    m: &mut kairos_result::Manifest,
    program: &[String],
    elapsed: f64,
    exit: kairos_result::TargetExit,
    signalled: bool,
) {
    m.kind = Some("run".into());
    m.command_line = Some(std::env::args().collect());
    m.target = Some(kairos_result::Target::Program {
        program: program.first().cloned().unwrap_or_default(),
        args: program.get(1..).unwrap_or_default().to_vec(),
    });
    m.start_time = Some(kairos_result::rfc3339_utc(
        SystemTime::now() - Duration::from_secs_f64(elapsed),
    ));
    m.duration_secs = Some(elapsed);
    m.host = Some(kairos_session::this_host());
    m.target_exit = Some(exit);
    m.stopped_by = Some(if signalled {
        "signal".into()
    } else {
        "target exited".into()
    });
}

/// A missing program is found before anything is changed: a path that is a file, or a
/// command on PATH (found as exec would, by the collectors' own lookup).
pub(crate) fn require_program(first: &str) -> Result<(), UserError> {
    if kairos_session::resolve_program(std::path::Path::new(first)).is_some() {
        Ok(())
    } else {
        Err(UserError::failed(format!("program '{first}' was not found; give a path to an executable or a command on PATH; nothing was changed")))
    }
}
