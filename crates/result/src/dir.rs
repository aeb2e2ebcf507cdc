//! Result directories (`r000hs/`, `r001hs/`, ...): creating without ever overwriting,
//! opening with a clear error for each way a directory can be wrong.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{io_err, Error, Result};
use crate::manifest::{Manifest, FORMAT_VERSION};

/// File name of the manifest inside a result directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Folder of the Parquet tables inside a result directory.
pub const TABLES_DIR: &str = "tables";

/// The next free result directory under `parent` for an analysis with `suffix` (`"hs"` for
/// hotspots): `r000hs`, `r001hs`, ...
///
/// Numbers are shared between analyses, as in VTune (`r000hs`, `r001ue`), so any
/// existing entry named `r` + digits + anything takes its number; the first unused one is
/// returned. An unreadable or missing `parent` gives `r000<suffix>`: creating it will then
/// report the real problem. Use [`ResultDir::create_next`] to also create it without a
/// race with another Kairos doing the same.
pub fn next_result_dir(parent: &Path, suffix: &str) -> PathBuf {
    let mut used = Vec::new();
    if let Ok(entries) = fs::read_dir(parent) {
        for e in entries.flatten() {
            if let Some(n) = e.file_name().to_str().and_then(result_number) {
                used.push(n);
            }
        }
    }
    used.sort_unstable();
    used.dedup();
    // First gap in the sorted numbers; `used` has no duplicates, so the first index that
    // differs from its value is free.
    let n = used
        .iter()
        .enumerate()
        .find(|&(i, &n)| n != i as u64)
        .map_or(used.len() as u64, |(i, _)| i as u64);
    parent.join(format!("r{n:03}{suffix}"))
}

/// The number of a result directory name: `r` followed by at least three digits.
fn result_number(name: &str) -> Option<u64> {
    let rest = name.strip_prefix('r')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 3 {
        return None;
    }
    rest.get(..digits)?.parse().ok()
}

/// An open result directory and its manifest.
#[derive(Debug, Clone)]
pub struct ResultDir {
    path: PathBuf,
    manifest: Manifest,
}

impl ResultDir {
    /// Creates a new result directory at `path` (and its parents) with its `tables/` folder
    /// and an empty manifest (fill it with [`ResultDir::manifest_mut`], then
    /// [`ResultDir::save_manifest`]).
    ///
    /// Refuses with [`Error::AlreadyExists`] if `path` exists and is anything but an empty
    /// directory, so an earlier result is never overwritten. The manifest is written at
    /// once, so a collection that dies half-way still leaves a recognisable result.
    pub fn create(path: impl Into<PathBuf>) -> Result<ResultDir> {
        let path = path.into();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        match fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // An empty directory (e.g. made by the user or by `mktemp -d`) is fine.
                let empty = fs::read_dir(&path)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false);
                if !empty {
                    return Err(Error::AlreadyExists { path });
                }
            }
            Err(e) => return Err(Error::Io { path, source: e }),
        }
        let tables = path.join(TABLES_DIR);
        fs::create_dir(&tables).map_err(io_err(&tables))?;
        let dir = ResultDir {
            path,
            manifest: Manifest::default(),
        };
        dir.save_manifest()?;
        Ok(dir)
    }

    /// Creates the next free `rNNN<suffix>` under `parent` (see [`next_result_dir`]).
    /// If another process takes the same number first, tries the next one.
    pub fn create_next(parent: &Path, suffix: &str) -> Result<ResultDir> {
        // A bounded number of retries: each failure means someone else created a result
        // in the meantime, so this only loops while others keep racing us.
        let mut last = None;
        for _ in 0..100 {
            let path = next_result_dir(parent, suffix);
            match ResultDir::create(&path) {
                Err(e @ Error::AlreadyExists { .. }) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or(Error::AlreadyExists {
            path: parent.to_owned(),
        }))
    }

    /// Opens an existing result: reads and checks the manifest, and checks that every
    /// table it lists is present with the recorded size (a cheap way to catch truncated
    /// copies before any analysis starts). Table contents are checked by
    /// [`crate::read_profile`].
    pub fn open(path: impl Into<PathBuf>) -> Result<ResultDir> {
        let path = path.into();
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::NotAResult { path }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Error::NotFound { path }),
            Err(e) => return Err(Error::Io { path, source: e }),
        }
        let mpath = path.join(MANIFEST_FILE);
        let bytes = match fs::read(&mpath) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::NotAResult { path })
            }
            Err(e) => {
                return Err(Error::Io {
                    path: mpath,
                    source: e,
                })
            }
        };
        let manifest = parse_manifest(&mpath, &bytes)?;
        if manifest.format_version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: mpath,
                found: manifest.format_version,
                supported: FORMAT_VERSION,
            });
        }
        for t in &manifest.tables {
            let tpath = path.join(&t.file);
            match fs::metadata(&tpath) {
                Ok(m) if m.len() == t.bytes => {}
                Ok(m) => {
                    return Err(Error::DamagedTable {
                        table: t.name.clone(),
                        path: tpath,
                        detail: format!(
                            "{} bytes, but {} were written (truncated or replaced?)",
                            m.len(),
                            t.bytes
                        ),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(Error::MissingTable {
                        table: t.name.clone(),
                        path: tpath,
                    })
                }
                Err(e) => {
                    return Err(Error::Io {
                        path: tpath,
                        source: e,
                    })
                }
            }
        }
        Ok(ResultDir { path, manifest })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `tables/` folder.
    pub fn tables_path(&self) -> PathBuf {
        self.path.join(TABLES_DIR)
    }

    /// The manifest as last read or set.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The manifest, to change; call [`ResultDir::save_manifest`] to write it.
    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Writes `manifest.json` (pretty JSON), atomically: to a temporary file renamed over
    /// the old one, so a crash never leaves a half-written manifest.
    pub fn save_manifest(&self) -> Result<()> {
        let mut json = serde_json::to_vec_pretty(&self.manifest).map_err(|e| Error::Io {
            path: self.path.join(MANIFEST_FILE),
            source: io::Error::other(e),
        })?;
        json.push(b'\n');
        write_atomic(&self.path.join(MANIFEST_FILE), &json)
    }
}

fn parse_manifest(path: &Path, bytes: &[u8]) -> Result<Manifest> {
    serde_json::from_slice(bytes).map_err(|source| Error::DamagedManifest {
        path: path.to_owned(),
        line: source.line(),
        column: source.column(),
        source,
    })
}

/// Writes `bytes` to `path` through `path.tmp` and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(bytes).map_err(io_err(&tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(io_err(path))
}

/// `path` with `.tmp` appended to its file name.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_numbers() {
        assert_eq!(result_number("r000hs"), Some(0));
        assert_eq!(result_number("r012ue"), Some(12));
        assert_eq!(result_number("r1000"), Some(1000));
        assert_eq!(result_number("r12hs"), None);
        assert_eq!(result_number("results"), None);
        assert_eq!(result_number("x000hs"), None);
        assert_eq!(result_number("r99999999999999999999999hs"), None);
    }
}
