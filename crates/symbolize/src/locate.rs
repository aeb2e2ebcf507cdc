//! Which file holds a recorded binary, and which its debug information: one search
//! order for the converter (which needs the binary's layout while records stream by) and
//! the symboliser (which needs symbols and DWARF).
//!
//! The binary, each candidate checked against the recorded build id when there is one:
//! 1. `--symfs DIR`: `DIR/<path>` (the host path is then not read, as with perf);
//! 2. the process's own root, when it still runs here and sees files otherwise than we
//!    do (a container): `/proc/PID/root/<path>`, then `/proc/PID/map_files`;
//! 3. the host path, then `/proc/PID/map_files` of a process that still runs (a binary
//!    deleted or replaced since it was mapped);
//! 4. the build-id caches (`--buildid-dir`, perf archives, `~/.debug`), by build id;
//! 5. debuginfod: the client cache, then the servers, by build id.
//!
//! Debug information, when the binary has no DWARF: the debug dirs by build id and by
//! `.gnu_debuglink` (see [`crate::debug_file`]), then the build-id caches' `debug`
//! files, then debuginfod's `debuginfo` (cache, then servers). Local files first; the
//! network last.

use std::path::{Path, PathBuf};

use crate::debug_file;
use crate::debuginfod::{self, Fetched, Kind};
use crate::elf_info::ElfInfo;
use crate::process_view::{strip_deleted, View, Views};
use crate::{buildid_cache, SymbolizeError, SymbolizerOptions};

/// A mapping of a process, for the lookups that go through the running process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessMapping {
    pub pid: i32,
    /// Start address of the mapping in the recording.
    pub start: u64,
}

/// Where a file was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Under `--symfs`.
    Symfs,
    /// At the recorded path on this machine.
    Path,
    /// Inside a running process's root.
    ProcessRoot { pid: i32 },
    /// The file a running process has mapped.
    MapFiles { pid: i32 },
    /// In a perf build-id cache.
    BuildIdCache { dir: PathBuf },
    /// In the debuginfod client cache, fetched from `url` now when there is one.
    Debuginfod { url: Option<String> },
    /// A separate debug file in a debug dir (by build id or debuglink).
    DebugDir,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Symfs => write!(f, "under --symfs"),
            Origin::Path => write!(f, "at its path"),
            Origin::ProcessRoot { pid } => write!(f, "through the root of process {pid}"),
            Origin::MapFiles { pid } => write!(f, "through the mappings of process {pid}"),
            Origin::BuildIdCache { dir } => write!(f, "from the build-id cache {}", dir.display()),
            Origin::Debuginfod { url: Some(u) } => write!(f, "from debuginfod {u}"),
            Origin::Debuginfod { url: None } => write!(f, "from the debuginfod client cache"),
            Origin::DebugDir => write!(f, "from a debug directory"),
        }
    }
}

/// A file found for a recorded binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// What to open (may be a `/proc/self/fd/N/...` path held open by the locator).
    pub file: PathBuf,
    pub info: ElfInfo,
    pub origin: Origin,
    /// The root the recorded path lives under when it is not `/` (symfs, a process's
    /// root): where `.gnu_debuglink` targets beside the binary are looked for.
    pub root: Option<PathBuf>,
    /// Candidates that were there but not taken, and why (another build id...).
    pub skipped: Vec<String>,
}

/// Finds binaries and debug files; one per thread (it holds open files and a client).
pub struct Locator {
    symfs: Option<PathBuf>,
    debug_dirs: Vec<PathBuf>,
    buildid_dirs: Vec<PathBuf>,
    processes: bool,
    views: Views,
    debuginfod: debuginfod::Client,
}

/// Outcome of checking one candidate against the wanted build id.
enum Check {
    Take(ElfInfo),
    Skip(String),
    Absent,
}

fn check(file: &Path, want: Option<&str>) -> Check {
    match ElfInfo::open(file) {
        Ok(info) => match (want, info.build_id.as_deref()) {
            (Some(w), Some(h)) if w != h => Check::Skip(format!(
                "{} has build id {h}, the recording has {w}",
                file.display()
            )),
            _ => Check::Take(info),
        },
        Err(SymbolizeError::Io { .. }) => Check::Absent,
        Err(e) => Check::Skip(e.to_string()),
    }
}

