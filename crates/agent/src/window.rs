//! One window after it was recorded: the perf.data file goes through the converter that
//! `kairos collect` and `kairos import` use (decoded, unwound, symbolised here on the
//! host), keeps only the processes asked for (`--comm`, `--cgroup`; `-p` is the
//! collector's), and becomes each destination's payload: an OTLP request, or a gzipped
//! pprof profile.

use std::collections::HashMap;
use std::path::Path;

use kairos_convert::{Background, ConvertOptions, LastingSymbolizer};
use kairos_export::otlp::{self, AttrValue, OtlpOptions};
use kairos_export::{Format, Selection};
use kairos_model::Profile;

use crate::config::Kind;

/// Which processes' samples a window keeps, besides the collector's own target.
#[derive(Debug, Default)]
pub struct Filter {
    /// The process's command name (as `ps -o comm` shows it).
    pub comm: Option<String>,
    /// A cgroup path (`/system.slice/x.service`, or its folder under /sys/fs/cgroup, of
    /// cgroup v2 or of a v1 controller): the processes in it or below.
    pub cgroup: Option<String>,
    /// Cgroup paths per pid, read once per process (none: gone before it was read).
    cgroups: HashMap<i32, Vec<String>>,
}

impl Filter {
    pub fn new(comm: Option<String>, cgroup: Option<String>) -> Filter {
        let cgroup = cgroup.map(|c| {
            let c = c.trim_start_matches("/sys/fs/cgroup");
            format!("/{}", c.trim_matches('/'))
        });
        Filter {
            comm,
            cgroup,
            cgroups: HashMap::new(),
        }
    }

    fn keeps(&mut self, pid: i32, process_name: &str) -> bool {
        if self.comm.as_deref().is_some_and(|c| c != process_name) {
            return false;
        }
        let Some(want) = self.cgroup.clone() else {
            return true;
        };
        let paths = self.cgroups.entry(pid).or_insert_with(|| cgroups_of(pid));
        paths.iter().any(|p| within(p, &want))
    }

    /// Forgets processes that are gone (their pids may come back as other processes).
    pub fn forget_exited(&mut self) {
        self.cgroups
            .retain(|&pid, _| Path::new(&format!("/proc/{pid}")).exists());
    }
}

fn within(path: &str, cgroup: &str) -> bool {
    cgroup == "/" || path == cgroup || path.starts_with(&format!("{cgroup}/"))
}

/// The cgroup paths of a process, each hierarchy's (/proc/PID/cgroup): the cgroup v2 path
/// (`0::/path`) and, on a cgroup v1 machine, each controller's path both as it is and
/// under the controller's folder (`/pids/path`, as /sys/fs/cgroup/pids/path names it).
/// Empty when the process is gone.
fn cgroups_of(pid: i32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map(|text| parse_cgroups(&text))
        .unwrap_or_default()
}

fn parse_cgroups(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        out.push(path.to_string());
        for c in controllers.split(',').filter(|c| !c.is_empty()) {
            let c = c.trim_start_matches("name=");
            out.push(format!("/{c}{}", if path == "/" { "" } else { path }));
        }
    }
    out
}

/// How windows are converted: as every recording is, on one symbolising thread that
/// lasts from window to window (the binaries' debug information is read once, not every
/// window).
#[derive(Debug, Clone)]
pub struct Converter {
    opts: ConvertOptions,
    background: Background,
}

impl Converter {
    pub fn new(opts: ConvertOptions) -> Converter {
        // Without the thread (it could not start), each window symbolises on its own.
        let lasting = LastingSymbolizer::start(opts.symbolizer.clone()).ok();
        Converter {
            opts,
            background: Background {
                lasting,
                ..Background::default()
            },
        }
    }
}

/// What a window became.
pub struct Made {
    pub samples: usize,
    pub processes: usize,
    /// Samples of other processes left out by the filter.
    pub filtered_out: usize,
    /// The converter's remarks (missing binaries, undecodable records...).
    pub notes: Vec<String>,
    /// Per destination kind: the payload.
    pub payloads: Vec<(Kind, Vec<u8>)>,
}

