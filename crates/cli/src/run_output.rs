//! What `kairos run` prints whatever it runs with: what the run tells along the way and
//! how the program ended.

use kairos_run::Notice;

/// The summary's line for how the program ended.
pub(crate) fn print_exit(exit: kairos_result::TargetExit) {
    match exit {
        kairos_result::TargetExit::Code { code } => {
            println!("  Target exit:            status {code}")
        }
        kairos_result::TargetExit::Signal { signal } => {
            println!("  Target exit:            killed by signal {signal}")
        }
        _ => {}
    }
}

/// Prints what a run tells along the way: its own lines on stdout (before the program's
/// output), warnings and the pool's restoration on stderr.
pub(crate) fn say(n: &Notice) {
    match n {
        Notice::PoolFreeAlready { free, nr_hugepages } => println!(
            "Huge-page pool: {free} pages free already (nr_hugepages {nr_hugepages}), nothing to reserve"
        ),
        Notice::PoolRaised { from, to, reserved } => println!(
            "Huge-page pool: nr_hugepages {from} -> {to} ({reserved} pages free for the program)"
        ),
        Notice::PoolEmpty => eprintln!("kairos: warning: the 2 MiB pool has no free pages, so malloc will fall back to 4 KiB pages; give --reserve N (see `kairos report hugepages`)"),
        Notice::Tunables(v) => println!("Environment: GLIBC_TUNABLES={v}"),
        Notice::PoolRestored { file, pages } => {
            eprintln!("kairos: huge-page pool restored to {pages} pages ({file})")
        }
        Notice::PoolNotRestored { file, pages, error } => eprintln!(
            "kairos: could not restore {file} to {pages} ({error}); do it by hand: echo {pages} > {file}"
        ),
        Notice::Placement(p) => {
            let shrunk: Vec<String> = p
                .shrunk
                .iter()
                .map(|s| format!("{} {} -> {}", s.resource, s.from, s.to))
                .collect();
            println!(
                "Cache: group {}, {} domains {}: ways {} (mask {}){}",
                p.group,
                p.resources.join("/"),
                p.domains,
                p.ways,
                p.mask,
                if shrunk.is_empty() {
                    String::new()
                } else {
                    format!("; default group shrunk: {}", shrunk.join(", "))
                }
            );
        }
        Notice::Shareable(why) => println!("Cache: the kernel kept the group shareable ({why}); no other group holds its ways now, but one made later could"),
        Notice::CpusJoined(cpus) => println!(
            "Cache: CPUs {cpus} joined the group (default-group tasks running there fill its ways too)"
        ),
        Notice::Started {
            program,
            pid,
            group,
        } => println!(
            "Cache: running {program} (pid {pid}){}",
            group
                .as_ref()
                .map(|g| format!(" in {}", g.display()))
                .unwrap_or_default()
        ),
    }
}
