//! The request-latency flight recorder at fleet scale (`kairos agent -p PID --latency
//! REQUEST`): the agent runs `kairos collect latency -p PID` without an end (the flight
//! recorder, a process of its own that the agent ends with SIGINT), and as each window
//! the recorder keeps because it has slow requests is finished, sends every slow request
//! as a profile of its own: the samples of its thread while it ran, and as attributes its
//! id, duration, main cause and where its time went, so that a backend can search for
//! them. They go through the destinations' spools, in order with the CPU windows: to
//! OTLP destinations one request per window with a profile per slow request (its
//! attributes on the profile), to pprof ones (Pyroscope, Parca) one profile per slow
//! request, its attributes as pprof sample labels (`request_id`, `request_cause_kind`...).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kairos_analysis_latency::model::{LatencyResult, Parts, Request};
use kairos_analysis_latency::WINDOWS_DIR;
use kairos_export::otlp::{AttrValue, OtlpOptions, RequestBuilder};
use kairos_export::Selection;
use kairos_model::Sample;

use crate::log;

/// What `--latency` asked for.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// The request boundary, as `kairos collect latency -k request=` takes it.
    pub request: String,
    /// More knobs of the latency analysis (`slower-than=...`, `sampling-interval-us=...`).
    pub knobs: Vec<String>,
}

/// The running flight recorder and the windows already sent.
pub struct Flight {
    child: Child,
    dir: PathBuf,
    done: BTreeSet<String>,
}

impl Flight {
    /// Starts the recorder on `pid`, its result in `dir`, in windows as long as the
    /// agent's.
    pub fn start(
        opts: &LatencyOptions,
        pid: i32,
        window_s: f64,
        dir: &Path,
    ) -> Result<Flight, String> {
        let exe = std::env::current_exe().map_err(|e| {
            format!("cannot find the kairos binary to run the latency recorder ({e})")
        })?;
        let mut cmd = Command::new(exe);
        cmd.args(["collect", "latency", "-q", "-r"])
            .arg(dir)
            .args(["-p", &pid.to_string()])
            .args(["-k", &format!("request={}", opts.request)])
            .args([
                "-k",
                &format!("window={}ms", (window_s * 1000.0).round() as u64),
            ])
            // Fleet rates: the paper's 100 us is for one machine under study.
            .args(["-k", "sampling-interval-us=1000"]);
        for k in &opts.knobs {
            cmd.args(["-k", k]);
        }
        // An agent that dies (SIGKILL, a crash) takes its recorder with it, which then
        // finishes its window as on Ctrl-C.
        // SAFETY: prctl only sets this process's parent-death signal; async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
                Ok(())
            });
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the latency recorder ({e})"))?;
        Ok(Flight {
            child,
            dir: dir.to_path_buf(),
            done: BTreeSet::new(),
        })
    }

    /// Ends the recorder as Ctrl-C would (it finishes its last window) and waits for it.
    pub fn stop(&mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        match self.child.wait() {
            Ok(s) if !s.success() => log(&format!("the latency recorder ended with {s}")),
            Err(e) => log(&format!(
                "the latency recorder could not be waited for ({e})"
            )),
            _ => {}
        }
    }

    /// The payloads of the windows finished since the last call: one OTLP request per
    /// window with a profile per slow request, and with `pprof` a pprof profile per slow
    /// request.
    pub fn take(
        &mut self,
        resource: &[(String, AttrValue)],
        wall_offset_ns: i128,
        pprof: bool,
    ) -> Vec<Payloads> {
        let Ok(entries) = std::fs::read_dir(self.dir.join(WINDOWS_DIR)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !self.done.contains(n))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let wdir = self.dir.join(WINDOWS_DIR).join(&name);
            // Its requests are written last, once their causes are known.
            let Some(Ok(result)) = LatencyResult::load(&wdir) else {
                continue;
            };
            self.done.insert(name.clone());
            match window_payload(&wdir, &result, resource, wall_offset_ns, pprof) {
                Ok(Some((payload, slow))) => {
                    log(&format!(
                        "latency window {name}: {slow} slow requests (slower than {:.0} us) of {}, sent as profiles of their own",
                        result.threshold_ns as f64 / 1e3,
                        result.requests.len()
                    ));
                    out.push(payload);
                }
                Ok(None) => {}
                Err(e) => log(&format!(
                    "latency window {name} cannot be read ({e}); its slow requests are not sent"
                )),
            }
        }
        out
    }
}

/// What one latency window sends.
pub struct Payloads {
    /// One OTLP request with a profile per slow request.
    pub otlp: Vec<u8>,
    /// A pprof profile per slow request (when asked for).
    pub pprof: Vec<RequestProfile>,
}

