//! Where the scripts, the kairos binary and the cache are, derived from this crate's place
//! in the repository and from the running executable (no machine-specific paths).

use crate::VmError;
use std::path::{Path, PathBuf};

/// crates/testvm -> the repository root.
pub(crate) fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from)
}

/// Kernel, images and results: `$KAIROS_VM_CACHE`, else `<target>/numa-vm`, the place
/// `scripts/numa-vm/build.sh` uses too.
pub(crate) fn cache_dir() -> PathBuf {
    std::env::var_os("KAIROS_VM_CACHE").map_or_else(|| target_dir().join("numa-vm"), PathBuf::from)
}

/// The kairos binary to put in the guest (see `Vm::kairos` for the order of the search).
pub(crate) fn kairos_binary(explicit: Option<&Path>) -> Result<PathBuf, VmError> {
    let missing = |p: &Path| VmError::Unavailable {
        reason: format!(
            "no kairos binary at {} (build it: cargo build --release -p kairos)",
            p.display()
        ),
    };
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(missing(p))
        };
    }
    if let Some(p) = std::env::var_os("KAIROS_BIN").map(PathBuf::from) {
        return if p.is_file() { Ok(p) } else { Err(missing(&p)) };
    }
    // A test executable lives in <target>/<profile>/deps/; kairos in <target>/<profile>/.
    let beside_test = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        let profile = if dir.file_name().is_some_and(|n| n == "deps") {
            dir.parent()?
        } else {
            dir
        };
        Some(profile.join("kairos"))
    });
    if let Some(p) = beside_test.filter(|p| p.is_file()) {
        return Ok(p);
    }
    let release = target_dir().join("release").join("kairos");
    if release.is_file() {
        Ok(release)
    } else {
        Err(missing(&release))
    }
}
