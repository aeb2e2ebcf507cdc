//! Why resctrl is missing, from /proc/cpuinfo, /proc/filesystems and /proc/mounts (parsed
//! by kairos-platform, which also reports resctrl in `kairos info`): the CPU shows no RDT
//! flags, the kernel was built without resctrl, or it is not mounted (or mounted
//! elsewhere). Each cause gets its own sentence and the fix where there is one.

use std::path::Path;

use kairos_platform::kconfig::KernelConfig;
use kairos_platform::parse::{parse_cpuinfo, parse_filesystems, parse_mounts};
use kairos_platform::resctrl_support::ResctrlSupport;
pub use kairos_platform::resctrl_support::RDT_FLAGS;

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

/// Explains why `root` holds no resctrl tree; `config` is the kernel's build
/// configuration where readable (it tells a kernel without resctrl from a CPU without RDT).
pub fn explain(
    cpuinfo: &str,
    filesystems: &str,
    mounts: &str,
    config: Option<&KernelConfig>,
    root: &Path,
) -> Absence {
    let support = ResctrlSupport::new(
        &parse_cpuinfo(cpuinfo),
        &parse_filesystems(filesystems),
        config,
    );
    let mounted_at = parse_mounts(mounts)
        .into_iter()
        .find(|m| m.fstype == "resctrl")
        .map(|m| m.target);
    let mut causes: Vec<String> = [support.cpu_cause(), support.kernel_cause()]
        .into_iter()
        .flatten()
        .collect();
    match &mounted_at {
        Some(m) if Path::new(m) != root => causes.push(format!("resctrl is mounted at {m}, not at {}: give --resctrl-root {m}", root.display())),
        Some(_) => {}
        None if support.registered && support.has_hardware() => {
            causes.push(format!("resctrl is supported but not mounted; as root: mount -t resctrl resctrl {} (add -o cdp for code/data prioritisation, -o mba_MBps for bandwidth limits in MB/s)", root.display()))
        }
        None => {}
    }
    if causes.is_empty() {
        causes.push(format!("{} has no info/ directory", root.display()));
    }
    Absence {
        cpu_flags: support.cpu_flags,
        kernel_has_resctrl: support.registered,
        mounted_at,
        causes,
    }
}

/// The live system's explanation.
pub fn explain_live(root: &Path) -> Absence {
    let r = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let config = KernelConfig::read(&kairos_platform::SystemRoot::live());
    explain(
        &r("/proc/cpuinfo"),
        &r("/proc/filesystems"),
        &r("/proc/mounts"),
        config.as_ref(),
        root,
    )
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
        let no = KernelConfig::parse("# CONFIG_X86_CPU_RESCTRL is not set\n", "/proc/config.gz");
        let a = explain(VM, FS_NO, "", Some(&no), Path::new(ROOT));
        assert_eq!(a.causes.len(), 2, "{a:?}");
        assert!(
            a.causes[0].contains("none of the RDT flags rdt_a, cat_l3")
                && a.causes[0].contains("virtual machine")
        );
        assert!(a.causes[1].contains("built without resctrl"));
        // A guest whose kernel has resctrl: only the CPU is to blame.
        let yes = KernelConfig::parse("CONFIG_X86_CPU_RESCTRL=y\n", "/boot/config-6.1.0");
        let a = explain(VM, FS_NO, "", Some(&yes), Path::new(ROOT));
        assert_eq!(a.causes.len(), 1, "{a:?}");
        let a = explain(
            INTEL,
            FS_YES,
            "sysfs /sys sysfs rw 0 0\n",
            None,
            Path::new(ROOT),
        );
        assert_eq!(
            a.cpu_flags,
            ["rdt_a", "cat_l3", "mba", "cqm_llc", "cqm_occup_llc"]
        );
        assert_eq!(a.causes.len(), 1);
        assert!(
            a.causes[0].contains("not mounted; as root: mount -t resctrl resctrl /sys/fs/resctrl"),
            "{a:?}"
        );
        let a = explain(
            INTEL,
            FS_YES,
            "resctrl /mnt/rc resctrl rw 0 0\n",
            None,
            Path::new(ROOT),
        );
        assert!(
            a.causes[0].contains("mounted at /mnt/rc")
                && a.causes[0].contains("--resctrl-root /mnt/rc")
        );
        let a = explain(INTEL, FS_NO, "", None, Path::new(ROOT));
        assert_eq!(a.causes.len(), 1);
        assert!(a.causes[0].contains("built without resctrl"));
    }
}