/// Candidates looked at so far: those rejected and those missing, for the notes.
#[derive(Default)]
struct Seen {
    skipped: Vec<String>,
    absent: Vec<String>,
}

impl Seen {
    /// `file` when it is there and has the wanted build id (any, when none is wanted).
    fn take(
        &mut self,
        file: PathBuf,
        want: Option<&str>,
        origin: Origin,
        root: Option<PathBuf>,
    ) -> Option<Located> {
        match check(&file, want) {
            Check::Take(info) => Some(Located {
                file,
                info,
                origin,
                root,
                skipped: std::mem::take(&mut self.skipped),
            }),
            Check::Skip(why) => {
                self.skipped.push(why);
                None
            }
            Check::Absent => {
                // The recorded path itself needs no second naming in the note.
                self.absent.push(match origin {
                    Origin::Path => "not found on this machine".to_string(),
                    _ => format!("{} not found", file.display()),
                });
                None
            }
        }
    }

    /// As [`Seen::take`] for a file named by its build id: a missing one is no news.
    fn take_quietly(&mut self, file: PathBuf, id: &str, origin: Origin) -> Option<Located> {
        match check(&file, Some(id)) {
            Check::Take(info) => Some(Located {
                file,
                info,
                origin,
                root: None,
                skipped: std::mem::take(&mut self.skipped),
            }),
            Check::Skip(why) => {
                self.skipped.push(why);
                None
            }
            Check::Absent => None,
        }
    }

    fn reasons(self) -> Vec<String> {
        let mut why = self.skipped;
        why.extend(self.absent);
        why
    }
}

impl Locator {
    pub fn new(opts: &SymbolizerOptions) -> Self {
        Locator {
            symfs: opts.symfs.clone(),
            debug_dirs: opts.debug_dirs.clone(),
            buildid_dirs: opts.buildid_dirs.clone(),
            processes: opts.processes,
            views: Views::default(),
            debuginfod: debuginfod::Client::new(opts.debuginfod.clone()),
        }
    }

    /// How process `pid` sees files, when it runs here now and lookups through running
    /// processes are allowed.
    pub fn view(&mut self, pid: i32) -> Option<View> {
        if !self.processes {
            return None;
        }
        self.views.view(pid).cloned()
    }

    /// The binary recorded as `path` (with `build_id`, hex, when recorded), searched in
    /// the order of this module's documentation; Err lists why nothing was taken.
    pub fn binary(
        &mut self,
        path: &str,
        build_id: Option<&str>,
        process: Option<ProcessMapping>,
    ) -> Result<Located, Vec<String>> {
        let want = build_id.map(str::to_ascii_lowercase);
        let want = want.as_deref().filter(|w| !w.is_empty());
        let name = strip_deleted(path);
        let mut seen = Seen::default();
        let process = process.filter(|_| self.processes);
        let view = process.and_then(|p| self.views.view(p.pid).cloned());
        if let Some(root) = self.symfs.clone() {
            let file = root.join(name.trim_start_matches('/'));
            if let Some(l) = seen.take(file, want, Origin::Symfs, Some(root)) {
                return Ok(l);
            }
        }
        // The process's own view first when it differs from ours. Without a build id to
        // check, only a process that still maps that path at the recorded address is
        // taken to be the recorded one (a pid of another machine's recording may name a
        // process of this one), through map_files below.
        let foreign = view.as_ref().is_some_and(|v| v.foreign);
        if let (Some(p), true, Some(_)) = (process, foreign, want) {
            if let Some(file) = self.views.in_root(p.pid, name) {
                let root = self.views.root(p.pid);
                if let Some(l) = seen.take(file, want, Origin::ProcessRoot { pid: p.pid }, root) {
                    return Ok(l);
                }
            }
        }
        if let (Some(p), true, None) = (process, foreign, want) {
            if let Some(file) = self.views.map_file(p.pid, p.start, path) {
                let root = self.views.root(p.pid);
                if let Some(l) = seen.take(file, want, Origin::MapFiles { pid: p.pid }, root) {
                    return Ok(l);
                }
            }
        }
        if self.symfs.is_none() {
            if let Some(l) = seen.take(PathBuf::from(name), want, Origin::Path, None) {
                return Ok(l);
            }
        }
        // A file the process still maps, though deleted or replaced on disk since.
        if let (Some(p), Some(_)) = (process, &view) {
            if let Some(file) = self.views.map_file(p.pid, p.start, path) {
                let root = if foreign {
                    self.views.root(p.pid)
                } else {
                    None
                };
                if let Some(l) = seen.take(file, want, Origin::MapFiles { pid: p.pid }, root) {
                    return Ok(l);
                }
            }
        }
        let Some(id) = want else {
            if seen.skipped.is_empty() {
                seen.absent
                    .push("no build id recorded to look further with".into());
            }
            return Err(seen.reasons());
        };
        for dir in self.buildid_dirs.clone() {
            for file in buildid_cache::elf_candidates(&dir, id, name) {
                let origin = Origin::BuildIdCache { dir: dir.clone() };
                if let Some(l) = seen.take_quietly(file, id, origin) {
                    return Ok(l);
                }
            }
        }
        match self.debuginfod_file(id, Kind::Executable, &mut seen.skipped) {
            Some(l) => Ok(Located {
                skipped: seen.skipped,
                ..l
            }),
            None => Err(seen.reasons()),
        }
    }

