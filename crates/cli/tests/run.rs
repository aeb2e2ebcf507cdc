//! `kairos run` end to end without root (a baseline run, no huge pages, no cache ways):
//! the program runs as it would alone, and Ctrl-C reaches it. Kairos ignores Ctrl-C itself
//! while it waits, and an ignored signal stays ignored across exec, so the program must
//! get the default back.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::kairos;

/// SIGINT's bit in /proc's signal masks.
const SIGINT_BIT: u64 = 1 << (libc::SIGINT - 1);

#[test]
fn the_program_gets_ctrl_c_and_its_exit_is_told() {
    let out = kairos(&["run", "--", "cat", "/proc/self/status"]).ok();
    let ignored = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap_or_else(|| panic!("no SigIgn line:\n{}", out.stdout));
    assert_eq!(
        ignored & SIGINT_BIT,
        0,
        "the program ignores SIGINT (SigIgn {ignored:x}):\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Target exit:            status 0"),
        "{}",
        out.stdout
    );
}
