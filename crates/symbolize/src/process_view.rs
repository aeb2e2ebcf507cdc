//! Binaries as a running process sees them. A process in a container has its own mount
//! namespace (and often its own root): the path a recording names, `/app/server`, may not
//! exist on the host, or be another file there. While the process runs, the kernel shows
//! its files through `/proc/PID/root` (the process's root, walked in its mount
//! namespace) and `/proc/PID/map_files/START-END` (the very file of one mapping, even
//! when it was deleted or replaced since).
//!
//! Whatever is found that way is kept open (the root as a directory handle, a map file
//! as a file handle) and named by `/proc/self/fd/N`, so the symboliser can still read it
//! after the process has exited and its namespace is gone.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// At most this many roots and map files are held open; past it, the `/proc/PID` paths
/// are used as they are (valid while the process runs).
const MAX_PINNED: usize = 256;

/// How one running process sees files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Mount namespace and root as the kernel names them; equal strings, equal views.
    pub id: String,
    /// The process has a mount namespace or a root other than ours: its paths may name
    /// other files than the same paths on the host.
    pub foreign: bool,
}

/// Views of the processes of a recording, asked once per pid.
#[derive(Default)]
pub(crate) struct Views {
    ours: Option<Option<String>>,
    by_pid: HashMap<i32, Option<View>>,
    roots: HashMap<i32, Option<PathBuf>>,
    pinned: Vec<File>,
}

fn view_id(proc_dir: &Path) -> Option<String> {
    let ns = std::fs::read_link(proc_dir.join("ns/mnt")).ok()?;
    let root = std::fs::read_link(proc_dir.join("root")).ok()?;
    Some(format!("{} {}", ns.display(), root.display()))
}

impl Views {
    /// The view of `pid` when it runs on this machine now (None otherwise, or when its
    /// `/proc` entries are not ours to read).
    pub(crate) fn view(&mut self, pid: i32) -> Option<&View> {
        if pid <= 0 {
            return None;
        }
        if self.ours.is_none() {
            self.ours = Some(view_id(Path::new("/proc/self")));
        }
        let ours = self.ours.clone().flatten();
        self.by_pid
            .entry(pid)
            .or_insert_with(|| {
                let id = view_id(&Path::new("/proc").join(pid.to_string()))?;
                Some(View {
                    foreign: ours.as_deref() != Some(id.as_str()),
                    id,
                })
            })
            .as_ref()
    }

    /// `path` inside the root of process `pid`, through a held handle of that root.
    pub(crate) fn in_root(&mut self, pid: i32, path: &str) -> Option<PathBuf> {
        let rel = relative(path)?;
        Some(self.root(pid)?.join(rel))
    }

    /// The root of process `pid` (opened and held on the first call), if it can be read.
    pub(crate) fn root(&mut self, pid: i32) -> Option<PathBuf> {
        if !self.roots.contains_key(&pid) {
            let proc_root = PathBuf::from(format!("/proc/{pid}/root"));
            let root = match File::open(&proc_root) {
                Ok(f) => Some(self.pin(f).unwrap_or(proc_root)),
                Err(_) => None,
            };
            self.roots.insert(pid, root);
        }
        self.roots.get(&pid).cloned().flatten()
    }

    /// The file mapped at `start` in process `pid`, when that mapping still exists and
    /// names `path` (a deleted file's name ends in " (deleted)"), held open.
    pub(crate) fn map_file(&mut self, pid: i32, start: u64, path: &str) -> Option<PathBuf> {
        let dir = PathBuf::from(format!("/proc/{pid}/map_files"));
        let entry = std::fs::read_dir(&dir).ok()?.find_map(|e| {
            let name = e.ok()?.file_name();
            let (s, end) = name.to_str()?.split_once('-')?;
            let (s, end) = (
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            );
            (s <= start && start < end).then(|| dir.join(name))
        })?;
        let target = std::fs::read_link(&entry).ok()?;
        let target = target.to_string_lossy();
        if strip_deleted(&target) != strip_deleted(path) {
            return None;
        }
        let f = File::open(&entry).ok()?;
        Some(self.pin(f).unwrap_or(entry))
    }

    fn pin(&mut self, f: File) -> Option<PathBuf> {
        if self.pinned.len() >= MAX_PINNED {
            return None;
        }
        let path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        self.pinned.push(f);
        Some(path)
    }
}

/// A recorded path without the " (deleted)" the kernel appends to unlinked files.
pub(crate) fn strip_deleted(path: &str) -> &str {
    path.strip_suffix(" (deleted)").unwrap_or(path)
}

/// An absolute recorded path as a relative one, refused when it climbs out (`..`).
pub(crate) fn relative(path: &str) -> Option<&Path> {
    let p = Path::new(path.trim_start_matches('/'));
    let climbs = p
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)));
    (!climbs && !path.is_empty()).then_some(p)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn our_own_view_is_not_foreign() {
        let mut v = Views::default();
        let me = std::process::id() as i32;
        match v.view(me) {
            Some(view) => assert!(!view.foreign, "{view:?}"),
            None => eprintln!(
                "our_own_view_is_not_foreign: /proc/self/ns/mnt unreadable here, view not checked"
            ),
        }
        assert!(v.view(0).is_none());
        assert!(v.view(-1).is_none());
        // A pid that cannot exist (above pid_max's ceiling of 2^22).
        assert!(v.view(1 << 23).is_none());
    }

    #[test]
    fn root_paths_are_held_and_stay_inside() {
        let mut v = Views::default();
        let me = std::process::id() as i32;
        let p = v.in_root(me, "/proc/version").expect("our own root opens");
        assert!(p.starts_with("/proc/self/fd/"), "{}", p.display());
        assert!(std::fs::read_to_string(&p)
            .unwrap_or_default()
            .contains("Linux"));
        assert!(v.in_root(me, "/../etc/passwd").is_none());
        assert!(v.in_root(me, "").is_none());
        assert_eq!(strip_deleted("/a/b (deleted)"), "/a/b");
    }

    #[test]
    fn map_files_find_a_deleted_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let f = File::open(&path).unwrap();
        // SAFETY: read-only map of a file of ours that nothing else writes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        std::fs::remove_file(&path).unwrap();
        let start = map.as_ptr() as u64;
        let mut v = Views::default();
        let me = std::process::id() as i32;
        let name = format!("{} (deleted)", path.display());
        match v.map_file(me, start + 100, &name) {
            Some(found) => {
                assert_eq!(std::fs::read(found).unwrap().len(), 8192);
                // Another name at that address is not taken.
                assert!(v.map_file(me, start, "/some/other/file").is_none());
            }
            None => eprintln!(
                "map_files_find_a_deleted_mapping: /proc/self/map_files unreadable (needs CAP_SYS_ADMIN); not checked"
            ),
        }
        drop(map);
    }
}
