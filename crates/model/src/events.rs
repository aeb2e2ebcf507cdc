//! The events of a recording as the user thinks of them, and the one reports show when
//! none is asked for. A hybrid CPU (Alder Lake and later) records `-e cycles` as one event
//! per core type, `cpu_core/cycles/` and `cpu_atom/cycles/`: they are one event, `cycles`,
//! their samples together, and each core type's on request (`--event cpu_core/cycles/`).
//! The default is the event that measures time (cycles, cpu-clock, ...), then the one with
//! the most samples, never merely the first in the file.

use crate::{event_base_name, Profile};

/// Events that measure time: their samples say where the time went.
const TIME_EVENTS: [&str; 5] = [
    "cycles",
    "cpu-cycles",
    "ref-cycles",
    "cpu-clock",
    "task-clock",
];

/// One event as reports show it: one of the file's events, or the same event on several
/// PMUs (a hybrid CPU's core types) taken together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventChoice {
    /// As reports name it: `cycles` for `cpu_core/cycles/` with `cpu_atom/cycles/`, else
    /// the event's own name.
    pub name: String,
    /// Indices into [`Profile::events`], in file order.
    pub events: Vec<u16>,
    /// Weights are nanoseconds (timer events).
    pub time: bool,
}

/// Why reports show the event they show when none is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultEvent {
    /// The recording has one event.
    Only,
    /// Several events, one of them with samples.
    OnlySampled,
    /// The event that measures time, of several with samples.
    MeasuresTime,
    /// None of the sampled events measures time: the one with the most samples.
    MostSamples,
}

impl DefaultEvent {
    /// The reason, as the summary states it.
    pub fn sentence(self) -> &'static str {
        match self {
            DefaultEvent::Only => "as recorded in the perf.data file",
            DefaultEvent::OnlySampled => "the only event with samples",
            DefaultEvent::MeasuresTime => "the event that measures time",
            DefaultEvent::MostSamples => "the event with the most samples",
        }
    }
}

/// `pmu/terms/modifiers` split into the PMU and the rest (`cpu_core/cycles/u` gives
/// `cpu_core` and `cycles/u`); None for a name without a PMU. The terms must name an
/// event: in `cpu-clock/period=5/` the part before the slash is the event itself.
fn split_pmu(name: &str) -> Option<(&str, &str)> {
    let (pmu, rest) = name.split_once('/')?;
    let (terms, _) = rest.split_once('/')?;
    let names_event = terms.split(',').any(|t| !t.is_empty() && !t.contains('='));
    (!pmu.is_empty() && names_event).then_some((pmu, rest))
}

/// The name of the same event on every PMU: `cycles`, `cycles:u`, or perf's spelling on
/// a CPU of one core type for events with terms (`cpu/mem-loads,ldlat=30/P`).
fn merged_name(rest: &str) -> String {
    let (terms, modifiers) = rest.split_once('/').unwrap_or((rest, ""));
    if terms.contains(['=', ',']) {
        format!("cpu/{terms}/{modifiers}")
    } else if modifiers.is_empty() {
        terms.to_string()
    } else {
        format!("{terms}:{modifiers}")
    }
}

impl EventChoice {
    /// Whether this is an event that measures time.
    pub fn measures_time(&self) -> bool {
        self.time || TIME_EVENTS.contains(&event_base_name(&self.name))
    }

    /// Several of the file's events taken together.
    pub fn is_merged(&self) -> bool {
        self.events.len() > 1
    }
}

