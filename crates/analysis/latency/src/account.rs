//! Each request's time accounted for: off the CPU (blocked, with where, who woke it and
//! what the waker was doing; runnable while another thread ran), on the CPU in page
//! faults, system calls and interrupts (the kernel entries of system-overview's pairing),
//! the rest on the CPU by function from the thread's samples, and what the records do not
//! cover, shown as not explained.

use rustc_hash::FxHashMap as HashMap;

use kairos_analysis_system_overview::{Cause, Entry};
use kairos_model::{Mode, Profile, StackIdx, ThreadIdx};

use crate::model::{Preemption, Request, Site, Wait};
use crate::requests::Span;
use crate::sched::OffCpu;

/// Everything a request is accounted from, indexed by thread.
pub struct Context<'a> {
    pub profile: &'a Profile,
    /// cpu-clock samples by thread: (time, stack, weight in ns), in time order.
    samples: HashMap<ThreadIdx, Vec<(u64, Option<StackIdx>, u64)>>,
    off: HashMap<ThreadIdx, Vec<OffCpu>>,
    entries: HashMap<ThreadIdx, Vec<Entry>>,
    tid_index: HashMap<u32, ThreadIdx>,
    /// Interned function names.
    pub functions: Vec<String>,
    function_index: HashMap<String, u32>,
}