/// One slow request as a pprof profile, with its wall-clock span in Unix seconds.
pub struct RequestProfile {
    pub from_s: u64,
    pub until_s: u64,
    pub pprof: Vec<u8>,
}

/// The payloads of a window's slow requests, and how many; None when the window has none.
fn window_payload(
    wdir: &Path,
    result: &LatencyResult,
    resource: &[(String, AttrValue)],
    wall_offset_ns: i128,
    pprof: bool,
) -> Result<Option<(Payloads, usize)>, String> {
    use prost::Message;
    let slow: Vec<&Request> = result.requests.iter().filter(|q| q.slow).collect();
    if slow.is_empty() {
        return Ok(None);
    }
    let (_, profile) = kairos_session::open(wdir).map_err(|e| e.to_string())?;
    let mut sel = Selection::new(&profile, None);
    sel.wall_start_ns = u64::try_from(i128::from(sel.origin_ns) + wall_offset_ns).ok();
    let opts = OtlpOptions {
        resource,
        profile_attributes: &[],
        scope_name: "kairos",
        scope_version: env!("CARGO_PKG_VERSION"),
    };
    let mut b = RequestBuilder::new(&sel, &opts);
    let mut profiles = Vec::new();
    for q in &slow {
        let end = q.start_ns.saturating_add(q.duration_ns);
        let of_thread = |i: u32| {
            profile
                .threads
                .get(i as usize)
                .filter(|t| t.tid == q.tid as i32)
        };
        let pid = profile
            .threads
            .iter()
            .find(|t| t.tid == q.tid as i32)
            .map_or(0, |t| t.pid);
        // Samples are in time order: the request's are one slice, then its thread's.
        let lo = sel.samples.partition_point(|s| s.time_ns < q.start_ns);
        let hi = sel.samples.partition_point(|s| s.time_ns <= end).max(lo);
        let indices: Vec<usize> = (lo..hi)
            .filter(|&i| {
                sel.samples
                    .get(i)
                    .is_some_and(|s| of_thread(s.thread).is_some())
            })
            .collect();
        let attributes = attributes(q, result);
        // A request no sample landed in has no stack to show in a pprof backend.
        if pprof && !indices.is_empty() {
            let unix_s = |ns: u64| {
                u64::try_from((i128::from(ns) + wall_offset_ns) / 1_000_000_000).unwrap_or(0)
            };
            profiles.push(RequestProfile {
                from_s: unix_s(q.start_ns),
                until_s: unix_s(end).max(unix_s(q.start_ns) + 1),
                pprof: request_pprof(&sel, &indices, &attributes)?,
            });
        }
        b.add(pid, Some(&q.thread_name), &indices, &attributes);
    }
    let payloads = Payloads {
        otlp: b.finish().encode_to_vec(),
        pprof: profiles,
    };
    Ok(Some((payloads, slow.len())))
}

/// The samples `indices` of `sel` as a pprof profile, the request's attributes as labels
/// in the names pprof backends take (`request.id` as `request_id`).
fn request_pprof(
    sel: &Selection<'_>,
    indices: &[usize],
    attributes: &[(String, AttrValue)],
) -> Result<Vec<u8>, String> {
    let samples: Vec<Sample> = indices
        .iter()
        .filter_map(|&i| sel.samples.get(i).copied())
        .collect();
    let one = Selection {
        profile: sel.profile,
        samples: &samples,
        origin_ns: sel.origin_ns,
        wall_start_ns: sel.wall_start_ns,
    };
    let labels: Vec<(String, AttrValue)> = attributes
        .iter()
        .map(|(k, v)| (crate::send::label_name(k), v.clone()))
        .collect();
    let mut out = Vec::new();
    kairos_export::write_pprof_labelled(&one, &labels, &mut out)
        .map_err(|e| format!("a slow request cannot be written as pprof ({e})"))?;
    Ok(out)
}

/// What a backend searches slow requests by.
fn attributes(q: &Request, result: &LatencyResult) -> Vec<(String, AttrValue)> {
    let mut a = vec![
        ("request.id".to_string(), AttrValue::Int(q.id as i64)),
        (
            "request.duration_ns".to_string(),
            AttrValue::Int(q.duration_ns as i64),
        ),
        ("request.cause".to_string(), AttrValue::Str(q.cause.clone())),
        (
            "request.cause_kind".to_string(),
            AttrValue::Str(q.cause_kind.clone()),
        ),
        (
            "request.slower_than_ns".to_string(),
            AttrValue::Int(result.threshold_ns as i64),
        ),
        ("thread.id".to_string(), AttrValue::Int(i64::from(q.tid))),
    ];
    for (key, ns) in Parts::KEYS.iter().zip(q.parts.values()) {
        a.push((format!("request.{key}_ns"), AttrValue::Int(ns as i64)));
    }
    a
}
