//! The measured maximum kept per host, so that later results can draw bandwidth as a
//! share of it without measuring again.

use std::path::PathBuf;

use crate::{Error, Measurement};

/// `$XDG_CACHE_HOME/kairos/bandwidth` (else `$HOME/.cache/...`); `KAIROS_BANDWIDTH_DIR`
/// overrides it (tests).
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("KAIROS_BANDWIDTH_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("kairos").join("bandwidth")
}

pub fn path_for(host: &str) -> PathBuf {
    let safe: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir().join(format!("{safe}.json"))
}

pub fn save(m: &Measurement) -> Result<PathBuf, Error> {
    let p = path_for(&m.host);
    let io = |what, source| Error::Io {
        what,
        path: p.clone(),
        source,
    };
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| io("create the folder of", e))?;
    }
    let json = serde_json::to_vec_pretty(m).map_err(|e| Error::Bad(e.to_string()))?;
    // Written beside and renamed: a reader never sees half a file.
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, json).map_err(|e| io("write", e))?;
    std::fs::rename(&tmp, &p).map_err(|e| io("rename into", e))?;
    Ok(p)
}

/// This host's last measurement, if any and readable.
pub fn load(host: &str) -> Option<Measurement> {
    serde_json::from_slice(&std::fs::read(path_for(host)).ok()?).ok()
}
