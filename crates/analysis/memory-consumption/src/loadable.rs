//! Whether the preloaded allocation tracker can enter a program at all, checked before a
//! result exists.

use std::path::Path;

use kairos_analysis_api::Failure;

/// Refuses programs the preloaded tracker cannot enter: statically linked ELF files (no
/// PT_INTERP: no dynamic loader runs, so LD_PRELOAD is never read) and setuid/setgid
/// programs (the loader ignores LD_PRELOAD for them). Scripts (`#!`) pass: their
/// interpreter is what runs.
pub fn check_loadable(program: &Path, name: &str) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(bytes) = std::fs::read(program) else {
        return Ok(());
    };
    if bytes.starts_with(b"#!") {
        return Ok(());
    }
    if let Ok(meta) = std::fs::metadata(program) {
        if meta.permissions().mode() & 0o6000 != 0 && unsafe { libc::geteuid() } != 0 {
            return Err(Failure::failed(format!(
                "{name} is setuid or setgid: the dynamic loader ignores LD_PRELOAD for it, so the allocation tracker cannot be loaded into it"
            )));
        }
    }
    match elf_interp(&bytes) {
        Some(false) => Err(Failure::failed(format!(
            "{name} is statically linked: the allocation tracker (LD_PRELOAD) cannot be loaded into it; rebuild it dynamically"
        ))),
        _ => Ok(()),
    }
}

/// For a 64- or 32-bit little-endian ELF file: whether it has a PT_INTERP program header.
/// `None` when it is not such a file (then the loader will say what is wrong).
fn elf_interp(b: &[u8]) -> Option<bool> {
    if b.get(..4)? != b"\x7fELF" || *b.get(5)? != 1 {
        return None;
    }
    let is64 = *b.get(4)? == 2;
    let rd = |at: usize, n: usize| -> Option<u64> {
        let s = b.get(at..at + n)?;
        Some(s.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
    };
    let (phoff, phentsize, phnum) = if is64 {
        (rd(0x20, 8)?, rd(0x36, 2)?, rd(0x38, 2)?)
    } else {
        (rd(0x1c, 4)?, rd(0x2a, 2)?, rd(0x2c, 2)?)
    };
    const PT_INTERP: u64 = 3;
    for i in 0..phnum.min(4096) {
        let at = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
        if rd(at, 4)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_interp_is_total() {
        assert_eq!(elf_interp(b"junk"), None);
        let exe = std::fs::read("/proc/self/exe").expect("own binary");
        assert_eq!(elf_interp(&exe), Some(true));
        for n in [0, 10, 64, 100] {
            let _ = elf_interp(&exe[..n.min(exe.len())]);
        }
    }
}
