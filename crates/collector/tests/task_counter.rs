//! `TaskCounter` on a real process: a child that touches a known number of fresh pages
//! counts at least that many page faults (a software event, so it runs without a PMU);
//! the LLC-miss event is either counted or refused with a sentence.
#![allow(clippy::unwrap_used, clippy::panic)]

use kairos_collector::task_counter::{why_not, Event, TaskCounter};

#[test]
fn page_faults_of_a_child_and_its_threads_are_counted() {
    // The child waits on its stdin, so that the counter is open before it touches memory.
    let script = "read x; head -c 67108864 /dev/zero | tail -c 1 >/dev/null";
    let mut child = std::process::Command::new("sh")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let c = TaskCounter::open(child.id() as libc::pid_t, Event::PAGE_FAULTS).unwrap();
    let before = c.read().unwrap().unwrap_or(0);
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let after = c.read().unwrap().unwrap();
    // head and tail are children of the shell (inherited): starting them alone faults in
    // well over 100 pages.
    assert!(after > before + 100, "page faults {before} -> {after}");
}

#[test]
fn llc_misses_are_counted_or_refused_with_the_reason() {
    match TaskCounter::open(std::process::id() as libc::pid_t, Event::LLC_LOAD_MISSES) {
        Ok(c) => {
            let v: Vec<u8> = (0..64 << 20).map(|i| i as u8).collect();
            assert!(v.iter().map(|&b| u64::from(b)).sum::<u64>() > 0);
            assert!(
                c.read().unwrap().is_some_and(|n| n > 0),
                "a 64 MiB walk misses the LLC"
            );
        }
        Err(e) => {
            let why = why_not(&e);
            assert!(why.contains("PMU") || why.contains("refused"), "{why}");
        }
    }
}
