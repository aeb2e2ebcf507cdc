//! A process in a container of its own: its binary lives on a tmpfs mounted only inside
//! its mount namespace (`unshare -m`), at a path that is an empty directory on the host.
//! `kairos collect hotspots -p PID` reads the binary through the process's own root, so
//! its functions come out named. The test says so and fails when it cannot make the
//! namespace (unshare needs root or user namespaces).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

struct Contained(Child);

impl Drop for Contained {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_binary_only_inside_a_mount_namespace_is_symbolised() {
    let dir = tempdir();
    let private = dir.path().join("private");
    std::fs::create_dir_all(&private).unwrap();
    let prog = private.join("prog");
    let script = format!(
        "mount -t tmpfs none {p} && cp {s} {p}/prog && exec {p}/prog 100000",
        p = private.display(),
        s = sample("transitions").display()
    );
    let child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("NO CONTAINER: cannot run unshare ({e})"));
    let mut c = Contained(child);
    let pid = c.0.id() as i32;
    // Running once the exec'd program maps its binary.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        if maps.contains(prog.to_str().unwrap()) {
            break;
        }
        if let Ok(Some(st)) = c.0.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            let _ = c.0.stderr.take().unwrap().read_to_string(&mut err);
            panic!("NO CONTAINER: `unshare -m` with a private tmpfs failed ({st}): {err}");
        }
        assert!(
            Instant::now() < deadline,
            "the contained program did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !prog.exists(),
        "the binary is visible on the host; the test would prove nothing"
    );

    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-p",
        &pid.to_string(),
        "-d",
        "2",
        "-r",
        path_str(&r),
    ])
    .ok();
    let report = kairos(&["report", "hotspots", "-r", path_str(&r), "--format", "csv"]).ok();
    drop(c);
    let rows: Vec<&str> = report
        .stdout
        .lines()
        .filter(|l| l.contains(",prog,"))
        .collect();
    assert!(!rows.is_empty(), "no samples in prog: {}", report.stdout);
    for f in ["p3_C,", "F2,"] {
        assert!(
            rows.iter().any(|r| r.starts_with(f)),
            "{f} not named: {}",
            report.stdout
        );
    }
    assert!(
        !rows.iter().any(|r| r.starts_with("[unknown]")),
        "unnamed samples in prog: {}",
        report.stdout
    );
}
