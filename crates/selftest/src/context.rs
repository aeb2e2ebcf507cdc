//! What every check shares: where kairos, the sample programs and the results are, what
//! this machine can do (kairos_platform::detect), whether perf is here, and running both
//! as subprocesses with a time limit. A check's early end is a finished [`Line`], so the
//! checks read as a sequence of steps (`Step<T>`).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kairos_platform::Capabilities;

use crate::perf_text;
use crate::shared_runs::{KernelRuns, PmuMemoryRun};
use crate::verdict::Line;

/// A check's step: its value, or the check's final line.
pub(crate) type Step<T> = Result<T, Line>;

/// The longest any one run may take before it is stopped.
pub(crate) const RUN_LIMIT: Duration = Duration::from_secs(120);

pub(crate) struct Ctx {
    pub kairos: PathBuf,
    pub samples: PathBuf,
    /// Where results and perf files go.
    pub work: PathBuf,
    pub caps: Capabilities,
    /// `perf version`, or why there is no usable perf.
    pub perf: Result<String, String>,
    /// Runs more than one check reads, made once.
    pub kernel_runs: Option<Step<KernelRuns>>,
    pub pmu_memory: Option<Step<PmuMemoryRun>>,
}

/// What a subprocess did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Output {
    /// None when it was stopped by a signal (or by the time limit).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// kairos's own sentence (`kairos: ...`), else the last line of its error output.
    pub fn kairos_sentence(&self) -> String {
        if self.timed_out {
            return format!(
                "it did not finish within {} s and was stopped",
                RUN_LIMIT.as_secs()
            );
        }
        self.stderr
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("kairos: "))
            .map(str::to_string)
            .or_else(|| {
                self.stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| l.trim().to_string())
            })
            .unwrap_or_else(|| {
                format!(
                    "exit status {}",
                    self.code
                        .map_or("none (killed)".to_string(), |c| c.to_string())
                )
            })
    }
}

/// Output collected by a reader thread, readable at any time (also when a grandchild still
/// holds the pipe open after the child ended, so the read never finishes).
type Collected = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// How long, after the child ended, its outputs may take to reach their end: a grandchild
/// that inherited them (and outlived the child) keeps them open, and is not waited for.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

fn drain(mut r: impl Read + Send + 'static) -> (Collected, std::thread::JoinHandle<()>) {
    let buf: Collected = Default::default();
    let into = std::sync::Arc::clone(&buf);
    let h = std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => match into.lock() {
                    Ok(mut v) => v.extend_from_slice(&chunk[..n]),
                    Err(p) => p.into_inner().extend_from_slice(&chunk[..n]),
                },
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    (buf, h)
}

/// What a reader collected, once it finished or `until` passed.
fn collected(reader: Option<(Collected, std::thread::JoinHandle<()>)>, until: Instant) -> String {
    let Some((buf, h)) = reader else {
        return String::new();
    };
    while !h.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    if h.is_finished() {
        let _ = h.join();
    }
    let v = match buf.lock() {
        Ok(v) => v.clone(),
        Err(p) => p.into_inner().clone(),
    };
    String::from_utf8_lossy(&v).into_owned()
}

/// Sends `sig` to the child `pid`; nothing for a pid that is not one (0 or -1 would
/// signal this whole process group, or every process we may signal).
fn signal(pid: i32, sig: libc::c_int) {
    if pid > 0 {
        // SAFETY: kill(2) on the id of a child we started and have not reaped.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Stops a child that ran over its time: SIGINT first (kairos and perf end their
/// recording and their own children on it), SIGKILL after a grace period.
fn stop(child: &mut Child) {
    let pid = i32::try_from(child.id()).unwrap_or(0);
    signal(pid, libc::SIGINT);
    // A stopped child (see [`stopped`]) acts on the SIGINT once continued.
    signal(pid, libc::SIGCONT);
    let grace = Instant::now() + Duration::from_secs(5);
    while Instant::now() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A child whose outputs are being collected.
pub(crate) struct Running {
    child: Child,
    name: String,
    out: Option<(Collected, std::thread::JoinHandle<()>)>,
    err: Option<(Collected, std::thread::JoinHandle<()>)>,
}

impl Running {
    /// Starts `cmd` with both outputs collected. Err: it could not start.
    pub fn start(mut cmd: Command) -> Result<Running, String> {
        let name = cmd.get_program().to_string_lossy().into_owned();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run {name}: {e}"))?;
        let out = child.stdout.take().map(drain);
        let err = child.stderr.take().map(drain);
        Ok(Running {
            child,
            name,
            out,
            err,
        })
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(0)
    }

    /// Whether it has ended.
    pub fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for its end (stopping it at `limit`).
    pub fn wait(mut self, limit: Duration) -> Result<Output, String> {
        let deadline = Instant::now() + limit;
        let mut timed_out = false;
        let code = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.code(),
                Ok(None) if Instant::now() >= deadline => {
                    stop(&mut self.child);
                    timed_out = true;
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("cannot wait for {}: {e}", self.name)),
            }
        };
        let until = Instant::now() + DRAIN_LIMIT;
        Ok(Output {
            code,
            stdout: collected(self.out.take(), until),
            stderr: collected(self.err.take(), until),
            timed_out,
        })
    }

    /// SIGINT (perf stat's way to end), then its end.
    pub fn interrupt(self, limit: Duration) -> Result<Output, String> {
        signal(self.pid(), libc::SIGINT);
        self.wait(limit)
    }

    /// Lets a child started with [`stopped`] run on.
    pub fn resume(&self) {
        signal(self.pid(), libc::SIGCONT);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            stop(&mut self.child);
        }
    }
}

