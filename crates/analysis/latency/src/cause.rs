//! Which requests are slow and why: the threshold applied, and each request's main cause
//! in one sentence, found against the normal requests. The part of its time that most
//! exceeds a normal request's (median) is the cause; the sentence names what
//! distinguishes it: for time on the CPU, the function whose sampled time most exceeds
//! the normal requests' and that they run least (the request's own code path, not a
//! shared leaf such as a clock read); for a wait, the call it blocked in, its caller, and
//! the thread that woke it with what that thread ran meanwhile; for preemption, the
//! thread that ran; for faults, where they happened.

use rustc_hash::FxHashMap as HashMap;

use kairos_report::thousands;

use crate::model::{LatencyResult, Parts, Request};
use crate::threshold::SlowerThan;

/// Marks slow requests and writes every request's cause.
pub fn assign(r: &mut LatencyResult, slower_than: SlowerThan) {
    let sorted = r.sorted_durations();
    r.threshold_ns = slower_than.resolve(&sorted);
    r.threshold_how = slower_than.describe();
    for q in &mut r.requests {
        q.slow = q.duration_ns > r.threshold_ns;
    }
    let normal = Baseline::of(r.requests.iter().filter(|q| !q.slow));
    let functions = r.functions.clone();
    for q in &mut r.requests {
        let (kind, sentence) = cause(q, &normal, &functions);
        q.cause_kind = kind.to_string();
        q.cause = sentence;
    }
}

/// What a normal request looks like.
pub struct Baseline {
    /// Median of each part.
    pub parts: [u64; 7],
    /// Mean sampled time per request by function.
    pub function_mean: HashMap<u32, f64>,
    /// Share of the normal requests' sampled time that has each function on its stack.
    pub function_presence: HashMap<u32, f64>,
}

impl Baseline {
    pub fn of<'a>(normal: impl Iterator<Item = &'a Request>) -> Baseline {
        let mut cols: [Vec<u64>; 7] = Default::default();
        let mut sums: HashMap<u32, u64> = HashMap::default();
        let (mut count, mut sampled) = (0usize, 0u64);
        for q in normal {
            count += 1;
            for (c, v) in cols.iter_mut().zip(q.parts.values()) {
                c.push(v);
            }
            // The whole sampled time of a request is its root function's.
            sampled += q.functions.first().map_or(0, |f| f.1);
            for &(f, ns) in &q.functions {
                *sums.entry(f).or_default() += ns;
            }
        }
        let mut parts = [0u64; 7];
        for (p, c) in parts.iter_mut().zip(cols.iter_mut()) {
            c.sort_unstable();
            *p = c.get(c.len() / 2).copied().unwrap_or(0);
        }
        let n = count.max(1) as f64;
        Baseline {
            parts,
            function_mean: sums.iter().map(|(&f, &s)| (f, s as f64 / n)).collect(),
            function_presence: sums
                .iter()
                .map(|(&f, &s)| (f, s as f64 / sampled.max(1) as f64))
                .collect(),
        }
    }
}

/// "612 us", "5.58 ms".
pub fn us(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{} us", thousands((ns + 500) / 1000))
    }
}

/// The function that distinguishes a request's time on the CPU: among those whose
/// sampled time exceeds the normal mean by at least half the largest excess, the one
/// normal requests run least (then the larger excess).
pub fn distinguishing(q: &Request, normal: &Baseline) -> Option<u32> {
    let excess: Vec<(u32, f64)> = q
        .functions
        .iter()
        .map(|&(f, ns)| {
            (
                f,
                ns as f64 - normal.function_mean.get(&f).copied().unwrap_or(0.0),
            )
        })
        .filter(|x| x.1 > 0.0)
        .collect();
    let max = excess.iter().map(|x| x.1).fold(0.0, f64::max);
    excess
        .into_iter()
        .filter(|x| x.1 >= max / 2.0)
        .min_by(|a, b| {
            let pa = normal.function_presence.get(&a.0).copied().unwrap_or(0.0);
            let pb = normal.function_presence.get(&b.0).copied().unwrap_or(0.0);
            pa.total_cmp(&pb).then(b.1.total_cmp(&a.1))
        })
        .map(|x| x.0)
}

