//! The slots of one process: which watch each holds, arming and moving them, and turning
//! raw samples into [`Hit`]s.

use super::classify::classify;
use super::events::{bp_attr, Events};
use super::guard::Guard;
use super::records::{Drained, RawHit};
use super::slots::{plan_slots, SlotUse};
use super::{Hit, Losses, Watch, WatchError, WatchTarget};

/// How armed slots are moved to new addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RearmMode {
    /// One MODIFY_ATTRIBUTES carrying `disabled = 0`: the kernel disables, moves and
    /// re-enables the event and each of its inherited children.
    Modify,
    /// DISABLE, MODIFY_ATTRIBUTES with `disabled = 1`, ENABLE: the sequence the research
    /// found unreliable; kept to measure it.
    DisableModifyEnable,
}

pub struct Watcher {
    target: WatchTarget,
    /// Declared before `guard`, so dropped first: the guard detaches only once no event
    /// is left to trap.
    events: Events,
    /// Traces the target while we watch it, so that a trap the machine delivers without
    /// saying which slot fired does not kill it with SIGTRAP (see `guard.rs`).
    guard: Guard,
    warning: Option<WatchError>,
    mode: RearmMode,
    /// Per slot: what it holds now, and what it held before (for samples still in flight
    /// when it moved).
    cur: Vec<Option<SlotUse>>,
    prev: Vec<Option<SlotUse>>,
    /// Per ring: a last sample waiting for its trap's other half.
    held: Vec<Option<(RawHit, SlotUse)>>,
    hits: Vec<Hit>,
    losses: Losses,
}

impl Watcher {
    /// Reserves up to `max_slots` (1-4) debug registers in every thread of the target.
    /// When a debugger holds some, opens fewer and says so in [`Watcher::warning`]; when it
    /// holds all of them, fails with [`WatchError::SlotsTaken`]. Then a helper process
    /// starts tracing the target until the watcher is dropped (see `guard.rs`); a tracer
    /// already there is [`WatchError::Traced`].
    pub fn open(target: WatchTarget, max_slots: usize) -> Result<Watcher, WatchError> {
        let pid = target.pid;
        let wanted = max_slots.clamp(1, 4);
        if !crate::process_alive(pid) {
            return Err(WatchError::ProcessGone { pid });
        }
        let mut events = Events::new(pid);
        let mut slots = wanted;
        let mut warning = None;
        let mut done: Vec<i32> = Vec::new();
        // A second listing catches threads created while the first ones were opened;
        // threads created after their parent's events exist inherit them.
        for _round in 0..3 {
            let tids =
                crate::synth::threads_of(pid).map_err(|_| WatchError::ProcessGone { pid })?;
            let new: Vec<i32> = tids.into_iter().filter(|t| !done.contains(t)).collect();
            if new.is_empty() {
                break;
            }
            for tid in new {
                done.push(tid);
                match events.open_thread(tid, slots) {
                    Ok(()) => {}
                    Err((libc::ESRCH, _)) => events.forget_thread(tid), // ended meanwhile
                    Err((libc::ENOSPC, 0)) => {
                        return Err(WatchError::SlotsTaken {
                            tid,
                            free: 0,
                            wanted,
                        })
                    }
                    Err((libc::ENOSPC, k)) => {
                        events.truncate_slots(k);
                        slots = k;
                        warning = Some(WatchError::SlotsTaken {
                            tid,
                            free: k,
                            wanted,
                        });
                    }
                    Err((e, _)) => {
                        return Err(WatchError::from_errno(e, pid, tid, "opening a watchpoint"))
                    }
                }
            }
        }
        if events.tids().is_empty() {
            return Err(WatchError::ProcessGone { pid });
        }
        let n = events.slots();
        let rings = crate::online_cpus().len();
        // Before anything is armed: from the first trap on, the target must be protected.
        let guard = Guard::start(pid)?;
        Ok(Watcher {
            target,
            events,
            guard,
            warning,
            mode: RearmMode::Modify,
            cur: vec![None; n],
            prev: vec![None; n],
            held: vec![None; rings],
            hits: Vec::new(),
            losses: Losses::default(),
        })
    }

    pub fn target(&self) -> WatchTarget {
        self.target
    }
    pub fn slots(&self) -> usize {
        self.events.slots()
    }
    /// Set when fewer slots than asked could be reserved.
    pub fn warning(&self) -> Option<&WatchError> {
        self.warning.as_ref()
    }
    /// Threads found running at open (later ones are followed by inheritance).
    pub fn threads(&self) -> &[i32] {
        self.events.tids()
    }
    pub fn set_rearm_mode(&mut self, mode: RearmMode) {
        self.mode = mode;
    }
    /// What each slot holds now.
    pub fn armed(&self) -> Vec<SlotUse> {
        self.cur.iter().flatten().copied().collect()
    }