/// `program args`, stopped (SIGSTOP) before its exec: tools attach to its pid, then
/// [`Running::resume`] lets it exec and run once under all of them. A shell stops itself
/// and then execs the program in its place (same pid): a child stopped between fork and
/// exec by `pre_exec` would hold `Command::spawn` up, which returns only after the exec.
pub(crate) fn stopped(program: &Path, args: &[&str]) -> Result<Running, String> {
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "kill -STOP $$ && exec \"$0\" \"$@\""])
        .arg(program)
        .args(args);
    let mut r = Running::start(cmd)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match process_state(r.pid()) {
            Some('T') => return Ok(r),
            // It ended (or cannot be seen) instead of stopping.
            None | Some('Z') | Some('X') => break,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let why = if r.ended() { "ended" } else { "did not stop" };
    Err(format!(
        "{} {why} before its exec (started stopped, through /bin/sh)",
        program.display()
    ))
}

/// The state letter of /proc/PID/stat (after the command's closing parenthesis).
fn process_state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?.1.trim_start().chars().next()
}

/// How many perf events a process holds open (its `anon_inode:[perf_event]` descriptors).
pub(crate) fn perf_events_open(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("perf_event"))
        })
        .count()
}

/// Runs `cmd` to its end (or `limit`), collecting both outputs. Err: it could not start.
pub(crate) fn run(cmd: Command, limit: Duration) -> Result<Output, String> {
    Running::start(cmd)?.wait(limit)
}

/// `perf version`, or why perf cannot be used.
pub(crate) fn find_perf() -> Result<String, String> {
    let mut cmd = Command::new("perf");
    cmd.arg("version");
    match run(cmd, Duration::from_secs(20)) {
        Err(_) => Err("perf is not installed (no `perf` on PATH): install it (Debian: linux-perf; Ubuntu: linux-tools-$(uname -r); Fedora: perf) to compare with it".into()),
        Ok(o) if o.ok() && o.stdout.starts_with("perf version") => Ok(o.stdout.trim().to_string()),
        Ok(o) => Err(format!("perf does not run here: {}", perf_text::message(&format!("{}\n{}", o.stdout, o.stderr)))),
    }
}

