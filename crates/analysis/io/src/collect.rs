//! `kairos collect io`: system-wide by nature (inbound PCIe traffic belongs to no process);
//! with a program, as long as it runs; with `-a`, for `-d` seconds or until Ctrl-C. Every
//! tick reads the device counters and, where the uncore has them, the IIO and CHA counters.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::Target;

use crate::kernel::Kernel;
use crate::model::{IoResult, Point, Series};
use crate::sampler::Sampler;
use crate::uncore::{plan_files, Places};
use crate::SPEC;

/// The tick of the timeline.
pub const TICK: Duration = Duration::from_millis(100);

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// The CPU's perfmon uncore files (its own, then the experimental one where the folder
/// has it) and metric file, or why not.
fn perfmon_files(perfmon: &str) -> Result<(Vec<String>, Option<String>), String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| kairos_mem_source::CpuId::from_cpuinfo(&t));
    if let Some(c) = &cpu {
        if c.vendor != kairos_mem_source::Vendor::Intel {
            return Err(format!(
                "DDIO and the IIO and CHA counters are Intel's; this CPU is {} (family {:#x})",
                match c.vendor {
                    kairos_mem_source::Vendor::Amd => "AMD",
                    _ => "not Intel",
                },
                c.family
            ));
        }
    }
    let dirs = kairos_mem_source::perfmon_dir::candidates(
        (!perfmon.is_empty()).then(|| Path::new(perfmon)),
    );
    let mut uncore = vec![kairos_session::bandwidth::uncore_file(cpu.as_ref(), &dirs)?];
    uncore.extend(kairos_session::bandwidth::uncore_experimental_file(
        cpu.as_ref(),
        &dirs,
    ));
    let metrics = cpu.as_ref().and_then(|c| {
        dirs.iter().find_map(|d| {
            let map = std::fs::read_to_string(d.join("mapfile.csv")).ok()?;
            let f = kairos_mem_source::tma::metrics_file_for(&map, c)?;
            std::fs::read_to_string(d.join(f)).ok()
        })
    });
    Ok((uncore, metrics))
}

/// The uncore source, or why there is none (no PMUs is said before a missing file).
fn uncore(perfmon: &str) -> Result<(crate::uncore::Plan, Sampler), String> {
    let places = Places {
        pmus: "/sys/bus/event_source/devices".into(),
        sys: "/sys".into(),
    };
    if kairos_bandwidth::counters::discover(&places.pmus).is_empty() {
        let virtual_machine = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| {
            t.lines()
                .any(|l| l.starts_with("flags") && l.contains(" hypervisor"))
        });
        return Err(if virtual_machine {
            "no uncore PMUs (a virtual machine exposes none)".into()
        } else {
            "no uncore PMUs: the kernel registered none for this CPU (Intel uncore support is CONFIG_PERF_EVENTS_INTEL_UNCORE)".into()
        });
    }
    let (jsons, metrics) = perfmon_files(perfmon)?;
    let jsons: Vec<&str> = jsons.iter().map(String::as_str).collect();
    let p = plan_files(&places, &jsons, metrics.as_deref())?;
    let s = Sampler::open(&p.counters, p.series.len())?;
    Ok((p, s))
}

fn check_target(req: &CollectRequest) -> Result<Target, Failure> {
    if req.pid.is_some() {
        return Err(Failure::usage("io is system-wide (inbound PCIe traffic belongs to no process): give -a, or a program after `--` to collect while it runs"));
    }
    kairos_session::refuse_target_step(req, SPEC.name)?;
    kairos_session::refuse_cpu_list(req, SPEC.name)?;
    kairos_session::target(req, SPEC.name)
}

pub fn collect(req: &CollectRequest) -> Result<(), Failure> {
    let target = check_target(req)?;
    let duration = kairos_session::check_duration(req)?;
    let mut dir = kairos_session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    kairos_session::start_manifest(
        &mut dir,
        SPEC.name,
        &req.knobs,
        kairos_session::describe(&target),
    );
    let perfmon = req.knobs.get("perfmon").to_string();
    let mut r = IoResult {
        tick_ms: TICK.as_millis() as u64,
        ..IoResult::default()
    };
    let kernel = Kernel::open(Path::new("/sys"));
    let uncore = uncore(&perfmon);
    describe_sources(&mut r, kernel.is_some(), &uncore);
    // DRAM and socket-link traffic: the timeline every collection records.
    let bandwidth = kairos_session::bandwidth::start(&perfmon);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (kseries, useries) = (
        kernel
            .as_ref()
            .map(|k| k.series.clone())
            .unwrap_or_default(),
        uncore
            .as_ref()
            .map(|(p, _)| p.series.clone())
            .unwrap_or_default(),
    );
    let sampler = uncore.ok().map(|(_, s)| s);
    // Which of the target's threads read and write which device (the topology check).
    let devices = kairos_session::device_use::start(req.mmap_pages);
    let thread = std::thread::spawn(move || run(kernel, sampler, &flag));
    let spinner = kairos_session::spinner(req.quiet, "collecting I/O traffic");
    let started = Instant::now();
    let mut pid = None;
    let exit = wait(&target, duration, &mut pid);
    stop.store(true, Ordering::SeqCst);
    spinner.finish_and_clear();
    let points = thread.join().unwrap_or_default();
    r.series = kseries.into_iter().chain(useries).collect::<Vec<Series>>();
    r.points = points;
    r.dram_note = Some(dram_note(kairos_session::bandwidth::finish(
        &mut dir, bandwidth,
    )));
    let use_ = kairos_session::device_use::finish(dir.path(), devices, pid);
    r.device_use_note = Some(device_use_note(use_.as_ref()));
    let m = dir.manifest_mut();
    m.duration_secs = Some(started.elapsed().as_secs_f64());
    if let Some((code, sig)) = exit? {
        m.target_exit = Some(kairos_session::exit_of(code));
        if let Some(s) = sig {
            m.stopped_by = Some(format!("signal {s}"));
        }
    }
    r.save(dir.path()).map_err(|e| {
        Failure::failed(format!(
            "cannot write the result: {e}; check free disk space"
        ))
    })?;
    kairos_session::save(&dir)?;
    print!("{}", crate::report::summary_text(&r, use_.as_ref()));
    println!("result: {}", dir.path().display());
    Ok(())
}

