//! With branch records (LBR), a request's time on the CPU is split by function more finely
//! than the sampling interval: each sample's interval is shared among the functions its
//! records name, by the default time assignment (kairos-time-assignment), and those points
//! stand in for the samples when a request is accounted.

use kairos_model::Profile;
use kairos_time_assignment::{assign, to_profile, Method};

/// The timer's samples and the branch records' points as one profile (same threads,
/// frames and stacks, more stacks appended), with a note of what it adds; None without
/// branch records.
pub fn points(profile: &Profile) -> Option<(Profile, String)> {
    if profile.branches.is_empty() {
        return None;
    }
    let mut timer = profile.clone();
    timer.select_event(0);
    let a = assign(&timer, Method::DEFAULT).ok()?;
    let note = format!(
        "time on the CPU by function from the samples and their branch records ({} time assignment, {:.1} points per sample)",
        a.method.as_str(),
        a.points_per_sample
    );
    Some((to_profile(&timer, &a), note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_model::{BranchInfo, BranchKind, BranchRecord, Frame, Mode, Sample, Stack, Thread};

    fn frame(name: &str) -> Frame {
        Frame {
            address: 0,
            module: None,
            module_offset: 0,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        }
    }

    #[test]
    fn branch_records_add_points_between_samples() {
        let mut p = Profile {
            threads: vec![Thread {
                pid: 1,
                tid: 1,
                name: String::new(),
                process_name: String::new(),
            }],
            frames: vec![frame("a"), frame("b")],
            stacks: vec![
                Stack {
                    parent: None,
                    frame: 0,
                },
                Stack {
                    parent: None,
                    frame: 1,
                },
            ],
            ..Profile::default()
        };
        for (i, t) in [100_000u64, 200_000, 300_000].into_iter().enumerate() {
            p.samples.push(Sample {
                time_ns: t,
                thread: 0,
                cpu: 0,
                stack: Some((i % 2) as u32),
                weight: 100_000,
            });
        }
        assert!(points(&p).is_none(), "no branch records, no points");
        for (sample, position) in [(1u32, 0u16), (2, 0)] {
            p.branches.push(BranchRecord {
                sample,
                position,
                from_address: 0x10,
                to_address: 0x20,
                from_frame: Some(1 - sample % 2),
                to_frame: Some(sample % 2),
                kind: BranchKind::Call,
                cycles: None,
                mispredicted: false,
                is_new: true,
            });
        }
        p.branch_info = Some(BranchInfo {
            depth: 1,
            ..BranchInfo::default()
        });
        let (derived, note) = points(&p).unwrap();
        assert!(
            derived.samples.len() > p.samples.len(),
            "{} points",
            derived.samples.len()
        );
        assert_eq!(derived.threads, p.threads);
        assert!(note.contains("points per sample"), "{note}");
    }
}
