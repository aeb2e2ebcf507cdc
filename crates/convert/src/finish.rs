//! The end of a conversion: the raw stacks expanded into the profile's frames and stacks
//! with the symbols found, samples, branch records, side samples and data accesses
//! resolved, and the notes on what was left out.

use super::*;

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
        profile.threads = self.threads;
        let pending = self.samples;
        let mut sample_branches = Vec::new();
        if pending.iter().any(|p| p.event != 0) {
            profile.sample_events = pending.iter().map(|p| p.event).collect();
        }
        profile.samples = pending
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
        profile.losses = self.losses;
        let side_samples = side::finish(std::mem::take(&mut self.side), &stacks);
        let data_accesses = access::finish(std::mem::take(&mut self.accesses.pending), &stacks);
        let unresolved_accesses = std::mem::take(&mut self.accesses.unresolved);
        let mut notes = self.notes;
        let branch_attr = file
            .attrs()
            .iter()
            .find(|a| a.attr.sample_type & PERF_SAMPLE_BRANCH_STACK != 0);
        if let Some(a) = branch_attr {
            let (records, info) = branches::assemble(
                sample_branches.into_iter(),
                &leaf_frames,
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
        notes.extend(symbols.notes());
        notes.extend(self.unwinder.notes());
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
}
