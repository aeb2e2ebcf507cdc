//! Writes a Kairos [`Profile`] in the formats of the viewers people already use, so a
//! result can be opened where its reader already works:
//!
//! | format | file | opened by |
//! |---|---|---|
//! | [`Format::Firefox`] | Firefox Profiler processed format (JSON, gzip if `.gz`) | Firefox Profiler, Perfetto |
//! | [`Format::Chrome`] | Chrome trace-event JSON | chrome://tracing, Perfetto, speedscope |
//! | [`Format::Pprof`] | gzipped `profile.proto` | `go tool pprof`, pprof-based services |
//! | [`Format::Collapsed`] | folded stacks, `root;caller;leaf count` | flamegraph.pl, inferno, speedscope |
//! | [`Format::Speedscope`] | speedscope file format JSON | speedscope |
//!
//! [`otlp::request`] makes OpenTelemetry's profiles signal (OTLP) for a collector or a
//! backend, which `kairos agent` sends rather than writes.
//!
//! Every writer works on a [`Selection`]: the samples of an optional time range. Nothing
//! here panics on any profile: indices that point nowhere become `[unknown]` frames.

// Tests may unwrap: a failed unwrap is a failed test.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

mod chrome;
mod collapsed;
mod firefox;
pub mod otlp;
mod pprof;
pub use pprof::write_labelled as write_pprof_labelled;
mod proto;
mod select;
mod speedscope;

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use kairos_model::Profile;

pub use select::Selection;

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Firefox,
    Chrome,
    Pprof,
    Collapsed,
    Speedscope,
}

/// Names accepted by [`Format::from_str`], in the order help texts list them.
pub const FORMATS: &[&str] = &["firefox", "chrome", "pprof", "collapsed", "speedscope"];

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Format, Error> {
        Ok(match s {
            "firefox" => Format::Firefox,
            "chrome" => Format::Chrome,
            "pprof" => Format::Pprof,
            "collapsed" => Format::Collapsed,
            "speedscope" => Format::Speedscope,
            _ => return Err(Error::UnknownFormat(s.to_string())),
        })
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown export format '{0}'; the formats are: firefox, chrome, pprof, collapsed, speedscope")]
    UnknownFormat(String),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

impl Error {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
        move |source| Error::Write {
            path: path.to_owned(),
            source,
        }
    }
}

/// Writes `selection` as `format` to `out`, uncompressed (pprof is gzipped always: the
/// format is defined as gzipped protobuf, and readers expect it).
pub fn write(selection: &Selection<'_>, format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Firefox => firefox::write(selection, out),
        Format::Chrome => chrome::write(selection, out),
        Format::Pprof => pprof::write(selection, out),
        Format::Collapsed => collapsed::write(selection, out),
        Format::Speedscope => speedscope::write(selection, out),
    }
}

/// Exports to the file `path`. A name ending in `.gz` gets gzip compression (pprof is
/// gzipped whatever its name). The file is written next to its final name and renamed,
/// so a failed export never leaves a truncated file that a viewer would half-read.
///
/// `time_range` is `[start, end)` in ns after the first sample; `wall_start_ns` the
/// wall-clock time (ns since the Unix epoch) of the recording's start, if known.
pub fn export_file(
    profile: &Profile,
    time_range: Option<(u64, u64)>,
    wall_start_ns: Option<u64>,
    format: Format,
    path: &Path,
) -> Result<(), Error> {
    let mut selection = Selection::new(profile, time_range);
    selection.wall_start_ns = wall_start_ns;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".part");
    let tmp = PathBuf::from(tmp_name);
    let result = (|| {
        let file = fs::File::create(&tmp)?;
        let mut buf = BufWriter::new(file);
        let gz = format != Format::Pprof && path.extension().is_some_and(|e| e == "gz");
        if gz {
            let mut enc = flate2::write::GzEncoder::new(&mut buf, flate2::Compression::default());
            write(&selection, format, &mut enc)?;
            enc.finish()?;
        } else {
            write(&selection, format, &mut buf)?;
        }
        buf.flush()?;
        Ok(())
    })();
    match result {
        Ok(()) => fs::rename(&tmp, path).map_err(Error::io(path)),
        Err(e) => {
            // The partial file is useless; a failure to remove it changes nothing.
            let _ = fs::remove_file(&tmp);
            Err(Error::io(path)(e))
        }
    }
}

/// JSON serialisation errors as I/O errors, so every writer has one error type.
pub(crate) fn json_err(e: serde_json::Error) -> io::Error {
    io::Error::other(e)
}