impl<'a> Context<'a> {
    pub fn new(
        profile: &'a Profile,
        off: HashMap<ThreadIdx, Vec<OffCpu>>,
        entries: Vec<Entry>,
    ) -> Context<'a> {
        let canon = crate::sched::canonical(profile);
        let canon_of = |t: ThreadIdx| canon.get(t as usize).copied().unwrap_or(t);
        let mut samples: HashMap<ThreadIdx, Vec<(u64, Option<StackIdx>, u64)>> = HashMap::default();
        let timer = profile.events.first().is_none_or(|e| e.time);
        for (i, s) in profile.samples.iter().enumerate() {
            if timer && profile.event_of(i) == 0 {
                samples
                    .entry(canon_of(s.thread))
                    .or_default()
                    .push((s.time_ns, s.stack, s.weight));
            }
        }
        let mut by_thread: HashMap<ThreadIdx, Vec<Entry>> = HashMap::default();
        for e in entries {
            by_thread.entry(canon_of(e.thread)).or_default().push(e);
        }
        for v in by_thread.values_mut() {
            v.sort_by_key(|e| e.time_ns);
        }
        let tid_index = profile
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tid as u32, canon_of(i as ThreadIdx)))
            .collect();
        Context {
            profile,
            samples,
            off,
            entries: by_thread,
            tid_index,
            functions: Vec::new(),
            function_index: HashMap::default(),
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.function_index.get(name) {
            return i;
        }
        let i = self.functions.len() as u32;
        self.functions.push(name.to_string());
        self.function_index.insert(name.to_string(), i);
        i
    }

    /// The user functions of a stack, leaf first, each once.
    fn user_functions(&self, stack: Option<StackIdx>) -> Vec<&'a str> {
        let mut v: Vec<&'a str> = Vec::new();
        for (_, f) in self.profile.stack_frames(stack) {
            if f.mode == Mode::User && !f.function.is_empty() && !v.contains(&f.function.as_str()) {
                v.push(f.function.as_str());
            }
        }
        v
    }

    /// The innermost call of a stack and the first caller outside its module: the call
    /// a thread blocked or faulted in and the program's function that made it.
    fn call_and_caller(&self, stack: Option<StackIdx>) -> (String, String) {
        let frames: Vec<&kairos_model::Frame> = self
            .profile
            .stack_frames(stack)
            .map(|(_, f)| f)
            .filter(|f| f.mode == Mode::User)
            .collect();
        let Some(leaf) = frames.first() else {
            return (String::new(), String::new());
        };
        let caller = frames
            .iter()
            .skip(1)
            .find(|f| f.module != leaf.module)
            .or(frames.get(1))
            .map_or(String::new(), |f| f.function.clone());
        (leaf.function.clone(), caller)
    }

    /// The function a thread ran most in [a, b), from its samples' leaves.
    fn top_function(&self, thread: Option<ThreadIdx>, a: u64, b: u64) -> String {
        let Some(v) = thread.and_then(|t| self.samples.get(&t)) else {
            return String::new();
        };
        let mut count: HashMap<&str, u64> = HashMap::default();
        let first = v.partition_point(|s| s.0 < a);
        for s in v[first..].iter().take_while(|s| s.0 < b) {
            if let Some(f) = self.user_functions(s.1).first() {
                *count.entry(f).or_default() += s.2;
            }
        }
        count
            .into_iter()
            .max_by_key(|(n, w)| (*w, std::cmp::Reverse(*n)))
            .map_or(String::new(), |(n, _)| n.to_string())
    }

    fn thread_name(&self, thread: Option<ThreadIdx>) -> String {
        thread
            .and_then(|t| self.profile.threads.get(t as usize))
            .map_or(String::new(), |t| t.name.clone())
    }

    /// A request, accounted (its cause is set later, against the normal requests).
    pub fn account(&mut self, span: &Span, end: u64) -> Request {
        let (s, e) = (span.start_ns, end.max(span.start_ns));
        let thread = self.tid_index.get(&span.tid).copied();
        let mut r = Request {
            id: span.id,
            tid: span.tid,
            thread_name: self.thread_name(thread),
            start_ns: s,
            duration_ns: e - s,
            ..Request::default()
        };
        let Some(thread) = thread else {
            r.parts.unexplained_ns = r.duration_ns;
            return r;
        };
        let offs: Vec<OffCpu> = self
            .off
            .get(&thread)
            .map(|v| {
                v.iter()
                    .filter(|o| o.start < e && o.end > s)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut off_ns = 0;
        for o in &offs {
            let ns = o.end.min(e).saturating_sub(o.start.max(s));
            off_ns += ns;
            self.off_cpu(&mut r, thread, o, ns, (s, e));
        }
        let on_cpu = r.duration_ns.saturating_sub(off_ns);
        self.kernel_entries(&mut r, thread, &offs, (s, e));
        self.sampled(&mut r, thread, (s, e));
        let p = &mut r.parts;
        // Kernel entries nest (an interrupt inside a fault, a timer inside a softirq), so
        // their sum can pass the time on the CPU: scaled down to it.
        let kernel = p.fault_ns + p.syscall_ns + p.irq_ns;
        if kernel > on_cpu {
            let scale = |ns: u64| (ns as u128 * on_cpu as u128 / kernel as u128) as u64;
            p.fault_ns = scale(p.fault_ns);
            p.syscall_ns = scale(p.syscall_ns);
            p.irq_ns = on_cpu - p.fault_ns - p.syscall_ns;
        }
        p.cpu_ns = on_cpu.saturating_sub(p.fault_ns + p.syscall_ns + p.irq_ns);
        let accounted = p.values().iter().sum::<u64>();
        p.unexplained_ns += r.duration_ns.saturating_sub(accounted);
        r
    }

    fn off_cpu(
        &mut self,
        r: &mut Request,
        thread: ThreadIdx,
        o: &OffCpu,
        ns: u64,
        (s, e): (u64, u64),
    ) {
        if o.end == u64::MAX {
            // The switch-in was never seen (lost records, or the thread ended).
            r.parts.unexplained_ns += ns;
        } else if o.runnable {
            r.parts.runnable_ns += ns;
            let by = self.tid_index.get(&(o.next_tid as u32)).copied();
            r.preemptions.push(Preemption {
                ns,
                by_tid: o.next_tid.max(0) as u32,
                by_name: o.next_name.clone(),
                by_function: self.top_function(by, o.start.max(s), o.end.min(e)),
            });
        } else {
            r.parts.blocked_ns += ns;
            let (call, caller) = self.call_and_caller(o.stack);
            let syscall = self
                .entries
                .get(&thread)
                .and_then(|v| {
                    v.iter().rev().find(|x| {
                        x.cause == Cause::Syscall
                            && x.time_ns <= o.start
                            && x.duration_ns.is_none_or(|d| x.time_ns + d >= o.start)
                    })
                })
                .and_then(|x| x.detail)
                .map_or(String::new(), syscall_name);
            let waker = o.waker;
            let waker_thread = waker.map(|w| w.thread);
            r.waits.push(Wait {
                ns,
                call,
                caller,
                syscall,
                waker_tid: waker_thread
                    .and_then(|t| self.profile.threads.get(t as usize))
                    .map_or(0, |t| t.tid.max(0) as u32),
                waker_name: self.thread_name(waker_thread),
                waker_function: waker.map_or(String::new(), |w| {
                    self.top_function(Some(w.thread), o.start.max(s), w.time)
                }),
                waker_call: waker.map_or(String::new(), |w| self.call_and_caller(w.stack).0),
            });
        }
    }

    /// Page faults, system calls (less the time they were switched out) and interrupts
    /// of the thread inside the request.
    fn kernel_entries(
        &mut self,
        r: &mut Request,
        thread: ThreadIdx,
        offs: &[OffCpu],
        (s, e): (u64, u64),
    ) {
        let Some(entries) = self.entries.get(&thread) else {
            return;
        };
        let first = entries.partition_point(|x| x.time_ns < s);
        let mut faults: Vec<Site> = Vec::new();
        let mut calls: Vec<Site> = Vec::new();
        let add = |v: &mut Vec<Site>, name: String, ns: u64| match v
            .iter_mut()
            .find(|x| x.name == name)
        {
            Some(x) => {
                x.count += 1;
                x.ns += ns;
            }
            None => v.push(Site { name, count: 1, ns }),
        };
        for x in entries[first..].iter().take_while(|x| x.time_ns < e) {
            let ns = x.duration_ns.unwrap_or(0).min(e - x.time_ns);
            match x.cause {
                Cause::UserFault | Cause::KernelFault if x.completed => {
                    r.faults += 1;
                    r.parts.fault_ns += ns;
                    let (call, _) = self.call_and_caller(x.stack);
                    add(&mut faults, call, ns);
                }
                Cause::Syscall => {
                    let end = x.time_ns + ns;
                    let away: u64 = offs
                        .iter()
                        .map(|o| o.end.min(end).saturating_sub(o.start.max(x.time_ns)))
                        .sum();
                    let on = ns.saturating_sub(away);
                    r.parts.syscall_ns += on;
                    add(&mut calls, x.detail.map_or("?".into(), syscall_name), on);
                }
                Cause::Interrupt => r.parts.irq_ns += ns,
                _ => {}
            }
        }
        let by_time =
            |v: &mut Vec<Site>| v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.name.cmp(&b.name)));
        by_time(&mut faults);
        by_time(&mut calls);
        r.fault_sites = faults;
        r.syscalls = calls;
    }

    /// The thread's samples inside the request: sampled time by function.
    fn sampled(&mut self, r: &mut Request, thread: ThreadIdx, (s, e): (u64, u64)) {
        let Some(v) = self.samples.get(&thread) else {
            return;
        };
        let first = v.partition_point(|x| x.0 < s);
        let picked: Vec<(Option<StackIdx>, u64)> = v[first..]
            .iter()
            .take_while(|x| x.0 < e)
            .map(|x| (x.1, x.2))
            .collect();
        let mut by_fn: HashMap<u32, u64> = HashMap::default();
        for (stack, w) in picked {
            r.samples += 1;
            let names = self.user_functions(stack);
            for n in names {
                let i = self.intern(n);
                *by_fn.entry(i).or_default() += w;
            }
        }
        let mut f: Vec<(u32, u64)> = by_fn.into_iter().collect();
        f.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        r.functions = f;
    }
}

/// A system call's name on this machine's architecture, or its number.
pub fn syscall_name(nr: i64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map_or_else(|| format!("syscall {nr}"), |s| s.name().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscalls_are_named_for_this_architecture() {
        assert_eq!(syscall_name(syscalls::Sysno::futex.id() as i64), "futex");
        assert_eq!(syscall_name(-1), "syscall -1");
    }
}
