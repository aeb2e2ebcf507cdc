//! Handcrafted traces for the unit tests.
#![allow(clippy::unwrap_used)]

use kairos_model::{Call, Frame, Mode, Profile, Thread};

/// A one-thread trace: `names` become frames 0.. (address 0x1000 * (i + 1)); each call is
/// `(frame, start_ns, end_ns, depth)`.
pub fn trace(names: &[&str], calls: &[(u32, u64, u64, u16)]) -> Profile {
    let frames = names
        .iter()
        .enumerate()
        .map(|(i, n)| Frame {
            address: 0x1000 * (i as u64 + 1),
            module: None,
            module_offset: 0,
            function: (*n).to_string(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        })
        .collect();
    let mut calls: Vec<Call> = calls
        .iter()
        .map(|&(frame, start_ns, end_ns, depth)| Call {
            thread: 0,
            frame,
            start_ns,
            end_ns,
            depth,
        })
        .collect();
    calls.sort_by_key(|c| c.start_ns);
    Profile {
        threads: vec![Thread {
            pid: 1,
            tid: 1,
            name: "t".into(),
            process_name: "t".into(),
        }],
        frames,
        calls,
        ..Default::default()
    }
}
