//! A full disk stops the collection, and the file still holds what was written before.
//! Needs root (mounts a 2 MiB tmpfs); skipped otherwise.

mod common;

use std::process::Command;
use std::time::Duration;

use common::perf_script;
use kairos_collector::*;

#[test]
fn disk_full_stops_with_a_valid_file() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to mount a small tmpfs");
        return;
    }
    let dir = std::env::temp_dir().join(format!("kairos-diskfull-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "kairos-test"])
        .arg(&dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipped: cannot mount tmpfs");
        return;
    }
    let out = dir.join("full.perf.data");
    let mut o = CollectOptions::new(
        Target::Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "while :; do :; done".into()],
        },
        out.clone(),
    );
    o.event = EventChoice::CpuClock;
    o.interval_us = 10;
    o.duration = Some(Duration::from_secs(20));
    let r = collect(&o, &mut |_| {});
    // Check with perf before unmounting.
    let script = r.as_ref().ok().map(|_| perf_script(&out));
    let _ = Command::new("umount").arg("-l").arg(&dir).status();
    let _ = std::fs::remove_dir(&dir);
    let s = r.expect("collect returns a summary, not an error");
    assert!(matches!(s.stopped_by, StopReason::WriteError(_)), "{s:?}");
    assert!(s.bytes > 0 && s.bytes <= 2 << 20, "{s:?}");
    assert!(
        s.target_exit.is_some(),
        "the launched program is ended and reaped"
    );
    assert!(script.is_some_and(|t| t.contains("sh ")));
}
