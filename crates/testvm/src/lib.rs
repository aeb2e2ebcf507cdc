//! Boots the NUMA test machine of `scripts/numa-vm` (QEMU, a Debian kernel, a busybox
//! initramfs carrying `kairos`, its libraries and the samples), runs a shell script in it
//! as root and brings back its stdout, stderr, exit status and files.
//!
//! ```no_run
//! let out = kairos_testvm::run(2, "triad --init serial --report-placement")?;
//! assert_eq!(out.status, 0, "{}", out.stderr);
//! # Ok::<(), kairos_testvm::VmError>(())
//! ```
//!
//! Inside the guest: `PATH` starts with `/opt/kairos` (the `kairos` binary, `lib/`) and
//! `/opt/kairos/samples`; the working directory is `$KAIROS_OUT`, whose content comes back
//! as [`VmOutput::files`]; files given with [`Vm::put`] are in `/job/in/`. Boot images are
//! built and cached by `scripts/numa-vm/build.sh` (see its README). One machine at a time
//! runs per test process: the host has two cores and each guest has several vCPUs.
//!
//! When the machine cannot be made (no QEMU, no kernel package, no kairos binary), every
//! call returns [`VmError::Unavailable`] with the reason: tests fail with it, never skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

mod paths;

/// Why a run gave no result.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("the NUMA test machine cannot be built or started: {reason}")]
    Unavailable { reason: String },
    #[error("bad NUMA test machine parameters: {0}")]
    Usage(String),
    #[error("the NUMA test machine timed out after {} s; last console lines:\n{console}", .after.as_secs())]
    Timeout { after: Duration, console: String },
    #[error("the guest stopped without a result; last console lines:\n{console}")]
    NoResult { console: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// How QEMU runs the guest. `Auto` uses KVM only where a test boot under KVM succeeded
/// (the verdict is cached per host kernel and QEMU version), else TCG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Auto,
    Tcg,
    Kvm,
}

/// A machine description; [`Vm::run`] boots it once per call.
#[derive(Clone, Debug)]
pub struct Vm {
    nodes: u32,
    cpus: u32,
    mem_mib: u32,
    nic_node: Option<u32>,
    peer_nic: bool,
    timeout: Duration,
    accel: Accel,
    kairos: Option<PathBuf>,
    puts: Vec<PathBuf>,
    append: String,
}

/// What one run brought back.
#[derive(Debug)]
pub struct VmOutput {
    pub stdout: String,
    pub stderr: String,
    /// The script's exit status (a shell status: 128 + N after signal N).
    pub status: i32,
    /// The directory holding what the script left in `$KAIROS_OUT`.
    pub files: PathBuf,
    /// Kernel and init messages of the guest's serial console.
    pub console: String,
    /// `tcg` or `kvm`.
    pub accel: String,
    /// Guest uptime when the script started: the boot time inside the guest.
    pub boot_s: f64,
    /// Run time of the script.
    pub job_s: f64,
    /// Host wall time from QEMU's start to its exit.
    pub wall_s: f64,
    _dir: Option<tempfile::TempDir>,
}