/// The main cause of a request: its kind (a key of [`Parts::KEYS`]) and the sentence.
pub fn cause(q: &Request, normal: &Baseline, functions: &[String]) -> (&'static str, String) {
    let values = q.parts.values();
    let excess: Vec<i128> = values
        .iter()
        .zip(normal.parts)
        .map(|(&v, n)| v as i128 - n as i128)
        .collect();
    let main = (0..7).max_by_key(|&i| (excess[i], values[i])).unwrap_or(0);
    let head = format!("request {} took {}", thousands(q.id), us(q.duration_ns));
    let ns = values[main];
    let name = |i: u32| functions.get(i as usize).map_or("?", String::as_str);
    let sentence = match Parts::KEYS[main] {
        "cpu" => match distinguishing(q, normal) {
            Some(f) => format!("{head}: {} on the CPU, in {}", us(ns), name(f)),
            None if q.samples == 0 => format!("{head}: {} on the CPU (not sampled)", us(ns)),
            None => format!("{head}: {} on the CPU", us(ns)),
        },
        "faults" => {
            let site = q.fault_sites.first().map(|s| s.name.as_str()).unwrap_or("");
            let place = if site.is_empty() { String::new() } else { format!(" in {site}") };
            format!("{head}: {} in {} page faults{place}", us(ns), thousands(q.faults as u64))
        }
        "syscalls" => {
            let sc = q.syscalls.first().map(|s| s.name.as_str()).unwrap_or("?");
            format!("{head}: {} in system calls, most in {sc}", us(ns))
        }
        "interrupts" => format!("{head}: {} in interrupts on its CPU", us(ns)),
        "blocked" => blocked_sentence(&head, q, ns),
        "runnable" => {
            let p = q.preemptions.iter().max_by_key(|p| p.ns);
            match p {
                Some(p) if p.by_tid > 0 => {
                    let ran = if p.by_function.is_empty() {
                        String::new()
                    } else {
                        format!(" ran {} and", p.by_function)
                    };
                    let name = if p.by_name.is_empty() { String::new() } else { format!(" ({})", p.by_name) };
                    format!("{head}: {} runnable but not running while thread {}{name}{ran} held its CPU", us(ns), p.by_tid)
                }
                _ => format!("{head}: {} runnable but not running (its CPU was busy)", us(ns)),
            }
        }
        _ => format!("{head}: {} not explained by the recording (records lost or a switch back in never seen)", us(ns)),
    };
    (Parts::KEYS[main], sentence)
}

fn blocked_sentence(head: &str, q: &Request, ns: u64) -> String {
    let Some(w) = q.waits.iter().max_by_key(|w| w.ns) else {
        return format!("{head}: {} blocked", us(ns));
    };
    let mut s = format!("{head}: {} blocked", us(ns));
    if !w.call.is_empty() {
        s.push_str(&format!(" in {}", w.call));
        if !w.caller.is_empty() {
            s.push_str(&format!(" ({})", w.caller));
        }
    } else if !w.syscall.is_empty() {
        s.push_str(&format!(" in {}", w.syscall));
    }
    let lock = w.syscall == "futex" || w.call.contains("lock") || w.call.contains("futex");
    if w.waker_tid > 0 {
        let verb = if lock { "released it" } else { "woke it" };
        s.push_str(&format!(" while thread {}, which {verb},", w.waker_tid));
        if w.waker_function.is_empty() {
            s.push_str(" was not sampled");
        } else {
            s.push_str(&format!(" ran {}", w.waker_function));
        }
    } else {
        s.push_str(", woken from outside the target (another process, an interrupt or a timer)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, dur: u64, cpu: u64) -> Request {
        Request {
            id,
            duration_ns: dur,
            parts: Parts {
                cpu_ns: cpu,
                ..Parts::default()
            },
            ..Request::default()
        }
    }

    #[test]
    fn numbers_read_as_in_a_sentence() {
        assert_eq!(us(612_300), "612 us");
        assert_eq!(us(12_345_678), "12.35 ms");
    }

    #[test]
    fn the_distinguishing_function_is_the_rare_one_not_the_shared_leaf() {
        // 0 = process_order (every request), 1 = rebuild_index (rare), 2 = clock_read
        // (a shared leaf, also on the slow path's stacks).
        let mut normal = Vec::new();
        for i in 0..50 {
            let mut q = req(i, 30_000, 30_000);
            q.functions = vec![(0, 100_000), (2, 100_000)];
            normal.push(q);
        }
        let b = Baseline::of(normal.iter());
        let mut slow = req(99, 500_000, 500_000);
        slow.samples = 5;
        slow.functions = vec![(0, 500_000), (1, 400_000), (2, 450_000)];
        assert_eq!(distinguishing(&slow, &b), Some(1));
        let names: Vec<String> = ["process_order", "rebuild_index", "clock_read"]
            .map(String::from)
            .to_vec();
        let (kind, s) = cause(&slow, &b, &names);
        assert_eq!(kind, "cpu");
        assert_eq!(
            s,
            "request 99 took 500 us: 500 us on the CPU, in rebuild_index"
        );
    }

    #[test]
    fn a_lock_wait_names_the_call_caller_and_holder() {
        let b = Baseline::of([req(1, 30_000, 30_000)].iter());
        let mut q = req(4207, 612_000, 100_000);
        q.parts.blocked_ns = 498_000;
        q.waits.push(crate::model::Wait {
            ns: 498_000,
            call: "pthread_mutex_lock".into(),
            caller: "process_order".into(),
            syscall: "futex".into(),
            waker_tid: 812,
            waker_function: "compact_book".into(),
            ..Default::default()
        });
        let (kind, s) = cause(&q, &b, &[]);
        assert_eq!(kind, "blocked");
        assert_eq!(s, "request 4,207 took 612 us: 498 us blocked in pthread_mutex_lock (process_order) while thread 812, which released it, ran compact_book");
    }
}
