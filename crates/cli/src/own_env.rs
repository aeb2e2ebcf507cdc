//! Settings in Kairos's own environment that are meant for the target only. A user who
//! writes `GLIBC_TUNABLES=glibc.malloc.hugetlb=2 kairos collect ... -- ./app` wants the
//! app's malloc on huge pages, but glibc reads the tunables when Kairos itself starts: its
//! own allocations then take pages from the 2 MiB pool (two, measured), and the app's last
//! array silently falls back to 4 KiB pages. So Kairos starts itself again once without
//! malloc's huge-page tunable, keeping the variable as it was for the programs it runs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

/// Carries the user's GLIBC_TUNABLES across the restart.
const KEPT: &str = "KAIROS_TARGET_GLIBC_TUNABLES";
const TUNABLES: &str = "GLIBC_TUNABLES";

/// `GLIBC_TUNABLES` without `glibc.malloc.hugetlb` (None: it has no such tunable).
pub fn without_hugetlb(tunables: &str) -> Option<String> {
    let kept: Vec<&str> = tunables
        .split(':')
        .filter(|t| !t.trim().starts_with("glibc.malloc.hugetlb"))
        .collect();
    (kept.len() != tunables.split(':').count()).then(|| kept.join(":"))
}

/// Called first thing in `main`, while Kairos has one thread. After the restart the
/// user's value is put back into the environment, where only the programs Kairos starts
/// read it. Any failure to restart leaves things as they were, with a warning.
pub fn keep_tunables_for_the_target() {
    if let Some(v) = std::env::var_os(KEPT) {
        // SAFETY (edition 2021: safe fn): single-threaded at this point of main.
        std::env::set_var(TUNABLES, v);
        std::env::remove_var(KEPT);
        return;
    }
    let Ok(v) = std::env::var(TUNABLES) else {
        return;
    };
    let Some(mine) = without_hugetlb(&v) else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).env(KEPT, &v);
    if mine.is_empty() {
        cmd.env_remove(TUNABLES);
    } else {
        cmd.env(TUNABLES, mine);
    }
    let e = cmd.exec();
    eprintln!("kairos: warning: GLIBC_TUNABLES={v} also applies to Kairos itself ({e} when starting again without it): its own allocations may take huge pages from the pool; use `kairos collect ANALYSIS --hugepages=hugetlb|thp` instead");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_huge_page_tunable_is_taken_out() {
        assert_eq!(
            without_hugetlb("glibc.malloc.hugetlb=2"),
            Some(String::new())
        );
        assert_eq!(
            without_hugetlb("glibc.malloc.check=3:glibc.malloc.hugetlb=1"),
            Some("glibc.malloc.check=3".into())
        );
        assert_eq!(without_hugetlb("glibc.malloc.check=3"), None);
        assert_eq!(without_hugetlb(""), None);
    }
}