/// The sources the result has (device counters, uncore counters), and why those missing
/// are.
fn describe_sources(
    r: &mut IoResult,
    kernel: bool,
    uncore: &Result<(crate::uncore::Plan, Sampler), String>,
) {
    if kernel {
        r.sources.push(crate::kernel::SOURCE.into());
    } else {
        r.notes
            .push("no network interface or block device in /sys: no device counters".into());
    }
    match uncore {
        Ok((p, _)) => {
            r.sources.push("Intel uncore counters (IIO stacks: 4-byte data requests per part; CHA TOR inserts from IO)".into());
            r.metrics = p.metrics.clone();
            r.notes.extend(p.notes.iter().cloned());
        }
        Err(why) => {
            r.ddio_unmeasured = Some(why.clone());
            r.pcie_unmeasured = Some(why.clone());
        }
    }
}

/// Where the DRAM bandwidth timeline is, or why there is none.
fn dram_note(t: Option<kairos_bandwidth::timeline::Timeline>) -> String {
    match t {
        Some(t) => match t.unavailable {
            Some(why) => why,
            None => format!("recorded in bandwidth.json ({})", t.source),
        },
        None => "not recorded".into(),
    }
}

/// Where the target's device use is, or why it is not.
fn device_use_note(u: Option<&kairos_session::device_use::DeviceUse>) -> String {
    match u {
        Some(u) => match &u.unavailable {
            Some(why) => format!("not traced: {why}"),
            None => format!(
                "traced in device_use.json: {} flows of the target, {} records lost",
                u.flows.len(),
                u.lost
            ),
        },
        None => "not recorded: device_use.json could not be written".into(),
    }
}

/// Until the program ends (its exit status), or for `-d` / until Ctrl-C with `-a`.
/// `pid` gets the launched program's process id.
fn wait(
    target: &Target,
    duration: Option<Duration>,
    pid: &mut Option<u32>,
) -> Result<Option<(std::process::ExitStatus, Option<i32>)>, Failure> {
    match target {
        Target::Launch { program, args } => {
            let mut child = std::process::Command::new(program)
                .args(args)
                .spawn()
                .map_err(|e| {
                    Failure::failed(format!(
                        "cannot start {}: {e}; check that it is an executable",
                        program.display()
                    ))
                })?;
            *pid = Some(child.id());
            let out = kairos_session::interrupt::wait(&mut child)
                .map_err(|e| Failure::failed(format!("waiting for the program failed: {e}")))?;
            Ok(Some(out))
        }
        _ => {
            STOP.store(false, Ordering::SeqCst);
            let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: installs a handler that only stores to an atomic.
            let old = unsafe { libc::signal(libc::SIGINT, handler) };
            let end = duration.map(|d| Instant::now() + d);
            while !STOP.load(Ordering::SeqCst) && end.is_none_or(|e| Instant::now() < e) {
                std::thread::sleep(Duration::from_millis(10));
            }
            // SAFETY: puts back what was there.
            unsafe { libc::signal(libc::SIGINT, old) };
            Ok(None)
        }
    }
}

/// The sampling thread: one point per tick (and a last, shorter one at the end).
fn run(mut kernel: Option<Kernel>, mut sampler: Option<Sampler>, stop: &AtomicBool) -> Vec<Point> {
    let start = Instant::now();
    let mut last = start;
    let mut points = Vec::new();
    loop {
        let next = last + TICK;
        while Instant::now() < next && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(
                Duration::from_millis(5).min(next.saturating_duration_since(Instant::now())),
            );
        }
        let now = Instant::now();
        let mut values = kernel.as_mut().map(Kernel::tick).unwrap_or_default();
        values.extend(sampler.as_mut().map(Sampler::tick).unwrap_or_default());
        points.push(Point {
            t: last.duration_since(start).as_secs_f64(),
            secs: now.duration_since(last).as_secs_f64(),
            values,
        });
        last = now;
        if stop.load(Ordering::SeqCst) {
            return points;
        }
    }
}
