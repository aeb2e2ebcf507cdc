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

use crate::error::{CliResult, UserError};
use crate::hugepage_setup::{self, pool_now, Mode};
use clap::Args;

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

/// A signal that asked Kairos to stop (SIGTERM, SIGHUP); 0 when none. Ctrl-C is ignored
/// by Kairos itself: it reaches the target (same process group), which ends, and Kairos
/// then restores the pool as on any exit.
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

pub fn run(args: RunArgs) -> CliResult {
    if args.cache_ways.is_some() || args.lock {
        return crate::cmd_run_cache::run(args);
    }
    let mode = Mode::parse(&args.hugepages)?;
    let reserve_n = hugepage_setup::parse_reserve(args.reserve.as_deref(), mode)?;
    let Some(first) = args.program.first() else {
        return Err(UserError::usage("nothing to run: give a program after `--`, e.g. `kairos run --hugepages=hugetlb -- ./app`"));
    };
    require_program(first)?;
    hugepage_setup::require_glibc(mode)?;
    let mut dir = match &args.result_dir {
        Some(p) => Some(kairos_session::create_result_dir(Some(p), "run")?),
        None => None,
    };

    // From here on every exit path drops the guard, which restores the pool.
    let guard = match reserve_n.map(hugepage_setup::reserve).transpose() {
        Ok(g) => g.flatten(),
        Err(e) => {
            if let Some(d) = dir.take() {
                let _ = std::fs::remove_dir_all(d.path());
            }
            return Err(e);
        }
    };
    if mode == Mode::Hugetlb
        && reserve_n.is_none()
        && hugepage_setup::meminfo("HugePages_Free").unwrap_or(0) == 0
    {
        eprintln!("kairos: warning: the 2 MiB pool has no free pages, so malloc will fall back to 4 KiB pages; give --reserve N (see `kairos report hugepages`)");
    }
    let tunable = mode.tunable();
    let mut cmd = Command::new(first);
    cmd.args(&args.program[1..]);
    if let Some(v) = hugepage_setup::tunables_for_target(mode) {
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
    let mut seen = hugepage_setup::Seen::default();
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
        hugepage_setup::read_once(pid, &mut seen);
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
    let (samples, hugetlb_peak, thp_peak) = (seen.samples, seen.hugetlb_peak_kb, seen.thp_peak_kb);
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
    let warnings = hugepage_setup::warnings(
        mode,
        Some(pid),
        &seen,
        pool_free_before,
        pool_before,
        elapsed,
    );
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
