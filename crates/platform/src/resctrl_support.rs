//! Whether resctrl (Intel RDT / AMD PQoS cache and memory-bandwidth allocation and
//! monitoring) can work here, and the one reason per missing part: the CPU's flags, the
//! kernel's build, the mount. Shared by `kairos info` and by `kairos cache`.
//!
//! The kernel registers the resctrl file system only when the CPU has RDT, so on a CPU
//! without it `/proc/filesystems` says nothing about the kernel: its configuration does.

use std::collections::BTreeSet;

use crate::kconfig::{KernelConfig, Setting};
use crate::parse::{CpuInfo, Mount};
use crate::{cap, list_dir, names, Capability, SystemRoot};

/// The cpuinfo flags of Intel RDT / AMD PQoS allocation and monitoring.
pub const RDT_FLAGS: [&str; 12] = [
    "rdt_a",
    "cat_l3",
    "cat_l2",
    "cdp_l3",
    "cdp_l2",
    "mba",
    "cqm",
    "cqm_llc",
    "cqm_occup_llc",
    "cqm_mbm_total",
    "cqm_mbm_local",
    "smba",
];

/// The facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResctrlSupport {
    pub cpu_flags: Vec<String>,
    pub virtual_cpu: bool,
    /// `resctrl` is in /proc/filesystems.
    pub registered: bool,
    /// From the kernel configuration, when readable: built with resctrl.
    pub built: Option<bool>,
    pub config_source: Option<String>,
}

impl ResctrlSupport {
    pub fn new(
        cpu: &CpuInfo,
        filesystems: &BTreeSet<String>,
        config: Option<&KernelConfig>,
    ) -> Self {
        let built = config.and_then(|c| {
            // x86 before 6.15 has only the first; later kernels split the file system out.
            let x86 = c.get("CONFIG_X86_CPU_RESCTRL")?;
            Some(
                x86 == Setting::Yes && c.get("CONFIG_RESCTRL_FS").is_none_or(|s| s == Setting::Yes),
            )
        });
        ResctrlSupport {
            cpu_flags: RDT_FLAGS
                .iter()
                .filter(|f| cpu.has_flag(f))
                .map(|f| f.to_string())
                .collect(),
            virtual_cpu: cpu.is_virtual(),
            registered: filesystems.contains("resctrl"),
            built,
            config_source: config.map(|c| c.source.clone()),
        }
    }

    /// Flags that mean allocation or monitoring hardware (CDP alone is a mode of CAT).
    pub fn has_hardware(&self) -> bool {
        self.cpu_flags
            .iter()
            .any(|f| f != "cdp_l3" && f != "cdp_l2")
    }

    /// Why the CPU cannot do it, if it cannot.
    pub fn cpu_cause(&self) -> Option<String> {
        if self.has_hardware() {
            return None;
        }
        let vm = if self.virtual_cpu {
            " (this is a virtual machine: hypervisors rarely pass RDT through)"
        } else {
            ""
        };
        Some(format!(
            "the CPU has no cache or memory-bandwidth allocation or monitoring: /proc/cpuinfo shows none of the RDT flags {}{vm}",
            RDT_FLAGS.join(", ")
        ))
    }

    /// What the kernel lacks, if anything; `None` also when the CPU is the only cause.
    pub fn kernel_cause(&self) -> Option<String> {
        if self.registered {
            return None;
        }
        let src = self
            .config_source
            .as_deref()
            .unwrap_or("the kernel configuration");
        match (self.built, self.has_hardware()) {
            (Some(false), _) => Some(format!(
                "the kernel was built without resctrl (CONFIG_X86_CPU_RESCTRL is not set in {src}): boot a kernel built with it"
            )),
            (Some(true), true) => Some(format!(
                "the kernel has resctrl ({src}) but did not register it: it may be disabled on the kernel command line (rdt=); see dmesg"
            )),
            (None, true) => Some(
                "the kernel was built without resctrl: /proc/filesystems has no 'resctrl' although the CPU has RDT (CONFIG_X86_CPU_RESCTRL is off)"
                    .into(),
            ),
            // The kernel is fine or unknowable; the CPU's sentence says what is missing.
            (Some(true), false) | (None, false) => None,
        }
    }