    /// A file of `build_id` from debuginfod: the client cache, else the servers.
    fn debuginfod_file(
        &mut self,
        id: &str,
        kind: Kind,
        skipped: &mut Vec<String>,
    ) -> Option<Located> {
        let (file, url) = match self.debuginfod.cached(id, kind) {
            Some(f) => (f, None),
            None if self.debuginfod.can_fetch() => match self.debuginfod.fetch(id, kind) {
                Fetched::File { path, url } => (path, Some(url)),
                Fetched::Missing => return None,
                Fetched::Failed(why) => {
                    skipped.extend(why);
                    return None;
                }
            },
            None => return None,
        };
        match check(&file, Some(id)) {
            Check::Take(info) => Some(Located {
                file,
                info,
                origin: Origin::Debuginfod { url },
                root: None,
                skipped: Vec::new(),
            }),
            Check::Skip(why) => {
                skipped.push(why);
                None
            }
            Check::Absent => None,
        }
    }

    /// A separate debug file for the binary recorded as `path`: `binary` is the file
    /// found for it (for its `.gnu_debuglink`), `build_id` the recorded or found one.
    /// Returns the file, or None and the candidates that were rejected.
    pub fn debug_file(
        &mut self,
        path: &str,
        build_id: Option<&str>,
        binary: Option<&Located>,
    ) -> (Option<Located>, Vec<String>) {
        let id = build_id.map(str::to_ascii_lowercase);
        let id = id.as_deref().filter(|i| !i.is_empty());
        let name = strip_deleted(path);
        // Debuglink targets sit beside the binary as the recording named it, under the
        // root it was found in.
        let beside = match binary.and_then(|b| b.root.clone()) {
            Some(root) => root.join(name.trim_start_matches('/')),
            None => binary.map_or_else(
                || PathBuf::from(name),
                |b| {
                    if b.origin == Origin::Path {
                        b.file.clone()
                    } else {
                        PathBuf::from(name)
                    }
                },
            ),
        };
        let link = binary.and_then(|b| b.info.debuglink.as_ref());
        let (found, mut rejected) = debug_file::find(&beside, id, link, &self.debug_dirs);
        if let Some(f) = found {
            return (
                Some(Located {
                    file: f.path,
                    info: f.info,
                    origin: Origin::DebugDir,
                    root: None,
                    skipped: Vec::new(),
                }),
                rejected,
            );
        }
        let Some(id) = id else {
            return (None, rejected);
        };
        for dir in self.buildid_dirs.clone() {
            for file in buildid_cache::debug_candidates(&dir, id, name) {
                match check(&file, Some(id)) {
                    Check::Take(info) => {
                        let origin = Origin::BuildIdCache { dir: dir.clone() };
                        return (
                            Some(Located {
                                file,
                                info,
                                origin,
                                root: None,
                                skipped: Vec::new(),
                            }),
                            rejected,
                        );
                    }
                    Check::Skip(why) => rejected.push(why),
                    Check::Absent => {}
                }
            }
        }
        let found = self.debuginfod_file(id, Kind::Debuginfo, &mut rejected);
        (found, rejected)
    }
}