/// Boots a machine of `nodes` NUMA nodes with the defaults of [`Vm::new`] and runs `script`.
pub fn run(nodes: u32, script: &str) -> Result<VmOutput, VmError> {
    Vm::new(nodes).run(script)
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Vm {
    /// `nodes` nodes, each with the same number of CPUs (4 CPUs in all up to 4 nodes) and
    /// the same memory (2 GiB in all where it splits evenly), the NIC on node 1 (node 0
    /// with one node), a 300 s limit for boot and script.
    pub fn new(nodes: u32) -> Vm {
        let n = nodes.max(1);
        let cpus = n * 4u32.div_ceil(n);
        let mem_mib = if 2048 % n == 0 { 2048 } else { 512 * n };
        Vm {
            nodes,
            cpus,
            mem_mib,
            nic_node: None,
            peer_nic: false,
            timeout: Duration::from_secs(300),
            accel: Accel::Auto,
            kairos: None,
            puts: Vec::new(),
            append: String::new(),
        }
    }
    /// Total vCPUs, a multiple of the node count.
    pub fn cpus(mut self, cpus: u32) -> Vm {
        self.cpus = cpus;
        self
    }
    /// Total memory in MiB, split evenly between the nodes.
    pub fn mem_mib(mut self, mem_mib: u32) -> Vm {
        self.mem_mib = mem_mib;
        self
    }
    /// The node of the PCIe root bus holding the NIC.
    pub fn nic_node(mut self, node: u32) -> Vm {
        self.nic_node = Some(node);
        self
    }
    /// A second NIC on node 0's root bus, linked to the first (a hub): traffic sent out of
    /// one is received by the other.
    pub fn peer_nic(mut self) -> Vm {
        self.peer_nic = true;
        self
    }
    /// Limit for boot and script together; rounded up to whole seconds.
    pub fn timeout(mut self, timeout: Duration) -> Vm {
        self.timeout = timeout;
        self
    }
    pub fn accel(mut self, accel: Accel) -> Vm {
        self.accel = accel;
        self
    }
    /// The kairos binary to carry (its `samples/` and `lib/` directories come along).
    /// Default: `$KAIROS_BIN`, else `kairos` in the profile directory of the running test
    /// executable, else `<target>/release/kairos`.
    pub fn kairos(mut self, path: impl Into<PathBuf>) -> Vm {
        self.kairos = Some(path.into());
        self
    }
    /// A host file or directory to copy into the guest's `/job/in/`.
    pub fn put(mut self, path: impl Into<PathBuf>) -> Vm {
        self.puts.push(path.into());
        self
    }
    /// Extra kernel parameters, e.g. `transparent_hugepage=never`.
    pub fn append(mut self, args: &str) -> Vm {
        self.append = args.to_string();
        self
    }

    fn check(&self) -> Result<(), VmError> {
        let bad = |m: String| Err(VmError::Usage(m));
        if !(1..=8).contains(&self.nodes) {
            return bad(format!("{} nodes: 1 to 8 are possible", self.nodes));
        }
        if self.cpus < self.nodes || !self.cpus.is_multiple_of(self.nodes) || self.cpus > 64 {
            return bad(format!(
                "{} CPUs do not split evenly into {} nodes",
                self.cpus, self.nodes
            ));
        }
        if self.mem_mib < 128 * self.nodes || !self.mem_mib.is_multiple_of(self.nodes) {
            return bad(format!(
                "{} MiB do not split evenly into {} nodes of at least 128 MiB",
                self.mem_mib, self.nodes
            ));
        }
        if let Some(n) = self.nic_node.filter(|&n| n >= self.nodes) {
            return bad(format!(
                "NIC on node {n}, but the machine has {} nodes",
                self.nodes
            ));
        }
        if self.timeout.is_zero() {
            return bad("a zero timeout".to_string());
        }
        Ok(())
    }

    /// Boots the machine, runs `script` with `sh` as root, powers off. An `Ok` means the
    /// script ran; its own exit status is in [`VmOutput::status`].
    pub fn run(&self, script: &str) -> Result<VmOutput, VmError> {
        self.check()?;
        let root = paths::repo_root();
        let runner = root.join("scripts/numa-vm/run.sh");
        if !runner.is_file() {
            return Err(VmError::Unavailable {
                reason: format!("{} is missing", runner.display()),
            });
        }
        let kairos = paths::kairos_binary(self.kairos.as_deref())?;
        let cache = paths::cache_dir();
        let io = |context: String| move |source| VmError::Io { context, source };
        std::fs::create_dir_all(cache.join("results"))
            .map_err(io(format!("cannot create {}", cache.display())))?;
        let tmp = tempfile::Builder::new()
            .prefix("run-")
            .tempdir_in(cache.join("results"))
            .map_err(io(format!(
                "cannot create a directory in {}",
                cache.display()
            )))?;
        let job = tmp.path().join("job.sh");
        std::fs::write(&job, script).map_err(io(format!("cannot write {}", job.display())))?;
        let result = tmp.path().join("result");
        let mut cmd = self.command(&runner, &kairos, &job, &result);
        if std::env::var_os("KAIROS_VM_CACHE").is_none() {
            cmd.env("KAIROS_VM_CACHE", &cache);
        }

        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let out = cmd.output().map_err(|e| VmError::Unavailable {
            reason: format!("cannot run bash {}: {e}", runner.display()),
        })?;
        self.check_runner(&out, &runner, &result)?;
        read_output(&result, tmp)
    }

    /// The timeout in whole seconds, rounded up.
    fn timeout_secs(&self) -> u64 {
        self.timeout.as_secs() + u64::from(self.timeout.subsec_nanos() > 0)
    }

    /// `bash run.sh` with the machine's shape, what to carry and the script.
    fn command(&self, runner: &Path, kairos: &Path, job: &Path, result: &Path) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(runner).arg("--out").arg(result);
        for (flag, v) in [
            ("--nodes", self.nodes),
            ("--cpus", self.cpus),
            ("--mem", self.mem_mib),
        ] {
            cmd.arg(flag).arg(v.to_string());
        }
        if let Some(n) = self.nic_node {
            cmd.arg("--nic-node").arg(n.to_string());
        }
        if self.peer_nic {
            cmd.arg("--peer-nic");
        }
        cmd.arg("--timeout").arg(self.timeout_secs().to_string());
        cmd.arg("--accel").arg(match self.accel {
            Accel::Auto => "auto",
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        });
        cmd.arg("--kairos").arg(kairos);
        for p in &self.puts {
            cmd.arg("--put").arg(p);
        }
        if !self.append.is_empty() {
            cmd.arg("--append").arg(&self.append);
        }
        cmd.arg("--script").arg(job);
        cmd
    }

    /// The runner's exit code as an error: bad usage, timeout, no result, or any other
    /// failure.
    fn check_runner(
        &self,
        out: &std::process::Output,
        runner: &Path,
        result: &Path,
    ) -> Result<(), VmError> {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let console = || tail(&read_lossy(&result.join("console.log")), 20);
        match out.status.code() {
            Some(0) => Ok(()),
            Some(2) => Err(VmError::Usage(stderr)),
            Some(4) => Err(VmError::Timeout {
                after: Duration::from_secs(self.timeout_secs()),
                console: console(),
            }),
            Some(5) => Err(VmError::NoResult { console: console() }),
            other => {
                let code = other.map_or("a signal".to_string(), |c| format!("exit {c}"));
                Err(VmError::Unavailable {
                    reason: format!("{stderr} ({} {code})", runner.display()),
                })
            }
        }
    }
}

