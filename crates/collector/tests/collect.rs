//! Real collections on this machine (cpu-clock; no PMU needed), checked with `perf script`.

mod common;

use std::time::{Duration, Instant};

use common::{out_path, perf_script, BUSY_SH};
use kairos_collector::*;

fn launch(program: &str, args: &[&str]) -> Target {
    Target::Launch {
        program: program.into(),
        args: args.iter().map(|a| (*a).into()).collect(),
    }
}

fn opts(target: Target, name: &str, interval_us: u64) -> CollectOptions {
    let mut o = CollectOptions::new(target, out_path(name));
    o.interval_us = interval_us;
    o.event = EventChoice::CpuClock;
    o
}

#[test]
fn launch_busy_shell_records_samples_and_exit_code() {
    let o = opts(launch("/bin/sh", &["-c", BUSY_SH]), "launch", 1000);
    let mut progress_calls = 0;
    let s = collect(&o, &mut |_p| progress_calls += 1).expect("collect");
    eprintln!("{s:?}");
    assert!(s.samples > 0, "no samples: {s:?}");
    assert_eq!(s.stopped_by, StopReason::TargetExited);
    assert_eq!(s.target_exit, Some(TargetExit::Code(0)));
    assert!(s.bytes > 0);
    assert!(progress_calls >= 1);
    assert!(s.event_name.starts_with("cpu-clock"));
    let out = perf_script(&o.output);
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("sh ")),
        "no sample of sh in:\n{}",
        &out[..out.len().min(2000)]
    );
}

#[test]
fn launch_exit_code_is_recorded() {
    let o = opts(launch("sh", &["-c", "exit 3"]), "exit3", 1000);
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.target_exit, Some(TargetExit::Code(3)));
    perf_script(&o.output);
}

#[test]
fn auto_event_falls_back_or_uses_cycles_with_reason() {
    let mut o = opts(launch("/bin/sh", &["-c", BUSY_SH]), "auto", 1000);
    o.event = EventChoice::Auto;
    let s = collect(&o, &mut |_| {}).expect("collect");
    eprintln!("event {} reason {}", s.event_name, s.event_reason);
    assert!(!s.event_reason.is_empty());
    if s.event_name.starts_with("cpu-clock") {
        assert!(
            s.event_reason.contains("hardware cycles refused"),
            "{}",
            s.event_reason
        );
    }
    assert!(s.samples > 0);
    perf_script(&o.output);
}

#[test]
fn missing_program_is_program_not_found() {
    let o = opts(
        launch("/nonexistent/kairos-no-such-program", &[]),
        "missing",
        1000,
    );
    let r = collect(&o, &mut |_| {});
    assert!(
        matches!(&r, Err(CollectError::ProgramNotFound(p)) if p.to_string_lossy().contains("kairos-no-such")),
        "{r:?}"
    );
    let o = opts(
        launch("kairos-no-such-program-in-path", &[]),
        "missing2",
        1000,
    );
    assert!(matches!(
        collect(&o, &mut |_| {}),
        Err(CollectError::ProgramNotFound(_))
    ));
    assert!(!o.output.exists(), "no file is left behind");
}

#[test]
fn non_executable_is_not_executable() {
    let o = opts(launch("/etc/hostname", &[]), "noexec", 1000);
    assert!(matches!(
        collect(&o, &mut |_| {}),
        Err(CollectError::NotExecutable { .. })
    ));
}

#[test]
fn missing_pid_is_no_such_process() {
    let o = opts(Target::Pid(999_999_999), "nopid", 1000);
    assert!(matches!(
        collect(&o, &mut |_| {}),
        Err(CollectError::NoSuchProcess(999_999_999))
    ));
}

#[test]
fn duration_stops_a_long_target() {
    let mut o = opts(
        launch("/bin/sh", &["-c", "while :; do :; done"]),
        "duration",
        1000,
    );
    o.duration = Some(Duration::from_millis(600));
    let t = Instant::now();
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(s.stopped_by, StopReason::Duration);
    assert_eq!(s.target_exit, Some(TargetExit::Signal(libc::SIGTERM)));
    assert!(s.samples > 100, "{s:?}");
    perf_script(&o.output);
}

