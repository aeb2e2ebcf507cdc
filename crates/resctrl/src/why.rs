//! Why resctrl is missing, from /proc/cpuinfo, /proc/filesystems and /proc/mounts (parsed
//! by kairos-platform, which also reports resctrl in `kairos info`): the CPU shows no RDT
//! flags, the kernel was built without resctrl, or it is not mounted (or mounted
//! elsewhere). Each cause gets its own sentence and the fix where there is one.

use std::path::Path;

use kairos_platform::parse::{parse_cpuinfo, parse_filesystems, parse_mounts};

/// The cpuinfo flags of Intel RDT / AMD PQoS allocation and monitoring.
pub const RDT_FLAGS: [&str; 11] =
    ["rdt_a", "cat_l3", "cat_l2", "cdp_l3", "cdp_l2", "mba", "cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local", "smba"];

/// The facts and the explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absence {
    pub cpu_flags: Vec<String>,
    pub kernel_has_resctrl: bool,
    /// Where resctrl is mounted, if anywhere.
    pub mounted_at: Option<String>,
    /// One sentence per cause.
    pub causes: Vec<String>,
}

/// Explains why `root` holds no resctrl tree.
pub fn explain(cpuinfo: &str, filesystems: &str, mounts: &str, root: &Path) -> Absence {
    let cpu = parse_cpuinfo(cpuinfo);
    let cpu_flags: Vec<String> = RDT_FLAGS.iter().filter(|f| cpu.has_flag(f)).map(|f| f.to_string()).collect();
    let kernel_has_resctrl = parse_filesystems(filesystems).contains("resctrl");
    let mounted_at = parse_mounts(mounts).into_iter().find(|m| m.fstype == "resctrl").map(|m| m.target);
    let mut causes = Vec::new();
    if cpu_flags.is_empty() {
        let vm = if cpu.is_virtual() { " (this is a virtual machine: hypervisors rarely pass RDT through)" } else { "" };
        causes.push(format!(
            "the CPU has no cache or memory-bandwidth allocation or monitoring: /proc/cpuinfo shows none of the RDT flags {}{vm}",
            RDT_FLAGS.join(", ")
        ));
    }
    if !kernel_has_resctrl {
        causes.push("the kernel was built without resctrl: /proc/filesystems has no 'resctrl' (CONFIG_X86_CPU_RESCTRL is off, or this is not x86)".into());
    }
    match &mounted_at {
        Some(m) if Path::new(m) != root => causes.push(format!("resctrl is mounted at {m}, not at {}: give --resctrl-root {m}", root.display())),
        Some(_) => {}
        None if kernel_has_resctrl && !cpu_flags.is_empty() => {
            causes.push(format!("resctrl is supported but not mounted; as root: mount -t resctrl resctrl {} (add -o cdp for code/data prioritisation, -o mba_MBps for bandwidth limits in MB/s)", root.display()))
        }
        None => {}
    }
    if causes.is_empty() {
        causes.push(format!("{} has no info/ directory", root.display()));
    }
    Absence { cpu_flags, kernel_has_resctrl, mounted_at, causes }
}

/// The live system's explanation.
pub fn explain_live(root: &Path) -> Absence {
    let r = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    explain(&r("/proc/cpuinfo"), &r("/proc/filesystems"), &r("/proc/mounts"), root)
}

/// What works without resctrl.
pub const STILL_WORKS: &str = "without resctrl Kairos cannot show or change cache allocation (kairos cache, kairos run --cache-ways) \
     or record cache occupancy and memory bandwidth per group; everything else works, and the target's cache misses still come from \
     the PMU where there is one (see kairos info)";

#[cfg(test)]
mod tests {
    use super::*;

    const INTEL: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse rdt_a cat_l3 cqm_llc cqm_occup_llc mba\n";
    const VM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse hypervisor\n";
    const FS_YES: &str = "nodev\tsysfs\nnodev\tresctrl\n\text4\n";
    const FS_NO: &str = "nodev\tsysfs\n\text4\n";
    const ROOT: &str = "/sys/fs/resctrl";

    #[test]
    fn each_cause_has_its_sentence() {
        let a = explain(VM, FS_NO, "", Path::new(ROOT));
        assert_eq!(a.causes.len(), 2, "{a:?}");
        assert!(a.causes[0].contains("none of the RDT flags rdt_a, cat_l3") && a.causes[0].contains("virtual machine"));
        assert!(a.causes[1].contains("built without resctrl"));
        let a = explain(INTEL, FS_YES, "sysfs /sys sysfs rw 0 0\n", Path::new(ROOT));
        assert_eq!(a.cpu_flags, ["rdt_a", "cat_l3", "mba", "cqm_llc", "cqm_occup_llc"]);
        assert_eq!(a.causes.len(), 1);
        assert!(a.causes[0].contains("not mounted; as root: mount -t resctrl resctrl /sys/fs/resctrl"), "{a:?}");
        let a = explain(INTEL, FS_YES, "resctrl /mnt/rc resctrl rw 0 0\n", Path::new(ROOT));
        assert!(a.causes[0].contains("mounted at /mnt/rc") && a.causes[0].contains("--resctrl-root /mnt/rc"));
        let a = explain(INTEL, FS_NO, "", Path::new(ROOT));
        assert_eq!(a.causes.len(), 1);
        assert!(a.causes[0].contains("built without resctrl"));
    }
}
