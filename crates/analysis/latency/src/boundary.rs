//! Where a request begins and ends (`-k request`, `-k requests-from`): the knobs parsed
//! into a [`Source`], the uprobe events of a function or of USDT probes, and the names
//! those events carry in the recording so that conversion finds them again.

use std::path::{Path, PathBuf};

use kairos_analysis_api::Knobs;
use kairos_collector::extra::ExtraEvent;

use crate::elf_probes::{self, Site};
use crate::log_file::Clock;

/// Event names of the begin and end probes start with these.
pub const BEGIN_PREFIX: &str = "request-begin:";
pub const END_PREFIX: &str = "request-end:";

/// The boundaries of requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `kairos_request_begin`/`_end` of runtime/requests.
    Marker,
    /// Entry and return of a function; `binary` when the knob named the file
    /// (`PATH:FUNCTION`).
    Function {
        name: String,
        binary: Option<PathBuf>,
    },
    Usdt {
        provider: String,
        begin: String,
        end: String,
    },
    /// The application's log; the clock the knob says (None: the file's, else monotonic).
    Log { path: PathBuf, clock: Option<Clock> },
}

/// The `request` knob's check.
pub fn check_request(v: &str) -> Result<(), String> {
    parse_request(v).map(|_| ())
}

fn parse_request(v: &str) -> Result<Source, String> {
    let v = v.trim();
    if v == "marker" {
        return Ok(Source::Marker);
    }
    if let Some(rest) = v.strip_prefix("usdt:") {
        let bad =
            || "usdt:PROVIDER:BEGIN,END, e.g. usdt:orders:request_begin,request_end".to_string();
        let (provider, names) = rest.split_once(':').ok_or_else(bad)?;
        let (begin, end) = names.split_once(',').ok_or_else(bad)?;
        if provider.is_empty() || begin.is_empty() || end.is_empty() {
            return Err(bad());
        }
        return Ok(Source::Usdt {
            provider: provider.into(),
            begin: begin.into(),
            end: end.into(),
        });
    }
    let (binary, name) = match v.rsplit_once(':') {
        Some((path, name)) if path.contains('/') => (Some(PathBuf::from(path)), name),
        _ => (None, v),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(
            "marker, a function name (or PATH:FUNCTION), or usdt:PROVIDER:BEGIN,END".into(),
        );
    }
    Ok(Source::Function {
        name: name.into(),
        binary,
    })
}

/// The source the knobs ask for.
pub fn source(knobs: &Knobs) -> Result<Source, String> {
    let from = knobs.get("requests-from");
    if !from.is_empty() {
        let clock = match knobs.get("requests-clock") {
            "monotonic" => Some(Clock::Monotonic),
            "realtime" => Some(Clock::Realtime),
            _ => None,
        };
        return Ok(Source::Log {
            path: PathBuf::from(from),
            clock,
        });
    }
    parse_request(knobs.get("request"))
}

impl Source {
    /// In words, for the result.
    pub fn describe(&self) -> String {
        match self {
            Source::Marker => "request markers (kairos_request_begin/end)".into(),
            Source::Function { name, .. } => format!("uprobes at entry and return of {name}"),
            Source::Usdt {
                provider,
                begin,
                end,
            } => format!("USDT probes {provider}:{begin} and {provider}:{end}"),
            Source::Log { path, .. } => format!("the request log {}", path.display()),
        }
    }

    /// The begin and end probe events for a function or USDT probes, looked for in
    /// `files` (the program first). None for markers and logs.
    pub fn probe_events(&self, files: &[PathBuf]) -> Result<Option<Vec<ExtraEvent>>, String> {
        let (begin, end, label) = match self {
            Source::Function { name, binary } => {
                let files = binary.clone().map_or_else(|| files.to_vec(), |b| vec![b]);
                let site = elf_probes::find_function(name, &files).map_err(|e| e.to_string())?;
                (site.clone(), None, name.clone())
            }
            Source::Usdt {
                provider,
                begin,
                end,
            } => {
                let b = elf_probes::find_usdt(provider, begin, files).map_err(|e| e.to_string())?;
                let e = elf_probes::find_usdt(provider, end, files).map_err(|e| e.to_string())?;
                (b, Some(e), format!("{provider}:{begin}"))
            }
            _ => return Ok(None),
        };
        let event = |prefix: &str, site: &Site, is_return: bool| {
            kairos_collector::uprobe::extra_event(
                format!("{prefix}{label}"),
                &site.path,
                site.offset,
                is_return,
                site.semaphore,
            )
        };
        let begin_event = event(BEGIN_PREFIX, &begin, false)?;
        let end_event = match &end {
            // A function ends where it returns.
            None => event(END_PREFIX, &begin, true)?,
            Some(site) => event(END_PREFIX, site, false)?,
        };
        // The end first: events are opened (and, attached, enabled) in this order, and a
        // begin recorded before its end's probe is live would leave its thread inside a
        // request forever, its later requests taken for nested calls. An end without its
        // begin (a call already under way) is only counted.
        Ok(Some(vec![end_event, begin_event]))
    }
}

/// The files to look for a function or probe in: a launched program and the libraries
/// it names, or what a running process has mapped.
pub fn target_files(target: &kairos_collector::Target) -> Result<Vec<PathBuf>, String> {
    match target {
        kairos_collector::Target::Launch { program, .. } => {
            let path = kairos_collector::launch::resolve(program).map_err(|e| e.to_string())?;
            Ok(elf_probes::program_and_libraries(&path))
        }
        kairos_collector::Target::Pid(pid) => {
            let files = elf_probes::mapped_files(*pid);
            if files.is_empty() {
                return Err(format!("the files of process {pid} cannot be read from /proc/{pid}/maps (permission denied, or it is a kernel thread): run as root or as its user, or give -k request=PATH:FUNCTION"));
            }
            Ok(files)
        }
        kairos_collector::Target::SystemWide => Ok(Vec::new()),
    }
}

/// Whether a recording's event `name` is a begin (Some(true)) or end (Some(false)) probe.
pub fn probe_kind(name: &str) -> Option<bool> {
    if name.starts_with(BEGIN_PREFIX) {
        Some(true)
    } else if name.starts_with(END_PREFIX) {
        Some(false)
    } else {
        None
    }
}

/// Whether a path exists, for the log's early check.
pub fn readable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_knob_takes_each_form() {
        assert_eq!(parse_request("marker"), Ok(Source::Marker));
        assert_eq!(
            parse_request("process_order"),
            Ok(Source::Function {
                name: "process_order".into(),
                binary: None
            })
        );
        assert_eq!(
            parse_request("/usr/bin/x:serve"),
            Ok(Source::Function {
                name: "serve".into(),
                binary: Some("/usr/bin/x".into())
            })
        );
        assert_eq!(
            parse_request("usdt:orders:request_begin,request_end"),
            Ok(Source::Usdt {
                provider: "orders".into(),
                begin: "request_begin".into(),
                end: "request_end".into()
            })
        );
        assert!(parse_request("usdt:orders").is_err());
        assert!(parse_request("").is_err());
        assert!(parse_request("two words").is_err());
    }

    #[test]
    fn probe_names_say_begin_or_end() {
        assert_eq!(probe_kind("request-begin:f"), Some(true));
        assert_eq!(probe_kind("request-end:f"), Some(false));
        assert_eq!(probe_kind("sched:sched_switch"), None);
    }
}
