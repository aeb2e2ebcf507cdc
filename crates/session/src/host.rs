//! This machine as a manifest describes it, and what the kernel says about the children
//! Kairos ran.

use std::path::{Path, PathBuf};

/// This machine, as the manifest describes a host.
pub fn this_host() -> kairos_result::Host {
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct it is given; on failure the fields stay zeroed.
    let ok = unsafe { libc::uname(&mut uts) } == 0;
    let field = |f: &[libc::c_char]| -> Option<String> {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        (ok && !bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned())
    };
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    kairos_result::Host {
        name: field(&uts.nodename),
        cpu_model,
        kernel_release: field(&uts.release),
        nr_cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
    }
}

/// Page faults and CPU times of the children kairos has waited for (getrusage), for the
/// manifest's `process` entry that `kairos compare` reads; null when unavailable.
pub fn children_rusage() -> serde_json::Value {
    // SAFETY: rusage is plain data that getrusage fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return serde_json::Value::Null;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    serde_json::json!({"minor_faults": ru.ru_minflt, "major_faults": ru.ru_majflt, "user_s": tv(ru.ru_utime),
                       "system_s": tv(ru.ru_stime), "source": "getrusage(RUSAGE_CHILDREN)"})
}

/// Copies /proc/kallsyms into the result when its addresses are visible, so kernel
/// frames stay symbolisable later. Returns the copy's path, or why there is none.
pub fn snapshot_kallsyms(dir: &Path) -> Result<PathBuf, String> {
    kairos_convert::snapshot_kallsyms(dir)
}