    /// The kernel side in words, for the detail line.
    pub fn kernel_detail(&self) -> String {
        match (self.registered, self.built) {
            (true, _) => "kernel supports resctrl".into(),
            (false, Some(true)) => format!(
                "kernel built with resctrl ({}), not registered",
                self.config_source.as_deref().unwrap_or("")
            ),
            (false, Some(false)) => "kernel built without resctrl".into(),
            (false, None) => "resctrl not registered; kernel configuration not readable".into(),
        }
    }
}

/// The `resctrl` line of `kairos info`.
pub(crate) fn capability(
    root: &SystemRoot,
    cpu: &CpuInfo,
    mounts: &[Mount],
    filesystems: &BTreeSet<String>,
) -> Capability {
    // The configuration only matters when resctrl is not registered; it is not read (and
    // decompressed) at every collection's probe otherwise.
    let config = if filesystems.contains("resctrl") {
        None
    } else {
        KernelConfig::read(root)
    };
    let s = ResctrlSupport::new(cpu, filesystems, config.as_ref());
    let flag_txt = if s.cpu_flags.is_empty() {
        "no RDT cpuinfo flags".to_string()
    } else {
        format!("cpuinfo flags {}", s.cpu_flags.join(" "))
    };
    if let Some(m) = mounts.iter().find(|m| m.fstype == "resctrl") {
        let info = list_dir(&root.map_path(&m.target).join("info"));
        let info = if info.is_empty() {
            "-".to_string()
        } else {
            info.join(" ")
        };
        return cap(
            names::RESCTRL,
            true,
            format!("mounted at {}; info: {info}; {flag_txt}", m.target),
            None,
        );
    }
    let detail = format!("{}; {flag_txt}", s.kernel_detail());
    match (s.kernel_cause(), s.cpu_cause()) {
        (None, None) => cap(
            names::RESCTRL,
            true,
            format!("supported, not mounted; {flag_txt}"),
            Some("not mounted; as root: mount -t resctrl resctrl /sys/fs/resctrl".into()),
        ),
        (kernel, cpu) => {
            let why: Vec<String> = [cpu, kernel].into_iter().flatten().collect();
            cap(names::RESCTRL, false, detail, Some(why.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_cpuinfo, parse_filesystems};

    const VM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse hypervisor\n";
    const INTEL: &str =
        "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu rdt_a cat_l3 cqm_llc\n";

    fn support(cpuinfo: &str, fs: &str, config: Option<&str>) -> ResctrlSupport {
        let c = config.map(|t| KernelConfig::parse(t, "/boot/config-x"));
        ResctrlSupport::new(&parse_cpuinfo(cpuinfo), &parse_filesystems(fs), c.as_ref())
    }

    #[test]
    fn a_guest_without_rdt_on_a_kernel_with_resctrl_blames_the_cpu_only() {
        let s = support(VM, "nodev\tsysfs\n", Some("CONFIG_X86_CPU_RESCTRL=y\n"));
        assert!(s.cpu_cause().unwrap().contains("virtual machine"));
        assert_eq!(s.kernel_cause(), None);
        assert!(s.kernel_detail().contains("built with resctrl"));
        // Unknown configuration: still no claim about the kernel.
        assert_eq!(support(VM, "", None).kernel_cause(), None);
    }

    #[test]
    fn a_kernel_without_resctrl_is_named_from_its_configuration() {
        let s = support(VM, "", Some("# CONFIG_X86_CPU_RESCTRL is not set\n"));
        assert!(s.kernel_cause().unwrap().contains(
            "built without resctrl (CONFIG_X86_CPU_RESCTRL is not set in /boot/config-x)"
        ));
        let s = support(INTEL, "nodev\tsysfs\n", None);
        assert!(s
            .kernel_cause()
            .unwrap()
            .contains("although the CPU has RDT"));
        assert_eq!(s.cpu_cause(), None);
        let s = support(
            INTEL,
            "nodev\tsysfs\n",
            Some("CONFIG_X86_CPU_RESCTRL=y\nCONFIG_RESCTRL_FS=y\n"),
        );
        assert!(s.kernel_cause().unwrap().contains("did not register it"));
        assert_eq!(
            support(INTEL, "nodev\tresctrl\n", None).kernel_cause(),
            None
        );
    }
}
