//! perf's build-id cache: the directory `perf record` and `perf buildid-cache -a` fill
//! (`~/.debug`, or `$PERF_BUILDID_DIR`) and `perf archive` packs into a tarball, so that a
//! recording can be symbolised on another machine or after the binaries changed.
//!
//! Layout (perf's `build-id.c`): `<dir>/.build-id/xx/rest` is a link to
//! `<dir>/<recorded path>/<build id>/`, which holds `elf` (the binary) and, when one was
//! added, `debug` (its separate debug file). perf before 4.x linked `.build-id/xx/rest`
//! to the binary itself; both are read.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use crate::process_view::relative;
use crate::SymbolizeError;

/// The build-id caches a user has by default: `$PERF_BUILDID_DIR`, else `~/.debug`.
pub fn default_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("PERF_BUILDID_DIR").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => vec![PathBuf::from(home).join(".debug")],
        None => Vec::new(),
    }
}

/// `<dir>/.build-id/xx/rest`, perf's link for a build id.
fn link(dir: &Path, build_id: &str) -> Option<PathBuf> {
    let (head, rest) = (build_id.get(..2)?, build_id.get(2..)?);
    if rest.is_empty() || !build_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(dir.join(".build-id").join(head).join(rest))
}

/// Where the binary of `build_id` (recorded as `path`) may be in the cache `dir`, in
/// the order to try.
pub(crate) fn elf_candidates(dir: &Path, build_id: &str, path: &str) -> Vec<PathBuf> {
    let Some(link) = link(dir, build_id) else {
        return Vec::new();
    };
    let mut out = vec![link.join("elf"), link];
    if let Some(rel) = relative(path) {
        let by_name = dir.join(rel).join(build_id);
        out.push(by_name.join("elf"));
        out.push(by_name);
    }
    out
}

/// Where the separate debug file of `build_id` may be in the cache `dir`.
pub(crate) fn debug_candidates(dir: &Path, build_id: &str, path: &str) -> Vec<PathBuf> {
    let Some(link) = link(dir, build_id) else {
        return Vec::new();
    };
    let mut out = vec![link.join("debug")];
    if let Some(rel) = relative(path) {
        out.push(dir.join(rel).join(build_id).join("debug"));
    }
    out
}

/// Unpacks a `perf archive` tarball (bzip2 as perf writes it, gzip, or plain tar) into
/// `dest`, which then reads as a build-id cache. A tarball of `perf archive --all`
/// (perf.data beside the inner archive) has its inner archive unpacked as well.
pub fn unpack_archive(tarball: &Path, dest: &Path) -> Result<(), SymbolizeError> {
    unpack_one(tarball, dest)?;
    if dest.join(".build-id").is_dir() {
        return Ok(());
    }
    let inner: Vec<PathBuf> = std::fs::read_dir(dest)
        .map_err(|e| io_err(dest, e))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".tar"))
        })
        .collect();
    for t in inner {
        unpack_one(&t, dest)?;
    }
    if dest.join(".build-id").is_dir() {
        Ok(())
    } else {
        Err(SymbolizeError::Archive {
            path: tarball.display().to_string(),
            reason: "no .build-id directory inside; is it a `perf archive` tarball?".into(),
        })
    }
}

/// A `perf archive` tarball unpacked into a temporary directory, removed when dropped.
pub struct UnpackedArchive {
    dir: tempfile::TempDir,
}