impl Profile {
    /// The events as reports offer them, in file order of their first member: the same
    /// event on several PMUs (`cpu_core/cycles/`, `cpu_atom/cycles/`) once, under its
    /// name without the PMU; every other event alone.
    pub fn event_choices(&self) -> Vec<EventChoice> {
        let mut out: Vec<EventChoice> = Vec::new();
        // (rest after the PMU, PMUs seen) of each entry of `out`.
        let mut keys: Vec<Option<(&str, Vec<&str>)>> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let Ok(i) = u16::try_from(i) else { break };
            let split = split_pmu(&e.name);
            let joins = split.and_then(|(pmu, rest)| {
                keys.iter().position(|k| {
                    k.as_ref()
                        .is_some_and(|(r, pmus)| *r == rest && !pmus.contains(&pmu))
                })
            });
            match (joins, split) {
                (Some(j), Some((pmu, rest))) => {
                    out[j].events.push(i);
                    out[j].name = merged_name(rest);
                    if let Some((_, pmus)) = keys[j].as_mut() {
                        pmus.push(pmu);
                    }
                }
                _ => {
                    out.push(EventChoice {
                        name: e.name.clone(),
                        events: vec![i],
                        time: e.time,
                    });
                    keys.push(split.map(|(pmu, rest)| (rest, vec![pmu])));
                }
            }
        }
        if out.is_empty() {
            // A profile that lists no events: every sample is of event 0.
            out.push(EventChoice {
                name: self.weight_event.clone().unwrap_or_default(),
                events: vec![0],
                time: self.weight_event.is_none(),
            });
        }
        out
    }

    /// The event called `name`: one of [`Profile::event_choices`] by its name, else one
    /// of the file's events by its own (`cpu_atom/cycles/`: one core type's samples), else
    /// by the name without perf's modifiers (`cycles:u` is `cycles`, `cpu/mem-loads,
    /// ldlat=30/P` is `mem-loads`).
    pub fn find_events(&self, name: &str) -> Option<EventChoice> {
        let choices = self.event_choices();
        if let Some(c) = choices.iter().find(|c| c.name == name) {
            return Some(c.clone());
        }
        if let Some(i) = self.events.iter().position(|e| e.name == name) {
            let i = u16::try_from(i).ok()?;
            return Some(EventChoice {
                name: name.to_string(),
                events: vec![i],
                time: self.events[i as usize].time,
            });
        }
        let want = event_base_name(name);
        choices
            .into_iter()
            .find(|c| event_base_name(&c.name) == want)
    }

    /// The names `--event` takes: every choice, and each member of a merged one.
    pub fn event_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for c in self.event_choices() {
            names.push(c.name.clone());
            if c.is_merged() {
                names.extend(
                    c.events
                        .iter()
                        .filter_map(|&i| self.events.get(i as usize))
                        .map(|e| e.name.clone()),
                );
            }
        }
        names
    }

    /// Samples of each of the file's events, by event index (one pass over the events of
    /// the samples, no weights: asked for once or twice per command).
    fn samples_per_event(&self) -> Vec<u64> {
        let mut n = vec![0u64; self.events.len().max(1)];
        if self.sample_events.is_empty() {
            n[0] = self.samples.len() as u64;
            return n;
        }
        for &e in self.sample_events.iter().take(self.samples.len()) {
            if let Some(c) = n.get_mut(e as usize) {
                *c += 1;
            }
        }
        // Samples past the end of `sample_events` are of event 0.
        n[0] += self.samples.len().saturating_sub(self.sample_events.len()) as u64;
        n
    }

    /// The event reports show when none is asked for, and why: the one that measures time
    /// among those with samples, else the one with the most samples (the first in the
    /// file on a tie).
    pub fn default_events(&self) -> (EventChoice, DefaultEvent) {
        let mut choices = self.event_choices();
        if choices.len() == 1 {
            return (choices.swap_remove(0), DefaultEvent::Only);
        }
        let per_event = self.samples_per_event();
        let samples = |c: &EventChoice| -> u64 {
            c.events
                .iter()
                .map(|&i| per_event.get(i as usize).copied().unwrap_or(0))
                .sum()
        };
        let sampled: Vec<(usize, u64)> = choices
            .iter()
            .enumerate()
            .map(|(i, c)| (i, samples(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        // The most samples, the first on a tie.
        let most = |among: &mut dyn Iterator<Item = (usize, u64)>| {
            among.fold(None, |best: Option<(usize, u64)>, (i, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((i, n)),
            })
        };
        let (pick, why) = if sampled.is_empty() {
            (0, DefaultEvent::Only)
        } else if sampled.len() == 1 {
            (sampled[0].0, DefaultEvent::OnlySampled)
        } else if let Some((i, _)) = most(
            &mut sampled
                .iter()
                .copied()
                .filter(|&(i, _)| choices[i].measures_time()),
        ) {
            (i, DefaultEvent::MeasuresTime)
        } else {
            (
                most(&mut sampled.iter().copied()).map_or(0, |s| s.0),
                DefaultEvent::MostSamples,
            )
        };
        (choices.swap_remove(pick), why)
    }

    /// What the summary says of a merged choice: `cpu_core and cpu_atom summed`.
    pub fn merged_sentence(&self, c: &EventChoice) -> Option<String> {
        if !c.is_merged() {
            return None;
        }
        let pmus: Vec<&str> = c
            .events
            .iter()
            .filter_map(|&i| self.events.get(i as usize))
            .map(|e| split_pmu(&e.name).map_or(e.name.as_str(), |(pmu, _)| pmu))
            .collect();
        Some(format!("{} summed", pmus.join(" and ")))
    }

    /// Keeps only the samples of `choice` (and their branch records), and says what their
    /// weights count. Every analysis works on one event at a time.
    pub fn select(&mut self, choice: &EventChoice) {
        self.weight_event = (!choice.time).then(|| choice.name.clone());
        let mut keep = vec![false; self.events.len().max(1)];
        for &e in &choice.events {
            if let Some(k) = keep.get_mut(e as usize) {
                *k = true;
            }
        }
        if self.sample_events.is_empty() {
            if !keep[0] {
                self.samples.clear();
                self.branches.clear();
            }
            return;
        }
        let events = std::mem::take(&mut self.sample_events);
        let mut new_index = vec![u32::MAX; self.samples.len()];
        let mut kept = 0u32;
        let mut i = 0usize;
        self.samples.retain(|_| {
            let e = events.get(i).copied().unwrap_or(0);
            let k = keep.get(e as usize).copied().unwrap_or(false);
            if k {
                new_index[i] = kept;
                kept += 1;
            }
            i += 1;
            k
        });
        self.branches
            .retain_mut(|b| match new_index.get(b.sample as usize) {
                Some(&n) if n != u32::MAX => {
                    b.sample = n;
                    true
                }
                _ => false,
            });
    }

    /// [`Profile::select`] of one of the file's events by index.
    pub fn select_event(&mut self, event: u16) {
        let (name, time) = match self.events.get(event as usize) {
            Some(e) => (e.name.clone(), e.time),
            None => (
                self.weight_event.clone().unwrap_or_default(),
                self.weight_event.is_none(),
            ),
        };
        self.select(&EventChoice {
            name,
            events: vec![event],
            time,
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::{EventDef, Profile, Sample};

    fn profile(events: &[(&str, bool)], sample_events: &[u16]) -> Profile {
        Profile {
            events: events
                .iter()
                .map(|&(name, time)| EventDef {
                    name: name.into(),
                    time,
                })
                .collect(),
            samples: sample_events
                .iter()
                .enumerate()
                .map(|(i, _)| Sample {
                    time_ns: i as u64,
                    thread: 0,
                    cpu: 0,
                    stack: None,
                    weight: 1000 + i as u64,
                })
                .collect(),
            sample_events: sample_events.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn a_hybrid_cpus_event_is_one_and_each_core_type_on_request() {
        // 55 atom samples first in the file, then 2,411 core samples.
        let mut ev = vec![0u16; 55];
        ev.extend(std::iter::repeat_n(1u16, 2411));
        let p = profile(
            &[("cpu_atom/cycles/", false), ("cpu_core/cycles/", false)],
            &ev,
        );
        let choices = p.event_choices();
        assert_eq!(choices.len(), 1);
        assert_eq!(
            (choices[0].name.as_str(), &choices[0].events[..]),
            ("cycles", &[0u16, 1][..])
        );
        let (shown, why) = p.default_events();
        assert_eq!(
            (shown.name.as_str(), why),
            ("cycles", super::DefaultEvent::Only)
        );
        assert_eq!(
            p.merged_sentence(&shown).as_deref(),
            Some("cpu_atom and cpu_core summed")
        );
        let mut all = p.clone();
        all.select(&shown);
        assert_eq!(all.samples.len(), 2466);
        assert_eq!(all.weight_event.as_deref(), Some("cycles"));
        let core = p.find_events("cpu_core/cycles/").expect("one core type");
        assert_eq!(core.events, [1]);
        let mut one = p.clone();
        one.select(&core);
        assert_eq!(one.samples.len(), 2411);
        assert_eq!(one.weight_event.as_deref(), Some("cpu_core/cycles/"));
        assert_eq!(
            p.find_events("cycles:u").map(|c| c.events),
            Some(vec![0, 1])
        );
        assert_eq!(
            p.event_names(),
            ["cycles", "cpu_atom/cycles/", "cpu_core/cycles/"]
        );
    }

    #[test]
    fn only_the_same_event_on_different_pmus_is_merged() {
        let p = profile(
            &[
                ("cpu_core/cycles/", false),
                ("cpu_core/instructions/", false),
                ("cpu_atom/cycles/", false),
                ("cpu_atom/instructions/u", false),
                ("cpu_core/mem-loads,ldlat=30/P", false),
                ("cpu_atom/mem-loads,ldlat=30/P", false),
                ("cpu-clock", true),
                // Events with terms, not PMUs: never one event.
                ("cpu-clock/period=5/", true),
                ("page-faults/period=5/", false),
                ("cpu_core/event=0xc4/", false),
                ("cpu_atom/event=0xc4/", false),
            ],
            &[0],
        );
        let names: Vec<(String, Vec<u16>)> = p
            .event_choices()
            .into_iter()
            .map(|c| (c.name, c.events))
            .collect();
        assert_eq!(
            names,
            [
                ("cycles".to_string(), vec![0, 2]),
                ("cpu_core/instructions/".into(), vec![1]),
                ("cpu_atom/instructions/u".into(), vec![3]),
                ("cpu/mem-loads,ldlat=30/P".into(), vec![4, 5]),
                ("cpu-clock".into(), vec![6]),
                ("cpu-clock/period=5/".into(), vec![7]),
                ("page-faults/period=5/".into(), vec![8]),
                ("cpu_core/event=0xc4/".into(), vec![9]),
                ("cpu_atom/event=0xc4/".into(), vec![10]),
            ]
        );
    }

    #[test]
    fn the_default_is_the_event_that_measures_time_then_the_most_sampled() {
        use super::DefaultEvent::*;
        // cache-references first with few samples, cycles third: cycles.
        let mut ev = vec![0u16; 64];
        ev.extend(std::iter::repeat_n(1u16, 5000));
        ev.extend(std::iter::repeat_n(2u16, 7622));
        let p = profile(
            &[
                ("cache-references", false),
                ("instructions", false),
                ("cycles", false),
            ],
            &ev,
        );
        let (c, why) = p.default_events();
        assert_eq!((c.name.as_str(), why), ("cycles", MeasuresTime));
        // Fewer cycles samples than instructions ones: still cycles.
        let p2 = profile(
            &[("instructions", false), ("cycles:u", false)],
            &[0, 0, 0, 1],
        );
        assert_eq!(p2.default_events().0.name, "cycles:u");
        // page-faults, cpu-clock, minor-faults: cpu-clock, a timer.
        let p3 = profile(
            &[
                ("page-faults", false),
                ("cpu-clock", true),
                ("minor-faults", false),
            ],
            &[0, 0, 0, 2, 2, 2, 1],
        );
        assert_eq!(p3.default_events().0.name, "cpu-clock");
        // No event measures time: the most samples, the first on a tie.
        let p4 = profile(&[("branches", false), ("cache-misses", false)], &[0, 1, 1]);
        assert_eq!(
            (p4.default_events().0.name.as_str(), p4.default_events().1),
            ("cache-misses", MostSamples)
        );
        let p5 = profile(&[("branches", false), ("cache-misses", false)], &[1, 0]);
        assert_eq!(p5.default_events().0.name, "branches");
        // One event with samples of several: that one, whatever it is.
        let p6 = profile(&[("cycles", false), ("dummy", false)], &[0, 0]);
        assert_eq!(p6.default_events().1, OnlySampled);
        let p7 = profile(&[("dummy", false), ("mem-loads", false)], &[1]);
        assert_eq!(
            (p7.default_events().0.name.as_str(), p7.default_events().1),
            ("mem-loads", OnlySampled)
        );
        // A profile listing no events (older results): event 0.
        let p8 = profile(&[], &[]);
        assert_eq!(p8.default_events().0.events, [0]);
    }
}
