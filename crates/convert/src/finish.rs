//! The end of a conversion: the raw stacks expanded into the profile's frames and stacks
//! with the symbols found, samples, branch records, side samples and data accesses
//! resolved, and the notes on what was left out.

use super::*;
use kairos_model::{FrameIdx, StackIdx};

impl State {
    pub(crate) fn finish(
        mut self,
        decode_error: Option<String>,
        file: &PerfFile,
        mut symbols: background::Symbols,
    ) -> Converted {
        let mut profile = Profile::default();
        let (stacks, leaf_frames) =
            std::mem::take(&mut self.raw).finish(&symbols.frames, &mut profile, &self.leaves);
        self.name_threads();
        profile.threads = std::mem::take(&mut self.threads);
        let pending = std::mem::take(&mut self.samples);
        if pending.iter().any(|p| p.event != 0) {
            profile.sample_events = pending.iter().map(|p| p.event).collect();
        }
        let (samples, sample_branches) = self.resolve_samples(pending, &stacks);
        profile.samples = samples;
        profile.losses = self.losses;
        let side_samples = side::finish(std::mem::take(&mut self.side), &stacks);
        let data_accesses = access::finish(std::mem::take(&mut self.accesses.pending), &stacks);
        let unresolved_accesses = std::mem::take(&mut self.accesses.unresolved);
        let mut notes = std::mem::take(&mut self.notes);
        add_branches(
            &mut profile,
            &mut notes,
            file,
            sample_branches,
            &leaf_frames,
        );
        notes.extend(symbols.notes());
        notes.extend(self.unwinder.notes());
        self.note_left_out(&mut notes);
        let events: Vec<String> = file
            .attrs()
            .iter()
            .map(|a| a.name.clone().unwrap_or_else(|| a.attr.event_name()))
            .collect();
        profile.events = file
            .attrs()
            .iter()
            .zip(&events)
            .map(|(a, name)| kairos_model::EventDef {
                name: name.clone(),
                time: is_timer(&a.attr),
            })
            .collect();
        let (default, _) = profile.default_events();
        profile.weight_event = (!default.time).then_some(default.name);
        let left_out = self.guest_samples + self.unattributed_samples;
        Converted {
            profile,
            decode_error,
            notes,
            events,
            side_samples,
            data_accesses,
            unresolved_accesses,
            left_out,
        }
    }

    /// Each thread's name and its process's from the COMM records; the idle task's, or
    /// the ids, where there is none.
    fn name_threads(&mut self) {
        for t in &mut self.threads {
            t.name = self.table.thread_name(t.tid).unwrap_or("").to_string();
            t.process_name = self.table.thread_name(t.pid).unwrap_or(&t.name).to_string();
            if t.name.is_empty() {
                // pid/tid 0 is the idle task, which never gets a COMM record.
                t.name = if t.tid == 0 {
                    "swapper".into()
                } else {
                    format!("[tid {}]", t.tid)
                };
            }
            if t.pid == 0 && t.process_name.is_empty() {
                t.process_name = "swapper".into();
            }
            if t.process_name.is_empty() {
                t.process_name = format!("[pid {}]", t.pid);
            }
        }
    }

    /// The samples with their stacks resolved, and the branch stacks of those that have
    /// one, by sample index.
    fn resolve_samples(
        &mut self,
        pending: Vec<PendingSample>,
        stacks: &[Option<StackIdx>],
    ) -> (Vec<Sample>, Vec<(u32, SampleBranches)>) {
        let mut sample_branches = Vec::new();
        let samples = pending
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                if let Some(entries) = self.branch_stacks.get_mut(p.branches as usize) {
                    let entries = std::mem::take(entries);
                    sample_branches.push((
                        i as u32,
                        SampleBranches {
                            thread: p.thread,
                            entries,
                        },
                    ));
                }
                Sample {
                    time_ns: p.time_ns,
                    thread: p.thread,
                    cpu: p.cpu,
                    stack: p
                        .stack
                        .and_then(|c| stacks.get(c as usize).copied().flatten()),
                    weight: p.weight,
                }
            })
            .collect();
        (samples, sample_branches)
    }

    /// Notes on the samples left out: a guest's, and those of no event of the file.
    fn note_left_out(&self, notes: &mut Vec<String>) {
        if self.guest_samples > 0 {
            notes.push(format!(
                "{} samples were taken while a virtual machine's guest ran; they are left out because the guest's programs are not in this recording (perf script leaves them out too; perf report counts them in its header total but lists no function for them)",
                self.guest_samples
            ));
        }
        if self.unattributed_samples > 0 {
            notes.push(format!(
                "{} samples carry a sample id that belongs to no event of the file and were left out (the file's attrs or id index are incomplete)",
                self.unattributed_samples
            ));
        }
    }
}

/// The branch records, when an event of the file sampled branch stacks, with notes on
/// those that could not be classified or were lost.
fn add_branches(
    profile: &mut Profile,
    notes: &mut Vec<String>,
    file: &PerfFile,
    sample_branches: Vec<(u32, SampleBranches)>,
    leaf_frames: &HashMap<u32, FrameIdx>,
) {
    let branch_attr = file
        .attrs()
        .iter()
        .find(|a| a.attr.sample_type & PERF_SAMPLE_BRANCH_STACK != 0);
    let Some(a) = branch_attr else {
        return;
    };
    let (records, info) = branches::assemble(
        sample_branches.into_iter(),
        leaf_frames,
        branches::describe_filter(a.attr.branch_sample_type),
    );
    if info.unclassified > 0 {
        notes.push(format!(
            "{} of {} branch records could not be classified as call, return or other: the recording did not save branch types and the instruction at FROM could not be read (binary not at hand)",
            info.unclassified,
            records.len()
        ));
    }
    if info.overflowed_snapshots > 0 {
        notes.push(format!(
            "{} branch snapshots share nothing with the previous one of their thread although the LBR was full: more branches happened between those samples than the LBR holds, so records were lost there",
            info.overflowed_snapshots
        ));
    }
    profile.branches = records;
    profile.branch_info = Some(info);
}