impl Ctx {
    /// A path in the work directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    /// Ok when kairos says this machine has the capability; else kairos's reason.
    pub fn capability(&self, name: &str) -> Result<(), String> {
        match self.caps.get(name) {
            Some(c) if c.available => Ok(()),
            Some(c) => Err(c
                .reason
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| c.detail.clone())),
            None => Err(format!("kairos has no '{name}' capability to check")),
        }
    }

    pub fn perf_ready(&self) -> Result<(), String> {
        self.perf.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// A bundled sample program, or where it was looked for.
    pub fn sample(&self, name: &str) -> Result<PathBuf, String> {
        let p = self.samples.join(name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "the sample program {name} is not at {} (cargo build --release builds the samples next to the kairos binary)",
                p.display()
            ))
        }
    }

    /// `kairos collect ANALYSIS -q -r DIR -k KNOB... -- PROGRAM ARGS`, as arguments.
    pub fn collect_args(
        &self,
        analysis: &str,
        dir: &Path,
        knobs: &[&str],
        program: &Path,
        args: &[&str],
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "collect".into(),
            analysis.into(),
            "-q".into(),
            "-r".into(),
            dir.into(),
        ];
        for k in knobs {
            a.push("-k".into());
            a.push((*k).into());
        }
        a.push("--".into());
        a.push(program.into());
        a.extend(args.iter().map(OsString::from));
        a
    }

    /// Runs kairos with `args` in the work directory.
    pub fn kairos(&self, args: &[OsString]) -> Result<Output, String> {
        let mut cmd = Command::new(&self.kairos);
        cmd.args(args).current_dir(&self.work);
        run(cmd, RUN_LIMIT)
    }

    /// Runs perf with `args` in the work directory.
    pub fn perf(&self, args: &[OsString]) -> Result<Output, String> {
        let mut cmd = Command::new("perf");
        cmd.args(args).current_dir(&self.work);
        run(cmd, RUN_LIMIT)
    }

    /// `kairos collect ...` into `dir`: its output (the program's lines are in stdout), or
    /// kairos's sentence when it failed.
    pub fn collect(
        &self,
        analysis: &str,
        dir: &Path,
        knobs: &[&str],
        program: &Path,
        args: &[&str],
    ) -> Result<Output, String> {
        let o = self.kairos(&self.collect_args(analysis, dir, knobs, program, args))?;
        if o.ok() && dir.join("manifest.json").is_file() {
            Ok(o)
        } else {
            Err(format!(
                "kairos collect {analysis} failed: {}",
                o.kairos_sentence()
            ))
        }
    }

    /// `kairos report REPORT -r DIR --format json --limit 0`, parsed.
    pub fn report_json(&self, report: &str, dir: &Path) -> Result<serde_json::Value, String> {
        let args: Vec<OsString> = vec![
            "report".into(),
            report.into(),
            "-r".into(),
            dir.into(),
            "--format".into(),
            "json".into(),
            "--limit".into(),
            "0".into(),
        ];
        let o = self.kairos(&args)?;
        if !o.ok() {
            return Err(format!(
                "kairos report {report} failed: {}",
                o.kairos_sentence()
            ));
        }
        serde_json::from_str(&o.stdout)
            .map_err(|e| format!("kairos report {report} --format json printed no JSON ({e})"))
    }
}

/// The rows of a report's table: a bare array of rows, or the document's first table
/// whose title starts with `title` (any table when `title` is empty).
pub(crate) fn table_rows<'a>(
    doc: &'a serde_json::Value,
    title: &str,
) -> Vec<&'a serde_json::Value> {
    if let Some(rows) = doc.as_array() {
        return rows.iter().collect();
    }
    doc["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["kind"] == "table" && b["title"].as_str().is_some_and(|t| t.starts_with(title)))
        .and_then(|b| b["rows"].as_array())
        .map(|r| r.iter().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subprocess_gives_its_outputs_and_status() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo 'kairos: the sentence' >&2; exit 3"]);
        let o = run(cmd, Duration::from_secs(10)).unwrap_or_default();
        assert_eq!(o.code, Some(3));
        assert_eq!(o.stdout, "out\n");
        assert_eq!(o.kairos_sentence(), "the sentence");
        assert!(run(Command::new("/nonexistent/program"), Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_subprocess_over_its_time_is_stopped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let t = Instant::now();
        let o = run(cmd, Duration::from_millis(200)).unwrap_or_default();
        assert!(o.timed_out && o.code.is_none(), "{o:?}");
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(o.kairos_sentence().contains("did not finish"));
    }

    #[test]
    fn a_grandchild_holding_the_outputs_does_not_hold_the_wait() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 5 & echo out"]);
        let t = Instant::now();
        let o = run(cmd, Duration::from_secs(10)).unwrap_or_default();
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), "out\n"));
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    }

    #[test]
    fn a_stopped_child_waits_for_its_resume() {
        let r = stopped(Path::new("/bin/echo"), &["resumed"]);
        assert!(r.is_ok(), "{:?}", r.err());
        let Ok(mut r) = r else { return };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!r.ended(), "it ran before it was resumed");
        assert_eq!(process_state(r.pid()), Some('T'));
        r.resume();
        let o = r.wait(Duration::from_secs(10)).unwrap_or_default();
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), "resumed\n"));
    }

    #[test]
    fn table_rows_of_both_report_shapes() {
        let bare: serde_json::Value = serde_json::json!([{"Function": "F2"}]);
        assert_eq!(table_rows(&bare, "x").len(), 1);
        let doc = serde_json::json!({"title": null, "blocks": [
            {"kind": "section", "title": "Cache lines", "values": {}},
            {"kind": "table", "title": "Cache lines", "rows": [{"Line": "0x1"}, {"Line": "0x2"}]},
            {"kind": "table", "title": "Watchpoint hits by thread", "rows": [{"Thread": 1}]}
        ]});
        assert_eq!(table_rows(&doc, "Cache lines").len(), 2);
        assert_eq!(table_rows(&doc, "Watchpoint hits")[0]["Thread"], 1);
        assert!(table_rows(&doc, "Nothing").is_empty());
    }
}
