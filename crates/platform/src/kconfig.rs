//! The running kernel's build configuration (`/proc/config.gz`, else
//! `/boot/config-RELEASE`). Some file systems (resctrl) are registered only when the
//! hardware has the feature, so `/proc/filesystems` alone cannot tell "built without it"
//! from "built with it, but this CPU lacks the hardware".

use std::io::Read;
use std::path::Path;

use crate::SystemRoot;

/// One option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Yes,
    Module,
    /// `# CONFIG_X is not set`, or any other value.
    No,
}

/// The configuration text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    text: String,
    pub source: String,
}

impl KernelConfig {
    pub fn parse(text: impl Into<String>, source: impl Into<String>) -> Self {
        KernelConfig {
            text: text.into(),
            source: source.into(),
        }
    }

    /// The running kernel's configuration, when the kernel or /boot offers it.
    pub fn read(root: &SystemRoot) -> Option<Self> {
        let gz = root.proc_dir.join("config.gz");
        if let Some(text) = gunzip(&gz) {
            return Some(Self::parse(text, "/proc/config.gz"));
        }
        let release = std::fs::read_to_string(root.proc_dir.join("sys/kernel/osrelease")).ok()?;
        let name = format!("config-{}", release.trim());
        // A recorded tree keeps boot/ beside proc/; the live system has /boot.
        let boot = root
            .proc_dir
            .parent()
            .map(|p| p.join("boot"))
            .unwrap_or_else(|| "/boot".into());
        let text = std::fs::read_to_string(boot.join(&name)).ok()?;
        Some(Self::parse(text, format!("/boot/{name}")))
    }

    /// `None` when the configuration does not mention the option (not in this kernel
    /// version).
    pub fn get(&self, option: &str) -> Option<Setting> {
        self.text.lines().find_map(|line| {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# ") {
                return (rest.strip_suffix(" is not set")? == option).then_some(Setting::No);
            }
            let (name, value) = line.split_once('=')?;
            (name == option).then_some(match value {
                "y" => Setting::Yes,
                "m" => Setting::Module,
                _ => Setting::No,
            })
        })
    }
}

fn gunzip(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut out = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_absence() {
        let c = KernelConfig::parse(
            "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\nCONFIG_D=\"x\"\n",
            "t",
        );
        assert_eq!(c.get("CONFIG_A"), Some(Setting::Yes));
        assert_eq!(c.get("CONFIG_B"), Some(Setting::No));
        assert_eq!(c.get("CONFIG_C"), Some(Setting::Module));
        assert_eq!(c.get("CONFIG_D"), Some(Setting::No));
        assert_eq!(c.get("CONFIG_E"), None);
        assert_eq!(c.get("CONFIG_"), None);
    }

    #[test]
    fn reads_boot_config_of_a_recorded_tree() {
        let dir = std::env::temp_dir().join(format!("kairos-kconfig-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(dir.join("boot")).unwrap();
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), "6.1.0-9-amd64\n").unwrap();
        std::fs::write(
            dir.join("boot/config-6.1.0-9-amd64"),
            "CONFIG_X86_CPU_RESCTRL=y\n",
        )
        .unwrap();
        let c = KernelConfig::read(&SystemRoot::under(&dir)).unwrap();
        assert_eq!(c.source, "/boot/config-6.1.0-9-amd64");
        assert_eq!(c.get("CONFIG_X86_CPU_RESCTRL"), Some(Setting::Yes));
        std::fs::remove_dir_all(&dir).ok();
        assert!(KernelConfig::read(&SystemRoot::under(&dir)).is_none());
    }
}