/// What every payload of a window carries besides its samples.
pub struct Context<'c> {
    pub resource: &'c [(String, AttrValue)],
    pub profile_attributes: &'c [(String, AttrValue)],
    /// Wall-clock minus monotonic time when the window was recorded, in ns.
    pub wall_offset_ns: i128,
}

/// Converts `perf_data` and makes the payloads the destinations `kinds` need.
pub fn make(
    perf_data: &Path,
    converter: &Converter,
    filter: &mut Filter,
    kinds: &[Kind],
    ctx: &Context<'_>,
) -> Result<Made, String> {
    let file = kairos_perf_data::PerfFile::open(perf_data)
        .map_err(|e| format!("the window's recording cannot be read ({e})"))?;
    let converted =
        kairos_convert::convert_with(&file, &converter.opts, &converter.background, &mut |_| {});
    let mut profile = converted.profile;
    let mut notes = converted.notes;
    notes.extend(converted.decode_error);
    let before = profile.samples.len();
    keep_only(&mut profile, filter);
    let filtered_out = before - profile.samples.len();
    let processes = {
        let mut pids: Vec<i32> = profile
            .samples
            .iter()
            .filter_map(|s| profile.threads.get(s.thread as usize).map(|t| t.pid))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids.len()
    };
    let mut sel = Selection::new(&profile, None);
    let origin = i128::from(sel.origin_ns) + ctx.wall_offset_ns;
    sel.wall_start_ns = u64::try_from(origin).ok();
    let mut payloads = Vec::new();
    if !profile.samples.is_empty() {
        for &kind in kinds {
            if payloads.iter().any(|(k, _)| *k == kind) {
                continue;
            }
            payloads.push((kind, payload(kind, &sel, ctx)?));
        }
    }
    Ok(Made {
        samples: profile.samples.len(),
        processes,
        filtered_out,
        notes,
        payloads,
    })
}

fn keep_only(profile: &mut Profile, filter: &mut Filter) {
    if filter.comm.is_none() && filter.cgroup.is_none() {
        return;
    }
    let keep: Vec<bool> = profile
        .threads
        .iter()
        .map(|t| {
            let name = if t.process_name.is_empty() {
                &t.name
            } else {
                &t.process_name
            };
            filter.keeps(t.pid, name)
        })
        .collect();
    profile
        .samples
        .retain(|s| keep.get(s.thread as usize).copied().unwrap_or(false));
}

fn payload(kind: Kind, sel: &Selection<'_>, ctx: &Context<'_>) -> Result<Vec<u8>, String> {
    match kind {
        Kind::Otlp | Kind::OtlpGrpc => {
            use prost::Message;
            let req = otlp::request(
                sel,
                &OtlpOptions {
                    resource: ctx.resource,
                    profile_attributes: ctx.profile_attributes,
                    scope_name: "kairos",
                    scope_version: env!("CARGO_PKG_VERSION"),
                },
            );
            Ok(req.encode_to_vec())
        }
        Kind::Pyroscope | Kind::Parca => {
            let mut out = Vec::new();
            kairos_export::write(sel, Format::Pprof, &mut out)
                .map_err(|e| format!("the window cannot be written as pprof ({e})"))?;
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_paths_of_v1_and_v2() {
        let v1 = "9:name=systemd:/\n8:pids:/team/web\n4:memory:/x\n0::/\n";
        let paths = parse_cgroups(v1);
        assert!(paths.iter().any(|p| within(p, "/team")));
        assert!(paths.iter().any(|p| within(p, "/pids/team/web")));
        assert!(
            !paths.iter().any(|p| within(p, "/team/w")),
            "a prefix of a name is not a parent"
        );
        let v2 = parse_cgroups("0::/system.slice/nginx.service\n");
        assert!(v2.iter().any(|p| within(p, "/system.slice")));
        assert!(!v2.iter().any(|p| within(p, "/user.slice")));
        let f = Filter::new(None, Some("/sys/fs/cgroup/pids/team/".into()));
        assert_eq!(f.cgroup.as_deref(), Some("/pids/team"));
    }
}
