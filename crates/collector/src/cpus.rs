//! CPUs and clocks: the online CPUs, `-C` lists, CLOCK_MONOTONIC (the samples' clock)
//! and whether a process is alive.

use super::*;

pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in ns: the clock of the sample time stamps (use_clockid).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns (wall-clock time since the epoch).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// True while the process exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => match s.rfind(')') {
            Some(i) => !matches!(
                s[i + 1..].trim_start().chars().next(),
                Some('Z') | Some('X')
            ),
            None => true,
        },
        Err(_) => false,
    }
}

/// The CPUs of `-C`, each online, sorted, once; else which is not and which are.
pub(crate) fn chosen_cpus(want: &[i32], online: &[i32]) -> Result<Vec<i32>, CollectError> {
    let mut v = want.to_vec();
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err(CollectError::InvalidOptions("the CPU list is empty".into()));
    }
    if let Some(c) = v.iter().find(|c| !online.contains(c)) {
        let list: Vec<String> = online.iter().map(i32::to_string).collect();
        return Err(CollectError::InvalidOptions(format!(
            "CPU {c} is not online (online: {})",
            list.join(",")
        )));
    }
    Ok(v)
}

/// "0-3,5,7-8" -> [0,1,2,3,5,7,8]
pub fn parse_cpu_list(s: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>()) {
                    v.extend(a..=b);
                }
            }
            None => {
                if let Ok(a) = part.trim().parse() {
                    v.push(a);
                }
            }
        }
    }
    v
}

/// Online CPUs from sysfs, else 0..nproc.
pub fn online_cpus() -> Vec<i32> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        let v = parse_cpu_list(&s);
        if !v.is_empty() {
            return v;
        }
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
    (0..n as i32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), vec![0, 1]);
        assert_eq!(parse_cpu_list("0,2-3,7"), vec![0, 2, 3, 7]);
    }
}
