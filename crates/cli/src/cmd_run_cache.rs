//! `kairos run --cache-ways N [--level L2|L3] [--cpus LIST] [--lock] -- PROGRAM`: runs the
//! program in a resctrl group of its own (`kairos-PID`) holding N exclusive ways,
//! records the group's LLC occupancy and memory bandwidth over time, and undoes every
//! change (group, default-group mask) when the program ends, crashes or is stopped with
//! Ctrl-C / SIGTERM / SIGHUP, and when Kairos itself fails.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use kairos_resctrl::plan::{self, Request};
use kairos_resctrl::write::{self, Journal};
use kairos_resctrl::{avail, mask, monitor, why, Error, Tree};

use crate::cmd_run::RunArgs;
use crate::error::{CliResult, UserError};

/// The last of SIGINT/SIGTERM/SIGHUP Kairos received (0: none). Kairos keeps running
/// until the program has ended, so that it can restore what it changed.
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

/// One reading of the group's counters.
struct Sample {
    t: f64,
    readings: Vec<monitor::Reading>,
}

fn refused(what: &str, e: Error) -> UserError {
    UserError::failed(format!("{what}: {e}; nothing was changed"))
}

pub fn run(args: RunArgs) -> CliResult {
    if args.hugepages != "none" || args.reserve.is_some() {
        return Err(UserError::usage(
            "--cache-ways cannot be combined with --hugepages/--reserve yet; run one at a time",
        ));
    }
    let Some(ways_txt) = args.cache_ways.as_deref() else {
        return Err(UserError::usage(
            "--lock needs --cache-ways N: the number of ways to pseudo-lock",
        ));
    };
    let ways = ways_txt.parse::<u32>().ok().filter(|&n| (1..=64).contains(&n)).ok_or_else(|| {
        UserError::usage(format!("--cache-ways '{ways_txt}' must be a number of cache ways from 1 to 64, e.g. --cache-ways 4 (see `kairos cache`)"))
    })?;
    let level = args.level.to_ascii_uppercase();
    let cpus = match args.cpus.as_deref() {
        Some(s) => Some(
            mask::parse_cpu_list(s)
                .ok()
                .filter(|v| !v.is_empty() && v.iter().all(|&c| c < libc::CPU_SETSIZE as u32))
                .ok_or_else(|| {
                    UserError::usage(format!("--cpus '{s}' is not a CPU list like 2 or 0-3,8"))
                })?,
        ),
        None => None,
    };
    if args.lock && cpus.is_none() {
        return Err(UserError::usage("--lock needs --cpus LIST: a region is locked in one cache instance, the one the first of those CPUs uses"));
    }
    let Some(first) = args.program.first() else {
        return Err(UserError::usage("nothing to run: give a program after `--`, e.g. `kairos run --cache-ways 4 -- ./rt_loop`"));
    };
    crate::cmd_run::require_program(first)?;
    let root = &args.resctrl_root;
    let tree = match crate::cmd_cache::open(root)? {
        Ok(t) => t,
        Err(_) => {
            let a = why::explain_live(root);
            return Err(UserError::failed(format!(
                "cannot give the program cache ways: resctrl is not available here: {}; nothing was changed ({})",
                a.causes.join("; "),
                why::STILL_WORKS
            )));
        }
    };
    if let Some(c) = &cpus {
        let known: Vec<u32> = tree
            .groups
            .iter()
            .flat_map(|g| g.cpus.iter().copied())
            .collect();
        if let Some(bad) = c.iter().find(|x| !known.is_empty() && !known.contains(x)) {
            return Err(UserError::usage(format!(
                "--cpus: CPU {bad} is not one of this machine's CPUs ({}); nothing was changed",
                mask::format_list(&tree.default_group().cpus)
            )));
        }
        // Removing our group gives its CPUs to the default group: one taken from another
        // group could not be given back.
        if let Some(g) = tree
            .groups
            .iter()
            .skip(1)
            .find(|g| c.iter().any(|x| g.cpus.contains(x)))
        {
            return Err(UserError::failed(format!(
                "--cpus {}: CPUs {} belong to group {}, and Kairos takes CPUs only from the default group; pick others; nothing was changed",
                mask::format_list(c),
                mask::format_list(&g.cpus),
                g.name
            )));
        }
    }
    let topo = crate::cmd_cache::topology(root, args.cpu_root.as_deref());
    let lvl: u8 = if level.starts_with("L2") { 2 } else { 3 };
    let lock_domain = match (&cpus, args.lock) {
        (Some(c), true) => Some(topo.domain_of(lvl, c[0]).ok_or_else(|| {
            UserError::failed(format!("which L{lvl} cache CPU {} uses is unknown (no cpu{}/cache/indexK/id of level {lvl}); nothing was changed", c[0], c[0]))
        })?),
        _ => None,
    };
    let group = format!("kairos-{}", std::process::id());
    let req = Request {
        level: level.clone(),
        ways,
        lock_domain,
        group: group.clone(),
    };
    let plan = plan::plan(&tree, &req).map_err(|e| {
        refused(
            &format!("cannot give the program {ways} exclusive {level} ways"),
            e,
        )
    })?;
    let mut dir = match &args.result_dir {
        Some(p) => Some(kairos_session::create_result_dir(Some(p), "run")?),
        None => None,
    };

    // From here every change is in the journal; dropping it (any return below, or a
    // panic) undoes them.
    let mut journal = Journal::new(&tree);
    let fail = |journal: &mut Journal, dir: &mut Option<kairos_result::ResultDir>, msg: String| {
        let left = journal.undo();
        if let Some(d) = dir.take() {
            let _ = std::fs::remove_dir_all(d.path());
        }
        let restored = if left.is_empty() {
            "everything Kairos changed was restored".to_string()
        } else {
            format!("NOT restored: {}", left.join("; "))
        };
        UserError::failed(format!("{msg}; {restored}"))
    };
    let applied = match write::apply(&tree, &plan, &mut journal) {
        Ok(a) => a,
        Err(e) => {
            return Err(fail(
                &mut journal,
                &mut dir,
                format!("cannot set up the cache group: {e}"),
            ))
        }
    };
    let full = plan.cbm_mask;
    // One line per distinct placement, with the domains that share it.
    let mut lines: Vec<(String, Vec<u32>)> = Vec::new();
    for dp in &plan.domains {
        let shrink: Vec<String> = dp
            .shrink
            .iter()
            .map(|(r, o, n)| {
                format!(
                    "{r} {} -> {}",
                    mask::format_cbm(*o, full),
                    mask::format_cbm(*n, full)
                )
            })
            .collect();
        let text = format!(
            "ways {} (mask {}){}",
            mask::way_list(dp.mask),
            mask::format_cbm(dp.mask, full),
            if shrink.is_empty() {
                String::new()
            } else {
                format!("; default group shrunk: {}", shrink.join(", "))
            }
        );
        match lines.iter_mut().find(|(t, _)| *t == text) {
            Some((_, d)) => d.push(dp.domain),
            None => lines.push((text, vec![dp.domain])),
        }
    }
    for (text, doms) in &lines {
        println!(
            "Cache: group {group}, {} domains {}: {text}",
            plan.resources.join("/"),
            mask::format_list(doms)
        );
    }
    if let Err(why) = &applied.exclusive_mode {
        println!("Cache: the kernel kept the group shareable ({why}); no other group holds its ways now, but one made later could");
    }
    if let (Some(c), false) = (&cpus, plan.lock) {
        if let Err(e) = write::assign_cpus(&applied.path, c) {
            return Err(fail(
                &mut journal,
                &mut dir,
                format!(
                    "cannot assign CPUs {} to the group: {e}",
                    mask::format_list(c)
                ),
            ));
        }
        println!(
            "Cache: CPUs {} joined the group (default-group tasks running there fill its ways too)",
            mask::format_list(c)
        );
    }
    let now_tree = Tree::read(root).ok();
    let availability = now_tree.as_ref().and_then(|t| avail::domains(t).ok());
    let per_cpu = match (&now_tree, &availability) {
        (Some(t), Some(a)) => avail::per_cpu(t, &topo, a),
        _ => None,
    };

    let mut cmd = Command::new(first);
    cmd.args(&args.program[1..]);
    if let Some(dev) = &applied.lock_device {
        cmd.env("KAIROS_PSEUDO_LOCK", dev);
    }
    let tasks = CString::new(applied.path.join("tasks").as_os_str().as_encoded_bytes())
        .map_err(|_| UserError::failed("the resctrl root path holds a NUL byte"))?;
    let in_group = !plan.lock;
    // SAFETY: plain data, filled before the fork.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().flatten() {
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    let pin = cpus.is_some();
    // SAFETY: between fork and exec only async-signal-safe calls: sched_setaffinity,
    // getpid, open, write, close, on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if pin && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if in_group {
                let mut buf = [0u8; 24];
                let mut i = buf.len() - 1;
                buf[i] = b'\n';
                let mut v = libc::getpid() as u64;
                loop {
                    i -= 1;
                    buf[i] = b'0' + (v % 10) as u8;
                    v /= 10;
                    if v == 0 {
                        break;
                    }
                }
                let fd = libc::open(
                    tasks.as_ptr(),
                    libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let w = libc::write(fd, buf[i..].as_ptr().cast(), buf.len() - i);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if w < 0 {
                    return Err(err);
                }
            }
            Ok(())
        });
    }
    // SAFETY: plain handlers that store to an atomic; exec resets them in the child.
    let old: Vec<(libc::c_int, libc::sighandler_t)> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .iter()
        .map(|&s| {
            (s, unsafe {
                libc::signal(s, on_signal as *const () as libc::sighandler_t)
            })
        })
        .collect();
    let restore_signals = || {
        for (s, h) in &old {
            unsafe { libc::signal(*s, *h) };
        }
    };
    let started = Instant::now();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            restore_signals();
            return Err(fail(
                &mut journal,
                &mut dir,
                format!("'{first}' cannot be started in the cache group ({e})"),
            ));
        }
    };
    let pid = child.id() as libc::pid_t;
    println!(
        "Cache: running {first} (pid {pid}){}",
        if in_group {
            format!(" in {}", applied.path.display())
        } else {
            String::new()
        }
    );
    let monitored = in_group && applied.path.join("mon_data").is_dir();
    let mut llc = crate::run_llc::LlcMisses::start(pid);
    let interval = Duration::from_millis(args.interval_ms.clamp(10, 60_000));
    let mut samples: Vec<Sample> = Vec::new();
    let mut changes: Vec<(f64, Vec<avail::DomainUse>)> = Vec::new();
    let mut last_avail = availability.clone();
    let mut wstatus: libc::c_int = 0;
    // SAFETY: rusage is plain data, filled by wait4.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut forwarded = 0;
    let mut next_check = Instant::now();
    loop {
        // SAFETY: waits for our own child only; WNOHANG never blocks.
        let r = unsafe { libc::wait4(pid, &mut wstatus, libc::WNOHANG, &mut ru) };
        if r == pid || r < 0 {
            break;
        }
        let t = started.elapsed().as_secs_f64();
        llc.tick(t);
        if monitored {
            if let Ok(readings) = monitor::read(&applied.path) {
                samples.push(Sample { t, readings });
            }
        }
        // Other groups may change while the program runs: note the availability when it does.
        if Instant::now() >= next_check {
            next_check = Instant::now() + Duration::from_secs(1);
            let now = Tree::read(root).ok().and_then(|t| avail::domains(&t).ok());
            if now.is_some() && now != last_avail {
                changes.push((t, now.clone().unwrap_or_default()));
                last_avail = now;
            }
        }
        let sig = STOP.load(Ordering::SeqCst);
        if sig != 0 && sig != forwarded {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, sig) };
            forwarded = sig;
        }
        std::thread::sleep(interval);
    }
    let elapsed = started.elapsed().as_secs_f64();
    restore_signals();
    let left = journal.undo();
    for l in &journal.log {
        println!("Cache: {l}");
    }

    let exit = kairos_session::exit_of(std::os::unix::process::ExitStatusExt::from_raw(wstatus));
    println!("\nRun");
    println!("  Elapsed:                {elapsed:.3} s");
    match exit {
        kairos_result::TargetExit::Code { code } => {
            println!("  Target exit:            status {code}")
        }
        kairos_result::TargetExit::Signal { signal } => {
            println!("  Target exit:            killed by signal {signal}")
        }
        _ => {}
    }
    let occ: Vec<u64> = samples
        .iter()
        .filter_map(|s| monitor::total_occupancy(&s.readings))
        .collect();
    let mut notes: Vec<String> = Vec::new();
    if !monitored {
        notes.push(if plan.lock {
            "occupancy not recorded: a pseudo-locked region has no monitoring".into()
        } else {
            "occupancy not recorded: this resctrl has no monitoring (no mon_data in the group)"
                .into()
        });
    } else {
        println!(
            "  Occupancy readings:     {} every {} ms ({} with a value)",
            samples.len(),
            interval.as_millis(),
            occ.len()
        );
        if let (Some(first), Some(peak), Some(last)) = (occ.first(), occ.iter().max(), occ.last()) {
            println!(
                "  LLC occupancy:          first {} KiB, peak {} KiB, last {} KiB",
                first / 1024,
                peak / 1024,
                last / 1024
            );
        }
        let tot = |s: &Sample| {
            s.readings
                .iter()
                .map(|r| r.mbm_total_bytes)
                .collect::<Option<Vec<u64>>>()
                .map(|v| v.iter().sum::<u64>())
        };
        if let (Some(a), Some(b)) = (samples.first(), samples.last()) {
            match monitor::delta(tot(a), tot(b), 64) {
                monitor::Delta::Bytes(by) if b.t > a.t => println!(
                    "  Memory bandwidth:       {:.1} MB/s (mbm_total_bytes)",
                    by as f64 / (b.t - a.t) / 1e6
                ),
                monitor::Delta::Reset => notes.push(
                    "memory bandwidth unknown: mbm_total_bytes went down (the counter was reset)"
                        .into(),
                ),
                _ => notes.push("memory bandwidth unknown: mbm_total_bytes was Unavailable".into()),
            }
        }
    }
    match llc.summary() {
        Ok(lines) => lines.iter().for_each(|l| println!("  {l}")),
        Err(why) => notes.push(why),
    }
    for n in &notes {
        println!("  Note:                   {n}");
    }
    if let Some(mut d) = dir {
        let m = d.manifest_mut();
        crate::cmd_run::run_manifest(m, &args.program, elapsed, exit, forwarded != 0);
        let series: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| serde_json::json!({"t_s": s.t, "domains": s.readings}))
            .collect();
        let changes: Vec<serde_json::Value> = changes
            .iter()
            .map(|(t, a)| serde_json::json!({"t_s": t, "domains": a}))
            .collect();
        m.extra.insert(
            "cache".into(),
            serde_json::json!({"group": group, "plan": plan, "kernel_exclusive_mode": applied.exclusive_mode.as_ref().err(),
                               "lock_device": applied.lock_device, "cpus": cpus, "availability": availability, "availability_per_cpu": per_cpu,
                               "availability_changes": changes, "occupancy": series, "llc_misses": llc.to_json(), "journal": journal.log, "not_restored": left, "notes": notes}),
        );
        kairos_session::save(&d)?;
        println!("\nResult: {}", d.path().display());
    }
    if !left.is_empty() {
        return Err(UserError::failed(format!(
            "the program ran, but Kairos could not restore everything: {}",
            left.join("; ")
        )));
    }
    Ok(())
}
