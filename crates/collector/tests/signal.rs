//! SIGINT to kairos ends the collection with a finished file. Its own test binary, so the
//! signal reaches no other test.

mod common;

use common::{out_path, perf_script};
use kairos_collector::*;

#[test]
fn sigint_stops_and_finishes_the_file() {
    let mut o = CollectOptions::new(Target::SystemWide, out_path("sigint"));
    o.event = EventChoice::CpuClock;
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(400));
        // SAFETY: signalling our own process.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    });
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.stopped_by, StopReason::Signal(libc::SIGINT));
    assert!(s.samples > 0);
    perf_script(&o.output);
}
