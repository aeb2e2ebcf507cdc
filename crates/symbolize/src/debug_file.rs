//! Finding a separate debug file for a binary, in the order GDB and perf use:
//! by build id (`<debug_dir>/.build-id/xx/rest.debug`), then by `.gnu_debuglink`
//! (binary's dir, its `.debug/` subdir, `<debug_dir>/<binary's dir>/`). A candidate is
//! only taken when it proves to match: same build id, or same debuglink CRC-32.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::elf_info::ElfInfo;

/// Where a debug file was found, and how it was matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub info: ElfInfo,
}

/// Candidates that were present but rejected, for the module note.
pub(crate) type Rejected = Vec<String>;

/// Look for a debug file by `build_id` (hex) and by `debuglink` next to `binary`.
pub(crate) fn find(
    binary: &Path,
    build_id: Option<&str>,
    debuglink: Option<&(String, u32)>,
    debug_dirs: &[PathBuf],
) -> (Option<Found>, Rejected) {
    let mut rejected = Vec::new();
    if let Some(id) = build_id.filter(|id| id.len() > 2) {
        for dir in debug_dirs {
            let path = dir
                .join(".build-id")
                .join(&id[..2])
                .join(format!("{}.debug", &id[2..]));
            match ElfInfo::open(&path) {
                Ok(info) if info.build_id.as_deref() == Some(id) => {
                    return (Some(Found { path, info }), rejected)
                }
                Ok(_) => rejected.push(format!("{}: build id differs", path.display())),
                Err(crate::SymbolizeError::Io { .. }) => {}
                Err(e) => rejected.push(e.to_string()),
            }
        }
    }
    if let Some((name, crc)) = debuglink {
        for path in debuglink_candidates(binary, name, debug_dirs) {
            if path == binary {
                continue; // a link to itself would only find the stripped binary again
            }
            let Ok(file) = File::open(&path) else {
                continue;
            };
            match crc_of(&file) {
                Some(c) if c == *crc => match ElfInfo::open(&path) {
                    Ok(info) => return (Some(Found { path, info }), rejected),
                    Err(e) => rejected.push(e.to_string()),
                },
                _ => rejected.push(format!("{}: debuglink CRC differs", path.display())),
            }
        }
    }
    (None, rejected)
}

fn debuglink_candidates(binary: &Path, name: &str, debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    // Only a plain file name is meaningful; a path in the link could escape the dirs.
    let name = Path::new(name);
    if name.components().count() != 1 {
        return Vec::new();
    }
    let dir = binary.parent().unwrap_or(Path::new("/"));
    let mut out = vec![dir.join(name), dir.join(".debug").join(name)];
    // `<debug_dir>/<binary's dir>/name`: the binary's dir re-rooted under the debug dir.
    let rel = dir.strip_prefix("/").unwrap_or(dir);
    out.extend(debug_dirs.iter().map(|d| d.join(rel).join(name)));
    out
}

/// CRC-32 of the whole file, as stored in `.gnu_debuglink`.
fn crc_of(file: &File) -> Option<u32> {
    // SAFETY: read-only map, dropped at return; see ElfInfo::open for the truncation caveat.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    Some(crc32fast::hash(&map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_order() {
        let c = debuglink_candidates(
            Path::new("/usr/bin/ls"),
            "ls.debug",
            &[PathBuf::from("/usr/lib/debug")],
        );
        let c: Vec<_> = c.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            c,
            [
                "/usr/bin/ls.debug",
                "/usr/bin/.debug/ls.debug",
                "/usr/lib/debug/usr/bin/ls.debug"
            ]
        );
        assert!(debuglink_candidates(Path::new("/bin/x"), "../etc/passwd", &[]).is_empty());
    }
}