/// What the run left in `result`: the script's outputs and status, the console and the
/// times; `tmp` (which holds it) lives as long as the output, unless kept.
fn read_output(result: &Path, tmp: tempfile::TempDir) -> Result<VmOutput, VmError> {
    let console = || tail(&read_lossy(&result.join("console.log")), 20);
    let status_text = read_lossy(&result.join("status"));
    let status = status_text.trim().parse().map_err(|_| VmError::NoResult {
        console: format!("unreadable exit status {status_text:?}\n{}", console()),
    })?;
    let times = read_lossy(&result.join("times"));
    let time = |key: &str| {
        times
            .lines()
            .filter_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .next()
            .unwrap_or(f64::NAN)
    };
    let keep = std::env::var_os("KAIROS_VM_KEEP").is_some_and(|v| v == "1");
    Ok(VmOutput {
        stdout: read_lossy(&result.join("stdout")),
        stderr: read_lossy(&result.join("stderr")),
        status,
        files: result.join("files"),
        console: read_lossy(&result.join("console.log")),
        accel: read_lossy(&result.join("accel")).trim().to_string(),
        boot_s: time("ready_s "),
        job_s: time("job_s "),
        wall_s: time("wall_s "),
        _dir: if keep { keep_dir(tmp) } else { Some(tmp) },
    })
}

impl VmOutput {
    /// A file the script left in `$KAIROS_OUT`, as text.
    pub fn file(&self, name: &str) -> Result<String, VmError> {
        let p = self.files.join(name);
        std::fs::read_to_string(&p).map_err(|source| VmError::Io {
            context: format!("cannot read {}", p.display()),
            source,
        })
    }
}

/// `KAIROS_VM_KEEP=1`: leave the result directory for inspection.
fn keep_dir(tmp: tempfile::TempDir) -> Option<tempfile::TempDir> {
    let path = tmp.keep();
    eprintln!("kairos-testvm: result kept in {}", path.display());
    None
}

fn read_lossy(p: &Path) -> String {
    std::fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