#[test]
fn duration_stops_a_sleeping_target() {
    let mut o = opts(launch("sleep", &["30"]), "sleep", 1000);
    o.duration = Some(Duration::from_millis(300));
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.stopped_by, StopReason::Duration);
    assert!(s.target_exit.is_some());
    perf_script(&o.output);
}

#[test]
fn crash_is_recorded_as_signal() {
    let o = opts(
        launch("/bin/sh", &["-c", &format!("{BUSY_SH}; kill -SEGV $$")]),
        "segv",
        1000,
    );
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.target_exit, Some(TargetExit::Signal(11)));
    assert_eq!(s.stopped_by, StopReason::TargetExited);
    assert!(s.samples > 0);
    perf_script(&o.output);
}

#[test]
fn attach_to_a_busy_pid() {
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("spawn busy child");
    let pid = child.id() as i32;
    let mut o = opts(Target::Pid(pid), "pid", 1000);
    o.duration = Some(Duration::from_millis(700));
    let r = collect(&o, &mut |_| {});
    let _ = child.kill();
    let _ = child.wait();
    let s = r.expect("collect");
    assert_eq!(s.stopped_by, StopReason::Duration);
    assert!(s.samples > 100, "{s:?}");
    assert_eq!(s.target_exit, None);
    let out = perf_script(&o.output);
    // Attached: the thread name comes from the synthesised COMM record.
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("sh ")),
        "{}",
        &out[..out.len().min(2000)]
    );
    // Synthesised MMAP2 lets perf resolve the shell's own code.
    assert!(
        out.contains("/usr/bin/dash")
            || out.contains("/bin/dash")
            || out.contains("/usr/bin/bash")
            || out.contains("libc"),
        "{}",
        &out[..out.len().min(3000)]
    );
}

#[test]
fn attach_ends_when_the_process_exits() {
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", BUSY_SH])
        .spawn()
        .expect("spawn");
    let pid = child.id() as i32;
    let reaper = std::thread::spawn(move || child.wait());
    let o = opts(Target::Pid(pid), "pid-exit", 1000);
    let s = collect(&o, &mut |_| {}).expect("collect");
    let _ = reaper.join();
    assert_eq!(s.stopped_by, StopReason::TargetExited);
    perf_script(&o.output);
}

#[test]
fn system_wide_half_second() {
    let mut o = opts(Target::SystemWide, "system", 1000);
    o.duration = Some(Duration::from_millis(500));
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.stopped_by, StopReason::Duration);
    assert!(s.samples > 0, "{s:?}");
    assert!(s.include_kernel, "root may sample the kernel");
    assert_eq!(s.cpus, kairos_collector::online_cpus().len());
    let out = perf_script(&o.output);
    assert!(!out.is_empty());
}

#[test]
fn dwarf_unwinding_records_user_stacks() {
    let mut o = opts(launch("/bin/sh", &["-c", BUSY_SH]), "dwarf", 1000);
    o.unwinding = Unwinding::Dwarf {
        stack_bytes: Unwinding::DEFAULT_STACK_BYTES,
    };
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert!(s.samples > 0);
    // Each sample carries 8 KiB of stack.
    assert!(s.bytes > s.samples * 8192, "{s:?}");
    perf_script(&o.output);
}

#[test]
fn header_features_are_readable_by_perf() {
    let o = opts(launch("/bin/true", &[]), "header", 1000);
    collect(&o, &mut |_| {}).expect("collect");
    let out = std::process::Command::new("perf")
        .args(["report", "--header-only", "-i"])
        .arg(&o.output)
        .output()
        .expect("perf report");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for needle in [
        "hostname",
        "os release",
        "arch",
        "nrcpus online",
        "total memory",
        "cmdline",
        "cpu-clock",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
}