impl UnpackedArchive {
    pub fn new(tarball: &Path) -> Result<Self, SymbolizeError> {
        let dir = tempfile::Builder::new()
            .prefix("kairos-buildid-")
            .tempdir()
            .map_err(|e| io_err(Path::new("a temporary directory"), e))?;
        unpack_archive(tarball, dir.path())?;
        Ok(UnpackedArchive { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Build-id caches as given (`--buildid-dir`): directories as they are, tarballs
/// unpacked (keep the returned archives while the caches are read).
pub fn open_dirs(
    given: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<UnpackedArchive>), SymbolizeError> {
    let mut dirs = Vec::new();
    let mut archives = Vec::new();
    for g in given {
        let meta = std::fs::metadata(g).map_err(|e| io_err(g, e))?;
        if meta.is_dir() {
            dirs.push(g.clone());
        } else {
            let a = UnpackedArchive::new(g)?;
            dirs.push(a.path().to_path_buf());
            archives.push(a);
        }
    }
    Ok((dirs, archives))
}

fn io_err(path: &Path, source: std::io::Error) -> SymbolizeError {
    SymbolizeError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn unpack_one(tarball: &Path, dest: &Path) -> Result<(), SymbolizeError> {
    let mut file = BufReader::new(File::open(tarball).map_err(|e| io_err(tarball, e))?);
    let mut magic = [0u8; 3];
    let n = file.read(&mut magic).map_err(|e| io_err(tarball, e))?;
    file.rewind().map_err(|e| io_err(tarball, e))?;
    let reader: Box<dyn Read> = match &magic[..n] {
        b"BZh" => Box::new(bzip2::read::MultiBzDecoder::new(file)),
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(file)),
        _ => Box::new(file),
    };
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(false);
    archive.set_overwrite(true);
    // tar's unpack refuses entries that would land outside `dest`.
    archive.unpack(dest).map_err(|e| SymbolizeError::Archive {
        path: tarball.display().to_string(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn candidates_follow_perfs_layout() {
        let d = Path::new("/c");
        let e: Vec<String> = elf_candidates(d, ID, "/usr/bin/x")
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            e,
            [
                format!("/c/.build-id/01/{}/elf", &ID[2..]),
                format!("/c/.build-id/01/{}", &ID[2..]),
                format!("/c/usr/bin/x/{ID}/elf"),
                format!("/c/usr/bin/x/{ID}"),
            ]
        );
        let dbg = debug_candidates(d, ID, "/usr/bin/x");
        assert_eq!(
            dbg[0],
            Path::new(&format!("/c/.build-id/01/{}/debug", &ID[2..]))
        );
        // Not hex, too short, or a path that climbs out: nothing to look at there.
        assert!(elf_candidates(d, "zz12", "/x").is_empty());
        assert!(elf_candidates(d, "ab", "/x").is_empty());
        assert!(elf_candidates(d, "../../etc", "/x").is_empty());
        assert_eq!(elf_candidates(d, ID, "/../etc/passwd").len(), 2);
    }

    #[test]
    fn archives_unpack_into_a_cache() {
        let src = tempfile::tempdir().unwrap();
        let bdir = src.path().join(format!("usr/bin/x/{ID}"));
        std::fs::create_dir_all(&bdir).unwrap();
        std::fs::write(bdir.join("elf"), b"not really elf").unwrap();
        let ldir = src.path().join(".build-id/01");
        std::fs::create_dir_all(&ldir).unwrap();
        std::os::unix::fs::symlink(format!("../../usr/bin/x/{ID}"), ldir.join(&ID[2..])).unwrap();
        // As perf archive writes it: tar of the cache's entries, bzip2-compressed.
        let tarball = src.path().join("perf.data.tar.bz2");
        {
            let out = File::create(&tarball).unwrap();
            let bz = bzip2::write::BzEncoder::new(out, bzip2::Compression::fast());
            let mut t = tar::Builder::new(bz);
            t.follow_symlinks(false);
            t.append_dir_all(".build-id", src.path().join(".build-id"))
                .unwrap();
            t.append_dir_all("usr", src.path().join("usr")).unwrap();
            t.into_inner().unwrap().finish().unwrap();
        }
        let dest = tempfile::tempdir().unwrap();
        unpack_archive(&tarball, dest.path()).unwrap();
        let elf = &elf_candidates(dest.path(), ID, "/usr/bin/x")[0];
        assert_eq!(std::fs::read(elf).unwrap(), b"not really elf");

        // As --buildid-dir takes them: a directory as it is, a tarball unpacked.
        let (dirs, kept) = open_dirs(&[dest.path().to_path_buf(), tarball.clone()]).unwrap();
        assert_eq!(dirs[0], dest.path());
        assert_eq!(dirs[1], kept[0].path());
        assert!(elf_candidates(&dirs[1], ID, "/usr/bin/x")[0].is_file());

        // Not a tarball: a typed error, no panic.
        let junk = src.path().join("junk.tar.bz2");
        std::fs::write(&junk, b"BZh9 garbage").unwrap();
        let err = unpack_archive(&junk, dest.path()).unwrap_err();
        assert!(matches!(err, SymbolizeError::Archive { .. }), "{err}");
        assert!(matches!(
            unpack_archive(Path::new("/nonexistent.tar"), dest.path()),
            Err(SymbolizeError::Io { .. })
        ));
    }
}