    /// Arms exactly `watches` (moving slots already armed, disabling the rest). With
    /// `classify`, free slots double ReadWrite watches with W companions so hits say
    /// whether they wrote. Hits of the previous arming are collected first.
    pub fn arm(&mut self, watches: &[Watch], classify: bool) -> Result<(), WatchError> {
        let plan = plan_slots(watches, self.slots(), classify)?;
        self.collect(false);
        // Events of exited threads accept MODIFY silently: ask /proc instead.
        if !crate::process_alive(self.target.pid) {
            return Err(WatchError::ProcessGone {
                pid: self.target.pid,
            });
        }
        // Slots that keep their use are left alone (no IPIs, no gap in their watching),
        // unless they are paired and some companion moves.
        let n = self.slots();
        let companion_moves = (0..n).any(|s| {
            plan.get(s).is_some_and(|u| u.companion) && self.cur[s] != plan.get(s).copied()
        });
        let mut keep: Vec<bool> = (0..n)
            .map(|s| {
                self.cur[s] == plan.get(s).copied()
                    && !(companion_moves && self.cur[s].is_some_and(|u| u.paired))
            })
            .collect();
        // Order matters while classifying: an RW slot armed without its companion would
        // call writes reads. So paired RW slots stop first, companions are armed before
        // the rest.
        for (slot, &kept) in keep.iter().enumerate() {
            if !kept && self.cur[slot].is_some_and(|u| u.paired && !u.companion) {
                self.prev[slot] = self.cur[slot].take();
                self.events.enable(slot, false)?;
            }
        }
        let is_companion = |s: &usize| plan.get(*s).is_some_and(|u| u.companion);
        let order: Vec<usize> = (0..n)
            .filter(is_companion)
            .chain((0..n).filter(|s| !is_companion(s)))
            .collect();
        for slot in order {
            let next = plan.get(slot).copied();
            if keep[slot] || (next.is_none() && self.cur[slot].is_none()) {
                continue;
            }
            keep[slot] = true;
            if self.cur[slot].is_some() {
                self.prev[slot] = self.cur[slot].take();
            }
            let Some(u) = next else {
                self.events.enable(slot, false)?;
                continue;
            };
            self.move_slot(slot, u)?;
            self.cur[slot] = Some(u);
        }
        Ok(())
    }

    fn move_slot(&mut self, slot: usize, u: SlotUse) -> Result<(), WatchError> {
        let (addr, len) = (u.watch.addr(), u.watch.len());
        let refused = |e: WatchError| match e {
            WatchError::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                WatchError::Refused {
                    addr,
                    len,
                    detail: source.to_string(),
                }
            }
            e => e,
        };
        match self.mode {
            RearmMode::Modify => self
                .events
                .modify(slot, &bp_attr(addr, len, u.write_only, false))
                .map_err(refused),
            RearmMode::DisableModifyEnable => {
                self.events.enable(slot, false)?;
                self.events
                    .modify(slot, &bp_attr(addr, len, u.write_only, true))
                    .map_err(refused)?;
                self.events.enable(slot, true)
            }
        }
    }

    /// Disables every slot and collects every hit so far.
    pub fn disarm(&mut self) -> Result<(), WatchError> {
        let mut result = Ok(());
        for slot in 0..self.slots() {
            if let Some(u) = self.cur[slot].take() {
                self.prev[slot] = Some(u);
                // Keep going: the other slots must still be disabled.
                if let Err(e) = self.events.enable(slot, false) {
                    result = result.and(Err(e));
                }
            }
        }
        self.collect(true);
        result
    }

    /// Moves what the kernel recorded into [`Watcher::hits`]; returns how many were added.
    pub fn poll(&mut self) -> usize {
        self.collect(false)
    }

    pub fn hits(&self) -> &[Hit] {
        &self.hits
    }
    pub fn take_hits(&mut self) -> Vec<Hit> {
        std::mem::take(&mut self.hits)
    }
    pub fn losses(&self) -> Losses {
        self.losses
    }
    /// Traps that reached the target as a SIGTRAP, which the guard dropped (see
    /// `guard.rs`): a machine that delivered a trap without saying which watchpoint fired
    /// (DR6 empty, seen under KVM), whose hit is missing. Not in [`Losses`], which counts
    /// what the kernel recorded and we could not read.
    pub fn stray_traps(&self) -> u64 {
        self.guard.absorbed()
    }

    fn collect(&mut self, flush: bool) -> usize {
        let before = self.hits.len();
        let drained: Vec<Drained> = self.events.drain();
        for (ri, d) in drained.into_iter().enumerate() {
            self.losses.lost += d.lost;
            self.losses.throttled += d.throttled;
            self.losses.overflows += d.full as u64;
            let mut batch: Vec<(RawHit, SlotUse)> = self
                .held
                .get_mut(ri)
                .and_then(Option::take)
                .into_iter()
                .collect();
            for h in d.hits {
                match self.use_of(&h) {
                    Some(u) => batch.push((h, u)),
                    None => self.losses.unattributed += 1,
                }
            }
            let (hits, held) = classify(&batch, !flush);
            self.hits.extend(hits);
            if let Some(slot) = self.held.get_mut(ri) {
                *slot = held;
            }
        }
        self.hits.len() - before
    }

    /// The use a sample was recorded under: its slot's current one, or the previous one
    /// for a sample written just before the slot moved.
    fn use_of(&self, h: &RawHit) -> Option<SlotUse> {
        let matches = |u: &&SlotUse| u.watch.addr() == h.hit.addr;
        let cur = self.cur.get(h.slot).and_then(Option::as_ref);
        let prev = self.prev.get(h.slot).and_then(Option::as_ref);
        cur.filter(matches).or(prev.filter(matches)).copied()
    }
}
